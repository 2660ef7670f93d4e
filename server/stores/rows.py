"""The rows of the storage contract, one dataclass per table, and the plain types
visibility hands the stores (a compiled list query, a stored attribute value).

Field order is column order: the SQL stores build their statements from the fields.
State columns hold the values of the enums of :mod:`flowforge.api.schema` (``status``:
``ExecutionStatus``, ``wft_state``: ``WorkflowTaskState``, ``kind``: ``TaskKind``, a task's
``state``: ``TaskState``, a query's: ``QueryState``); the schema's CHECK constraints admit
exactly those (tests/integration/test_migrations.py).
"""

from __future__ import annotations

import dataclasses
from typing import Any

__all__ = [
    "ActivityAttemptRow",
    "ApiKeyRow",
    "AuditRow",
    "BatchJobRow",
    "BreakerRow",
    "ChildExecutionRow",
    "CompiledQuery",
    "ConcurrencyLimitRow",
    "DagAliasRow",
    "DagRunTaskRow",
    "DagVersionRow",
    "DeadLetterFilter",
    "DeadLetterRow",
    "EventDedupeRow",
    "EventTriggerRow",
    "ExecutionRow",
    "HistoryEventRow",
    "LeaseRow",
    "LifecycleOutboxRow",
    "ListOrder",
    "NamespaceRow",
    "QueryRow",
    "RateLimitRow",
    "ScheduleRow",
    "StoredValue",
    "TaskQueueBacklogRow",
    "TaskRow",
    "TimerRow",
]


# ------------------------------------------------------------- executions and tasks


@dataclasses.dataclass
class NamespaceRow:
    """A namespace (table ``namespaces``); ``retention_s`` keeps closed runs that long.

    The quotas (0: no limit) hold across replicas because they are checked against
    this row inside the transactions that admit work; ``start_tokens`` and
    ``start_tokens_us`` are the start-rate token bucket and its last refill.
    ``last_purge_us`` and ``purged_executions`` are the retention sweeper's record.
    """

    name: str
    description: str
    retention_s: int
    create_us: int
    max_running_executions: int = 0
    start_rate: float = 0.0
    start_tokens: float = 0.0
    start_tokens_us: int = 0
    max_concurrent_activities: int = 0
    last_purge_us: int | None = None
    purged_executions: int = 0
    rate_limits: int = 0
    """How many rate limits the namespace has (docs/flow-control.md)."""
    breakers: int = 0
    """How many circuit breakers the namespace has (docs/flow-control.md)."""


@dataclasses.dataclass
class ExecutionRow:
    """One run of a workflow (table ``executions``): its status, the next event id,
    the workflow-task state machine (``wft_*``) and the optimistic-concurrency ``version``."""

    namespace: str
    run_id: str
    workflow_id: str
    workflow_type: str
    task_queue: str
    status: str
    next_event_id: int
    version: int
    start_us: int
    close_us: int | None
    wft_state: str
    wft_attempt: int
    wft_scheduled_us: int | None
    wft_started_us: int | None
    wft_scheduled_event_id: int
    wft_started_event_id: int
    wft_timeout_s: float
    last_wft_failure: str | None
    buffered_events: str
    deadline_us: int | None
    deadline_kind: str | None
    cancel_requested: int
    dag_digest: str | None = None
    """The DAG version a declarative run executes (server/history/dag_runs.py); None for code."""
    paused: int = 0
    """1 while an operator holds the run (docs/operations.md): its queued tasks are held."""
    pause_note: str | None = None
    """While paused: JSON ``{"identity", "reason", "since_us"}``."""
    # Flow control (docs/flow-control.md): the run's priority, inherited by its tasks.
    priority_key: int = 3
    fairness_key: str = ""
    fairness_weight: float = 1.0


@dataclasses.dataclass
class HistoryEventRow:
    """One history event of a run; ``attributes`` is its JSON."""

    event_id: int
    event_type: str
    event_us: int
    attributes: str


@dataclasses.dataclass
class LifecycleOutboxRow:
    """A workflow lifecycle event waiting to be relayed (table ``lifecycle_outbox``)."""

    sequence: int
    namespace: str
    workflow_id: str
    workflow_type: str
    run_id: str
    event_id: int
    event_type: str
    event_us: int


@dataclasses.dataclass
class TaskRow:
    """A workflow or activity task (table ``tasks``, the transactional outbox)."""

    task_id: int | None
    namespace: str
    run_id: str
    workflow_id: str
    workflow_type: str
    kind: str
    task_queue: str
    state: str
    visible_us: int
    lease_expires_us: int | None
    fencing_token: int
    attempt: int
    scheduled_event_id: int
    activity_id: str | None
    activity_type: str | None
    input: bytes | None
    options: str
    scheduled_us: int
    started_us: int | None
    pending_deadline_us: int | None
    schedule_to_close_deadline_us: int | None
    last_heartbeat_us: int | None
    heartbeat_details: bytes | None
    last_failure: str | None
    retry_delays: str
    identity: str
    cancel_requested: int
    # Flow control (docs/flow-control.md): dispatch order and holds.
    priority_key: int = 3
    fairness_key: str = ""
    fairness_weight: float = 1.0
    fair_pass: float = 0.0
    concurrency_key: str | None = None
    held: str | None = None
    held_since_us: int | None = None


