"""The storage contract's transaction, split by concern.

Each concern is an abstract class of the operations on its tables; :class:`Transaction`
combines them. The SQL stores implement each concern in a mixin of
:mod:`flowforge.server.stores._sql`.
"""

from __future__ import annotations

import abc
from typing import Any

from flowforge.server.stores.rows import (
    ActivityAttemptRow,
    ApiKeyRow,
    AuditRow,
    BatchJobRow,
    BreakerRow,
    ChildExecutionRow,
    CompiledQuery,
    ConcurrencyLimitRow,
    DagAliasRow,
    DagRunTaskRow,
    DagVersionRow,
    DeadLetterFilter,
    DeadLetterRow,
    EventDedupeRow,
    EventTriggerRow,
    ExecutionRow,
    HistoryEventRow,
    LeaseRow,
    LifecycleOutboxRow,
    NamespaceRow,
    QueryRow,
    RateLimitRow,
    ScheduleRow,
    StoredValue,
    TaskQueueBacklogRow,
    TaskRow,
    TimerRow,
)

__all__ = [
    "AccessOperations",
    "ActivityRecordOperations",
    "BatchOperations",
    "BreakerOperations",
    "DagOperations",
    "ExecutionOperations",
    "FlowControlOperations",
    "LeaseOperations",
    "LifecycleOutboxOperations",
    "LimitOperations",
    "LineageOperations",
    "NamespaceOperations",
    "QueryOperations",
    "RetentionOperations",
    "ScheduleOperations",
    "TaskOperations",
    "TimerOperations",
    "Transaction",
    "TriggerOperations",
    "VisibilityOperations",
]


class NamespaceOperations(abc.ABC):
    """Namespaces, and the server's own metadata (schema version, token secret)."""

    @abc.abstractmethod
    async def get_namespace(self, name: str, *, for_update: bool = False) -> NamespaceRow | None:
        """The namespace; ``for_update`` locks its row until commit (PostgreSQL), which
        serializes the quota checks of concurrent admissions on every replica."""

    @abc.abstractmethod
    async def insert_namespace(self, row: NamespaceRow) -> None: ...

    @abc.abstractmethod
    async def update_namespace(self, row: NamespaceRow) -> None:
        """Writes every column of the namespace ``row.name``."""

    @abc.abstractmethod
    async def list_namespaces(self) -> list[NamespaceRow]: ...

    @abc.abstractmethod
    async def count_running_executions(self, namespace: str, limit: int) -> int:
        """How many runs of the namespace are running, counting at most ``limit``."""

    @abc.abstractmethod
    async def count_leased_tasks(self, namespace: str, kind: str, limit: int) -> int:
        """How many tasks of ``kind`` the namespace has leased, counting at most ``limit``."""

    @abc.abstractmethod
    async def get_metadata(self, key: str) -> str | None: ...

    @abc.abstractmethod
    async def set_metadata_if_absent(self, key: str, value: str) -> None: ...


class ActivityRecordOperations(abc.ABC):
    """Every activity attempt on record, and the dead-letter store (docs/operations.md)."""

    @abc.abstractmethod
    async def insert_activity_attempt(self, row: ActivityAttemptRow) -> None: ...

    @abc.abstractmethod
    async def list_activity_attempts(
        self, namespace: str, run_id: str, scheduled_event_id: int | None = None
    ) -> list[ActivityAttemptRow]:
        """The run's attempts (of one activity, by its scheduled event), in order."""

    @abc.abstractmethod
    async def insert_dead_letter(self, row: DeadLetterRow) -> None: ...

    @abc.abstractmethod
    async def get_dead_letter(self, namespace: str, dead_letter_id: str) -> DeadLetterRow | None: ...

    @abc.abstractmethod
    async def get_run_dead_letters(self, run_id: str, activity_ids: list[str]) -> list[DeadLetterRow]:
        """The run's dead letters of these activities."""

    @abc.abstractmethod
    async def list_dead_letters(
        self, namespace: str, selection: DeadLetterFilter, limit: int, *, after: tuple[int, str] | None = None
    ) -> list[DeadLetterRow]:
        """The namespace's dead letters ``selection`` matches, oldest first, after the
        (dead_lettered_us, id) ``after`` if given."""

    @abc.abstractmethod
    async def dead_letter_depths(self, namespace: str | None = None) -> list[tuple[str, str, int]]:
        """(namespace, activity_type, count) of the waiting dead letters."""

    @abc.abstractmethod
    async def delete_dead_letter(self, dead_letter_id: str) -> bool:
        """Deletes it; False if it was gone already."""

    @abc.abstractmethod
    async def delete_run_dead_letters(self, run_ids: list[str]) -> None:
        """Deletes the dead letters of runs that closed."""


