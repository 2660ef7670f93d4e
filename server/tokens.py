"""Task tokens: what a worker presents to report on a leased task.

A token names the task and the fencing token of the lease it was issued for,
and carries an HMAC-SHA256 of both under a server key (rule 3), so a worker can
neither forge a token nor edit it to claim a newer lease. The keys live in the
store, so tokens survive restarts and are valid on every replica.

Keys have ids and rotate (docs/security.md): a token names the key that signed
it (``ff2.<key id>.<body>.<mac>``). A new key signs only once it has been in the
store for :attr:`TokenSigner.activation_delay_us` (every replica has loaded it by
then); the key before it is still accepted until the time the rotation set, so
leases in flight keep working. Tokens of the first format (``ff1.``) are signed by
key ``0``, the server's original secret.
"""

from __future__ import annotations

import base64
import dataclasses
import hmac
import json
import secrets
from collections.abc import Callable, Sequence

from flowforge.api.schema import TaskKind
from flowforge.server.errors import InvalidArgument
from flowforge.server.stores.contract import NamespaceOperations

__all__ = [
    "TaskToken",
    "TokenKey",
    "TokenSigner",
    "add_token_key",
    "create_first_token_key",
    "load_token_keys",
    "token_namespace",
]

_LEGACY_PREFIX = b"ff1."
_PREFIX = b"ff2."
_MAX_TOKEN_BYTES = 1024
_KIND_NAMES: dict[str, str] = {
    TaskKind.WORKFLOW: "a workflow task",
    TaskKind.ACTIVITY: "an activity task",
    TaskKind.QUERY: "a query",
}
# server_metadata rows: key 0 is the original secret; keys 1, 2, ... are rotations.
_LEGACY_SECRET_ROW = "task_token_secret"
_KEY_ROW = "task_token_key:{}"
# json.dumps with separators builds an encoder per call; this one is built once.
_COMPACT_JSON = json.JSONEncoder(separators=(",", ":"))
#: Tokens this process signed that verify() recognizes without recomputing the MAC.
_SIGNED_KEPT = 4096


@dataclasses.dataclass(frozen=True)
class TaskToken:
    namespace: str
    task_id: int
    fencing_token: int
    kind: str  # a TaskKind
    run_id: str


def _b64(data: bytes) -> bytes:
    return base64.urlsafe_b64encode(data).rstrip(b"=")


def _unb64(data: bytes) -> bytes:
    return base64.urlsafe_b64decode(data + b"=" * (-len(data) % 4))


def _split(raw: bytes) -> tuple[str, bytes, bytes] | None:
    """(key id, body, mac) of a token of either format; None when it is neither."""
    if not raw or len(raw) > _MAX_TOKEN_BYTES:
        return None
    if raw.startswith(_LEGACY_PREFIX):
        body, _, mac = raw[len(_LEGACY_PREFIX) :].partition(b".")
        return "0", body, mac
    if raw.startswith(_PREFIX):
        kid, _, rest = raw[len(_PREFIX) :].partition(b".")
        body, _, mac = rest.partition(b".")
        return kid.decode("ascii", "replace"), body, mac
    return None


def token_namespace(raw: bytes) -> str | None:
    """The namespace a token names, read without checking its MAC (None if malformed).

    Authorization uses it before the engine verifies the token: a token edited to
    name another namespace fails that verification.
    """
    parts = _split(raw)
    if parts is None:
        return None
    try:
        fields = json.loads(_unb64(parts[1]))
    except (ValueError, TypeError):
        return None
    return fields[0] if isinstance(fields, list) and fields and isinstance(fields[0], str) else None


@dataclasses.dataclass(frozen=True)
class TokenKey:
    """One signing key.

    Attributes:
        kid: Its id: ``"0"`` (the original secret), ``"1"``, ``"2"``, ...
        secret: At least 32 bytes.
        created_us: When it was added (the server's clock).
        previous_accepted_until_us: Until when the key before this one is still
            accepted (set by the rotation that added this key).
    """

    kid: str
    secret: bytes
    created_us: int
    previous_accepted_until_us: int | None = None


