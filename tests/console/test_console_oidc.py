"""OIDC login in the console (both stores), in headless Chromium against a real OIDC
provider (testsupport/oidc_provider.py): the page goes through the provider's
authorization code flow with PKCE and back, the list loads with the token, an
operator's token acts (audited as its ``jwt:`` principal) and a reader's sees no
action button; the login names the server's API as its ``audience`` (without it the
provider's token would be for another audience and refused) and Sign out ends the
provider's session too; a tampered ``state`` is refused before any code is exchanged;
the token lives in sessionStorage only; an expired or refused token asks again; the
configuration is validated, ``flowforge server``'s flags reach the console, and the CSP
names the issuer only when configured."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit

import aiohttp
import pytest
from click.testing import CliRunner
from playwright.async_api import Page, Route, expect

from flowforge import Client
from flowforge.api.v1 import access_pb2
from flowforge.cli import cli
from flowforge.server import FlowForgeServer, ServerConfig
from flowforge.server.auth.jwt import JwksSource
from flowforge.server.auth.setup import AuthConfig
from flowforge.server.console import ConsoleOidc
from samples._dev_server import start_server
from tests.console._app import QUEUE, Pipeline, step, waiting_for_signal
from tests.console.test_console import base
from tests.console.test_console_actions import act, open_execution
from tests.integration._reliability import fast_worker
from testsupport.credentials import JwtIssuer
from testsupport.oidc_provider import OidcProvider, TestUser
from testsupport.postgres import free_port
from testsupport.waiting import wait_until

CLIENT_ID = "flowforge-console"
# The provider issues tokens for its own "userinfo" unless the login names the server's API
# (as Auth0 does): the console's ``audience`` is what makes its tokens acceptable.
API_AUDIENCE = "https://flowforge.example.com/api"


@pytest.fixture
async def idp() -> AsyncIterator[OidcProvider]:
    async with OidcProvider(client_id=CLIENT_ID, audience="userinfo") as provider:
        yield provider


@pytest.fixture
async def server(store_url: str, tmp_path: Path, idp: OidcProvider) -> AsyncIterator[FlowForgeServer]:
    """Authentication on, JWTs verified against the provider's JWKS, the console's login at it
    (this module's ``server``: the ``admin`` fixture uses it)."""
    auth = AuthConfig(
        required=True,
        bootstrap_admin_key_file=str(tmp_path / "admin.key"),
        jwks=idp.jwks_url,
        jwt_issuer=idp.issuer,
        jwt_audience=API_AUDIENCE,
    )
    oidc = ConsoleOidc(issuer=idp.issuer, client_id=CLIENT_ID, audience=API_AUDIENCE)
    instance = FlowForgeServer(
        ServerConfig(store=store_url, port=0, http_port=0, poll_recheck_interval_s=0.2, auth=auth, console_oidc=oidc)
    )
    await instance.start()
    idp.redirect_uris.add(f"{base(instance)}/auth/callback")
    idp.post_logout_redirect_uris.add(f"{base(instance)}/")
    yield instance
    await instance.stop()


@pytest.fixture
async def worker(admin: Client) -> AsyncIterator[None]:
    async with fast_worker(admin, QUEUE, workflows=[Pipeline], activities=[step]):
        yield


async def sign_in_with_provider(page: Page, server: FlowForgeServer, path: str, user: TestUser) -> None:
    """Opens ``path``, clicks the provider's button and waits to be back on ``path`` as ``user``."""
    await page.goto(base(server) + path)
    await page.click("#oidc-sign-in")
    # The name shows once the server accepted the token (the address is ``path`` before and after).
    await expect(page.locator("#who")).to_contain_text(f"jwt:{user.sub}")
    assert page.url == base(server) + path


async def stored(page: Page) -> dict[str, object]:
    return dict(
        await page.evaluate(
            "() => ({session: {...sessionStorage}, local: localStorage.length, cookie: document.cookie})"
        )
    )


async def test_sign_in_through_the_provider_as_operator_then_reader(
    server: FlowForgeServer, admin: Client, idp: OidcProvider, worker: None, page: Page
) -> None:
    handle = await admin.start_workflow(Pipeline.run, "x", id="oidc-order", task_queue=QUEUE)
    await wait_until(lambda: waiting_for_signal(handle), timeout=20, what="the run to wait for its signal")

    # An operator signs in through the provider and lands back on the list, which loads.
    idp.user = TestUser("olivia", ["default:operator"])
    await page.goto(base(server) + "/namespaces/default/workflows")
    await expect(page.locator("#oidc-sign-in")).to_have_text(f"Sign in with {urlsplit(idp.issuer).netloc}")
    await sign_in_with_provider(page, server, "/namespaces/default/workflows", idp.user)
    await expect(page.locator("#workflows tbody tr")).to_have_count(1)

    # The flow was PKCE S256 with state and nonce, and the browser sent no secret.
    (authorize,) = idp.authorize_requests
    assert authorize["code_challenge_method"] == "S256" and authorize["state"] and authorize["nonce"]
    assert authorize["audience"] == API_AUDIENCE
    (exchange,) = idp.token_requests
    assert exchange["code_verifier"] and "client_secret" not in exchange
    # The token is kept in this tab's sessionStorage only.
    kept = await stored(page)
    assert kept["session"]["flowforge.bearer"] == idp.access_tokens[-1]  # type: ignore[index]
    assert kept["local"] == 0 and kept["cookie"] == "" and await page.context.cookies() == []

    # It may act: the signal lands and is audited as the token's principal.
    await open_execution(page, server, "oidc-order")
    await act(page, "SignalWorkflowExecution", "approved by olivia", signal="proceed", input='"go"')
    assert await handle.result() == "x.b.x.c.."
    request = access_pb2.ListAuditLogRequest(page_size=100)
    records = (await admin.workflow_service.call("ListAuditLog", request)).records
    assert ("SignalWorkflowExecution", "jwt:olivia") in {(r.action, r.principal) for r in records if r.reason}

    # Signing out forgets the token and ends the provider's session (RP-initiated logout),
    # which sends the browser back to the console; a reader signs in and sees no action button.
    await page.click("#who button")
    await expect(page.locator("#oidc-sign-in")).to_be_visible()
    assert idp.logout_requests == [{"client_id": CLIENT_ID, "post_logout_redirect_uri": base(server) + "/"}]
    assert page.url == base(server) + "/"
    assert not {"flowforge.bearer", "flowforge.endSession"} & set((await stored(page))["session"])  # type: ignore[arg-type]
    idp.user = TestUser("rita", ["default:reader"])
    idp.end_session = False  # this time the provider offers no RP-initiated logout
    await sign_in_with_provider(page, server, "/namespaces/default/workflows/oidc-order", idp.user)
    await expect(page.locator("#summary .badge")).to_have_text("COMPLETED")
    assert await page.locator("[data-action]").count() == 0
    # ... and the server refuses an action forged with the reader's token.
    async with aiohttp.ClientSession() as http:
        headers = {"Content-Type": "application/json", "Authorization": f"Bearer {idp.access_tokens[-1]}"}
        body = json.dumps({"namespace": "default", "execution": {"workflow_id": "oidc-order"}, "reason": "forged"})
        url = base(server) + "/api/v1/WorkflowService/TerminateWorkflowExecution"
        async with http.post(url, data=body, headers=headers) as answer:
            assert answer.status == 403

    # Without an end_session_endpoint, Sign out forgets the token and stays on the console.
    await page.click("#who button")
    await expect(page.locator("#oidc-sign-in")).to_be_visible()
    assert len(idp.logout_requests) == 1 and urlsplit(page.url).netloc == urlsplit(base(server)).netloc
    assert "flowforge.bearer" not in (await stored(page))["session"]  # type: ignore[operator]


async def test_a_tampered_state_is_refused(server: FlowForgeServer, idp: OidcProvider, page: Page) -> None:
    async def tamper(route: Route) -> None:
        url = urlsplit(route.request.url)
        query = {name: values[0] for name, values in parse_qs(url.query).items()} | {"state": "forged"}
        await route.continue_(url=url._replace(query=urlencode(query)).geturl())

    await page.route(f"{idp.issuer}/authorize?*", tamper)
    await page.goto(base(server) + "/namespaces/default/workflows")
    await page.click("#oidc-sign-in")
    await expect(page.locator("#key-form .error")).to_contain_text("state mismatch")
    assert idp.authorize_requests[0]["state"] == "forged"  # the provider answered the forged state
    assert idp.token_requests == []  # the code was never exchanged
    assert urlsplit(page.url).path == "/" and "code=" not in page.url
    assert "flowforge.bearer" not in (await stored(page))["session"]  # type: ignore[operator]

    # A callback replayed without a login in progress is refused the same way.
    await page.goto(base(server) + "/auth/callback?code=stolen&state=anything")
    await expect(page.locator("#key-form .error")).to_contain_text("state mismatch")
    assert idp.token_requests == []


async def test_an_expired_or_refused_token_asks_again(server: FlowForgeServer, idp: OidcProvider, page: Page) -> None:
    idp.user = TestUser("olivia", ["default:operator"])
    await sign_in_with_provider(page, server, "/namespaces/default/workflows", idp.user)

    # Past the token's expiry the page asks again, without sending it. The list's calls end
    # first: one still in flight would be refused (sent without the expired token), ask again
    # itself and forget the token, and the reload below would then find no token to call expired.
    await page.wait_for_load_state("networkidle")
    await page.evaluate("() => sessionStorage.setItem('flowforge.bearerExpires', String(Date.now() - 1000))")
    await page.reload()
    await expect(page.locator("#key-form .error")).to_contain_text("expired")
    assert "flowforge.bearer" not in (await stored(page))["session"]  # type: ignore[operator]

    # A token the server refuses (its signature altered) asks again with the server's reason.
    await sign_in_with_provider(page, server, "/namespaces/default/workflows", idp.user)
    forged = idp.access_tokens[-1][:-4] + ("AAAA" if not idp.access_tokens[-1].endswith("AAAA") else "BBBB")
    await page.evaluate("token => sessionStorage.setItem('flowforge.bearer', token)", forged)
    await page.reload()
    await expect(page.locator("#key-form .error")).to_contain_text("JWT")
    await expect(page.locator("#oidc-sign-in")).to_be_visible()


async def test_config_endpoint_and_csp(server: FlowForgeServer, idp: OidcProvider) -> None:
    async with aiohttp.ClientSession() as http:
        # Read without credentials: how to sign in, nothing secret.
        async with http.get(base(server) + "/api/v1/console-config") as answer:
            assert answer.status == 200
            assert await answer.json() == {
                "auth_required": True,
                "oidc": {
                    "issuer": idp.issuer,
                    "client_id": CLIENT_ID,
                    "scopes": ["openid", "profile", "email"],
                    "audience": API_AUDIENCE,
                },
            }
            assert f"connect-src 'self' {idp.issuer};" in answer.headers["Content-Security-Policy"]
        async with http.get(base(server) + "/auth/callback?code=x&state=y") as answer:
            assert answer.status == 200 and '<script type="module"' in await answer.text()

    plain = FlowForgeServer(ServerConfig(store=":memory:", port=0, http_port=0))
    await plain.start()
    try:
        async with aiohttp.ClientSession() as http, http.get(base(plain) + "/api/v1/console-config") as answer:
            assert await answer.json() == {"auth_required": False, "oidc": None}
            assert "connect-src 'self';" in answer.headers["Content-Security-Policy"]
    finally:
        await plain.stop()


def test_the_cli_flags_reach_the_console(tmp_path: Path) -> None:
    issuer = "http://127.0.0.1:9/realms/ops"  # not contacted: the keys come from a file
    (tmp_path / "jwks.json").write_text(json.dumps(JwtIssuer(issuer=issuer).jwks()))
    http_port = free_port()
    arguments = [
        *("start-dev", "--in-memory", "--require-auth", "--http-port", str(http_port)),
        *("--jwks-file", str(tmp_path / "jwks.json"), "--jwt-issuer", issuer, "--jwt-audience", "flowforge"),
        *("--console-oidc-issuer", issuer, "--console-oidc-client-id", CLIENT_ID),
        *("--console-oidc-scopes", "openid groups", "--console-oidc-audience", API_AUDIENCE),
    ]
    process, _address = start_server(arguments, str(tmp_path / "ready"), timeout_s=60)
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{http_port}/api/v1/console-config", timeout=10) as answer:
            assert json.load(answer)["oidc"] == {
                "issuer": issuer,
                "client_id": CLIENT_ID,
                "scopes": ["openid", "groups"],
                "audience": API_AUDIENCE,
            }
            assert "connect-src 'self' http://127.0.0.1:9;" in answer.headers["Content-Security-Policy"]
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_the_cli_refuses_an_audience_without_a_provider() -> None:
    answer = CliRunner().invoke(cli, ["server", "start-dev", "--in-memory", "--console-oidc-audience", "api"])
    assert answer.exit_code == 2
    assert "--console-oidc-audience needs --console-oidc-issuer" in answer.output


@pytest.mark.parametrize(
    ("issuer", "client_id", "scopes", "message"),
    [
        ("http://login.example.com", "c", ("openid",), "must be https://"),
        ("ftp://login.example.com", "c", ("openid",), "must be an https:// URL"),
        ("https://user:pw@login.example.com", "c", ("openid",), "not a plain URL"),
        ("https://login.example.com; script-src *", "c", ("openid",), "not a plain URL"),
        ("https://login.example.com/?x=1", "c", ("openid",), "must not have a query"),
        ("https://login.example.com", "", ("openid",), "--console-oidc-client-id"),
        ("https://login.example.com", "c\n", ("openid",), "--console-oidc-client-id"),
        ("https://login.example.com", "c", ("profile",), "must include openid"),
        ("https://login.example.com", "c", ("openid", 'x"y'), "--console-oidc-scopes"),
    ],
)
def test_bad_oidc_configuration_is_refused(issuer: str, client_id: str, scopes: tuple[str, ...], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ConsoleOidc(issuer=issuer, client_id=client_id, scopes=scopes)


@pytest.mark.parametrize("audience", ["", "my api", "x" * 513, "api\n"])
def test_a_bad_oidc_audience_is_refused(audience: str) -> None:
    with pytest.raises(ValueError, match="--console-oidc-audience"):
        ConsoleOidc(issuer="https://login.example.com", client_id="c", audience=audience)
    assert ConsoleOidc("https://login.example.com", "c", audience="https://api.example.com/v1").to_json()["audience"]


def test_good_oidc_configuration_and_jwks_urls() -> None:
    assert ConsoleOidc(issuer="https://login.example.com/realms/ops/", client_id="console").origin == (
        "https://login.example.com"
    )
    assert ConsoleOidc(issuer="http://localhost:8080", client_id="console").origin == "http://localhost:8080"
    assert JwksSource("http://127.0.0.1:9/jwks").is_url
    assert JwksSource("https://login.example.com/jwks").is_url
    with pytest.raises(ValueError, match="must be https://"):
        JwksSource("http://login.example.com/jwks")  # keys in clear text over a network
    with pytest.raises(ValueError, match="console_oidc needs auth"):
        FlowForgeServer(ServerConfig(store=":memory:", console_oidc=ConsoleOidc("https://login.example.com", "c")))
