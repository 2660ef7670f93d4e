"""API keys: ``ffk_<id>_<secret>``, shown once; the store keeps only a salted hash.

The secret is 32 random bytes, so one HMAC-SHA256 under a per-key salt is as good
as a slow hash would be, and checking costs microseconds. Lookups are cached for
a few seconds (:attr:`ApiKeyAuthenticator.cache_s`), which bounds how long a
revoked key keeps working on any replica.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import hmac
import re
import secrets
import time
from collections.abc import Awaitable, Callable

from flowforge.server.auth.principal import Principal
from flowforge.server.auth.roles import Role, parse_role
from flowforge.server.stores.rows import ApiKeyRow

__all__ = ["ApiKeyAuthenticator", "IssuedKey", "looks_like_api_key", "new_api_key"]

_PREFIX = "ffk_"
_ID_BYTES = 8
_SECRET_BYTES = 32
_SALT_BYTES = 16
# ffk_ + 16 hex + _ + 43 base64url characters, nothing else.
_KEY = re.compile(r"ffk_([0-9a-f]{16})_([A-Za-z0-9_-]{43})")
# Remembered keys (valid or not), so a flood of made-up ids cannot grow memory.
_MAX_CACHED = 10_000


@dataclasses.dataclass(frozen=True)
class IssuedKey:
    """A new key: the row to store, and the key to show once."""

    row: ApiKeyRow
    key: str


def looks_like_api_key(credential: str) -> bool:
    """True for a credential of this module's form (an ``ffk_`` key, not a JWT)."""
    return credential.startswith(_PREFIX)


def _hash(salt: bytes, secret: str) -> bytes:
    return hmac.new(salt, secret.encode(), hashlib.sha256).digest()


def new_api_key(
    *, name: str, namespace: str, role: Role, created_by: str, now_us: int, expires_in_s: float | None
) -> IssuedKey:
    """A fresh key for ``namespace`` (or ``'*'``) with ``role``."""
    key_id = secrets.token_hex(_ID_BYTES)
    secret = base64.urlsafe_b64encode(secrets.token_bytes(_SECRET_BYTES)).rstrip(b"=").decode()
    salt = secrets.token_bytes(_SALT_BYTES)
    row = ApiKeyRow(
        key_id=key_id,
        name=name,
        namespace=namespace,
        role=role.value,
        salt=salt,
        secret_hash=_hash(salt, secret),
        created_us=now_us,
        created_by=created_by,
        expires_us=None if expires_in_s is None else now_us + int(expires_in_s * 1_000_000),
        revoked_us=None,
    )
    return IssuedKey(row, f"{_PREFIX}{key_id}_{secret}")


def principal_of(row: ApiKeyRow) -> Principal:
    """The principal a key authenticates as."""
    return Principal(f"apikey:{row.key_id}", {row.namespace: frozenset({parse_role(row.role)})})


class ApiKeyAuthenticator:
    """Checks ``ffk_`` keys against the store, caching each lookup for ``cache_s``.

    Args:
        lookup: Reads one key's row (None when there is no such key).
        cache_s: How long a row (or its absence) is trusted; a revocation takes
            at most this long to reach this replica.
        now_us: The server's clock, for expiry.
    """

    def __init__(
        self,
        lookup: Callable[[str], Awaitable[ApiKeyRow | None]],
        *,
        cache_s: float = 2.0,
        now_us: Callable[[], int],
    ) -> None:
        self._lookup = lookup
        self.cache_s = cache_s
        self._now_us = now_us
        self._cache: dict[str, tuple[float, ApiKeyRow | None]] = {}

    async def authenticate(self, credential: str) -> Principal | None:
        """The key's principal, or None when the key is malformed, unknown, wrong,
        expired or revoked (the caller answers UNAUTHENTICATED for all alike)."""
        match = _KEY.fullmatch(credential)
        if match is None:
            return None
        key_id, secret = match.groups()
        row = await self._row(key_id)
        if row is None or not hmac.compare_digest(_hash(row.salt, secret), row.secret_hash):
            return None
        if row.revoked_us is not None or (row.expires_us is not None and row.expires_us <= self._now_us()):
            return None
        return principal_of(row)

    async def _row(self, key_id: str) -> ApiKeyRow | None:
        now = time.monotonic()
        cached = self._cache.get(key_id)
        if cached is not None and now - cached[0] < self.cache_s:
            return cached[1]
        row = await self._lookup(key_id)
        if len(self._cache) >= _MAX_CACHED:
            self._cache = {k: v for k, v in self._cache.items() if now - v[0] < self.cache_s}
            if len(self._cache) >= _MAX_CACHED:
                self._cache.clear()
        self._cache[key_id] = (now, row)
        return row
