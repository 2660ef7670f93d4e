"""The console's routes on the HTTP listener: the pages (one HTML shell whose scripts
draw each page), their static files from package data, and the JSON API.

Every answer carries a Content-Security-Policy that allows scripts, styles and
requests from this origin only, and no inline script; the pages put data into the
document with ``textContent`` only.
"""

from __future__ import annotations

import hashlib
import json
import mimetypes
import urllib.parse
from importlib import resources

from aiohttp import web

from flowforge.server.auth.interceptor import AuthInterceptor
from flowforge.server.console.bridge import ConsoleError, RpcBridge
from flowforge.server.console.oidc import CALLBACK_PATH, ConsoleOidc
from flowforge.server.http import HttpListener

__all__ = ["Console"]

_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'{origins};"
    " base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
# Paths the page shell answers; its scripts read the rest of the path.
_PAGES = ("/", "/namespaces", "/namespaces/{rest:.+}", "/audit", "/scheduler", CALLBACK_PATH)
# Reasons are bounded like the RPCs' own (validation.text).
_MAX_REASON = 4000
_TYPES = {".js": "text/javascript", ".css": "text/css", ".html": "text/html", ".svg": "image/svg+xml"}


class _StaticFiles:
    """The files under ``static/`` of this package, read once (a few dozen kilobytes)."""

    def __init__(self) -> None:
        self.files: dict[str, tuple[bytes, str, str]] = {}
        root = resources.files("flowforge.server.console") / "static"
        for entry in root.iterdir():
            if entry.is_file():
                body = entry.read_bytes()
                suffix = "." + entry.name.rpartition(".")[2]
                kind = _TYPES.get(suffix) or mimetypes.guess_type(entry.name)[0] or "application/octet-stream"
                self.files[entry.name] = (body, kind, hashlib.sha256(body).hexdigest()[:16])


def codec_origin(url: str) -> str:
    """The origin (``scheme://host[:port]``) of a codec endpoint URL, for the CSP.

    Raises:
        ValueError: not an http(s) URL, or one with characters a policy cannot hold.
    """
    parsed = urllib.parse.urlsplit(url)
    if parsed.scheme not in ("http", "https") or not parsed.netloc or any(c in url for c in " ;,'\"\n"):
        raise ValueError(f"{url!r} is not an http(s) URL of a codec server, e.g. https://codec.example.com")
    return f"{parsed.scheme}://{parsed.netloc}"


class Console:
    """The console on one server process.

    Args:
        interceptor: The gRPC server's authentication interceptor (same keys, roles, audit).
        servicers: ``WorkflowService`` and ``AccessService`` servicers by service name.
        auth_required: Whether callers need credentials (the page asks for a key then).
        codec_endpoint: A remote codec server (Temporal's protocol: ``POST {url}/decode``)
            the pages send encoded payloads to from the browser; the server never sees them decoded.
        oidc: The provider the pages sign in with (authorization code flow with PKCE, from
            the browser); None: an API key or a pasted JWT only.
    """

    def __init__(
        self,
        interceptor: AuthInterceptor,
        servicers: dict[str, object],
        *,
        auth_required: bool,
        codec_endpoint: str | None = None,
        oidc: ConsoleOidc | None = None,
    ) -> None:
        self._bridge = RpcBridge(interceptor, servicers)
        self._auth_required = auth_required
        self._codec_endpoint = codec_endpoint.rstrip("/") if codec_endpoint else None
        self._oidc = oidc
        # The pages may fetch from these origins besides their own, and only when configured.
        origins = [codec_origin(codec_endpoint)] if codec_endpoint else []
        if oidc is not None and oidc.origin not in origins:
            origins.append(oidc.origin)
        self._headers = {
            "Content-Security-Policy": _CSP.format(origins="".join(f" {origin}" for origin in origins)),
            "X-Content-Type-Options": "nosniff",
            "Referrer-Policy": "no-referrer",
        }
        self._static = _StaticFiles()

    def attach(self, http: HttpListener) -> None:
        """Adds the console's routes to ``http``."""
        for path in _PAGES:
            http.add_route("GET", path, self._page, what="console" if path == "/" else "console page")
        http.add_route("GET", "/console/{name}", self._file, what="console file")
        http.add_route("GET", "/api/v1/console-config", self._config, what="console API")
        http.add_route("GET", "/api/v1/whoami", self._whoami, what="console API")
        http.add_route("POST", "/api/v1/{service}/{method}", self._rpc, what="console API")

    async def _page(self, request: web.Request) -> web.StreamResponse:
        return self._serve("index.html", request, cache="no-cache")

    async def _file(self, request: web.Request) -> web.StreamResponse:
        return self._serve(request.match_info["name"], request, cache="no-cache")

    def _serve(self, name: str, request: web.Request, *, cache: str) -> web.StreamResponse:
        found = self._static.files.get(name)
        if found is None:
            raise web.HTTPNotFound(text="no such console file", headers=self._headers)
        body, kind, etag = found
        headers = {**self._headers, "ETag": f'"{etag}"', "Cache-Control": cache}
        if request.headers.get("If-None-Match") == f'"{etag}"':
            return web.Response(status=304, headers=headers)
        return web.Response(body=body, content_type=kind, charset="utf-8", headers=headers)

    async def _config(self, _request: web.Request) -> web.StreamResponse:
        # Read before signing in, so it holds nothing secret: how to sign in.
        oidc = self._oidc.to_json() if self._oidc is not None else None
        return self._json({"auth_required": self._auth_required, "oidc": oidc}, status=200)

    async def _whoami(self, request: web.Request) -> web.StreamResponse:
        try:
            principal = await self._bridge.principal(request.headers.get("Authorization"))
        except ConsoleError as error:
            return self._json(error.to_json(), status=error.http_status)
        grants = {namespace: sorted(role.value for role in roles) for namespace, roles in principal.grants.items()}
        return self._json(
            {
                "name": principal.name,
                "grants": grants,
                "auth_required": self._auth_required,
                "rules": self._bridge.rules(),
                "codec_endpoint": self._codec_endpoint,
            },
            status=200,
        )

    async def _rpc(self, request: web.Request) -> web.StreamResponse:
        # Only JSON: a cross-site form cannot send it without a preflight, which is never answered.
        if request.content_type != "application/json":
            return self._json({"code": "INVALID_ARGUMENT", "message": "send application/json"}, status=415)
        try:
            answer = await self._bridge.call(
                request.match_info["service"],
                request.match_info["method"],
                await request.read(),
                request.headers.get("Authorization"),
                reason=urllib.parse.unquote(request.headers.get("X-FlowForge-Reason", ""))[:_MAX_REASON],
            )
        except ConsoleError as error:
            return self._json(error.to_json(), status=error.http_status)
        return self._json(answer, status=200)

    def _json(self, body: object, *, status: int) -> web.Response:
        return web.Response(
            text=json.dumps(body, separators=(",", ":")),
            status=status,
            content_type="application/json",
            headers={**self._headers, "Cache-Control": "no-store"},
        )
