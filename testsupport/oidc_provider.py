"""A small but real OIDC provider for the console's login tests, on a loopback port:
the discovery document, the JWKS, ``/authorize`` (the authorization code flow; it
approves the configured test user at once) and ``/token`` (checks the PKCE verifier
and answers RS256 tokens carrying the ``permissions`` claim; as Auth0 does, the access
token is for the API an ``audience`` parameter named, else for the provider's
default), ``/logout`` (RP-initiated logout), with CORS so a page on another origin may
call it. A public client only: it holds no client secret.

Use::

    async with OidcProvider(client_id="flowforge-console") as provider:
        provider.redirect_uris.add("http://127.0.0.1:8233/auth/callback")
        provider.post_logout_redirect_uris.add("http://127.0.0.1:8233/")
        provider.user = TestUser("olivia", ["default:operator"])
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import secrets
import socket
import time
import urllib.parse
from typing import Any, Self

from aiohttp import web

from testsupport.credentials import JwtIssuer

__all__ = ["OidcProvider", "TestUser"]

_CORS = {
    "Access-Control-Allow-Origin": "*",
    "Access-Control-Allow-Methods": "GET, POST",
    "Access-Control-Allow-Headers": "content-type",
}
_CODE_LIFETIME_S = 60.0


@dataclasses.dataclass(frozen=True)
class TestUser:
    """Who the provider signs in: its ``sub`` and ``permissions`` claim."""

    __test__ = False  # not a test class, despite the name

    sub: str
    permissions: list[str]


@dataclasses.dataclass(frozen=True)
class _Grant:
    client_id: str
    redirect_uri: str
    challenge: str
    nonce: str
    audience: str | None
    user: TestUser
    expires_at: float


class OidcProvider:
    """The provider; :attr:`issuer` is known once entered.

    Args:
        client_id: The one public client it knows.
        audience: The ``aud`` of its access tokens when the authorization request names no
            ``audience``.
        token_lifetime_s: The tokens' ``exp`` and ``expires_in``.
    """

    def __init__(self, *, client_id: str, audience: str = "flowforge", token_lifetime_s: float = 300.0) -> None:
        self.client_id = client_id
        self.audience = audience
        self.token_lifetime_s = token_lifetime_s
        #: Who ``/authorize`` signs in next.
        self.user = TestUser("tester", ["default:reader"])
        #: Where ``/authorize`` may send the browser back (exact match, as providers do).
        self.redirect_uris: set[str] = set()
        #: Where ``/logout`` may send the browser back (exact match).
        self.post_logout_redirect_uris: set[str] = set()
        #: Whether the discovery document names ``/logout`` as its ``end_session_endpoint``.
        self.end_session = True
        #: The query of each ``/authorize`` request and the form of each ``/token`` request.
        self.authorize_requests: list[dict[str, str]] = []
        self.token_requests: list[dict[str, str]] = []
        #: The query of each ``/logout`` request.
        self.logout_requests: list[dict[str, str]] = []
        #: The access tokens handed out, in order.
        self.access_tokens: list[str] = []
        self.issuer = ""
        self._signer: JwtIssuer | None = None
        self._grants: dict[str, _Grant] = {}
        self._runner: web.AppRunner | None = None

    @property
    def jwks_url(self) -> str:
        return f"{self.issuer}/jwks"

    async def __aenter__(self) -> Self:
        app = web.Application()
        app.router.add_get("/.well-known/openid-configuration", self._discovery)
        app.router.add_get("/jwks", self._jwks)
        app.router.add_get("/authorize", self._authorize)
        app.router.add_route("*", "/token", self._token)
        app.router.add_get("/logout", self._logout)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        sock = socket.create_server(("127.0.0.1", 0))
        self.issuer = f"http://127.0.0.1:{sock.getsockname()[1]}"
        self._signer = JwtIssuer(issuer=self.issuer, kid="test-idp-key")
        await web.SockSite(self._runner, sock).start()
        return self

    async def __aexit__(self, *_: object) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    @property
    def signer(self) -> JwtIssuer:
        assert self._signer is not None, "enter the provider first"
        return self._signer

    async def _discovery(self, _request: web.Request) -> web.Response:
        document = {
            "issuer": self.issuer,
            "authorization_endpoint": f"{self.issuer}/authorize",
            "token_endpoint": f"{self.issuer}/token",
            "jwks_uri": self.jwks_url,
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code"],
            "code_challenge_methods_supported": ["S256"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["RS256"],
            "token_endpoint_auth_methods_supported": ["none"],
        }
        if self.end_session:
            document["end_session_endpoint"] = f"{self.issuer}/logout"
        return web.json_response(document, headers=_CORS)

    async def _jwks(self, _request: web.Request) -> web.Response:
        return web.json_response(self.signer.jwks(), headers=_CORS)

    async def _authorize(self, request: web.Request) -> web.Response:
        query = dict(request.query)
        self.authorize_requests.append(query)
        redirect_uri = query.get("redirect_uri", "")
        # An unknown client or redirect URI gets an error page, never a redirect (RFC 6749 4.1.2.1).
        if not self._sends_back(query, redirect_uri, self.redirect_uris):
            return web.Response(status=400, text="unknown client_id or redirect_uri")
        state = query.get("state", "")
        if (
            query.get("response_type") != "code"
            or query.get("code_challenge_method") != "S256"
            or not query.get("code_challenge")
            or "openid" not in query.get("scope", "").split()
        ):
            raise web.HTTPFound(_with_query(redirect_uri, error="invalid_request", state=state))
        code = secrets.token_urlsafe(24)
        self._grants[code] = _Grant(
            client_id=self.client_id,
            redirect_uri=redirect_uri,
            challenge=query["code_challenge"],
            nonce=query.get("nonce", ""),
            audience=query.get("audience"),
            user=self.user,
            expires_at=time.monotonic() + _CODE_LIFETIME_S,
        )
        raise web.HTTPFound(_with_query(redirect_uri, code=code, state=state))

    async def _token(self, request: web.Request) -> web.Response:
        if request.method == "OPTIONS":
            return web.Response(headers=_CORS)
        if request.method != "POST":
            return _token_error("invalid_request", "POST the form", status=405)
        form = {name: str(value) for name, value in (await request.post()).items()}
        self.token_requests.append(form)
        if form.get("grant_type") != "authorization_code":
            return _token_error("unsupported_grant_type", "authorization_code only")
        if "client_secret" in form:
            return _token_error("invalid_client", "a public client has no secret")
        grant = self._grants.pop(form.get("code", ""), None)  # a code works once
        if grant is None or grant.expires_at < time.monotonic():
            return _token_error("invalid_grant", "unknown, used or expired code")
        if form.get("client_id") != grant.client_id or form.get("redirect_uri") != grant.redirect_uri:
            return _token_error("invalid_grant", "client_id or redirect_uri differ from the authorization request")
        if _s256(form.get("code_verifier", "")) != grant.challenge:
            return _token_error("invalid_grant", "the PKCE code_verifier does not match the code_challenge")
        user = grant.user
        access = self.signer.token(
            sub=user.sub,
            audience=grant.audience or self.audience,
            permissions=user.permissions,
            expires_in=self.token_lifetime_s,
        )
        identity = self.signer.token(
            sub=user.sub,
            audience=grant.client_id,
            permissions=user.permissions,
            expires_in=self.token_lifetime_s,
            nonce=grant.nonce,
        )
        self.access_tokens.append(access)
        answer: dict[str, Any] = {
            "access_token": access,
            "id_token": identity,
            "token_type": "Bearer",
            "expires_in": int(self.token_lifetime_s),
        }
        return web.json_response(answer, headers={**_CORS, "Cache-Control": "no-store"})

    async def _logout(self, request: web.Request) -> web.Response:
        query = dict(request.query)
        self.logout_requests.append(query)
        back = query.get("post_logout_redirect_uri", "")
        if not self._sends_back(query, back, self.post_logout_redirect_uris):
            return web.Response(status=400, text="unknown client_id or post_logout_redirect_uri")
        raise web.HTTPFound(back)

    def _sends_back(self, query: dict[str, str], uri: str, registered: set[str]) -> bool:
        """Whether a request names this client and a URI registered for the browser's way back."""
        return query.get("client_id") == self.client_id and uri in registered


def _s256(verifier: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()


def _with_query(url: str, **params: str) -> str:
    return f"{url}{'&' if '?' in url else '?'}{urllib.parse.urlencode(params)}"


def _token_error(error: str, description: str, *, status: int = 400) -> web.Response:
    return web.json_response({"error": error, "error_description": description}, status=status, headers=_CORS)
