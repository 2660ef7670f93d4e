"""SQL of the retention sweeper: finding and purging closed runs."""

from __future__ import annotations

from flowforge.server.stores._sql.core import SQLCore, placeholders
from flowforge.server.stores.contract import RetentionOperations

# Tables holding rows of a run, children before the executions they reference.
_RUN_TABLES = (
    "history_events",
    "tasks",
    "timers",
    "request_ids",
    "workflow_queries",
    "search_attributes",
    "memos",
    "activity_attempts",
    "dead_letters",
)


class RetentionSQL(SQLCore, RetentionOperations):
    """:class:`RetentionOperations` in SQL."""

    async def closed_runs_before(self, namespace: str, close_before_us: int, limit: int) -> list[str]:
        records = await self._fetchall(
            "SELECT run_id FROM executions WHERE namespace = ? AND close_us IS NOT NULL AND close_us < ?"
            " ORDER BY close_us, run_id LIMIT ?",
            (namespace, close_before_us, limit),
        )
        return [r[0] for r in records]

    async def purge_runs(self, namespace: str, run_ids: list[str]) -> int:
        if not run_ids:
            return 0
        marks = placeholders(len(run_ids))
        closed = [
            r[0]
            for r in await self._fetchall(
                f"SELECT run_id FROM executions WHERE namespace = ? AND status <> 'RUNNING' AND run_id IN ({marks})"
                f"{self.for_update_clause}",
                (namespace, *run_ids),
            )
        ]
        if not closed:
            return 0
        marks = placeholders(len(closed))
        for table in _RUN_TABLES:
            await self._execute(f"DELETE FROM {table} WHERE run_id IN ({marks})", closed)
        await self._execute(
            f"DELETE FROM child_executions WHERE parent_run_id IN ({marks}) OR run_id IN ({marks})", (*closed, *closed)
        )
        return await self._execute(f"DELETE FROM executions WHERE run_id IN ({marks})", closed)
