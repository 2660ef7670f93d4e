"""SQL of namespaces, their quotas, and the server's metadata."""

from __future__ import annotations

import dataclasses

from flowforge.server.stores._sql.core import SQLCore, columns, placeholders
from flowforge.server.stores.contract import NamespaceOperations
from flowforge.server.stores.rows import NamespaceRow

_NAMESPACE_COLUMNS = columns(NamespaceRow)
_SELECT_NAMESPACE = f"SELECT {', '.join(_NAMESPACE_COLUMNS)} FROM namespaces"


class NamespaceSQL(SQLCore, NamespaceOperations):
    """:class:`NamespaceOperations` in SQL."""

    async def get_namespace(self, name: str, *, for_update: bool = False) -> NamespaceRow | None:
        lock = self.for_update_clause if for_update else ""
        return await self._one(NamespaceRow, f"{_SELECT_NAMESPACE} WHERE name = ?{lock}", (name,))

    async def insert_namespace(self, row: NamespaceRow) -> None:
        await self._execute(
            f"INSERT INTO namespaces ({', '.join(_NAMESPACE_COLUMNS)})"
            f" VALUES ({placeholders(len(_NAMESPACE_COLUMNS))})",
            dataclasses.astuple(row),
        )

    async def update_namespace(self, row: NamespaceRow) -> None:
        settable = _NAMESPACE_COLUMNS[1:]
        await self._execute(
            f"UPDATE namespaces SET {', '.join(f'{c} = ?' for c in settable)} WHERE name = ?",
            (*dataclasses.astuple(row)[1:], row.name),
        )

    async def list_namespaces(self) -> list[NamespaceRow]:
        return await self._all(NamespaceRow, f"{_SELECT_NAMESPACE} ORDER BY name")

    async def count_running_executions(self, namespace: str, limit: int) -> int:
        record = await self._fetchone(
            "SELECT count(*) FROM (SELECT 1 FROM executions WHERE namespace = ? AND status = 'RUNNING' LIMIT ?) AS r",
            (namespace, limit),
        )
        return int(record[0]) if record is not None else 0

    async def count_leased_tasks(self, namespace: str, kind: str, limit: int) -> int:
        record = await self._fetchone(
            "SELECT count(*) FROM (SELECT 1 FROM tasks WHERE namespace = ? AND kind = ? AND state = 'LEASED' LIMIT ?)"
            " AS t",
            (namespace, kind, limit),
        )
        return int(record[0]) if record is not None else 0

    async def get_metadata(self, key: str) -> str | None:
        record = await self._fetchone("SELECT value FROM server_metadata WHERE key = ?", (key,))
        return None if record is None else record[0]

    async def set_metadata_if_absent(self, key: str, value: str) -> None:
        await self._execute(
            "INSERT INTO server_metadata (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING", (key, value)
        )
