"""SQL shared by the SQLite and PostgreSQL stores.

Statements are written once with ``?`` placeholders; a store supplies three
primitives (execute, fetch one, fetch all) and its dialect's row-locking clauses.
"""

from __future__ import annotations

import abc
import dataclasses
import functools
from collections.abc import Sequence
from typing import Any, TypeVar

from flowforge.server.stores.base import (
    ChildExecutionRow,
    ConcurrencyConflict,
    DuplicateRunningExecution,
    EventDedupeRow,
    EventTriggerRow,
    ExecutionRow,
    FencingTokenRejected,
    HistoryEventRow,
    LeaseRow,
    NamespaceRow,
    QueryRow,
    ScheduleRow,
    TaskRow,
    TimerRow,
    Transaction,
)
from flowforge.server.visibility import CompiledQuery, StoredValue

_Row = TypeVar("_Row")


def _columns(row_type: type) -> list[str]:
    return [f.name for f in dataclasses.fields(row_type)]


_EXECUTION_COLUMNS = _columns(ExecutionRow)
_TASK_COLUMNS = _columns(TaskRow)
_TASK_INSERT_COLUMNS = [c for c in _TASK_COLUMNS if c != "task_id"]
_TIMER_COLUMNS = _columns(TimerRow)
_NAMESPACE_COLUMNS = _columns(NamespaceRow)
_EVENT_COLUMNS = _columns(HistoryEventRow)
_EVENT_TRIGGER_COLUMNS = _columns(EventTriggerRow)
_EVENT_DEDUPE_COLUMNS = _columns(EventDedupeRow)
_SCHEDULE_COLUMNS = _columns(ScheduleRow)
_LEASE_COLUMNS = _columns(LeaseRow)
_QUERY_COLUMNS = _columns(QueryRow)
_QUERY_INSERT_COLUMNS = [c for c in _QUERY_COLUMNS if c != "query_id"]
_SELECT_QUERY = f"SELECT {', '.join(_QUERY_COLUMNS)} FROM workflow_queries"

_CHILD_COLUMNS = _columns(ChildExecutionRow)
_SELECT_CHILD = f"SELECT {', '.join(_CHILD_COLUMNS)} FROM child_executions"

_SELECT_EXECUTION = f"SELECT {', '.join(_EXECUTION_COLUMNS)} FROM executions"
_SELECT_TASK = f"SELECT {', '.join(_TASK_COLUMNS)} FROM tasks"
_SELECT_SCHEDULE = f"SELECT {', '.join(_SCHEDULE_COLUMNS)} FROM schedules"
_SCHEDULER_LEASE = "scheduler"
_SELECT_EXECUTION_AS_E = f"SELECT {', '.join('e.' + c for c in _EXECUTION_COLUMNS)} FROM executions e"
_STORED_VALUE_COLUMNS = _columns(StoredValue)


def list_executions_sql(
    namespace: str, condition: CompiledQuery, *, limit: int, before: tuple[int, str] | None
) -> tuple[str, list[Any]]:
    """The statement behind ``list_executions`` (tests EXPLAIN it to show which index serves a query)."""
    where, params = f"e.namespace = ? AND ({condition.where})", [namespace, *condition.params]
    if before is not None:
        where += " AND (e.start_us < ? OR (e.start_us = ? AND e.run_id < ?))"
        params += [before[0], before[0], before[1]]
    sql = f"{_SELECT_EXECUTION_AS_E} WHERE {where} ORDER BY e.start_us DESC, e.run_id DESC LIMIT ?"
    return sql, [*params, limit]


def _placeholders(count: int) -> str:
    return ", ".join("?" for _ in range(count))


# Hot-path statement texts, built once.
_EXECUTION_UPDATE_COLUMNS = [c for c in _EXECUTION_COLUMNS if c not in ("namespace", "run_id")]
_UPDATE_EXECUTION = (
    f"UPDATE executions SET {', '.join(f'{c} = ?' for c in _EXECUTION_UPDATE_COLUMNS)}"
    " WHERE namespace = ? AND run_id = ? AND version = ?"
)
_INSERT_TASK = (
    f"INSERT INTO tasks ({', '.join(_TASK_INSERT_COLUMNS)})"
    f" VALUES ({_placeholders(len(_TASK_INSERT_COLUMNS))}) RETURNING task_id"
)
_UPDATE_TASK = f"UPDATE tasks SET {', '.join(f'{c} = ?' for c in _TASK_INSERT_COLUMNS)} WHERE task_id = ?"
_KEYS_PER_SELECT = 1000


