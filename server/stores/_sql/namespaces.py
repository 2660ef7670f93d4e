"""SQL of namespaces and the server's metadata."""

from __future__ import annotations

import dataclasses

from flowforge.server.stores._sql.core import SQLCore, columns, placeholders
from flowforge.server.stores.contract import NamespaceOperations
from flowforge.server.stores.rows import NamespaceRow

_NAMESPACE_COLUMNS = columns(NamespaceRow)


class NamespaceSQL(SQLCore, NamespaceOperations):
    """:class:`NamespaceOperations` in SQL."""

    async def get_namespace(self, name: str) -> NamespaceRow | None:
        return await self._one(
            NamespaceRow, f"SELECT {', '.join(_NAMESPACE_COLUMNS)} FROM namespaces WHERE name = ?", (name,)
        )

    async def insert_namespace(self, row: NamespaceRow) -> None:
        await self._execute(
            f"INSERT INTO namespaces ({', '.join(_NAMESPACE_COLUMNS)}) VALUES ({placeholders(4)})",
            dataclasses.astuple(row),
        )

    async def list_namespaces(self) -> list[NamespaceRow]:
        return await self._all(NamespaceRow, f"SELECT {', '.join(_NAMESPACE_COLUMNS)} FROM namespaces ORDER BY name")

    async def get_metadata(self, key: str) -> str | None:
        record = await self._fetchone("SELECT value FROM server_metadata WHERE key = ?", (key,))
        return None if record is None else record[0]

    async def set_metadata_if_absent(self, key: str, value: str) -> None:
        await self._execute(
            "INSERT INTO server_metadata (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING", (key, value)
        )
