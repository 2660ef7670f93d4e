"""SQL of batch jobs (``batch_jobs``)."""

from __future__ import annotations

from flowforge.server.stores._sql.core import SQLCore, columns, placeholders
from flowforge.server.stores.contract import BatchOperations
from flowforge.server.stores.rows import BatchJobRow

_COLUMNS = columns(BatchJobRow)
_INSERT = f"INSERT INTO batch_jobs ({', '.join(_COLUMNS)}) VALUES ({placeholders(len(_COLUMNS))})"
_SELECT = f"SELECT {', '.join(_COLUMNS)} FROM batch_jobs"
_PROGRESS = ("state", "done", "failed", "cursor_start_us", "cursor_run_id", "update_us")
_UPDATE = f"UPDATE batch_jobs SET {', '.join(f'{c} = ?' for c in _PROGRESS)} WHERE id = ?"


class BatchSQL(SQLCore, BatchOperations):
    """:class:`BatchOperations` in SQL."""

    async def insert_batch_job(self, row: BatchJobRow) -> None:
        await self._execute(_INSERT, [getattr(row, c) for c in _COLUMNS])

    async def get_batch_job(self, namespace: str, job_id: str, *, for_update: bool = False) -> BatchJobRow | None:
        lock = self.for_update_clause if for_update else ""
        return await self._one(BatchJobRow, f"{_SELECT} WHERE namespace = ? AND id = ?{lock}", (namespace, job_id))

    async def update_batch_job(self, row: BatchJobRow) -> None:
        await self._execute(_UPDATE, [*(getattr(row, c) for c in _PROGRESS), row.id])

    async def list_batch_jobs(self, namespace: str, limit: int) -> list[BatchJobRow]:
        return await self._all(
            BatchJobRow, f"{_SELECT} WHERE namespace = ? ORDER BY create_us DESC, id LIMIT ?", (namespace, limit)
        )

    async def running_batch_jobs(self, limit: int) -> list[BatchJobRow]:
        return await self._all(
            BatchJobRow, f"{_SELECT} WHERE state = 'RUNNING' ORDER BY create_us, id LIMIT ?", (limit,)
        )