@dataclasses.dataclass
class TaskQueueBacklogRow:
    """The ready tasks of one queue and kind (an aggregate of ``tasks``, not a table)."""

    namespace: str
    task_queue: str
    kind: str
    ready: int
    oldest_visible_us: int


@dataclasses.dataclass
class ActivityAttemptRow:
    """One ended attempt of an activity (table ``activity_attempts``); ``outcome`` is
    ``completed``, ``failed``, ``timed_out`` or ``canceled``, ``failure`` JSON or None."""

    namespace: str
    run_id: str
    scheduled_event_id: int
    attempt: int
    activity_id: str
    activity_type: str
    identity: str
    started_us: int | None
    ended_us: int
    outcome: str
    failure: str | None


@dataclasses.dataclass
class BatchJobRow:
    """A batch operation over the executions a query matched (table ``batch_jobs``)."""

    id: str
    namespace: str
    operation: str
    """``cancel``, ``terminate``, ``signal``, ``reset`` or ``pause``."""
    query: str
    reason: str
    identity: str
    arguments: str
    """JSON: ``signal_name`` and ``input`` (base64 Payloads) for a signal, ``reset_type`` for a reset."""
    rps: float
    state: str
    """``RUNNING`` or ``COMPLETED``."""
    total: int
    done: int
    failed: int
    cursor_start_us: int | None
    cursor_run_id: str | None
    create_us: int
    update_us: int


@dataclasses.dataclass
class DeadLetterRow:
    """A parked activity (table ``dead_letters``): what it takes to schedule it again."""

    id: str
    namespace: str
    run_id: str
    workflow_id: str
    workflow_type: str
    activity_id: str
    activity_type: str
    task_queue: str
    scheduled_event_id: int
    attempt: int
    failure: str
    """The failure that parked it, as JSON."""
    error_type: str
    input: bytes | None
    options: str
    retry_delays: str
    dead_lettered_us: int


@dataclasses.dataclass(frozen=True)
class DeadLetterFilter:
    """Which dead letters of a namespace an operation applies to; empty matches all."""

    workflow_type: str = ""
    activity_type: str = ""
    error_type: str = ""
    workflow_id: str = ""
    dead_lettered_before_us: int | None = None


@dataclasses.dataclass
class TimerRow:
    """A durable timer a run started, due at ``fire_us``."""

    namespace: str
    run_id: str
    timer_id: str
    started_event_id: int
    fire_us: int


# --------------------------------------------------------------- event triggers


@dataclasses.dataclass
class EventTriggerRow:
    """A subscription: events of ``event_type`` passing ``filter`` start a workflow."""

    namespace: str
    trigger_id: str
    event_type: str
    filter: str
    """JSON list of canonical conditions (docs/events.md), all of which must hold."""
    input_paths: str
    """JSON list of event paths, one per workflow argument."""
    workflow_type: str
    task_queue: str
    workflow_id_prefix: str
    execution_timeout_s: float
    run_timeout_s: float
    task_timeout_s: float
    create_us: int


@dataclasses.dataclass
class EventDedupeRow:
    """An accepted event, live until ``expires_us``, and what it started."""

    namespace: str
    source: str
    event_id: str
    publish_us: int
    expires_us: int
    outcome: str
    """JSON list of ``{trigger_id, workflow_id, run_id, started}``."""


# ---------------------------------------------------------------- schedules


@dataclasses.dataclass
class ScheduleRow:
    """A schedule (docs/schedules.md); ``fencing_token`` is the token that last wrote it."""

    namespace: str
    schedule_id: str
    spec: str
    action: str
    policy: str
    paused: int
    note: str
    state: str
    cursor_us: int
    next_action_us: int | None
    create_us: int
    update_us: int
    version: int
    fencing_token: int


@dataclasses.dataclass
class LeaseRow:
    """A leader lease; ``fencing_token`` grows by one with every new holder."""

    name: str
    holder: str
    fencing_token: int
    acquired_us: int
    expires_us: int


# ------------------------------------------------------------------ queries


@dataclasses.dataclass
class QueryRow:
    """A query in flight (table ``workflow_queries``)."""

    query_id: int | None
    namespace: str
    run_id: str
    workflow_id: str
    workflow_type: str
    task_queue: str
    query_type: str
    args: bytes
    state: str
    visible_us: int
    fencing_token: int
    answer: bytes | None
    error: str | None
    create_us: int
    expires_us: int


