"""SQL of what the per-execution limits measure."""

from __future__ import annotations

from flowforge.server.stores._sql.core import SQLCore
from flowforge.server.stores.contract import LimitOperations


class LimitSQL(SQLCore, LimitOperations):
    """:class:`LimitOperations` in SQL."""

    async def history_size(self, namespace: str, run_id: str) -> tuple[int, int]:
        record = await self._fetchone(
            "SELECT count(*), COALESCE(sum(length(attributes)), 0) FROM history_events"
            " WHERE namespace = ? AND run_id = ?",
            (namespace, run_id),
        )
        return (0, 0) if record is None else (int(record[0]), int(record[1]))

    async def count_run_events(self, namespace: str, run_id: str, event_type: str) -> int:
        record = await self._fetchone(
            "SELECT count(*) FROM history_events WHERE namespace = ? AND run_id = ? AND event_type = ?",
            (namespace, run_id, event_type),
        )
        return 0 if record is None else int(record[0])

    async def count_run_tasks(self, run_id: str, kind: str, limit: int) -> int:
        record = await self._fetchone(
            "SELECT count(*) FROM (SELECT 1 FROM tasks WHERE run_id = ? AND kind = ? LIMIT ?) AS t",
            (run_id, kind, limit),
        )
        return 0 if record is None else int(record[0])

    async def count_child_executions(self, namespace: str, parent_run_id: str, limit: int) -> int:
        record = await self._fetchone(
            "SELECT count(*) FROM (SELECT 1 FROM child_executions WHERE namespace = ? AND parent_run_id = ? LIMIT ?)"
            " AS c",
            (namespace, parent_run_id, limit),
        )
        return 0 if record is None else int(record[0])