class BatchOperations(abc.ABC):
    """Batch jobs (docs/operations.md)."""

    @abc.abstractmethod
    async def insert_batch_job(self, row: BatchJobRow) -> None: ...

    @abc.abstractmethod
    async def get_batch_job(self, namespace: str, job_id: str, *, for_update: bool = False) -> BatchJobRow | None: ...

    @abc.abstractmethod
    async def update_batch_job(self, row: BatchJobRow) -> None:
        """Writes its state, counts, cursor and update time."""

    @abc.abstractmethod
    async def list_batch_jobs(self, namespace: str, limit: int) -> list[BatchJobRow]:
        """The namespace's jobs, newest first."""

    @abc.abstractmethod
    async def running_batch_jobs(self, limit: int) -> list[BatchJobRow]:
        """Jobs of every namespace still running, oldest first."""


class RetentionOperations(abc.ABC):
    """Purging closed executions past their namespace's retention."""

    @abc.abstractmethod
    async def closed_runs_before(self, namespace: str, close_before_us: int, limit: int) -> list[str]:
        """Run ids of the namespace's runs closed before ``close_before_us``, oldest first."""

    @abc.abstractmethod
    async def purge_runs(self, namespace: str, run_ids: list[str]) -> int:
        """Deletes the closed runs ``run_ids`` with everything kept for them (history,
        visibility, tasks, timers, request ids, queries, child rows, activity attempts and
        dead letters); returns how many executions were deleted. Running runs among them
        are left alone."""


class LimitOperations(abc.ABC):
    """What the per-execution limits measure (server/history/execution_limits.py)."""

    @abc.abstractmethod
    async def history_size(self, namespace: str, run_id: str) -> tuple[int, int]:
        """(events, bytes of their attributes) of the run's history."""

    @abc.abstractmethod
    async def count_run_events(self, namespace: str, run_id: str, event_type: str) -> int:
        """How many events of ``event_type`` the run's history holds."""

    @abc.abstractmethod
    async def count_run_tasks(self, run_id: str, kind: str, limit: int) -> int:
        """How many tasks of ``kind`` the run has (pending or leased), counting at most ``limit``."""

    @abc.abstractmethod
    async def count_child_executions(self, namespace: str, parent_run_id: str, limit: int) -> int:
        """How many children of the run are pending, counting at most ``limit``."""


