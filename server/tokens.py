"""Task tokens: what a worker presents to report on a leased task.

A token names the task and the fencing token of the lease it was issued for,
and carries an HMAC-SHA256 of both under the server's secret (rule 3), so a
worker can neither forge a token nor edit it to claim a newer lease. The secret
lives in the store, so tokens survive restarts and are valid on every replica.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import hmac
import json

from flowforge.api.schema import TaskKind
from flowforge.server.errors import InvalidArgument

__all__ = ["TaskToken", "TokenSigner", "token_namespace"]

_PREFIX = b"ff1."
_MAX_TOKEN_BYTES = 1024
_KIND_NAMES = {TaskKind.WORKFLOW: "a workflow task", TaskKind.ACTIVITY: "an activity task", TaskKind.QUERY: "a query"}


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


def token_namespace(raw: bytes) -> str | None:
    """The namespace a token names, read without checking its MAC (None if malformed).

    Authorization uses it before the engine verifies the token: a token edited to
    name another namespace fails that verification.
    """
    if not raw or len(raw) > _MAX_TOKEN_BYTES or not raw.startswith(_PREFIX):
        return None
    body = raw[len(_PREFIX) :].partition(b".")[0]
    try:
        fields = json.loads(_unb64(body))
    except (ValueError, TypeError):
        return None
    return fields[0] if isinstance(fields, list) and fields and isinstance(fields[0], str) else None


class TokenSigner:
    """Signs and verifies task tokens with one secret."""

    def __init__(self, secret: bytes) -> None:
        if len(secret) < 32:
            raise ValueError("the task token secret must be at least 32 bytes")
        self._secret = secret

    def _mac(self, body: bytes) -> bytes:
        return hmac.new(self._secret, body, hashlib.sha256).digest()

    def sign(self, token: TaskToken) -> bytes:
        body = _b64(
            json.dumps(
                [token.namespace, token.task_id, token.fencing_token, token.kind, token.run_id],
                separators=(",", ":"),
            ).encode()
        )
        return _PREFIX + body + b"." + _b64(self._mac(body))

    def verify(self, raw: bytes, expected_kind: TaskKind | None) -> TaskToken:
        """Returns the token, or raises INVALID_ARGUMENT if it is malformed, forged,
        or of another kind than ``expected_kind`` (None accepts both)."""
        invalid = InvalidArgument(
            "task token is malformed or was not issued by this server; pass the task_token"
            " exactly as the poll returned it"
        )
        if not raw or len(raw) > _MAX_TOKEN_BYTES or not raw.startswith(_PREFIX):
            raise invalid
        body, _, mac = raw[len(_PREFIX) :].partition(b".")
        try:
            if not hmac.compare_digest(_unb64(mac), self._mac(body)):
                raise invalid
            namespace, task_id, fencing_token, kind, run_id = json.loads(_unb64(body))
        except (ValueError, TypeError):
            raise invalid from None
        if expected_kind is not None and kind != expected_kind:
            raise InvalidArgument(
                f"this is {_KIND_NAMES.get(kind, kind)} token; the call needs {_KIND_NAMES[expected_kind]} token"
            )
        return TaskToken(namespace, int(task_id), int(fencing_token), kind, run_id)