@dataclasses.dataclass
class ChildExecutionRow:
    """A child workflow a run started that has not closed yet."""

    namespace: str
    parent_run_id: str
    initiated_event_id: int
    workflow_id: str
    run_id: str
    workflow_type: str
    parent_close_policy: str


# --------------------------------------------------------------- visibility


@dataclasses.dataclass(frozen=True)
class StoredValue:
    """One search attribute value as the columns of a ``search_attributes`` row hold it."""

    keyword_value: str | None = None
    int_value: int | None = None
    double_value: float | None = None
    datetime_us: int | None = None


@dataclasses.dataclass(frozen=True)
class ListOrder:
    """The order of a list (a query's ``ORDER BY``): one ``executions`` column, then
    ``start_us`` and ``run_id`` in the same direction, so every run has its own place
    and a keyset cursor (the last run's values of :attr:`key_columns`) finds the next page.

    Attributes:
        column: ``start_us``, ``close_us``, ``workflow_id``, ``workflow_type`` or ``status``.
        descending: Largest first (the default order: newest first).
    """

    column: str = "start_us"
    descending: bool = True

    @property
    def key_columns(self) -> tuple[str, ...]:
        """The columns that order the runs, ties broken by the later ones."""
        return ("start_us", "run_id") if self.column == "start_us" else (self.column, "start_us", "run_id")

    def key(self, row: ExecutionRow) -> tuple[Any, ...]:
        """``row``'s place in this order: its values of :attr:`key_columns`."""
        return tuple(getattr(row, column) for column in self.key_columns)


@dataclasses.dataclass(frozen=True)
class CompiledQuery:
    """A list query as a SQL condition on ``executions e`` with ``?`` placeholders
    (compiled by :func:`flowforge.server.visibility.compile_query`).

    Attributes:
        where: The condition; ``"1 = 1"`` for an empty query.
        params: The values for its placeholders, in order.
        order: The query's ``ORDER BY``; newest first without one.
    """

    where: str
    params: tuple[Any, ...]
    order: ListOrder = ListOrder()


@dataclasses.dataclass
class ApiKeyRow:
    """One API key: its id, what it grants, and the salted hash of its secret."""

    key_id: str
    name: str
    namespace: str
    """A namespace, or ``'*'`` for all of them."""
    role: str
    salt: bytes
    secret_hash: bytes
    created_us: int
    created_by: str
    expires_us: int | None
    revoked_us: int | None


@dataclasses.dataclass
class AuditRow:
    """One audit log entry; ``row_hash`` = SHA-256 of the previous row's hash and this row."""

    seq: int
    time_us: int
    principal: str
    action: str
    namespace: str
    target: str
    reason: str
    details: str
    """JSON object text: what else the action changed (e.g. a key's role)."""
    row_hash: bytes


# ------------------------------------------------------------- declarative DAGs


@dataclasses.dataclass
class DagVersionRow:
    """A published DAG definition (table ``dag_versions``): canonical JSON under its SHA-256."""

    namespace: str
    digest: str
    name: str
    definition: str
    task_count: int
    create_us: int


@dataclasses.dataclass
class DagAliasRow:
    """An alias of a DAG (table ``dag_aliases``) and the version it points at."""

    namespace: str
    name: str
    alias: str
    digest: str
    update_us: int


@dataclasses.dataclass
class DagRunTaskRow:
    """A task of a running DAG run (table ``dag_run_tasks``): ``waiting`` is its join counter."""

    namespace: str
    run_id: str
    task_id: str
    waiting: int
    scheduled_event_id: int = 0
    completed_event_id: int = 0


@dataclasses.dataclass
class ConcurrencyLimitRow:
    """A fleet-wide limit on the leased tasks of one concurrency key (table
    ``concurrency_limits``), with the key's leased and held tasks when listed."""

    namespace: str
    concurrency_key: str
    max_running: int
    update_us: int
    running: int = 0
    waiting: int = 0


@dataclasses.dataclass
class RateLimitRow:
    """A dispatch rate limit on a task queue or a concurrency key (table ``rate_limits``):
    a token bucket refilled at ``per_second`` (server/history/flow_control.py takes its tokens)."""

    namespace: str
    scope: str
    name: str
    per_second: float
    tokens: float
    refill_us: int
    update_us: int


@dataclasses.dataclass
class BreakerRow:
    """A circuit breaker on an activity type (table ``breakers``; server/history/breakers.py
    moves it between ``closed``, ``open`` and ``half_open``)."""

    namespace: str
    activity_type: str
    failure_rate: float
    min_calls: int
    window_s: float
    open_s: float
    state: str
    since_us: int
    window_start_us: int
    successes: int
    failures: int
    probe_in_flight: int
    reason: str
    update_us: int