#: (name, annotation) of the columns a batch insert writes, for dialects that type them.
EVENT_INSERT_FIELDS = [
    ("namespace", "str"),
    ("run_id", "str"),
    *((f.name, str(f.type)) for f in dataclasses.fields(HistoryEventRow)),
]
TASK_INSERT_FIELDS = [(f.name, str(f.type)) for f in dataclasses.fields(TaskRow) if f.name != "task_id"]


@functools.lru_cache(maxsize=64)
def update_executions_sql(columns: tuple[str, ...]) -> str:
    """Sets ``columns`` and ``version`` of one execution whose version is as expected."""
    return (
        f"UPDATE executions SET {', '.join(f'{c} = ?' for c in (*columns, 'version'))}"
        " WHERE namespace = ? AND run_id = ? AND version = ?"
    )


class SQLTransaction(Transaction, abc.ABC):
    """Implements :class:`Transaction` on top of three dialect primitives."""

    #: Appended to a SELECT that must lock its row until commit ("" when the
    #: database serializes writers anyway).
    for_update_clause: str = ""
    #: Appended to the poll SELECT so concurrent pollers skip each other's rows.
    skip_locked_clause: str = ""

    @abc.abstractmethod
    async def _execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Runs a statement and returns the number of rows it changed."""

    @abc.abstractmethod
    async def _fetchone(self, sql: str, params: Sequence[Any] = ()) -> Sequence[Any] | None: ...

    @abc.abstractmethod
    async def _fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[Sequence[Any]]: ...

    @abc.abstractmethod
    def _is_unique_violation(self, error: BaseException) -> bool: ...

    @abc.abstractmethod
    async def _insert_many(self, table: str, fields: list[tuple[str, str]], rows: Sequence[Sequence[Any]]) -> None:
        """Inserts ``rows`` (values in the order of ``fields``, (name, annotation)
        pairs) into ``table`` in one call, whatever their number."""

    @abc.abstractmethod
    async def _update_executions(self, columns: tuple[str, ...], params: list[tuple[Any, ...]]) -> int:
        """Sets ``columns`` then ``version`` of each execution (a parameter tuple holds
        those values, then namespace, run_id and the expected version); returns the
        number of rows changed."""

    async def _one(self, row_type: type[_Row], sql: str, params: Sequence[Any] = ()) -> _Row | None:
        record = await self._fetchone(sql, params)
        return None if record is None else row_type(*record)

    async def _all(self, row_type: type[_Row], sql: str, params: Sequence[Any] = ()) -> list[_Row]:
        return [row_type(*record) for record in await self._fetchall(sql, params)]

    # namespaces

    async def get_namespace(self, name: str) -> NamespaceRow | None:
        return await self._one(
            NamespaceRow, f"SELECT {', '.join(_NAMESPACE_COLUMNS)} FROM namespaces WHERE name = ?", (name,)
        )

    async def insert_namespace(self, row: NamespaceRow) -> None:
        await self._execute(
            f"INSERT INTO namespaces ({', '.join(_NAMESPACE_COLUMNS)}) VALUES ({_placeholders(4)})",
            dataclasses.astuple(row),
        )

    async def list_namespaces(self) -> list[NamespaceRow]:
        return await self._all(NamespaceRow, f"SELECT {', '.join(_NAMESPACE_COLUMNS)} FROM namespaces ORDER BY name")

    # executions

    async def get_execution(self, namespace: str, run_id: str, *, for_update: bool = False) -> ExecutionRow | None:
        lock = self.for_update_clause if for_update else ""
        return await self._one(
            ExecutionRow, f"{_SELECT_EXECUTION} WHERE namespace = ? AND run_id = ?{lock}", (namespace, run_id)
        )

    async def get_latest_execution(self, namespace: str, workflow_id: str) -> ExecutionRow | None:
        return await self._one(
            ExecutionRow,
            f"{_SELECT_EXECUTION} WHERE namespace = ? AND workflow_id = ?"
            " ORDER BY CASE WHEN status = 'RUNNING' THEN 0 ELSE 1 END, start_us DESC, run_id DESC LIMIT 1",
            (namespace, workflow_id),
        )

    async def insert_execution(self, row: ExecutionRow) -> None:
        try:
            await self._execute(
                f"INSERT INTO executions ({', '.join(_EXECUTION_COLUMNS)})"
                f" VALUES ({_placeholders(len(_EXECUTION_COLUMNS))})",
                dataclasses.astuple(row),
            )
        except Exception as error:
            if self._is_unique_violation(error):
                raise DuplicateRunningExecution(row.workflow_id) from error
            raise

    async def update_execution(self, row: ExecutionRow, expected_version: int) -> None:
        row.version = expected_version + 1
        values = [getattr(row, c) for c in _EXECUTION_UPDATE_COLUMNS]
        changed = await self._execute(_UPDATE_EXECUTION, (*values, row.namespace, row.run_id, expected_version))
        if changed != 1:
            raise ConcurrencyConflict(row.run_id)

    async def get_request_run_id(self, namespace: str, request_id: str) -> str | None:
        record = await self._fetchone(
            "SELECT run_id FROM request_ids WHERE namespace = ? AND request_id = ?", (namespace, request_id)
        )
        return None if record is None else record[0]

    async def insert_request_id(self, namespace: str, request_id: str, run_id: str, now_us: int) -> None:
        await self._execute(
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
            ordered = sorted(run_ids)
            for start in range(0, len(ordered), _KEYS_PER_SELECT):
                chunk = ordered[start : start + _KEYS_PER_SELECT]
                rows += await self._all(
                    ExecutionRow,
                    f"{_SELECT_EXECUTION} WHERE namespace = ? AND run_id IN ({_placeholders(len(chunk))})"
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
        if updates and await self._update_executions(columns, params) != len(updates):
            raise ConcurrencyConflict(f"one of {len(updates)} executions changed concurrently")

    async def append_run_events(self, batches: list[tuple[str, str, list[HistoryEventRow]]]) -> None:
        rows = [
            (namespace, run_id, event.event_id, event.event_type, event.event_us, event.attributes)
            for namespace, run_id, events in batches
            for event in events
        ]
        if rows:
            await self._insert_many("history_events", EVENT_INSERT_FIELDS, rows)

    async def insert_tasks(self, rows: list[TaskRow]) -> None:
        if rows:
            await self._insert_many(
                "tasks", TASK_INSERT_FIELDS, [[getattr(row, name) for name, _ in TASK_INSERT_FIELDS] for row in rows]
            )

    # tasks

    async def insert_task(self, row: TaskRow) -> int:
        record = await self._fetchone(_INSERT_TASK, [getattr(row, c) for c in _TASK_INSERT_COLUMNS])
        assert record is not None
        row.task_id = int(record[0])
        return row.task_id

    async def get_task(self, task_id: int, *, for_update: bool = False) -> TaskRow | None:
        lock = self.for_update_clause if for_update else ""
        return await self._one(TaskRow, f"{_SELECT_TASK} WHERE task_id = ?{lock}", (task_id,))

    async def get_activity_task(self, run_id: str, activity_id: str) -> TaskRow | None:
        return await self._one(
            TaskRow,
            f"{_SELECT_TASK} WHERE run_id = ? AND kind = 'ACTIVITY' AND activity_id = ?{self.for_update_clause}",
            (run_id, activity_id),
        )

    async def list_run_tasks(self, namespace: str, run_id: str) -> list[TaskRow]:
        return await self._all(
            TaskRow, f"{_SELECT_TASK} WHERE namespace = ? AND run_id = ? ORDER BY task_id", (namespace, run_id)
        )

    async def lease_next_task(self, namespace: str, kind: str, task_queue: str, now_us: int) -> TaskRow | None:
        return await self._one(
            TaskRow,
            f"{_SELECT_TASK} WHERE namespace = ? AND kind = ? AND task_queue = ? AND state = 'PENDING'"
            f" AND visible_us <= ? ORDER BY visible_us, task_id LIMIT 1{self.skip_locked_clause}",
            (namespace, kind, task_queue, now_us),
        )

    async def has_visible_task(self, namespace: str, kind: str, task_queue: str, now_us: int) -> bool:
        return await self.count_visible_tasks(namespace, kind, task_queue, now_us, 1) > 0

    async def count_visible_tasks(self, namespace: str, kind: str, task_queue: str, now_us: int, limit: int) -> int:
        record = await self._fetchone(
            "SELECT COUNT(*) FROM (SELECT 1 FROM tasks WHERE namespace = ? AND kind = ? AND task_queue = ?"
            " AND state = 'PENDING' AND visible_us <= ? LIMIT ?) AS visible",
            (namespace, kind, task_queue, now_us, limit),
        )
        assert record is not None
        return int(record[0])

    async def update_task(self, row: TaskRow) -> None:
        await self._execute(_UPDATE_TASK, (*[getattr(row, c) for c in _TASK_INSERT_COLUMNS], row.task_id))

    async def delete_task(self, task_id: int) -> bool:
        return await self._execute("DELETE FROM tasks WHERE task_id = ?", (task_id,)) == 1

    async def delete_run_tasks(self, run_id: str) -> None:
        await self._execute("DELETE FROM tasks WHERE run_id = ?", (run_id,))

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

    # timers

    async def insert_timer(self, row: TimerRow) -> None:
        await self._execute(
            f"INSERT INTO timers ({', '.join(_TIMER_COLUMNS)}) VALUES ({_placeholders(5)})",
            dataclasses.astuple(row),
        )

    async def delete_timer(self, run_id: str, timer_id: str) -> TimerRow | None:
        return await self._one(
            TimerRow,
            f"DELETE FROM timers WHERE run_id = ? AND timer_id = ? RETURNING {', '.join(_TIMER_COLUMNS)}",
            (run_id, timer_id),
        )

    async def delete_run_timers(self, run_id: str) -> None:
        await self._execute("DELETE FROM timers WHERE run_id = ?", (run_id,))

    async def due_timers(self, now_us: int, limit: int) -> list[TimerRow]:
        return await self._all(
            TimerRow,
            f"SELECT {', '.join(_TIMER_COLUMNS)} FROM timers WHERE fire_us <= ? ORDER BY fire_us LIMIT ?",
            (now_us, limit),
        )

    async def claim_due_timers(self, now_us: int, limit: int) -> list[TimerRow]:
        return await self._all(
            TimerRow,
            f"DELETE FROM timers WHERE (run_id, timer_id) IN (SELECT run_id, timer_id FROM timers WHERE fire_us <= ?"
            f" ORDER BY fire_us LIMIT ?{self.skip_locked_clause}) RETURNING {', '.join(_TIMER_COLUMNS)}",
            (now_us, limit),
        )

    async def expired_run_ids(self, now_us: int, limit: int) -> list[tuple[str, str]]:
        records = await self._fetchall(
            "SELECT namespace, run_id FROM executions WHERE status = 'RUNNING' AND deadline_us IS NOT NULL"
            " AND deadline_us <= ? ORDER BY deadline_us LIMIT ?",
            (now_us, limit),
        )
        return [(r[0], r[1]) for r in records]

    async def next_deadline_us(self) -> int | None:
        candidates = []
        for sql in (
            "SELECT MIN(lease_expires_us) FROM tasks WHERE state = 'LEASED'",
            "SELECT MIN(pending_deadline_us) FROM tasks WHERE state = 'PENDING' AND pending_deadline_us IS NOT NULL",
            "SELECT MIN(fire_us) FROM timers",
            "SELECT MIN(deadline_us) FROM executions WHERE status = 'RUNNING' AND deadline_us IS NOT NULL",
        ):
            record = await self._fetchone(sql)
            if record is not None and record[0] is not None:
                candidates.append(int(record[0]))
        return min(candidates) if candidates else None

    # queries (signals and queries feature)

    async def insert_query(self, row: QueryRow) -> int:
        record = await self._fetchone(
            f"INSERT INTO workflow_queries ({', '.join(_QUERY_INSERT_COLUMNS)})"
            f" VALUES ({_placeholders(len(_QUERY_INSERT_COLUMNS))}) RETURNING query_id",
            [getattr(row, c) for c in _QUERY_INSERT_COLUMNS],
        )
        assert record is not None
        row.query_id = int(record[0])
        return row.query_id

    async def get_query(self, namespace: str, query_id: int, *, for_update: bool = False) -> QueryRow | None:
        lock = self.for_update_clause if for_update else ""
        return await self._one(
            QueryRow, f"{_SELECT_QUERY} WHERE namespace = ? AND query_id = ?{lock}", (namespace, query_id)
        )

    async def lease_next_query(self, namespace: str, task_queue: str, now_us: int) -> QueryRow | None:
        return await self._one(
            QueryRow,
            f"{_SELECT_QUERY} WHERE namespace = ? AND task_queue = ? AND state = 'PENDING' AND visible_us <= ?"
            f" ORDER BY visible_us, query_id LIMIT 1{self.skip_locked_clause}",
            (namespace, task_queue, now_us),
        )

    async def has_visible_query(self, namespace: str, task_queue: str, now_us: int) -> bool:
        return (
            await self._fetchone(
                "SELECT 1 FROM workflow_queries WHERE namespace = ? AND task_queue = ? AND state = 'PENDING'"
                " AND visible_us <= ? LIMIT 1",
                (namespace, task_queue, now_us),
            )
            is not None
        )

    async def update_query(self, row: QueryRow) -> None:
        columns = [c for c in _QUERY_COLUMNS if c not in ("query_id", "namespace")]
        await self._execute(
            f"UPDATE workflow_queries SET {', '.join(f'{c} = ?' for c in columns)} WHERE namespace = ? AND query_id = ?",
            (*[getattr(row, c) for c in columns], row.namespace, row.query_id),
        )

    async def delete_query(self, namespace: str, query_id: int) -> None:
        await self._execute("DELETE FROM workflow_queries WHERE namespace = ? AND query_id = ?", (namespace, query_id))

    async def delete_expired_queries(self, now_us: int) -> None:
        await self._execute("DELETE FROM workflow_queries WHERE expires_us < ?", (now_us,))

    # time skipping (flowforge.testing)

    async def earliest_work_due_us(self) -> int | None:
        record = await self._fetchone(
            "SELECT MIN(due_us) FROM ("
            " SELECT CASE WHEN state = 'LEASED' THEN 0 ELSE visible_us END AS due_us FROM tasks"
            " UNION ALL SELECT 0 FROM workflow_queries WHERE state = 'PENDING'"
            ") AS work"
        )
        return None if record is None or record[0] is None else int(record[0])

    # child workflows

    async def insert_child_execution(self, row: ChildExecutionRow) -> None:
        await self._execute(
            f"INSERT INTO child_executions ({', '.join(_CHILD_COLUMNS)}) VALUES ({_placeholders(len(_CHILD_COLUMNS))})",
            dataclasses.astuple(row),
        )

    async def get_child_execution(self, namespace: str, run_id: str) -> ChildExecutionRow | None:
        return await self._one(
            ChildExecutionRow, f"{_SELECT_CHILD} WHERE namespace = ? AND run_id = ?", (namespace, run_id)
        )

    async def list_child_executions(self, namespace: str, parent_run_id: str) -> list[ChildExecutionRow]:
        return await self._all(
            ChildExecutionRow,
            f"{_SELECT_CHILD} WHERE namespace = ? AND parent_run_id = ? ORDER BY initiated_event_id",
            (namespace, parent_run_id),
        )

    async def delete_child_execution(self, namespace: str, parent_run_id: str, initiated_event_id: int) -> bool:
        return (
            await self._execute(
                "DELETE FROM child_executions WHERE namespace = ? AND parent_run_id = ? AND initiated_event_id = ?",
                (namespace, parent_run_id, initiated_event_id),
            )
            == 1
        )

    async def move_child_execution(self, namespace: str, run_id: str, new_run_id: str) -> None:
        await self._execute(
            "UPDATE child_executions SET run_id = ? WHERE namespace = ? AND run_id = ?", (new_run_id, namespace, run_id)
        )

    # metadata

    async def get_metadata(self, key: str) -> str | None:
        record = await self._fetchone("SELECT value FROM server_metadata WHERE key = ?", (key,))
        return None if record is None else record[0]

    async def set_metadata_if_absent(self, key: str, value: str) -> None:
        await self._execute(
            "INSERT INTO server_metadata (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING", (key, value)
        )

    # event triggers

    async def insert_event_trigger(self, row: EventTriggerRow) -> bool:
        # ON CONFLICT instead of catching the violation: on PostgreSQL a failed
        # statement would abort the whole transaction.
        return bool(
            await self._fetchall(
                f"INSERT INTO event_triggers ({', '.join(_EVENT_TRIGGER_COLUMNS)})"
                f" VALUES ({_placeholders(len(_EVENT_TRIGGER_COLUMNS))})"
                " ON CONFLICT (namespace, trigger_id) DO NOTHING RETURNING trigger_id",
                dataclasses.astuple(row),
            )
        )

    async def get_event_trigger(self, namespace: str, trigger_id: str) -> EventTriggerRow | None:
        return await self._one(
            EventTriggerRow,
            f"SELECT {', '.join(_EVENT_TRIGGER_COLUMNS)} FROM event_triggers WHERE namespace = ? AND trigger_id = ?",
            (namespace, trigger_id),
        )

    async def list_event_triggers(
        self, namespace: str, *, limit: int, after_trigger_id: str, event_type: str | None = None
    ) -> list[EventTriggerRow]:
        where, params = ["namespace = ?", "trigger_id > ?"], [namespace, after_trigger_id]
        if event_type is not None:
            where.append("event_type = ?")
            params.append(event_type)
        return await self._all(
            EventTriggerRow,
            f"SELECT {', '.join(_EVENT_TRIGGER_COLUMNS)} FROM event_triggers WHERE {' AND '.join(where)}"
            " ORDER BY trigger_id LIMIT ?",
            (*params, limit),
        )

    async def delete_event_trigger(self, namespace: str, trigger_id: str) -> bool:
        return bool(
            await self._execute(
                "DELETE FROM event_triggers WHERE namespace = ? AND trigger_id = ?", (namespace, trigger_id)
            )
        )

    async def claim_event(self, namespace: str, source: str, event_id: str, now_us: int, expires_us: int) -> bool:
        # _fetchall: a RETURNING statement is stepped to its end before the commit.
        return bool(
            await self._fetchall(
                "INSERT INTO event_dedupe (namespace, source, event_id, publish_us, expires_us, outcome)"
                " VALUES (?, ?, ?, ?, ?, '[]')"
                " ON CONFLICT (namespace, source, event_id) DO UPDATE"
                " SET publish_us = excluded.publish_us, expires_us = excluded.expires_us, outcome = '[]'"
                " WHERE event_dedupe.expires_us <= excluded.publish_us"
                " RETURNING event_id",
                (namespace, source, event_id, now_us, expires_us),
            )
        )

    async def set_event_outcome(self, namespace: str, source: str, event_id: str, outcome: str) -> None:
        await self._execute(
            "UPDATE event_dedupe SET outcome = ? WHERE namespace = ? AND source = ? AND event_id = ?",
            (outcome, namespace, source, event_id),
        )

    async def get_event_dedupe(self, namespace: str, source: str, event_id: str) -> EventDedupeRow | None:
        return await self._one(
            EventDedupeRow,
            f"SELECT {', '.join(_EVENT_DEDUPE_COLUMNS)} FROM event_dedupe"
            " WHERE namespace = ? AND source = ? AND event_id = ?",
            (namespace, source, event_id),
        )

    async def delete_expired_event_dedupe(self, now_us: int, limit: int) -> int:
        return await self._execute(
            "DELETE FROM event_dedupe WHERE (namespace, source, event_id) IN"
            " (SELECT namespace, source, event_id FROM event_dedupe WHERE expires_us <= ?"
            " ORDER BY expires_us LIMIT ?)",
            (now_us, limit),
        )

    # schedules and leader leases

    async def get_schedule(self, namespace: str, schedule_id: str) -> ScheduleRow | None:
        return await self._one(
            ScheduleRow, f"{_SELECT_SCHEDULE} WHERE namespace = ? AND schedule_id = ?", (namespace, schedule_id)
        )

    async def insert_schedule(self, row: ScheduleRow) -> bool:
        return (
            await self._execute(
                f"INSERT INTO schedules ({', '.join(_SCHEDULE_COLUMNS)})"
                f" VALUES ({_placeholders(len(_SCHEDULE_COLUMNS))}) ON CONFLICT (namespace, schedule_id) DO NOTHING",
                dataclasses.astuple(row),
            )
            == 1
        )

    async def update_schedule(self, row: ScheduleRow, expected_version: int, fencing_token: int | None) -> None:
        columns = [c for c in _SCHEDULE_COLUMNS if c not in ("namespace", "schedule_id", "version", "fencing_token")]
        sql = (
            f"UPDATE schedules SET {', '.join(f'{c} = ?' for c in columns)}, version = ?, fencing_token = ?"
            " WHERE namespace = ? AND schedule_id = ? AND version = ?"
        )
        params: list[Any] = [getattr(row, c) for c in columns]
        params += [expected_version + 1, fencing_token if fencing_token is not None else row.fencing_token]
        params += [row.namespace, row.schedule_id, expected_version]
        if fencing_token is not None:
            # Checked by the statement that writes, against the newest committed lease.
            sql += " AND fencing_token <= ? AND ? >= (SELECT fencing_token FROM leases WHERE name = ?)"
            params += [fencing_token, fencing_token, _SCHEDULER_LEASE]
        if await self._execute(sql, params) == 1:
            row.version = expected_version + 1
            if fencing_token is not None:
                row.fencing_token = fencing_token
            return
        current = await self.get_schedule(row.namespace, row.schedule_id)
        if current is not None and current.version == expected_version and fencing_token is not None:
            raise FencingTokenRejected(f"fencing token {fencing_token} is stale")
        raise ConcurrencyConflict(row.schedule_id)

    async def delete_schedule(self, namespace: str, schedule_id: str) -> bool:
        return (
            await self._execute(
                "DELETE FROM schedules WHERE namespace = ? AND schedule_id = ?", (namespace, schedule_id)
            )
            == 1
        )

    async def list_schedules(self, namespace: str, *, after: str, limit: int) -> list[ScheduleRow]:
        return await self._all(
            ScheduleRow,
            f"{_SELECT_SCHEDULE} WHERE namespace = ? AND schedule_id > ? ORDER BY schedule_id LIMIT ?",
            (namespace, after, limit),
        )

    async def due_schedules(self, now_us: int, limit: int) -> list[tuple[str, str]]:
        records = await self._fetchall(
            "SELECT namespace, schedule_id FROM schedules WHERE next_action_us IS NOT NULL AND next_action_us <= ?"
            " ORDER BY next_action_us LIMIT ?",
            (now_us, limit),
        )
        return [(r[0], r[1]) for r in records]

    async def next_schedule_action_us(self) -> int | None:
        record = await self._fetchone("SELECT MIN(next_action_us) FROM schedules WHERE next_action_us IS NOT NULL")
        return None if record is None or record[0] is None else int(record[0])

    async def get_lease(self, name: str) -> LeaseRow | None:
        return await self._one(LeaseRow, f"SELECT {', '.join(_LEASE_COLUMNS)} FROM leases WHERE name = ?", (name,))

    async def acquire_lease(self, name: str, holder: str, now_us: int, ttl_us: int) -> LeaseRow | None:
        if await self._execute(
            f"INSERT INTO leases ({', '.join(_LEASE_COLUMNS)}) VALUES (?, ?, 1, ?, ?) ON CONFLICT (name) DO NOTHING",
            (name, holder, now_us, now_us + ttl_us),
        ):
            return await self.get_lease(name)
        return await self._one(
            LeaseRow,
            "UPDATE leases SET holder = ?, fencing_token = fencing_token + 1, acquired_us = ?, expires_us = ?"
            f" WHERE name = ? AND expires_us <= ? RETURNING {', '.join(_LEASE_COLUMNS)}",
            (holder, now_us, now_us + ttl_us, name, now_us),
        )

    async def renew_lease(self, name: str, holder: str, fencing_token: int, expires_us: int) -> bool:
        return (
            await self._execute(
                "UPDATE leases SET expires_us = ? WHERE name = ? AND holder = ? AND fencing_token = ?",
                (expires_us, name, holder, fencing_token),
            )
            == 1
        )

    # visibility (docs/visibility.md): the condition is compiled by
    # flowforge.server.visibility and carries its values as parameters.

    async def list_executions(
        self, namespace: str, condition: CompiledQuery, *, limit: int, before: tuple[int, str] | None
    ) -> list[ExecutionRow]:
        return await self._all(ExecutionRow, *list_executions_sql(namespace, condition, limit=limit, before=before))

    async def count_executions(self, namespace: str, condition: CompiledQuery) -> int:
        record = await self._fetchone(
            f"SELECT COUNT(*) FROM executions e WHERE e.namespace = ? AND ({condition.where})",
            (namespace, *condition.params),
        )
        return int(record[0]) if record is not None else 0

    async def get_search_attribute_types(self, namespace: str) -> dict[str, str]:
        records = await self._fetchall(
            "SELECT name, value_type FROM search_attribute_types WHERE namespace = ?", (namespace,)
        )
        return {r[0]: r[1] for r in records}

    async def insert_search_attribute_type(self, namespace: str, name: str, value_type: str, now_us: int) -> None:
        await self._execute(
            "INSERT INTO search_attribute_types (namespace, name, value_type, create_us) VALUES (?, ?, ?, ?)",
            (namespace, name, value_type, now_us),
        )

    async def set_search_attributes(self, namespace: str, run_id: str, values: dict[str, StoredValue]) -> None:
        if not values:
            return
        row = f"({_placeholders(3 + len(_STORED_VALUE_COLUMNS))})"
        await self._execute(
            f"INSERT INTO search_attributes (namespace, run_id, name, {', '.join(_STORED_VALUE_COLUMNS)})"
            f" VALUES {', '.join(row for _ in values)} ON CONFLICT (run_id, name) DO UPDATE SET"
            f" {', '.join(f'{c} = excluded.{c}' for c in _STORED_VALUE_COLUMNS)}",
            [
                x
                for name, value in sorted(values.items())
                for x in (namespace, run_id, name, *dataclasses.astuple(value))
            ],
        )

    async def delete_search_attribute(self, run_id: str, name: str) -> None:
        await self._execute("DELETE FROM search_attributes WHERE run_id = ? AND name = ?", (run_id, name))

    async def get_search_attributes(self, namespace: str, run_ids: list[str]) -> dict[str, dict[str, StoredValue]]:
        found: dict[str, dict[str, StoredValue]] = {}
        if not run_ids:
            return found
        records = await self._fetchall(
            f"SELECT run_id, name, {', '.join(_STORED_VALUE_COLUMNS)} FROM search_attributes"
            f" WHERE namespace = ? AND run_id IN ({_placeholders(len(run_ids))})",
            (namespace, *run_ids),
        )
        for run_id, name, *values in records:
            found.setdefault(run_id, {})[name] = StoredValue(*values)
        return found

    async def insert_memo(self, namespace: str, run_id: str, memo: bytes) -> None:
        await self._execute("INSERT INTO memos (namespace, run_id, memo) VALUES (?, ?, ?)", (namespace, run_id, memo))

    async def get_memos(self, namespace: str, run_ids: list[str]) -> dict[str, bytes]:
        if not run_ids:
            return {}
        records = await self._fetchall(
            f"SELECT run_id, memo FROM memos WHERE namespace = ? AND run_id IN ({_placeholders(len(run_ids))})",
            (namespace, *run_ids),
        )
        return {r[0]: bytes(r[1]) for r in records}