class TokenSigner:
    """Signs task tokens with the newest active key and verifies them with any key
    still accepted.

    Args:
        keys: Every key, oldest first (as :func:`load_token_keys` returns them).
        now_us: The server's clock.
        activation_delay_us: How long a new key waits in the store before it signs.
    """

    def __init__(self, keys: Sequence[TokenKey], *, now_us: Callable[[], int], activation_delay_us: int = 0) -> None:
        self._now_us = now_us
        self.activation_delay_us = activation_delay_us
        self._keys: list[TokenKey] = []
        # Recently signed tokens -> (key id, token), oldest first. The bytes are ours,
        # so their MAC and body are known good; whether the key is still accepted
        # and the kind are checked on every verify as for any token.
        self._signed: dict[bytes, tuple[str, TaskToken]] = {}
        self.replace_keys(keys)

    def replace_keys(self, keys: Sequence[TokenKey]) -> None:
        """Takes the keys as the store has them now (after a rotation elsewhere)."""
        if not keys or any(len(k.secret) < 32 for k in keys):
            raise ValueError("task token keys must be at least 32 bytes, and there must be one")
        self._keys = list(keys)
        self._signed.clear()

    @property
    def signing_key_id(self) -> str:
        """The id of the key new tokens are signed with."""
        return self._signing_key().kid

    def _signing_key(self) -> TokenKey:
        now = self._now_us()
        active = [k for k in self._keys if k.created_us + self.activation_delay_us <= now]
        return active[-1] if active else self._keys[0]

    def _accepted(self, kid: str) -> TokenKey | None:
        now = self._now_us()
        for index, key in enumerate(self._keys):
            if key.kid == kid:
                successor = self._keys[index + 1] if index + 1 < len(self._keys) else None
                if successor is None or successor.previous_accepted_until_us is None:
                    return key
                return key if now < successor.previous_accepted_until_us else None
        return None

    @staticmethod
    def _mac(key: TokenKey, body: bytes) -> bytes:
        return hmac.digest(key.secret, key.kid.encode() + b"." + body, "sha256")

    def sign(self, token: TaskToken) -> bytes:
        body = _b64(
            _COMPACT_JSON.encode(
                [token.namespace, token.task_id, token.fencing_token, token.kind, token.run_id]
            ).encode()
        )
        key = self._signing_key()
        raw = _PREFIX + key.kid.encode() + b"." + body + b"." + _b64(self._mac(key, body))
        if len(self._signed) >= _SIGNED_KEPT:
            del self._signed[next(iter(self._signed))]
        # As verify() would decode it from the bytes (plain str kind, int ids).
        decoded = TaskToken(
            token.namespace, int(token.task_id), int(token.fencing_token), str(token.kind), token.run_id
        )
        self._signed[raw] = (key.kid, decoded)
        return raw

    def verify(self, raw: bytes, expected_kind: TaskKind | None) -> TaskToken:
        """Returns the token, or raises INVALID_ARGUMENT if it is malformed, forged,
        signed by a key no longer accepted, or of another kind than ``expected_kind``
        (None accepts both)."""
        signed = self._signed.get(raw)
        if signed is not None:
            self._check_key(signed[0])
            token = signed[1]
        else:
            token = self._decode(raw)
        if expected_kind is not None and token.kind != expected_kind:
            raise InvalidArgument(
                f"this is {_KIND_NAMES.get(token.kind, token.kind)} token;"
                f" the call needs {_KIND_NAMES[expected_kind]} token"
            )
        return token

    def _check_key(self, kid: str) -> TokenKey:
        key = self._accepted(kid)
        if key is None:
            raise InvalidArgument(
                f"task token is signed by key {kid!r}, which this server no longer accepts (rotated out);"
                " poll for the task again"
            )
        return key

    def _decode(self, raw: bytes) -> TaskToken:
        """The token ``raw`` carries, its MAC checked (not its kind)."""
        invalid = InvalidArgument(
            "task token is malformed or was not issued by this server; pass the task_token"
            " exactly as the poll returned it"
        )
        parts = _split(raw)
        if parts is None:
            raise invalid
        kid, body, mac = parts
        key = self._check_key(kid)
        expected = self._mac(key, body) if raw.startswith(_PREFIX) else hmac.digest(key.secret, body, "sha256")
        try:
            if not hmac.compare_digest(_unb64(mac), expected):
                raise invalid
            namespace, task_id, fencing_token, kind, run_id = json.loads(_unb64(body))
        except (ValueError, TypeError):
            raise invalid from None
        return TaskToken(namespace, int(task_id), int(fencing_token), kind, run_id)


async def create_first_token_key(tx: NamespaceOperations) -> list[TokenKey]:
    """Creates key 0 (once, on a new store); returns every key, oldest first."""
    await tx.set_metadata_if_absent(_LEGACY_SECRET_ROW, secrets.token_hex(32))
    return await load_token_keys(tx)


async def load_token_keys(tx: NamespaceOperations) -> list[TokenKey]:
    """Every key, oldest first (reads only; :func:`create_first_token_key` made key 0)."""
    legacy = await tx.get_metadata(_LEGACY_SECRET_ROW)
    assert legacy is not None, "create_first_token_key runs at the first start"
    keys = [TokenKey("0", bytes.fromhex(legacy), 0)]
    while (row := await tx.get_metadata(_KEY_ROW.format(len(keys)))) is not None:
        fields = json.loads(row)
        keys.append(
            TokenKey(str(len(keys)), bytes.fromhex(fields["secret"]), fields["created_us"], fields["previous_until_us"])
        )
    return keys


async def add_token_key(tx: NamespaceOperations, now_us: int, previous_accepted_for_us: int) -> TokenKey:
    """Adds a key that signs once active; the keys before it stay accepted for ``previous_accepted_for_us``."""
    keys = await load_token_keys(tx)
    key = TokenKey(str(len(keys)), secrets.token_bytes(32), now_us, now_us + previous_accepted_for_us)
    row = json.dumps(
        {"secret": key.secret.hex(), "created_us": now_us, "previous_until_us": key.previous_accepted_until_us}
    )
    await tx.set_metadata_if_absent(_KEY_ROW.format(key.kid), row)
    if await tx.get_metadata(_KEY_ROW.format(key.kid)) != row:
        raise InvalidArgument(
            "another rotation of the task token key happened at the same time; run it again if needed"
        )
    return key
