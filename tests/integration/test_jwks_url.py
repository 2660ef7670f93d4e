"""A JWKS fetched from a URL is cached, and fetched again when a token names a new key id
(the provider rotated), at most every ``min_refetch_s``; a provider that is down keeps the keys."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web

from flowforge.server.auth.jwt import JwksSource, JwtVerifier
from flowforge.server.auth.roles import Role
from testsupport.credentials import JwtIssuer


class Provider:
    """An OIDC provider's JWKS endpoint whose keys can change or that can go down."""

    def __init__(self) -> None:
        self.keys: dict[str, Any] = {"keys": []}
        self.fetches = 0
        self.down = False

    async def jwks(self, _request: web.Request) -> web.Response:
        self.fetches += 1
        if self.down:
            return web.Response(status=503)
        return web.Response(text=json.dumps(self.keys), content_type="application/json")


@pytest.fixture
async def provider() -> AsyncIterator[tuple[Provider, str]]:
    state = Provider()
    app = web.Application()
    app.router.add_get("/jwks.json", state.jwks)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    yield state, f"http://127.0.0.1:{port}/jwks.json"
    await runner.cleanup()


async def test_a_jwks_url_is_cached_and_refetched_for_a_new_key_id(provider: tuple[Provider, str]) -> None:
    state, url = provider
    first, second = JwtIssuer(kid="k1"), JwtIssuer(kid="k2")
    state.keys = first.jwks()
    source = JwksSource(url, refresh_s=3600, min_refetch_s=0.0)
    await source.load()
    verifier = JwtVerifier(source, issuer=first.issuer, audience="flowforge")
    for _ in range(3):
        principal = await verifier.authenticate(first.token(permissions=["payments:worker"]))
        assert principal.name == "jwt:alice" and principal.allows(Role.WORKER, "payments")
    assert state.fetches == 1  # cached
    state.keys = {"keys": [*first.jwks()["keys"], *second.jwks()["keys"]]}  # the provider rotates
    assert (await verifier.authenticate(second.token(sub="bob", permissions=["*:reader"]))).name == "jwt:bob"
    assert state.fetches == 2
    state.down = True
    with pytest.raises(ValueError, match="not in the JWKS"):
        await verifier.authenticate(JwtIssuer(kid="k3").token(permissions=["*:admin"]))
    assert (await verifier.authenticate(first.token(permissions=["payments:worker"]))).name == "jwt:alice"


async def test_unknown_key_ids_do_not_make_the_server_hammer_the_provider(provider: tuple[Provider, str]) -> None:
    state, url = provider
    issuer = JwtIssuer(kid="k1")
    state.keys = issuer.jwks()
    source = JwksSource(url, refresh_s=3600, min_refetch_s=3600)
    await source.load()
    verifier = JwtVerifier(source, issuer=issuer.issuer, audience="flowforge")
    for n in range(20):
        with pytest.raises(ValueError, match="not in the JWKS"):
            await verifier.authenticate(JwtIssuer(kid=f"made-up-{n}").token(permissions=["*:admin"]))
    assert state.fetches == 1
