"""SQL of workflow and activity task rows."""

from __future__ import annotations

import dataclasses
from typing import Any

from flowforge.api.schema import TaskKind
from flowforge.server.stores._sql.core import SQLCore, columns, placeholders
from flowforge.server.stores._sql.queries import VISIBLE_QUERY
from flowforge.server.stores.contract import TaskOperations
from flowforge.server.stores.rows import TaskQueueBacklogRow, TaskRow

_TASK_COLUMNS = columns(TaskRow)
_TASK_INSERT_COLUMNS = [c for c in _TASK_COLUMNS if c != "task_id"]
_SELECT_TASK = f"SELECT {', '.join(_TASK_COLUMNS)} FROM tasks"
# Hot-path statement texts, built once.
_INSERT_TASK = (
    f"INSERT INTO tasks ({', '.join(_TASK_INSERT_COLUMNS)})"
    f" VALUES ({placeholders(len(_TASK_INSERT_COLUMNS))}) RETURNING task_id"
)
# How many tasks a poll could lease now, at most a limit: (namespace, kind, task_queue, now_us, limit).
_COUNT_VISIBLE = (
    "SELECT COUNT(*) FROM (SELECT 1 FROM tasks WHERE namespace = ? AND kind = ? AND task_queue = ?"
    " AND state = 'PENDING' AND held IS NULL AND visible_us <= ? LIMIT ?) AS visible"
)
# What a task is for never changes once it is written: an UPDATE leaves these out, so
# on SQLite (which rewrites the index entries of every column an UPDATE sets) a lease
# or a heartbeat does not rewrite the row's entries in the per-run indexes.
_TASK_IDENTITY_COLUMNS = frozenset(
    {"namespace", "run_id", "workflow_id", "workflow_type", "kind", "task_queue", "activity_id", "activity_type"}
)
_TASK_UPDATE_COLUMNS = [c for c in _TASK_INSERT_COLUMNS if c not in _TASK_IDENTITY_COLUMNS]
_UPDATE_TASK = f"UPDATE tasks SET {', '.join(f'{c} = ?' for c in _TASK_UPDATE_COLUMNS)} WHERE task_id = ?"

#: (name, annotation) of the columns a batch insert writes, for dialects that type them.
TASK_INSERT_FIELDS = [(f.name, str(f.type)) for f in dataclasses.fields(TaskRow) if f.name != "task_id"]