class ExecutionOperations(abc.ABC):
    """Execution rows, their history events and idempotent-start request ids."""

    @abc.abstractmethod
    async def get_execution(self, namespace: str, run_id: str, *, for_update: bool = False) -> ExecutionRow | None:
        """The execution; ``for_update`` locks its row until commit (PostgreSQL), so a
        transaction that changes many executions waits for, rather than conflicts with,
        a concurrent writer of one of them."""

    @abc.abstractmethod
    async def get_latest_execution(self, namespace: str, workflow_id: str) -> ExecutionRow | None:
        """The running execution of ``workflow_id``, else its most recently started one."""

    @abc.abstractmethod
    async def insert_execution(self, row: ExecutionRow) -> None:
        """Raises :class:`DuplicateRunningExecution` if the workflow id has a running one."""

    @abc.abstractmethod
    async def update_execution(
        self, row: ExecutionRow, expected_version: int, changed: tuple[str, ...] | None = None
    ) -> None:
        """Writes ``row`` with ``version = expected_version + 1``; raises
        :class:`ConcurrencyConflict` if the stored version is not ``expected_version``.
        ``changed``: the columns that differ from the stored row (None: unknown); a
        store may write only those."""

    @abc.abstractmethod
    async def get_request_run_id(self, namespace: str, request_id: str) -> str | None: ...

    @abc.abstractmethod
    async def insert_request_id(self, namespace: str, request_id: str, run_id: str, now_us: int) -> None: ...

    @abc.abstractmethod
    async def append_events(self, namespace: str, run_id: str, events: list[HistoryEventRow]) -> None:
        """Inserts events; (run_id, event_id) is unique, so a duplicate id fails the transaction."""

    @abc.abstractmethod
    async def read_events(
        self, namespace: str, run_id: str, after_event_id: int = 0, limit: int | None = None
    ) -> list[HistoryEventRow]: ...

    # batched timer firing (issue 7): a batch's executions read, and their rows
    # written, with one statement per kind of row instead of several per timer

    @abc.abstractmethod
    async def lock_executions(self, keys: list[tuple[str, str]]) -> list[ExecutionRow]:
        """The executions of the (namespace, run_id) ``keys`` that exist, ordered by
        (namespace, run_id) and locked in that order until commit (PostgreSQL), so two
        transactions locking overlapping sets never wait on each other in a cycle."""

    @abc.abstractmethod
    async def update_executions(self, columns: tuple[str, ...], updates: list[tuple[ExecutionRow, int]]) -> None:
        """Writes ``columns`` of each (row, expected version) pair and bumps its version,
        in one batch: :meth:`update_execution` for rows whose other columns did not
        change (unwritten columns' indexes are left alone). Raises
        :class:`ConcurrencyConflict` if any stored version differs from its expected
        one (the transaction then commits nothing)."""

    @abc.abstractmethod
    async def append_run_events(self, batches: list[tuple[str, str, list[HistoryEventRow]]]) -> None:
        """:meth:`append_events` for several (namespace, run_id, events) at once."""


class TaskOperations(abc.ABC):
    """Workflow and activity task rows: the outbox that polls lease from."""

    @abc.abstractmethod
    async def insert_task(self, row: TaskRow) -> None:
        """Inserts a task row and sets its ``task_id``: at once, or (a store that sends
        writes together, PostgreSQL) by the transaction's next statement or its commit."""

    @abc.abstractmethod
    async def insert_tasks(self, rows: list[TaskRow]) -> None:
        """Inserts the task rows in one batch. Their ``task_id`` stays unset in memory:
        for tasks only polls will hand out; use :meth:`insert_task` for an id."""

    @abc.abstractmethod
    async def get_task(self, task_id: int, *, for_update: bool = False) -> TaskRow | None: ...

    @abc.abstractmethod
    async def get_activity_tasks(self, run_id: str, activity_ids: list[str]) -> list[TaskRow]:
        """The run's activity tasks of these activity ids (those that exist), locked until
        commit on PostgreSQL: one statement for all the ids a workflow task's commands name."""

    @abc.abstractmethod
    async def list_run_tasks(self, namespace: str, run_id: str) -> list[TaskRow]: ...

    @abc.abstractmethod
    async def lease_next_task(self, namespace: str, kind: str, task_queue: str, now_us: int) -> TaskRow | None:
        """Locks and returns the oldest visible pending task of a queue (skipping rows
        other transactions hold), or None. The caller then updates it to LEASED."""

    @abc.abstractmethod
    async def has_visible_task(self, namespace: str, kind: str, task_queue: str, now_us: int) -> bool:
        """Whether the queue has a pending task visible now: a cheap read that spares
        a write transaction to every poller woken for a task another one took."""

    @abc.abstractmethod
    async def count_visible_tasks(self, namespace: str, kind: str, task_queue: str, now_us: int, limit: int) -> int:
        """How many pending tasks of the queue are visible now, counting at most
        ``limit``: how many of the polls a commit woke can lease something."""

    @abc.abstractmethod
    async def visible_workflow_work(self, namespace: str, task_queue: str, now_us: int, limit: int) -> tuple[bool, int]:
        """Whether a query waits on the queue, and how many of its workflow tasks a poll
        could lease now (at most ``limit``): a poll's look, in one statement."""

    @abc.abstractmethod
    async def task_queue_backlogs(
        self, now_us: int, *, namespace: str | None = None, task_queue: str | None = None
    ) -> list[TaskQueueBacklogRow]:
        """Per (namespace, queue, kind): how many pending tasks are visible now and
        since when the oldest is; only queues with such tasks, optionally one namespace
        or queue (metrics gauges, DescribeTaskQueue)."""

    @abc.abstractmethod
    async def update_task(self, row: TaskRow) -> None:
        """Writes the task's state by ``task_id``. What the task is for (namespace, run,
        workflow, kind, queue, activity id and type) never changes and is not written."""

    @abc.abstractmethod
    async def delete_task(self, task_id: int) -> None: ...

    @abc.abstractmethod
    async def delete_run_tasks(self, run_id: str) -> None: ...

    @abc.abstractmethod
    async def expired_task_ids(self, now_us: int, limit: int) -> list[int]:
        """Leased tasks past their lease, and pending ones past their pending deadline."""

    @abc.abstractmethod
    async def earliest_work_due_us(self) -> int | None:
        """When the next task or query needs a worker, over every namespace: 0
        while any task is leased or any query awaits its answer (work in
        progress), else the earliest visible time of a pending task (now or past
        when one is ready, future during a retry backoff); None when there is
        no work at all."""


