"""SQL of the retention sweeper: finding and purging closed runs."""

from __future__ import annotations

from flowforge.server.stores._sql.core import SQLCore, placeholders
from flowforge.server.stores.contract import RetentionOperations

#: Tables holding rows of a run (by ``run_id``), deleted before the executions they reference.
#: Every table with a ``run_id`` column is here or in :data:`KEPT_RUN_TABLES`
#: (tests/integration/test_retention.py checks the schema).
PURGED_RUN_TABLES = (
    "history_events",
    "tasks",
    "timers",
    "request_ids",
    "workflow_queries",
    "search_attributes",
    "memos",
    "activity_attempts",
    "dead_letters",
    "dag_run_tasks",
)
#: Tables with a ``run_id`` that retention leaves alone, and why.
KEPT_RUN_TABLES = {
    "executions": "the run itself, deleted last",
    "child_executions": "deleted by parent_run_id or run_id",
    "lifecycle_outbox": "lifecycle events to publish; the publisher deletes them",
}


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
        for table in PURGED_RUN_TABLES:
            await self._execute(f"DELETE FROM {table} WHERE run_id IN ({marks})", closed)
        await self._execute(
            f"DELETE FROM child_executions WHERE parent_run_id IN ({marks}) OR run_id IN ({marks})", (*closed, *closed)
        )
        return await self._execute(f"DELETE FROM executions WHERE run_id IN ({marks})", closed)
