"""Takes the console screenshots shown in the README and docs/console.md.

    python -m scripts.console_screenshots [--out docs/console]

Starts an in-memory server with a few executions (a finished DAG of parallel chains
with a retried step, runs waiting for signals, a run that failed its retries and was
terminated) and saves the workflow list (sorted by a column header), an execution's
timeline, its DAG and the execution page on a phone-sized screen as PNG files; then the
sign-in page of a server with authentication on and an OIDC provider configured (the
page only names the provider, so none is contacted).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
from pathlib import Path

from playwright.async_api import Browser, async_playwright

from benchmarks._console_demo import QUEUE, Chains, Inbox, long_history, start_server, transform
from flowforge import Client
from flowforge.server import FlowForgeServer, ServerConfig
from flowforge.server.auth.setup import AuthConfig
from flowforge.server.console import ConsoleOidc
from flowforge.worker import Worker
from testsupport.chromium import LAUNCH_ARGS, find_chromium
from testsupport.credentials import JwtIssuer

# A provider's name for the sign-in page; its keys come from a file, so it is never contacted.
_ISSUER = "https://login.example.com/realms/ops"
_VIEWPORT = {"width": 1280, "height": 900}
#: The seeded server's pages: file, path after the workflow list, what shows it is drawn, viewport.
_PAGES = [
    ("workflows.png", "?sort=WorkflowId+ASC", "#workflows tbody tr", {"width": 1280, "height": 640}),
    ("execution.png", "/etl-0", "#timeline tr", _VIEWPORT),
    ("dag.png", "/etl-0#dag", "svg.dag .dag-node", _VIEWPORT),
    ("phone.png", "/support-ticket-42", "#timeline tr", {"width": 390, "height": 844}),
]
_SIGN_IN = "signin.png"
#: Every file the script writes (tests/unit/test_console_screenshots.py: each is committed and shown).
SCREENSHOTS = (*(name for name, *_ in _PAGES), _SIGN_IN)


async def _seed(client: Client) -> None:
    async with Worker(client, task_queue=QUEUE, workflows=[Chains, Inbox], activities=[transform]):
        for index, (width, depth) in enumerate([(4, 3), (3, 2), (6, 4)]):
            await (
                await client.start_workflow(Chains.run, args=[width, depth], id=f"etl-{index}", task_queue=QUEUE)
            ).result()
        inbox = await client.start_workflow(Inbox.run, id="support-ticket-42", task_queue=QUEUE)
        await inbox.signal(Inbox.message, "customer: the parcel never came")
        await inbox.signal(Inbox.message, "agent: refund issued")
        stuck = await client.start_workflow(Inbox.run, id="support-ticket-41", task_queue=QUEUE)
        await stuck.terminate("closed by the night shift")
    await long_history(client, "audit-trail-7", 60)


async def _shoot(browser: Browser, path: Path, url: str, ready: str, viewport: dict[str, int]) -> None:
    page = await browser.new_page(viewport=viewport, device_scale_factor=1)
    await page.goto(url)
    await page.wait_for_selector(ready)
    await page.wait_for_timeout(300)  # the counts and the live note settle
    await page.screenshot(path=str(path), full_page=path.name == "dag.png")
    await page.close()
    print(path)


async def _sign_in_page(browser: Browser, path: Path) -> None:
    """The sign-in page of a server with authentication on and an OIDC login configured."""
    with tempfile.TemporaryDirectory() as scratch:
        jwks = Path(scratch) / "jwks.json"
        jwks.write_text(json.dumps(JwtIssuer(issuer=_ISSUER).jwks()))
        auth = AuthConfig(
            required=True,
            bootstrap_admin_key_file=str(Path(scratch) / "admin.key"),
            jwks=str(jwks),
            jwt_issuer=_ISSUER,
            jwt_audience="https://flowforge.example.com/api",
        )
        oidc = ConsoleOidc(issuer=_ISSUER, client_id="flowforge-console", audience="https://flowforge.example.com/api")
        server = FlowForgeServer(ServerConfig(store=":memory:", port=0, http_port=0, auth=auth, console_oidc=oidc))
        await server.start()
        try:
            url = f"http://127.0.0.1:{server.http_port}/namespaces/default/workflows"
            await _shoot(browser, path, url, "#oidc-sign-in", {"width": 1280, "height": 560})
        finally:
            await server.stop()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("docs/console"))
    args = parser.parse_args()
    executable = find_chromium()
    if executable is None:
        raise SystemExit("chromium is not installed and apt-get could not install it")
    args.out.mkdir(parents=True, exist_ok=True)
    server = await start_server()
    client = await Client.connect(f"127.0.0.1:{server.port}")
    try:
        await _seed(client)
        base = f"http://127.0.0.1:{server.http_port}/namespaces/default/workflows"
        async with async_playwright() as playwright:
            browser = await playwright.chromium.launch(executable_path=executable, args=LAUNCH_ARGS)
            for name, suffix, ready, viewport in _PAGES:
                await _shoot(browser, args.out / name, base + suffix, ready, viewport)
            await _sign_in_page(browser, args.out / _SIGN_IN)
            await browser.close()
    finally:
        await client.close()
        await server.stop()


if __name__ == "__main__":
    asyncio.run(main())
