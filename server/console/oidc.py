"""The console's OIDC login (docs/console.md, "Authentication"): the provider and
public client the pages sign in with, by the authorization code flow with PKCE from
the browser. The server holds no client secret and sees only the resulting bearer
token, which it verifies against the JWKS like any other (docs/security.md)."""

from __future__ import annotations

import dataclasses
import re

from flowforge.server.auth.urls import provider_origin

__all__ = ["CALLBACK_PATH", "ConsoleOidc"]

#: Where the provider sends the browser back (register ``{console origin}/auth/callback``).
CALLBACK_PATH = "/auth/callback"
# RFC 6749 appendix A: a client id is printable ASCII; a scope token printable ASCII
# without space, '"' or '\'. Bounded so the config answer stays small.
_CLIENT_ID = re.compile(r"[\x20-\x7e]{1,256}")
_SCOPE = re.compile(r"[\x21\x23-\x5b\x5d-\x7e]{1,128}")
_MAX_SCOPES = 32
# Auth0's API identifiers are URLs or plain names; printable ASCII keeps the query simple.
_AUDIENCE = re.compile(r"[\x21-\x7e]{1,512}")


@dataclasses.dataclass(frozen=True)
class ConsoleOidc:
    """An OIDC provider the console's pages sign in with.

    Attributes:
        issuer: The provider's issuer URL; its ``/.well-known/openid-configuration``
            names the endpoints. ``https://``, or ``http://`` to loopback for development.
        client_id: The console's public client (no secret) registered with the provider,
            with ``{console origin}/auth/callback`` as a redirect URI.
        scopes: Scopes asked for; must include ``openid``.
        audience: Sent as ``audience`` on the authorization request, for providers that
            issue a JWT access token only for a named API (Auth0); usually the server's
            ``--jwt-audience``. None sends no such parameter.

    Raises:
        ValueError: A value is malformed; the message names the flag to fix.
    """

    issuer: str
    client_id: str
    scopes: tuple[str, ...] = ("openid", "profile", "email")
    audience: str | None = None

    def __post_init__(self) -> None:
        provider_origin(self.issuer, what="--console-oidc-issuer")
        if "?" in self.issuer:
            raise ValueError(f"--console-oidc-issuer: {self.issuer!r} must not have a query")
        if not _CLIENT_ID.fullmatch(self.client_id):
            raise ValueError("--console-oidc-client-id must be 1 to 256 printable ASCII characters")
        if len(self.scopes) > _MAX_SCOPES or not all(_SCOPE.fullmatch(scope) for scope in self.scopes):
            raise ValueError(f"--console-oidc-scopes: at most {_MAX_SCOPES} scope names without quotes or backslashes")
        if "openid" not in self.scopes:
            raise ValueError("--console-oidc-scopes must include openid")
        if self.audience is not None and not _AUDIENCE.fullmatch(self.audience):
            raise ValueError("--console-oidc-audience must be 1 to 512 printable ASCII characters without spaces")

    @property
    def origin(self) -> str:
        """The issuer's origin: the pages fetch its discovery document and token endpoint there."""
        return provider_origin(self.issuer, what="--console-oidc-issuer")

    def to_json(self) -> dict[str, object]:
        """What the pages need to sign in (nothing secret)."""
        return {
            "issuer": self.issuer,
            "client_id": self.client_id,
            "scopes": list(self.scopes),
            "audience": self.audience,
        }