class FlowControlOperations(abc.ABC):
    """Fair dispatch passes and fleet-wide concurrency limits per key (docs/flow-control.md)."""

    @abc.abstractmethod
    async def assign_fair_passes(self, rows: list[TaskRow]) -> None:
        """Sets ``fair_pass`` of each new task that has a fairness key (stride scheduling):
        its key's pass, or the queue's virtual time if the key fell behind it, plus
        ``1 / fairness_weight``; the key's pass becomes that. Tasks without a key keep 0."""

    @abc.abstractmethod
    async def advance_fair_clock(self, namespace: str, kind: str, task_queue: str, fair_pass: float) -> None:
        """Moves the queue's virtual time up to ``fair_pass`` (a task of that pass was leased)."""

    @abc.abstractmethod
    async def lock_concurrency_limit(self, namespace: str, concurrency_key: str) -> int:
        """The key's max_running (0: no limit), its row locked until commit so leases
        and slot releases of the key take turns across replicas."""

    @abc.abstractmethod
    async def count_leased_with_key(self, namespace: str, concurrency_key: str) -> int:
        """How many tasks of the key are leased now."""

    @abc.abstractmethod
    async def held_tasks(self, namespace: str, concurrency_key: str, limit: int) -> list[TaskRow]:
        """Up to ``limit`` held tasks of the key in dispatch order (priority, pass, arrival)."""

    @abc.abstractmethod
    async def keys_with_held_tasks(self, limit: int) -> list[tuple[str, str]]:
        """(namespace, concurrency key) pairs that have held tasks, at most ``limit``."""

    @abc.abstractmethod
    async def set_concurrency_limit(self, namespace: str, concurrency_key: str, max_running: int, now_us: int) -> None:
        """Sets the key's limit; 0 removes it."""

    @abc.abstractmethod
    async def list_concurrency_limits(self, namespace: str) -> list[ConcurrencyLimitRow]:
        """The namespace's limits by key, with their leased (running) and held (waiting) counts."""

    @abc.abstractmethod
    async def lock_rate_limit(self, namespace: str, scope: str, name: str) -> RateLimitRow | None:
        """A rate limit's token bucket, its row locked until commit (None: no such limit)."""

    @abc.abstractmethod
    async def save_rate_tokens(self, namespace: str, scope: str, name: str, tokens: float, refill_us: int) -> None:
        """Stores a locked bucket's tokens and when they were refilled."""

    @abc.abstractmethod
    async def set_rate_limit(self, namespace: str, scope: str, name: str, per_second: float, now_us: int) -> None:
        """Sets a rate limit (0 removes it) and the namespace's count of rate limits."""

    @abc.abstractmethod
    async def list_rate_limits(self, namespace: str) -> list[RateLimitRow]:
        """The namespace's rate limits by scope and name."""


