"""SQL of the workflow lifecycle outbox (rows written by the trigger of migration 0009)."""

from __future__ import annotations

from flowforge.server.stores._sql.core import SQLCore, columns, placeholders
from flowforge.server.stores.contract import LifecycleOutboxOperations
from flowforge.server.stores.rows import LifecycleOutboxRow

_OUTBOX_COLUMNS = ", ".join(columns(LifecycleOutboxRow))


class LifecycleOutboxSQL(SQLCore, LifecycleOutboxOperations):
    """:class:`LifecycleOutboxOperations` in SQL."""

    async def read_lifecycle_outbox(self, limit: int) -> list[LifecycleOutboxRow]:
        return await self._all(
            LifecycleOutboxRow, f"SELECT {_OUTBOX_COLUMNS} FROM lifecycle_outbox ORDER BY sequence LIMIT ?", (limit,)
        )

    async def delete_lifecycle_outbox(self, sequences: list[int]) -> None:
        if sequences:
            await self._execute(
                f"DELETE FROM lifecycle_outbox WHERE sequence IN ({placeholders(len(sequences))})", sequences
            )
