"""Bearer JWTs from an OIDC provider, verified against its JWKS.

A token must be signed by a key of the JWKS (asymmetric algorithms only), carry
``exp`` and ``sub``, and match the configured issuer and audience. Its
``permissions`` claim grants roles, Temporal's way: a list of
``"NAMESPACE:ROLE"`` strings, ``"*:ROLE"`` for every namespace, e.g.
``["payments:writer", "*:reader"]``. The principal is ``jwt:<sub>``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import aiohttp
import jwt

from flowforge.server.auth.principal import Principal
from flowforge.server.auth.roles import Role, parse_role
from flowforge.server.auth.urls import provider_origin

__all__ = ["PERMISSIONS_CLAIM", "JwksSource", "JwtVerifier"]

log = logging.getLogger("flowforge.server.auth")

PERMISSIONS_CLAIM = "permissions"
_ALGORITHMS = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"]
_MAX_TOKEN_CHARS = 16 * 1024
_MAX_PERMISSIONS = 1000
_LEEWAY_S = 30.0


class JwksSource:
    """The signing keys: a JWKS file or an ``https://`` URL, read and cached.

    Args:
        location: A file path or an ``https://`` URL (``http://`` only to loopback:
            keys fetched in clear text over a network could be swapped).
        refresh_s: How long a JWKS is used before it is read again.
        min_refetch_s: A token naming an unknown key id reads the JWKS again
            (the provider rotated), at most this often.

    Raises:
        ValueError: ``location`` is a URL that is neither https nor http to loopback.
    """

    def __init__(self, location: str, *, refresh_s: float = 300.0, min_refetch_s: float = 30.0) -> None:
        self.location = location
        if self.is_url:
            provider_origin(location, what="the JWKS URL")
        self._refresh_s = refresh_s
        self._min_refetch_s = min_refetch_s
        self._keys: dict[str, jwt.PyJWK] = {}
        self._fetched_at = float("-inf")
        self._lock = asyncio.Lock()

    @property
    def is_url(self) -> bool:
        return self.location.startswith(("https://", "http://"))

    async def load(self) -> None:
        """Reads the keys now; raises ValueError when they cannot be read."""
        self._keys = _parse_jwks(await self._read())
        self._fetched_at = time.monotonic()

    async def key(self, kid: str) -> jwt.PyJWK | None:
        """The key with id ``kid``, reading the JWKS again when stale or when the id is
        new (the provider rotated its keys)."""
        age = time.monotonic() - self._fetched_at
        if age > self._refresh_s or (kid not in self._keys and age > self._min_refetch_s):
            async with self._lock:
                if time.monotonic() - self._fetched_at > self._min_refetch_s:
                    try:
                        await self.load()
                    except (ValueError, OSError, aiohttp.ClientError) as error:
                        # Keep the keys we have: the provider being down must not lock everyone out.
                        log.warning("could not refresh the JWKS from %s: %s", self.location, error)
                        self._fetched_at = time.monotonic()
        return self._keys.get(kid)

    async def _read(self) -> Any:
        if not self.is_url:
            return json.loads(await asyncio.to_thread(Path(self.location).read_text))
        timeout = aiohttp.ClientTimeout(total=10)
        async with aiohttp.ClientSession(timeout=timeout) as session, session.get(self.location) as response:
            response.raise_for_status()
            return await response.json(content_type=None)


def _parse_jwks(document: Any) -> dict[str, jwt.PyJWK]:
    if not isinstance(document, dict) or not isinstance(document.get("keys"), list):
        raise ValueError('a JWKS is a JSON object with a "keys" list')
    keys = {}
    for entry in document["keys"]:
        if not isinstance(entry, dict) or not isinstance(entry.get("kid"), str):
            raise ValueError('every key of the JWKS needs a "kid"')
        if entry.get("use", "sig") != "sig":
            continue
        try:
            keys[entry["kid"]] = jwt.PyJWK.from_dict(entry)
        except jwt.PyJWTError as error:
            raise ValueError(f"JWKS key {entry['kid']!r}: {error}") from None
    return keys


class JwtVerifier:
    """Turns a bearer JWT into a principal, or says why not.

    Args:
        jwks: Where the signing keys are.
        issuer: The ``iss`` every token must carry.
        audience: The ``aud`` every token must include.
    """

    def __init__(self, jwks: JwksSource, *, issuer: str, audience: str) -> None:
        if not issuer or not audience:
            raise ValueError("JWT verification needs an issuer and an audience (--jwt-issuer, --jwt-audience)")
        self.jwks = jwks
        self.issuer = issuer
        self.audience = audience

    async def authenticate(self, token: str) -> Principal:
        """The token's principal.

        Raises:
            ValueError: The token is malformed, signed by an unknown key, expired,
                for another issuer or audience, or grants nothing; the message says which.
        """
        if len(token) > _MAX_TOKEN_CHARS:
            raise ValueError("the JWT is too long")
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            raise ValueError("the bearer token is neither an API key nor a well-formed JWT") from None
        kid = header.get("kid")
        if not isinstance(kid, str):
            raise ValueError('the JWT header has no "kid"')
        key = await self.jwks.key(kid)
        if key is None:
            raise ValueError(f"the JWT is signed by key {kid!r}, which is not in the JWKS")
        try:
            claims = jwt.decode(
                token,
                key=key,
                algorithms=_ALGORITHMS,
                audience=self.audience,
                issuer=self.issuer,
                leeway=_LEEWAY_S,
                options={"require": ["exp", "iss", "aud", "sub"]},
            )
        except jwt.ExpiredSignatureError:
            raise ValueError("the JWT has expired") from None
        except jwt.InvalidAudienceError:
            raise ValueError(f"the JWT is not for this server (audience must include {self.audience!r})") from None
        except jwt.InvalidIssuerError:
            raise ValueError(f"the JWT was not issued by {self.issuer!r}") from None
        except jwt.PyJWTError as error:
            raise ValueError(f"the JWT is not valid: {error}") from None
        return Principal(f"jwt:{claims['sub']}", _grants(claims))


def _grants(claims: Mapping[str, Any]) -> dict[str, frozenset[Role]]:
    permissions = claims.get(PERMISSIONS_CLAIM, [])
    if not isinstance(permissions, list) or len(permissions) > _MAX_PERMISSIONS:
        raise ValueError(f'the JWT claim "{PERMISSIONS_CLAIM}" must be a list of "namespace:role" strings')
    grants: dict[str, frozenset[Role]] = {}
    for permission in permissions:
        namespace, _, role_name = str(permission).rpartition(":")
        if not namespace:
            raise ValueError(f'JWT permission {permission!r} is not "namespace:role"')
        grants[namespace] = grants.get(namespace, frozenset()) | {parse_role(role_name)}
    if not grants:
        raise ValueError(f'the JWT grants no role (claim "{PERMISSIONS_CLAIM}")')
    return grants
