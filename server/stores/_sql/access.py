"""SQL of the access concern: API keys and the audit log (docs/security.md).

Only a salted hash of a key's secret is stored. ``audit_head`` holds the last
audit row's number and hash; its row lock serializes appends across replicas, so
the chain never forks.
"""

from __future__ import annotations

import dataclasses

from flowforge.server.stores._sql.core import Record, SQLCore, columns, placeholders
from flowforge.server.stores.contract import AccessOperations
from flowforge.server.stores.rows import ApiKeyRow, AuditRow

_API_KEY_COLUMNS = ", ".join(columns(ApiKeyRow))
_INSERT_API_KEY = f"INSERT INTO api_keys ({_API_KEY_COLUMNS}) VALUES ({placeholders(len(columns(ApiKeyRow)))})"
_AUDIT_COLUMNS = ", ".join(columns(AuditRow))
_INSERT_AUDIT_ROW = f"INSERT INTO audit_log ({_AUDIT_COLUMNS}) VALUES ({placeholders(len(columns(AuditRow)))})"


class AccessSQL(SQLCore, AccessOperations):
    """:class:`AccessOperations` in SQL."""

    async def insert_api_key(self, row: ApiKeyRow) -> None:
        await self._execute(_INSERT_API_KEY, dataclasses.astuple(row))

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
        await self._execute(_INSERT_AUDIT_ROW, dataclasses.astuple(row))
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


def _api_key(record: Record) -> ApiKeyRow:
    row = ApiKeyRow(*record)
    row.salt, row.secret_hash = bytes(row.salt), bytes(row.secret_hash)
    return row


def _audit_row(record: Record) -> AuditRow:
    row = AuditRow(*record)
    row.row_hash = bytes(row.row_hash)
    return row
