"""Fixtures of the console's browser tests: one headless Chromium per session (Debian's
``chromium``, installed here when missing; driven by Playwright, never ``playwright
install``), a page per test, and servers with authentication on.

Without a browser the tests are skipped, except under ``CI=true``, where they fail.

Every ``expect(...)`` waits up to :data:`SYSTEM_WAIT_MS` (Playwright's default is 5 s): what
it waits on is the system (a page load, a long-poll woken across replicas, a run finishing),
a deadline on a shared, loaded machine and never a measure of speed
(``benchmarks/console.py`` measures that).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from playwright.async_api import Browser, Page, async_playwright, expect

from flowforge import Client
from flowforge.api.v1 import access_pb2
from flowforge.server import FlowForgeServer, ServerConfig
from flowforge.server.auth.setup import AuthConfig
from testsupport.chromium import LAUNCH_ARGS, find_chromium
from testsupport.parking import ParkingNotifier

#: How long an ``expect(...)`` waits for the page to show what it should (page actions
#: already wait 30 s by default).
SYSTEM_WAIT_MS = 30_000


@pytest.fixture(scope="session")
async def browser() -> AsyncIterator[Browser]:
    executable = find_chromium()
    if executable is None:
        message = "Debian's chromium is not installed and `apt-get install -y chromium` did not install it"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    expect.set_options(timeout=SYSTEM_WAIT_MS)
    async with async_playwright() as playwright:
        instance = await playwright.chromium.launch(executable_path=executable, args=LAUNCH_ARGS)
        yield instance
        await instance.close()


@pytest.fixture
async def page(browser: Browser) -> AsyncIterator[Page]:
    context = await browser.new_context(viewport={"width": 1280, "height": 900})
    opened = await context.new_page()
    errors: list[str] = []
    opened.on("pageerror", lambda error: errors.append(str(error)))
    yield opened
    await context.close()
    assert not errors, f"the page threw: {errors}"


def console_server(store_url: str, key_file: Path) -> FlowForgeServer:
    """A server with authentication on, its console on a free HTTP port, its notifier a
    :class:`ParkingNotifier`."""
    auth = AuthConfig(required=True, bootstrap_admin_key_file=str(key_file), api_key_cache_s=0.2)
    server = FlowForgeServer(ServerConfig(store=store_url, port=0, http_port=0, poll_recheck_interval_s=0.2, auth=auth))
    # Says when a page's live timeline has parked its long-poll (test_console.py).
    server.store.notifier = ParkingNotifier()
    return server


@pytest.fixture
async def server(store_url: str, tmp_path: Path) -> AsyncIterator[FlowForgeServer]:
    instance = console_server(store_url, tmp_path / "admin.key")
    await instance.start()
    yield instance
    await instance.stop()


@pytest.fixture
async def admin(server: FlowForgeServer, tmp_path: Path) -> AsyncIterator[Client]:
    client = await Client.connect(f"127.0.0.1:{server.port}", api_key=(tmp_path / "admin.key").read_text().strip())
    yield client
    await client.close()


async def create_key(admin: Client, role: str, namespace: str = "default") -> str:
    """A new key's secret."""
    request = access_pb2.CreateApiKeyRequest(namespace=namespace, role=role, name=f"console-{role}")
    response = await admin.workflow_service.call("CreateApiKey", request)
    return str(response.key)
