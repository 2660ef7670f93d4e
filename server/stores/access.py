"""The access concern of the storage contract: API keys and the audit log.

:class:`AccessOperations` is what a transaction offers; :class:`SQLAccessOperations`
implements it on the SQL stores' three primitives. Only a salted hash of a key's
secret is stored. The audit log is append-only: rows are chained by hash
(:mod:`flowforge.server.audit`) and ``audit_head`` holds the last row's number and
hash, whose row lock serializes appends across replicas.
"""

from __future__ import annotations

import abc
import dataclasses
from collections.abc import Sequence
from typing import Any

__all__ = ["AccessOperations", "ApiKeyRow", "AuditRow", "SQLAccessOperations"]


@dataclasses.dataclass
class ApiKeyRow:
    """One API key: its id, what it grants, and the salted hash of its secret."""

    key_id: str
    name: str
    namespace: str
    """A namespace, or ``'*'`` for all of them."""
    role: str
    salt: bytes
    secret_hash: bytes
    created_us: int
    created_by: str
    expires_us: int | None
    revoked_us: int | None


@dataclasses.dataclass
class AuditRow:
    """One audit log entry; ``row_hash`` = SHA-256 of the previous row's hash and this row."""

    seq: int
    time_us: int
    principal: str
    action: str
    namespace: str
    target: str
    reason: str
    details: str
    """JSON object text: what else the action changed (e.g. a key's role)."""
    row_hash: bytes


_API_KEY_COLUMNS = ", ".join(f.name for f in dataclasses.fields(ApiKeyRow))
_AUDIT_COLUMNS = ", ".join(f.name for f in dataclasses.fields(AuditRow))


class AccessOperations(abc.ABC):
    """API keys and the audit log."""

    @abc.abstractmethod
    async def insert_api_key(self, row: ApiKeyRow) -> None: ...

    @abc.abstractmethod
    async def get_api_key(self, key_id: str) -> ApiKeyRow | None: ...

    @abc.abstractmethod
    async def list_api_keys(self) -> list[ApiKeyRow]:
        """Every key, revoked and expired ones too, oldest first."""

    @abc.abstractmethod
    async def revoke_api_key(self, key_id: str, now_us: int) -> bool:
        """Marks the key revoked; False if there is no such key or it was revoked already."""

    @abc.abstractmethod
    async def has_active_admin_key(self, now_us: int) -> bool:
        """True if an unrevoked, unexpired ``admin`` key for ``'*'`` exists."""

    @abc.abstractmethod
    async def lock_audit_head(self) -> tuple[int, bytes]:
        """The last audit row's number and hash (0 and b"" for an empty log), locked
        until commit so appends of concurrent transactions queue behind each other."""

    @abc.abstractmethod
    async def append_audit_row(self, row: AuditRow) -> None:
        """Inserts ``row`` and moves the head to it (after :meth:`lock_audit_head`)."""

    @abc.abstractmethod
    async def list_audit_rows(self, *, after_seq: int, limit: int, newest_first: bool = False) -> list[AuditRow]:
        """Rows past ``after_seq`` (before it when ``newest_first``; 0 = from the end)."""

    @abc.abstractmethod
    async def audit_head(self) -> tuple[int, bytes]:
        """The head as :meth:`lock_audit_head` returns it, without locking."""


class SQLAccessOperations(AccessOperations, abc.ABC):
    """:class:`AccessOperations` in SQL shared by both dialects."""

    for_update_clause: str

    @abc.abstractmethod
    async def _execute(self, sql: str, params: Sequence[Any] = ()) -> int: ...

    @abc.abstractmethod
    async def _fetchone(self, sql: str, params: Sequence[Any] = ()) -> Sequence[Any] | None: ...

    @abc.abstractmethod
    async def _fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[Sequence[Any]]: ...

    async def insert_api_key(self, row: ApiKeyRow) -> None:
        await self._execute(
            f"INSERT INTO api_keys ({_API_KEY_COLUMNS}) VALUES ({', '.join('?' * 11)})", dataclasses.astuple(row)
        )

    async def get_api_key(self, key_id: str) -> ApiKeyRow | None:
        record = await self._fetchone(f"SELECT {_API_KEY_COLUMNS} FROM api_keys WHERE key_id = ?", (key_id,))
        return None if record is None else _api_key(record)

    async def list_api_keys(self) -> list[ApiKeyRow]:
        records = await self._fetchall(f"SELECT {_API_KEY_COLUMNS} FROM api_keys ORDER BY created_us, key_id")
        return [_api_key(r) for r in records]

    async def revoke_api_key(self, key_id: str, now_us: int) -> bool:
        changed = await self._execute(
            "UPDATE api_keys SET revoked_us = ? WHERE key_id = ? AND revoked_us IS NULL", (now_us, key_id)
        )
        return changed > 0

    async def has_active_admin_key(self, now_us: int) -> bool:
        record = await self._fetchone(
            "SELECT 1 FROM api_keys WHERE role = 'admin' AND namespace = '*' AND revoked_us IS NULL"
            " AND (expires_us IS NULL OR expires_us > ?) LIMIT 1",
            (now_us,),
        )
        return record is not None

    async def lock_audit_head(self) -> tuple[int, bytes]:
        record = await self._fetchone(
            f"SELECT last_seq, last_hash FROM audit_head WHERE id = 1{self.for_update_clause}"
        )
        assert record is not None, "migration 0008 inserts the audit head"
        return int(record[0]), bytes(record[1])

    async def append_audit_row(self, row: AuditRow) -> None:
        await self._execute(
            f"INSERT INTO audit_log ({_AUDIT_COLUMNS}) VALUES ({', '.join('?' * 9)})", dataclasses.astuple(row)
        )
        await self._execute("UPDATE audit_head SET last_seq = ?, last_hash = ? WHERE id = 1", (row.seq, row.row_hash))

    async def list_audit_rows(self, *, after_seq: int, limit: int, newest_first: bool = False) -> list[AuditRow]:
        if newest_first:
            where, order = ("WHERE seq < ? " if after_seq else "WHERE seq > ? "), "DESC"
        else:
            where, order = "WHERE seq > ? ", "ASC"
        records = await self._fetchall(
            f"SELECT {_AUDIT_COLUMNS} FROM audit_log {where}ORDER BY seq {order} LIMIT ?", (after_seq, limit)
        )
        return [_audit_row(r) for r in records]

    async def audit_head(self) -> tuple[int, bytes]:
        record = await self._fetchone("SELECT last_seq, last_hash FROM audit_head WHERE id = 1")
        assert record is not None, "migration 0008 inserts the audit head"
        return int(record[0]), bytes(record[1])


def _api_key(record: Sequence[Any]) -> ApiKeyRow:
    row = ApiKeyRow(*record)
    row.salt, row.secret_hash = bytes(row.salt), bytes(row.secret_hash)
    return row


def _audit_row(record: Sequence[Any]) -> AuditRow:
    row = AuditRow(*record)
    row.row_hash = bytes(row.row_hash)
    return row
