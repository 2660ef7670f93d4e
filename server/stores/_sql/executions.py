"""SQL of executions, their history events and idempotent-start request ids."""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

from flowforge.server.stores._sql.core import SQLCore, columns, placeholders
from flowforge.server.stores.contract import ExecutionOperations
from flowforge.server.stores.errors import DuplicateRunningExecution
from flowforge.server.stores.rows import ExecutionRow, HistoryEventRow

EXECUTION_COLUMNS = columns(ExecutionRow)
SELECT_EXECUTION = f"SELECT {', '.join(EXECUTION_COLUMNS)} FROM executions"
_EVENT_COLUMNS = columns(HistoryEventRow)
# Hot-path statement texts, built once.
_EXECUTION_UPDATE_COLUMNS = [c for c in EXECUTION_COLUMNS if c not in ("namespace", "run_id")]
_UPDATE_EXECUTION = (
    f"UPDATE executions SET {', '.join(f'{c} = ?' for c in _EXECUTION_UPDATE_COLUMNS)}"
    " WHERE namespace = ? AND run_id = ? AND version = ?"
)
_KEYS_PER_SELECT = 1000
_INSERT_EXECUTION = (
    f"INSERT INTO executions ({', '.join(EXECUTION_COLUMNS)}) VALUES ({placeholders(len(EXECUTION_COLUMNS))})"
    " ON CONFLICT DO NOTHING"
)

#: (name, annotation) of the columns a batch insert writes, for dialects that type them.
EVENT_INSERT_FIELDS = [
    ("namespace", "str"),
    ("run_id", "str"),
    *((f.name, str(f.type)) for f in dataclasses.fields(HistoryEventRow)),
]


@functools.lru_cache(maxsize=64)
def update_executions_sql(columns: tuple[str, ...]) -> str:
    """Sets ``columns`` and ``version`` of one execution whose version is as expected."""
    return (
        f"UPDATE executions SET {', '.join(f'{c} = ?' for c in (*columns, 'version'))}"
        " WHERE namespace = ? AND run_id = ? AND version = ?"
    )


class ExecutionSQL(SQLCore, ExecutionOperations):
    """:class:`ExecutionOperations` in SQL."""

    async def get_execution(self, namespace: str, run_id: str, *, for_update: bool = False) -> ExecutionRow | None:
        lock = self.for_update_clause if for_update else ""
        return await self._one(
            ExecutionRow, f"{SELECT_EXECUTION} WHERE namespace = ? AND run_id = ?{lock}", (namespace, run_id)
        )

    async def get_latest_execution(self, namespace: str, workflow_id: str) -> ExecutionRow | None:
        return await self._one(
            ExecutionRow,
            f"{SELECT_EXECUTION} WHERE namespace = ? AND workflow_id = ?"
            " ORDER BY CASE WHEN status = 'RUNNING' THEN 0 ELSE 1 END, start_us DESC, run_id DESC LIMIT 1",
            (namespace, workflow_id),
        )

    async def insert_execution(self, row: ExecutionRow) -> None:
        # DO NOTHING rather than catching the unique violation: on PostgreSQL a failed
        # statement aborts the whole transaction, and the engine goes on after
        # DuplicateRunningExecution (it reads the running execution to name it).
        if not await self._execute(_INSERT_EXECUTION, dataclasses.astuple(row)):
            raise DuplicateRunningExecution(row.workflow_id)

    async def update_execution(
        self, row: ExecutionRow, expected_version: int, changed: tuple[str, ...] | None = None
    ) -> None:
        row.version = expected_version + 1
        values = [getattr(row, c) for c in _EXECUTION_UPDATE_COLUMNS]
        await self._write(
            _UPDATE_EXECUTION,
            (*values, row.namespace, row.run_id, expected_version),
            versions_of=[(row.namespace, row.run_id)],
        )

    async def get_request_run_id(self, namespace: str, request_id: str) -> str | None:
        record = await self._fetchone(
            "SELECT run_id FROM request_ids WHERE namespace = ? AND request_id = ?", (namespace, request_id)
        )
        return None if record is None else record[0]

    async def insert_request_id(self, namespace: str, request_id: str, run_id: str, now_us: int) -> None:
        # Nothing reads its outcome (a duplicate fails the transaction whenever it is
        # sent): on PostgreSQL it goes with the start's events and task, not alone.
        await self._write(
            "INSERT INTO request_ids (namespace, request_id, run_id, create_us) VALUES (?, ?, ?, ?)",
            (namespace, request_id, run_id, now_us),
        )

    # history

    async def append_events(self, namespace: str, run_id: str, events: list[HistoryEventRow]) -> None:
        await self.append_run_events([(namespace, run_id, events)])

    async def read_events(
        self, namespace: str, run_id: str, after_event_id: int = 0, limit: int | None = None
    ) -> list[HistoryEventRow]:
        sql = (
            f"SELECT {', '.join(_EVENT_COLUMNS)} FROM history_events"
            " WHERE namespace = ? AND run_id = ? AND event_id > ? ORDER BY event_id"
        )
        params: list[Any] = [namespace, run_id, after_event_id]
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        return await self._all(HistoryEventRow, sql, params)

    # batched timer firing (issue 7)

    async def lock_executions(self, keys: list[tuple[str, str]]) -> list[ExecutionRow]:
        run_ids_by_namespace: dict[str, set[str]] = {}
        for namespace, run_id in keys:
            run_ids_by_namespace.setdefault(namespace, set()).add(run_id)
        rows: list[ExecutionRow] = []
        for namespace, run_ids in sorted(run_ids_by_namespace.items()):
            rows += await self._lock_namespace_executions(namespace, sorted(run_ids))
        return rows

    async def _lock_namespace_executions(self, namespace: str, run_ids: list[str]) -> list[ExecutionRow]:
        """The executions of ``run_ids`` (sorted) in ``namespace``, locked in run id
        order: IN lists of a bounded length (SQLite caps a statement's parameters)."""
        rows: list[ExecutionRow] = []
        for start in range(0, len(run_ids), _KEYS_PER_SELECT):
            chunk = run_ids[start : start + _KEYS_PER_SELECT]
            rows += await self._all(
                ExecutionRow,
                f"{SELECT_EXECUTION} WHERE namespace = ? AND run_id IN ({placeholders(len(chunk))})"
                f" ORDER BY run_id{self.for_update_clause}",
                (namespace, *chunk),
            )
        return rows

    async def update_executions(self, columns: tuple[str, ...], updates: list[tuple[ExecutionRow, int]]) -> None:
        params = []
        for row, expected_version in updates:
            row.version = expected_version + 1
            params.append(
                (*[getattr(row, c) for c in columns], row.version, row.namespace, row.run_id, expected_version)
            )
        if updates:
            await self._update_executions(columns, params)

    async def append_run_events(self, batches: list[tuple[str, str, list[HistoryEventRow]]]) -> None:
        rows = [
            (namespace, run_id, event.event_id, event.event_type, event.event_us, event.attributes)
            for namespace, run_id, events in batches
            for event in events
        ]
        if rows:
            await self._insert_many("history_events", EVENT_INSERT_FIELDS, rows)