class TaskSQL(SQLCore, TaskOperations):
    """:class:`TaskOperations` in SQL."""

    async def insert_task(self, row: TaskRow) -> None:
        def receive(task_id: Any) -> None:
            row.task_id = int(task_id)

        await self._write(_INSERT_TASK, [getattr(row, c) for c in _TASK_INSERT_COLUMNS], receive=receive)

    async def insert_tasks(self, rows: list[TaskRow]) -> None:
        if rows:
            await self._insert_many(
                "tasks", TASK_INSERT_FIELDS, [[getattr(row, name) for name, _ in TASK_INSERT_FIELDS] for row in rows]
            )

    async def get_task(self, task_id: int, *, for_update: bool = False) -> TaskRow | None:
        lock = self.for_update_clause if for_update else ""
        return await self._one(TaskRow, f"{_SELECT_TASK} WHERE task_id = ?{lock}", (task_id,))

    async def get_activity_tasks(self, run_id: str, activity_ids: list[str]) -> list[TaskRow]:
        if not activity_ids:
            return []
        return await self._all(
            TaskRow,
            f"{_SELECT_TASK} WHERE run_id = ? AND kind = 'ACTIVITY'"
            f" AND activity_id IN ({placeholders(len(activity_ids))}){self.for_update_clause}",
            (run_id, *activity_ids),
        )

    async def list_run_tasks(self, namespace: str, run_id: str) -> list[TaskRow]:
        return await self._all(
            TaskRow, f"{_SELECT_TASK} WHERE namespace = ? AND run_id = ? ORDER BY task_id", (namespace, run_id)
        )

    async def lease_next_task(self, namespace: str, kind: str, task_queue: str, now_us: int) -> TaskRow | None:
        return await self._one(
            TaskRow,
            f"{_SELECT_TASK} WHERE namespace = ? AND kind = ? AND task_queue = ? AND state = 'PENDING'"
            " AND held IS NULL AND visible_us <= ? ORDER BY priority_key, fair_pass, visible_us, task_id"
            f" LIMIT 1{self.skip_locked_clause}",
            (namespace, kind, task_queue, now_us),
        )

    async def has_visible_task(self, namespace: str, kind: str, task_queue: str, now_us: int) -> bool:
        return await self.count_visible_tasks(namespace, kind, task_queue, now_us, 1) > 0

    async def count_visible_tasks(self, namespace: str, kind: str, task_queue: str, now_us: int, limit: int) -> int:
        record = await self._fetchone(_COUNT_VISIBLE, (namespace, kind, task_queue, now_us, limit))
        assert record is not None
        return int(record[0])

    async def visible_workflow_work(self, namespace: str, task_queue: str, now_us: int, limit: int) -> tuple[bool, int]:
        record = await self._fetchone(
            f"SELECT EXISTS ({VISIBLE_QUERY}), ({_COUNT_VISIBLE})",
            (namespace, task_queue, now_us, namespace, TaskKind.WORKFLOW, task_queue, now_us, limit),
        )
        assert record is not None
        return bool(record[0]), int(record[1])

    async def task_queue_backlogs(
        self, now_us: int, *, namespace: str | None = None, task_queue: str | None = None
    ) -> list[TaskQueueBacklogRow]:
        conditions: list[str] = ["state = 'PENDING'", "held IS NULL", "visible_us <= ?"]
        params: list[object] = [now_us]
        for column, value in (("namespace", namespace), ("task_queue", task_queue)):
            if value is not None:
                conditions.append(f"{column} = ?")
                params.append(value)
        records = await self._fetchall(
            "SELECT namespace, task_queue, kind, COUNT(*), MIN(visible_us) FROM tasks"
            f" WHERE {' AND '.join(conditions)} GROUP BY namespace, task_queue, kind"
            " ORDER BY namespace, task_queue, kind",
            params,
        )
        return [TaskQueueBacklogRow(str(r[0]), str(r[1]), str(r[2]), int(r[3]), int(r[4])) for r in records]

    async def update_task(self, row: TaskRow) -> None:
        await self._execute(_UPDATE_TASK, (*[getattr(row, c) for c in _TASK_UPDATE_COLUMNS], row.task_id))

    async def delete_task(self, task_id: int) -> None:
        await self._write("DELETE FROM tasks WHERE task_id = ?", (task_id,))

    async def delete_run_tasks(self, run_id: str) -> None:
        await self._write("DELETE FROM tasks WHERE run_id = ?", (run_id,))

    async def expired_task_ids(self, now_us: int, limit: int) -> list[int]:
        leased = await self._fetchall(
            "SELECT task_id FROM tasks WHERE state = 'LEASED' AND lease_expires_us <= ?"
            " ORDER BY lease_expires_us LIMIT ?",
            (now_us, limit),
        )
        pending = await self._fetchall(
            "SELECT task_id FROM tasks WHERE state = 'PENDING' AND pending_deadline_us IS NOT NULL"
            " AND pending_deadline_us <= ? ORDER BY pending_deadline_us LIMIT ?",
            (now_us, limit),
        )
        return [int(r[0]) for r in leased] + [int(r[0]) for r in pending]

    # time skipping (flowforge.testing)

    async def earliest_work_due_us(self) -> int | None:
        record = await self._fetchone(
            "SELECT MIN(due_us) FROM ("
            " SELECT CASE WHEN state = 'LEASED' THEN 0 ELSE visible_us END AS due_us FROM tasks"
            " UNION ALL SELECT 0 FROM workflow_queries WHERE state = 'PENDING'"
            ") AS work"
        )
        return None if record is None or record[0] is None else int(record[0])