class BreakerOperations(abc.ABC):
    """Circuit breakers per activity type (docs/flow-control.md)."""

    @abc.abstractmethod
    async def lock_breaker(self, namespace: str, activity_type: str) -> BreakerRow | None:
        """The type's breaker, its row locked until commit (None: the type has none)."""

    @abc.abstractmethod
    async def save_breaker(self, row: BreakerRow) -> None:
        """Inserts or replaces a breaker row."""

    @abc.abstractmethod
    async def count_breakers(self, namespace: str) -> None:
        """Stores the namespace's count of breakers on its row."""

    @abc.abstractmethod
    async def release_breaker_holds(self, namespace: str, activity_type: str, held_until_us: int, now_us: int) -> None:
        """Makes the type's pending activity tasks held until ``held_until_us`` visible at ``now_us``."""

    @abc.abstractmethod
    async def list_breakers(self, namespace: str | None) -> list[BreakerRow]:
        """The namespace's breakers (None: every namespace's) by namespace and activity type."""


class TimerOperations(abc.ABC):
    """Durable timers and the deadlines the timekeeper sleeps until."""

    @abc.abstractmethod
    async def insert_timer(self, row: TimerRow) -> None: ...

    @abc.abstractmethod
    async def get_timers(self, run_id: str, timer_ids: list[str]) -> list[TimerRow]:
        """The run's pending timers of these ids (those that exist), locked until commit on
        PostgreSQL: one statement for all the ids a workflow task's commands name."""

    @abc.abstractmethod
    async def delete_timer(self, run_id: str, timer_id: str) -> TimerRow | None:
        """Deletes and returns the timer: the claim that makes firing happen once."""

    @abc.abstractmethod
    async def delete_run_timers(self, run_id: str) -> None: ...

    @abc.abstractmethod
    async def defer_timer(self, run_id: str, timer_id: str, fire_us: int) -> bool:
        """Moves a timer's due time to ``fire_us`` (a timer whose firing keeps failing
        is set aside so the others fire); False if there is no such timer."""

    @abc.abstractmethod
    async def due_timers(self, now_us: int, limit: int) -> list[TimerRow]: ...

    @abc.abstractmethod
    async def claim_due_timers(
        self, due_by_us: int, limit: int, window_us: int | None = None, now_us: int | None = None
    ) -> list[TimerRow]:
        """Deletes and returns up to ``limit`` timers due by ``due_by_us``, earliest
        first, skipping rows another transaction holds (``FOR UPDATE SKIP LOCKED`` on
        PostgreSQL), so the timekeepers of several replicas take disjoint batches. The
        delete is the claim: if the transaction rolls back, the timers are due again.
        With ``window_us``, the earliest timer must be due by ``due_by_us`` and the
        others within ``window_us`` after it or already due at ``now_us`` (a batch
        fired ahead of time commits when its last timer is due)."""

    @abc.abstractmethod
    async def timer_burst(self, within_us: int) -> tuple[int, int] | None:
        """(the earliest timer's due time, how many timers are due within ``within_us``
        after it), or None without timers: how much firing lies ahead."""

    @abc.abstractmethod
    async def expired_run_ids(self, now_us: int, limit: int) -> list[tuple[str, str]]:
        """(namespace, run_id) of running executions past their timeout."""

    @abc.abstractmethod
    async def next_deadline_us(self) -> int | None:
        """The earliest lease expiry, pending deadline, timer or execution deadline."""


class QueryOperations(abc.ABC):
    """Workflow queries in flight (table ``workflow_queries``)."""

    @abc.abstractmethod
    async def insert_query(self, row: QueryRow) -> int:
        """Inserts a query row and returns its id."""

    @abc.abstractmethod
    async def get_query(self, namespace: str, query_id: int, *, for_update: bool = False) -> QueryRow | None: ...

    @abc.abstractmethod
    async def lease_next_query(self, namespace: str, task_queue: str, now_us: int) -> QueryRow | None:
        """Locks and returns the oldest visible pending query of a task queue (skipping
        rows other transactions hold), or None. The caller then updates it."""

    @abc.abstractmethod
    async def has_visible_query(self, namespace: str, task_queue: str, now_us: int) -> bool: ...

    @abc.abstractmethod
    async def update_query(self, row: QueryRow) -> None: ...

    @abc.abstractmethod
    async def delete_query(self, namespace: str, query_id: int) -> None: ...

    @abc.abstractmethod
    async def delete_expired_queries(self, now_us: int) -> None:
        """Deletes the rows whose caller gave up without cleaning up (its server died)."""


class LineageOperations(abc.ABC):
    """Pending child workflows of a run, and where they moved when they continued as new."""

    @abc.abstractmethod
    async def insert_child_execution(self, row: ChildExecutionRow) -> None: ...

    @abc.abstractmethod
    async def get_lineage(
        self, namespace: str, run_id: str
    ) -> tuple[ChildExecutionRow | None, list[ChildExecutionRow]]:
        """In one statement: the run's own link to its parent (if the run is a pending
        child's current run) and the run's pending children, oldest first."""

    @abc.abstractmethod
    async def list_child_executions(self, namespace: str, parent_run_id: str) -> list[ChildExecutionRow]:
        """The pending children of a run, oldest first."""

    @abc.abstractmethod
    async def delete_child_execution(self, namespace: str, parent_run_id: str, initiated_event_id: int) -> bool: ...

    @abc.abstractmethod
    async def move_child_execution(self, namespace: str, run_id: str, new_run_id: str) -> None:
        """Points a pending child at the run it continued as."""


class TriggerOperations(abc.ABC):
    """Event triggers and the dedupe window of accepted events (docs/events.md)."""

    @abc.abstractmethod
    async def insert_event_trigger(self, row: EventTriggerRow) -> bool:
        """Inserts the trigger; False (and nothing written) if its id is taken."""

    @abc.abstractmethod
    async def get_event_trigger(self, namespace: str, trigger_id: str) -> EventTriggerRow | None: ...

    @abc.abstractmethod
    async def list_event_triggers(
        self, namespace: str, *, limit: int, after_trigger_id: str, event_type: str | None = None
    ) -> list[EventTriggerRow]:
        """Ordered by trigger id, those after ``after_trigger_id`` (a keyset cursor)."""

    @abc.abstractmethod
    async def delete_event_trigger(self, namespace: str, trigger_id: str) -> bool: ...

    @abc.abstractmethod
    async def claim_event(self, namespace: str, source: str, event_id: str, now_us: int, expires_us: int) -> bool:
        """Records an accepted event; False if a live (unexpired) row for it exists.

        Concurrent claims of one event serialize on the primary key: exactly one
        transaction gets True; the others wait for it and get False once it commits.
        An expired row is taken over as if it were absent."""

    @abc.abstractmethod
    async def set_event_outcome(self, namespace: str, source: str, event_id: str, outcome: str) -> None: ...

    @abc.abstractmethod
    async def get_event_dedupe(self, namespace: str, source: str, event_id: str) -> EventDedupeRow | None: ...

    @abc.abstractmethod
    async def delete_expired_event_dedupe(self, now_us: int, limit: int) -> int:
        """Deletes up to ``limit`` rows whose window ended; returns how many."""


class ScheduleOperations(abc.ABC):
    """Schedules (docs/schedules.md); scheduler writes are fenced by the ``scheduler`` lease."""

    @abc.abstractmethod
    async def get_schedule(self, namespace: str, schedule_id: str) -> ScheduleRow | None: ...

    @abc.abstractmethod
    async def insert_schedule(self, row: ScheduleRow) -> bool:
        """Inserts the schedule; False (nothing written) if the id is taken."""

    @abc.abstractmethod
    async def update_schedule(self, row: ScheduleRow, expected_version: int, fencing_token: int | None) -> None:
        """Writes ``row`` with ``version = expected_version + 1``.

        A scheduler write passes its ``fencing_token``: it is refused with
        :class:`FencingTokenRejected` if the token is lower than the ``scheduler``
        lease's current token or than the token that last wrote the row. API writes
        pass None and keep the row's token. Raises :class:`ConcurrencyConflict` if the
        stored version is not ``expected_version``.
        """

    @abc.abstractmethod
    async def delete_schedule(self, namespace: str, schedule_id: str) -> bool: ...

    @abc.abstractmethod
    async def list_schedules(self, namespace: str, *, after: str, limit: int) -> list[ScheduleRow]:
        """Schedules ordered by id, those after ``after`` (keyset cursor)."""

    @abc.abstractmethod
    async def due_schedules(self, now_us: int, limit: int) -> list[tuple[str, str]]:
        """(namespace, schedule_id) of schedules whose next action is due."""

    @abc.abstractmethod
    async def next_schedule_action_us(self) -> int | None: ...


class LeaseOperations(abc.ABC):
    """Leader leases with fencing tokens (the scheduler's leader election)."""

    @abc.abstractmethod
    async def get_lease(self, name: str) -> LeaseRow | None: ...

    @abc.abstractmethod
    async def acquire_lease(self, name: str, holder: str, now_us: int, ttl_us: int) -> LeaseRow | None:
        """Takes the lease if nobody holds it or its holder let it expire, with a
        fencing token one higher than the last; None if someone else holds it."""

    @abc.abstractmethod
    async def renew_lease(self, name: str, holder: str, fencing_token: int, expires_us: int) -> bool:
        """Extends the lease if ``holder`` still holds it with ``fencing_token``."""


class VisibilityOperations(abc.ABC):
    """Listing and counting runs, search attributes and memos (docs/visibility.md)."""

    @abc.abstractmethod
    async def list_executions(
        self, namespace: str, condition: CompiledQuery, *, limit: int, after: tuple[Any, ...] | None
    ) -> list[ExecutionRow]:
        """The runs matching ``condition`` in its order (newest first by default);
        ``after`` is the keyset cursor of the previous page: its last run's values of
        ``condition.order.key_columns``."""

    @abc.abstractmethod
    async def count_executions(self, namespace: str, condition: CompiledQuery) -> int: ...

    @abc.abstractmethod
    async def get_search_attribute_types(self, namespace: str) -> dict[str, str]:
        """The namespace's custom search attributes: name -> type (KEYWORD, INT, ...)."""

    @abc.abstractmethod
    async def insert_search_attribute_type(self, namespace: str, name: str, value_type: str, now_us: int) -> None: ...

    @abc.abstractmethod
    async def set_search_attributes(self, namespace: str, run_id: str, values: dict[str, StoredValue]) -> None:
        """Inserts or replaces the run's values of these attributes (one statement)."""

    @abc.abstractmethod
    async def delete_search_attribute(self, run_id: str, name: str) -> None: ...

    @abc.abstractmethod
    async def get_search_attributes(self, namespace: str, run_ids: list[str]) -> dict[str, dict[str, StoredValue]]:
        """run_id -> name -> value, for the given runs (runs without any are absent)."""

    @abc.abstractmethod
    async def insert_memo(self, namespace: str, run_id: str, memo: bytes) -> None: ...

    @abc.abstractmethod
    async def get_memos(self, namespace: str, run_ids: list[str]) -> dict[str, bytes]:
        """run_id -> serialized Memo, for the given runs that have one."""


class AccessOperations(abc.ABC):
    """API keys and the audit log."""

    @abc.abstractmethod
    async def insert_api_key(self, row: ApiKeyRow) -> None: ...

    @abc.abstractmethod
    async def get_api_key(self, key_id: str) -> ApiKeyRow | None: ...

    @abc.abstractmethod
    async def list_api_keys(self) -> list[ApiKeyRow]:
        """Every key, revoked and expired ones too, oldest first."""

    @abc.abstractmethod
    async def revoke_api_key(self, key_id: str, now_us: int) -> bool:
        """Marks the key revoked; False if there is no such key or it was revoked already."""

    @abc.abstractmethod
    async def has_active_admin_key(self, now_us: int) -> bool:
        """True if an unrevoked, unexpired ``admin`` key for ``'*'`` exists."""

    @abc.abstractmethod
    async def lock_audit_head(self) -> tuple[int, bytes]:
        """The last audit row's number and hash (0 and b"" for an empty log), locked
        until commit so appends of concurrent transactions queue behind each other."""

    @abc.abstractmethod
    async def append_audit_row(self, row: AuditRow) -> None:
        """Inserts ``row`` and moves the head to it (after :meth:`lock_audit_head`)."""

    @abc.abstractmethod
    async def list_audit_rows(self, *, after_seq: int, limit: int, newest_first: bool = False) -> list[AuditRow]:
        """Rows past ``after_seq`` (before it when ``newest_first``; 0 = from the end)."""

    @abc.abstractmethod
    async def audit_head(self) -> tuple[int, bytes]:
        """The head as :meth:`lock_audit_head` returns it, without locking."""


class LifecycleOutboxOperations(abc.ABC):
    """The outbox of workflow lifecycle events (migration 0009): rows are written by a
    trigger on ``history_events`` while the ``lifecycle_outbox`` metadata key is set."""

    #: The ``server_metadata`` key whose presence turns the outbox on.
    LIFECYCLE_OUTBOX_KEY = "lifecycle_outbox"

    @abc.abstractmethod
    async def read_lifecycle_outbox(self, limit: int) -> list[LifecycleOutboxRow]:
        """The oldest ``limit`` rows, in insertion order."""

    @abc.abstractmethod
    async def delete_lifecycle_outbox(self, sequences: list[int]) -> None:
        """Deletes relayed rows (unknown sequences are ignored)."""


class DagOperations(abc.ABC):
    """Declarative DAGs: versions, aliases and the join counters of DAG runs (docs/dags.md)."""

    @abc.abstractmethod
    async def insert_dag_version(self, row: DagVersionRow) -> bool:
        """Inserts the version; False (and nothing written) if that digest is stored already."""

    @abc.abstractmethod
    async def get_dag_version(self, namespace: str, digest: str) -> DagVersionRow | None: ...

    @abc.abstractmethod
    async def list_dag_versions(self, namespace: str, name: str | None, limit: int) -> list[DagVersionRow]:
        """Newest first, of one DAG or of all."""

    @abc.abstractmethod
    async def delete_dag_version(self, namespace: str, digest: str) -> bool: ...

    @abc.abstractmethod
    async def dag_version_running(self, namespace: str, digest: str) -> bool:
        """Whether a running execution executes that version."""

    @abc.abstractmethod
    async def set_dag_alias(self, row: DagAliasRow) -> str | None:
        """Points the alias at ``row.digest``; returns the digest it pointed at before, if any."""

    @abc.abstractmethod
    async def get_dag_alias(self, namespace: str, name: str, alias: str) -> str | None:
        """The digest the alias points at."""

    @abc.abstractmethod
    async def list_dag_aliases(self, namespace: str, name: str | None) -> list[DagAliasRow]: ...

    @abc.abstractmethod
    async def insert_dag_run_tasks(self, rows: list[DagRunTaskRow]) -> None: ...

    @abc.abstractmethod
    async def get_dag_run_tasks(self, run_id: str) -> list[DagRunTaskRow]: ...

    @abc.abstractmethod
    async def update_dag_run_task(self, row: DagRunTaskRow) -> None:
        """Writes the task's counter and event ids."""

    @abc.abstractmethod
    async def delete_dag_run_tasks(self, run_id: str) -> None: ...


class Transaction(
    NamespaceOperations,
    AccessOperations,
    ExecutionOperations,
    TaskOperations,
    FlowControlOperations,
    BreakerOperations,
    TimerOperations,
    QueryOperations,
    LineageOperations,
    TriggerOperations,
    DagOperations,
    ScheduleOperations,
    LeaseOperations,
    VisibilityOperations,
    LifecycleOutboxOperations,
    RetentionOperations,
    ActivityRecordOperations,
    LimitOperations,
    BatchOperations,
):
    """The operations the engine performs inside one atomic transaction.

    Reads marked ``for_update`` lock the row until commit where the database has
    row locks (PostgreSQL); SQLite serializes writers, so it needs none.

    A write that returns nothing may be sent later, together with others, before the
    transaction's next statement or its commit (PostgreSQL): every read still sees it,
    and what it raises (:class:`ConcurrencyConflict` from a version check, a violated
    constraint) comes from that later call or the commit, inside the transaction.
    """

    def __init__(self) -> None:
        self.channels: set[str] = set()

    def notify_after_commit(self, channel: str) -> None:
        """Wakes the long-polls waiting on ``channel`` once this transaction commits."""
        self.channels.add(channel)

    async def send_writes(self) -> None:
        """Sends the writes waiting to go together now, so that the commit is all that is
        left (a transaction held open until a due time); a store that sends each write
        at once has none waiting."""
