"""The changes to executions within one transaction, and the channels their commit wakes.

A :class:`_Mutation` collects everything one operation changes of one execution:
the row's new state, the events to append, the task and timer rows to insert.
:meth:`_Mutation.save` writes them all in the caller's transaction (rule 1 of
docs/architecture.md); nothing reaches the store before it.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from typing import Any

from flowforge.api.schema import (
    EventType,
    ExecutionStatus,
    TaskKind,
    TaskState,
    TimeoutType,
    WorkflowExecutionCancelRequestedAttributes,
    WorkflowExecutionTerminatedAttributes,
    WorkflowTaskFailedAttributes,
    WorkflowTaskFailedCause,
    WorkflowTaskScheduledAttributes,
    WorkflowTaskStartedAttributes,
    WorkflowTaskState,
    WorkflowTimeoutType,
    dumps,
    payloads_json,
)
from flowforge.api.v1 import common_pb2
from flowforge.server.history.data import DEFAULT_PRIORITY, TaskPriority
from flowforge.server.history.run_ids import time_ordered_run_id
from flowforge.server.observations import TaskStarted, WorkflowClosed, observe
from flowforge.server.stores.base import ExecutionRow, HistoryEventRow, TaskRow, TimerRow, Transaction

__all__ = [
    "EagerStart",
    "StartedWorkflowTask",
    "close_channel",
    "new_run",
    "query_answer_channel",
    "queue_channel",
    "run_channel",
]

# A started event's "started_event_id" placeholder, resolved when the events are
# appended: buffered events get their ids only then.
PREVIOUS_EVENT = "$previous"

# Events written for the record only: workflow code waits for none of them, so they
# schedule no workflow task (an activity's Started comes with its outcome otherwise).
_RECORDED_ONLY = frozenset(
    {
        EventType.ACTIVITY_TASK_STARTED,
        EventType.ACTIVITY_TASK_DEAD_LETTERED,
        EventType.ACTIVITY_TASK_DEAD_LETTER_RETRIED,
        EventType.WORKFLOW_EXECUTION_PAUSED,
        EventType.WORKFLOW_EXECUTION_UNPAUSED,
    }
)

# An event to deliver: (type, attributes) or (type, attributes, its own time in µs).
Delivery = tuple[EventType, Mapping[str, Any]] | tuple[EventType, Mapping[str, Any], int]


#: The visible time of a paused run's queued task: never, until the run is unpaused
#: (9999-12-31T23:59:59Z, the last time a protobuf Timestamp can hold).
HELD_US = 253_402_300_799_000_000


def us(seconds: float) -> int:
    """Seconds as whole microseconds (the store's time unit)."""
    return round(seconds * 1_000_000)


def queue_channel(namespace: str, kind: str, task_queue: str) -> str:
    """Woken when a commit adds a visible task (or a query) to the queue."""
    return f"q:{namespace}:{kind}:{task_queue}"


def run_channel(run_id: str) -> str:
    """Woken when a commit appends events to the run's history."""
    return f"r:{run_id}"


def query_answer_channel(query_id: int) -> str:
    """Woken when a worker answered the query."""
    return f"qa:{query_id}"


def close_channel(run_id: str) -> str:
    """Woken only when the run closes: result() waiters sleep through every other event."""
    return f"c:{run_id}"


@dataclasses.dataclass
class StartedWorkflowTask:
    """A workflow task leased in a transaction, handed out with its history after the commit."""

    task: TaskRow
    execution: ExecutionRow
    transient: list[HistoryEventRow]
    """The Scheduled/Started events of a retried task (not written to history)."""
    next_event_id: int
    """The history the worker gets ends before this event."""
    appended: list[HistoryEventRow] = dataclasses.field(default_factory=list)
    """The events the leasing transaction appended (its mutation's list, complete once
    it commits): what a hand-out takes instead of reading them back."""
    earlier: list[HistoryEventRow] = dataclasses.field(default_factory=list)
    """The events just before ``appended`` that the transaction read for a worker that
    keeps the rest cached (``WorkflowTasks.read_history_gap``)."""


@dataclasses.dataclass
class EagerStart:
    """Asks a start to lease its run's first workflow task to ``identity`` in the
    start's own transaction (a worker stream's idle poll, server/matching.py)."""

    identity: str
    started: StartedWorkflowTask | None = None
    """The lease, once committed; None if the run's first task is not due now."""


_MUTABLE_EXECUTION_COLUMNS = tuple(
    f.name for f in dataclasses.fields(ExecutionRow) if f.name not in ("namespace", "run_id", "version")
)


class _Mutation:
    """The changes to one execution within one transaction."""

    def __init__(self, tx: Transaction, row: ExecutionRow, now: int, *, new: bool = False) -> None:
        self.tx = tx
        self.row = row
        self.now = now
        self.new = new
        self.expected_version = row.version
        # What the row was, so a batch save writes only the columns that changed
        # (a shallow copy as copy.copy makes it, without its generic protocol).
        self.original = object.__new__(type(row))
        self.original.__dict__.update(row.__dict__)
        self.events: list[HistoryEventRow] = []
        # Nearly always empty: no need to parse it.
        self.buffered: list[dict[str, Any]] = [] if row.buffered_events == "[]" else json.loads(row.buffered_events)
        self.new_tasks: list[TaskRow] = []
        self.new_timers: list[TimerRow] = []
        #: The run's WorkflowExecutionStarted attributes, once read (run_close.py).
        self.started_attributes: dict[str, Any] | None = None

    @property
    def running(self) -> bool:
        return self.row.status == ExecutionStatus.RUNNING

    # ------------------------------------------------------------------ events

    def append(self, event_type: EventType, attributes: Mapping[str, Any], event_us: int | None = None) -> int:
        """Appends one event to the history now; returns its id."""
        event_id = self.row.next_event_id
        self.row.next_event_id += 1
        if attributes.get("started_event_id") == PREVIOUS_EVENT:
            attributes = {**attributes, "started_event_id": event_id - 1}
        self.events.append(HistoryEventRow(event_id, event_type, event_us or self.now, dumps(attributes)))
        return event_id

    def deliver(self, events: Sequence[Delivery]) -> None:
        """New events for the workflow code: buffered while a workflow task is
        started, otherwise appended, and a workflow task is scheduled if none is.
        An event may carry its own time (e.g. when an activity really started)."""
        if self.record(events) and self.row.wft_state == WorkflowTaskState.NONE and self.row.dag_digest is None:
            self.schedule_workflow_task(attempt=1)

    def record(self, events: Sequence[Delivery]) -> bool:
        """Events workflow code does not wait for (an activity parked, or scheduled
        again): buffered while a workflow task is started, otherwise appended, and no
        workflow task is scheduled for them. Returns whether they were appended."""
        timed = [(event[0], event[1], event[2] if len(event) > 2 else self.now) for event in events]
        if self.row.wft_state == WorkflowTaskState.STARTED:
            self.buffered.extend({"type": t, "attributes": a, "us": us} for t, a, us in timed)
            return False
        for event_type, attributes, event_us in timed:
            self.append(event_type, attributes, event_us)
        return True

    def request_cancel(self, reason: str, identity: str) -> bool:
        """Delivers WorkflowExecutionCancelRequested, once per run; False if it was requested already."""
        if self.row.cancel_requested:
            return False
        self.row.cancel_requested = 1
        requested: WorkflowExecutionCancelRequestedAttributes = {"reason": reason, "identity": identity}
        self.deliver([(EventType.WORKFLOW_EXECUTION_CANCEL_REQUESTED, requested)])
        return True

    def flush_buffered(self) -> bool:
        """Appends the buffered events (after the workflow task closed); True if any
        is for workflow code (not only recorded, like a parked activity: :meth:`record`)."""
        flushed = any(EventType(event["type"]) not in _RECORDED_ONLY for event in self.buffered)
        for event in self.buffered:
            self.append(EventType(event["type"]), event["attributes"], event["us"])
        self.buffered = []
        return flushed

    # ------------------------------------------------------------------ workflow tasks

    def schedule_workflow_task(self, attempt: int, delay_s: float = 0.0) -> None:
        """Creates the run's workflow task. Attempts after the first are transient:
        their Scheduled/Started events are written only if the attempt completes."""
        row = self.row
        scheduled_event_id = 0
        if attempt == 1:
            scheduled: WorkflowTaskScheduledAttributes = {
                "task_queue": row.task_queue,
                "attempt": 1,
                "start_to_close_timeout": row.wft_timeout_s,
            }
            scheduled_event_id = self.append(EventType.WORKFLOW_TASK_SCHEDULED, scheduled)
        visible = self.now + us(delay_s)
        row.wft_state = WorkflowTaskState.SCHEDULED
        row.wft_attempt = attempt
        row.wft_scheduled_us = visible
        row.wft_started_us = None
        row.wft_scheduled_event_id = scheduled_event_id
        row.wft_started_event_id = 0
        self.new_tasks.append(
            new_task_row(
                row,
                kind=TaskKind.WORKFLOW,
                task_queue=row.task_queue,
                visible_us=visible,
                attempt=attempt,
                scheduled_event_id=scheduled_event_id,
            )
        )

    def transient_workflow_task_events(self, identity: str) -> list[HistoryEventRow]:
        """The Scheduled/Started events of a retried workflow task (not yet written)."""
        row = self.row
        assert row.wft_scheduled_us is not None and row.wft_started_us is not None
        scheduled_id = row.next_event_id
        return [
            HistoryEventRow(
                scheduled_id,
                EventType.WORKFLOW_TASK_SCHEDULED,
                row.wft_scheduled_us,
                dumps(
                    {
                        "task_queue": row.task_queue,
                        "attempt": row.wft_attempt,
                        "start_to_close_timeout": row.wft_timeout_s,
                    }
                ),
            ),
            HistoryEventRow(
                scheduled_id + 1,
                EventType.WORKFLOW_TASK_STARTED,
                row.wft_started_us,
                dumps({"scheduled_event_id": scheduled_id, "identity": identity}),
            ),
        ]

    def write_transient_workflow_task_events(self, identity: str) -> None:
        """Writes a retried task's Scheduled/Started events (it completes, or fails for the first time)."""
        if self.row.wft_attempt > 1:
            for event in self.transient_workflow_task_events(identity):
                self.append(EventType(event.event_type), json.loads(event.attributes), event.event_us)

    def start_workflow_task(self, task: TaskRow, identity: str) -> StartedWorkflowTask:
        """Leases the run's scheduled workflow task to ``identity``; a retried task's
        Scheduled/Started events come back as transient (not written)."""
        row, now = self.row, self.now
        observe(TaskStarted(row.namespace, task.task_queue, "workflow", max(0, now - task.visible_us) / 1e6))
        task.state = TaskState.LEASED
        task.fencing_token += 1
        task.started_us = now
        task.lease_expires_us = now + us(row.wft_timeout_s)
        task.identity = identity
        row.wft_state = WorkflowTaskState.STARTED
        row.wft_started_us = now
        transient: list[HistoryEventRow] = []
        if row.wft_attempt == 1:
            started: WorkflowTaskStartedAttributes = {
                "scheduled_event_id": row.wft_scheduled_event_id,
                "identity": identity,
            }
            row.wft_started_event_id = self.append(EventType.WORKFLOW_TASK_STARTED, started)
        else:
            transient = self.transient_workflow_task_events(identity)
            row.wft_scheduled_event_id, row.wft_started_event_id = (e.event_id for e in transient)
        return StartedWorkflowTask(task, row, transient, row.next_event_id, appended=self.events)

    def new_workflow_task(self, task_queue: str) -> TaskRow | None:
        """The workflow task this mutation scheduled on ``task_queue``, due now, if any."""
        if not task_queue:
            return None
        for task in self.new_tasks:
            if task.kind == TaskKind.WORKFLOW and task.task_queue == task_queue and task.visible_us <= self.now:
                return task
        return None

    def fail_started_workflow_task(
        self,
        task: TaskRow,
        *,
        cause: str,
        failure: dict[str, Any],
        identity: str,
        retry_delay_s: float,
        count_attempt: bool = True,
        event_type: EventType = EventType.WORKFLOW_TASK_FAILED,
    ) -> None:
        """Closes the started workflow task as failed (or timed out) and schedules the next attempt."""
        row = self.row
        if row.wft_attempt == 1 or not count_attempt:
            # Later attempts are transient: their failure is shown by describe(), not logged to history.
            self.write_transient_workflow_task_events(task.identity)
            attributes: dict[str, Any] = {
                "scheduled_event_id": row.wft_scheduled_event_id,
                "started_event_id": row.wft_started_event_id,
            }
            if event_type == EventType.WORKFLOW_TASK_FAILED:
                attributes.update(cause=cause, failure=failure, identity=identity)
            else:
                attributes["timeout_type"] = TimeoutType.START_TO_CLOSE
            self.append(event_type, attributes)
        row.last_wft_failure = dumps({"cause": cause, "failure": failure, "attempt": row.wft_attempt})
        row.wft_state = WorkflowTaskState.NONE
        self.flush_buffered()
        self.schedule_workflow_task(attempt=row.wft_attempt + 1 if count_attempt else 1, delay_s=retry_delay_s)

    def time_out_started_workflow_task(self, task: TaskRow) -> None:
        """The started workflow task's lease ended (expired, or handed back): the next attempt now."""
        self.fail_started_workflow_task(
            task, cause="", failure={}, identity="", retry_delay_s=0.0, event_type=EventType.WORKFLOW_TASK_TIMED_OUT
        )

    # ------------------------------------------------------------------ closing

    def abandon_started_workflow_task(self, message: str) -> None:
        """Keeps a started workflow task's events closed before the run is force-closed."""
        row = self.row
        if row.wft_state == WorkflowTaskState.STARTED and row.wft_attempt == 1:
            failed: WorkflowTaskFailedAttributes = {
                "scheduled_event_id": row.wft_scheduled_event_id,
                "started_event_id": row.wft_started_event_id,
                "cause": WorkflowTaskFailedCause.FORCE_CLOSE_COMMAND,
                "failure": {"message": message, "source": "server"},
                "identity": "server",
            }
            self.append(EventType.WORKFLOW_TASK_FAILED, failed)
        self.flush_buffered()

    def terminate(self, reason: str, identity: str) -> None:
        """Closes the run at once as TERMINATED."""
        self.abandon_started_workflow_task("terminated")
        terminated: WorkflowExecutionTerminatedAttributes = {"reason": reason, "identity": identity}
        self.append(EventType.WORKFLOW_EXECUTION_TERMINATED, terminated)
        self.close(ExecutionStatus.TERMINATED)

    def close(self, status: ExecutionStatus) -> None:
        """Closes the run: its pending work is dropped (its task and timer rows are deleted on save)."""
        self.row.status = status
        self.row.close_us = self.now
        self.row.wft_state = WorkflowTaskState.NONE
        self.row.deadline_us = None
        self.row.deadline_kind = None
        self.buffered = []
        self.new_tasks = []
        self.new_timers = []

    # ------------------------------------------------------------------ saving

    def earliest_new_deadline(self) -> int | None:
        """The earliest deadline this mutation adds (timer, lease, pending task, run
        timeout): the timekeeper needs waking only if it is before its next look."""
        deadlines = [timer.fire_us for timer in self.new_timers]
        for task in self.new_tasks:
            deadlines += [d for d in (task.lease_expires_us, task.pending_deadline_us) if d is not None]
        if self.new and self.row.deadline_us is not None:
            deadlines.append(self.row.deadline_us)
        return min(deadlines, default=None)

    def changed_columns(self) -> tuple[str, ...]:
        """The execution columns this mutation changed (the version aside)."""
        return tuple(c for c in _MUTABLE_EXECUTION_COLUMNS if getattr(self.row, c) != getattr(self.original, c))

    async def save(self) -> None:
        """Writes this mutation in its transaction."""
        await _Mutation.save_all(self.tx, [self])

    @staticmethod
    async def save_all(tx: Transaction, mutations: list[_Mutation]) -> None:
        """Writes the mutations of several executions in ``tx``: with more than one,
        each kind of row (execution updates, events, tasks) goes in one batch, and
        the new tasks get no ``task_id`` in memory (polls hand them out)."""
        # A DAG run has no workflow code: the server takes its next steps (dag_runs.py builds on this module).
        from flowforge.server.history.dag_runs import advance_dag_run

        for m in mutations:
            if m.row.dag_digest is not None:
                await advance_dag_run(m)
        updates: dict[tuple[str, ...], list[tuple[ExecutionRow, int]]] = {}
        for m in mutations:
            m.row.buffered_events = json.dumps(m.buffered, separators=(",", ":")) if m.buffered else "[]"
            if m.new:
                await tx.insert_execution(m.row)
            elif len(mutations) == 1:
                await tx.update_execution(m.row, m.expected_version, m.changed_columns())
            else:
                updates.setdefault(m.changed_columns(), []).append((m.row, m.expected_version))
        for columns, rows in updates.items():
            await tx.update_executions(columns, rows)
        await tx.append_run_events([(m.row.namespace, m.row.run_id, m.events) for m in mutations])
        closed = [m.row.run_id for m in mutations if not m.running]
        for run_id in closed:
            await tx.delete_run_tasks(run_id)
            await tx.delete_run_timers(run_id)
        # A closed run's parked activities can be neither retried nor discarded.
        await tx.delete_run_dead_letters(closed)
        new_tasks = [task for m in mutations for task in m.new_tasks]
        if any(task.fairness_key for task in new_tasks):
            await tx.assign_fair_passes(new_tasks)
        if len(mutations) == 1:
            for task in new_tasks:
                await tx.insert_task(task)
        else:
            await tx.insert_tasks(new_tasks)
        for task in new_tasks:
            if task.state == TaskState.PENDING:
                tx.notify_after_commit(queue_channel(task.namespace, task.kind, task.task_queue))
        for m in mutations:
            for timer in m.new_timers:
                await tx.insert_timer(timer)
            if m.events:
                tx.notify_after_commit(run_channel(m.row.run_id))
        for run_id in closed:
            tx.notify_after_commit(close_channel(run_id))
        for m in mutations:
            if not m.running and m.original.status == ExecutionStatus.RUNNING:
                last = m.events[-1] if m.events and m.events[-1].event_id == m.row.next_event_id - 1 else None
                observe(WorkflowClosed(m.row.namespace, m.row.workflow_type, str(m.row.status), m.row.run_id, last))


def activity_task_row(
    row: ExecutionRow,
    *,
    scheduled_event_id: int,
    activity_id: str,
    activity_type: str,
    task_queue: str,
    input: bytes | None,
    options: Mapping[str, Any],
    now: int,
    attempt: int = 1,
) -> TaskRow:
    """An activity's task, due now, as its ActivityTaskScheduled event records it
    (``options``: its timeouts and retry policy): scheduled by a command, re-created
    by a reset, or scheduled again from the dead-letter store (then ``attempt`` goes on).
    Its schedule-to-close and schedule-to-start deadlines count from ``now``."""
    s2c = options["schedule_to_close_timeout"]
    s2s = options["schedule_to_start_timeout"]
    s2c_deadline = now + us(s2c) if s2c else None
    s2s_deadline = now + us(s2s) if s2s else None
    return new_task_row(
        row,
        kind=TaskKind.ACTIVITY,
        task_queue=task_queue,
        visible_us=now,
        attempt=attempt,
        scheduled_event_id=scheduled_event_id,
        activity_id=activity_id,
        activity_type=activity_type,
        input=input,
        options=dumps(dict(options)),
        pending_deadline_us=min((d for d in (s2c_deadline, s2s_deadline) if d is not None), default=None),
        schedule_to_close_deadline_us=s2c_deadline,
        # Its own priority if the event records one, else the run's (docs/flow-control.md).
        priority=TaskPriority.from_json(options["priority"]) if "priority" in options else None,
        concurrency_key=options.get("concurrency_key"),
    )


def new_task_row(
    row: ExecutionRow,
    *,
    kind: str,
    task_queue: str,
    visible_us: int,
    attempt: int,
    scheduled_event_id: int,
    activity_id: str | None = None,
    activity_type: str | None = None,
    input: bytes | None = None,
    options: str = "{}",
    pending_deadline_us: int | None = None,
    schedule_to_close_deadline_us: int | None = None,
    priority: TaskPriority | None = None,
    concurrency_key: str | None = None,
) -> TaskRow:
    """A pending task of the run, as scheduled (not leased yet); held while the run is
    paused. ``priority`` defaults to the run's (docs/flow-control.md)."""
    priority = priority or TaskPriority.of_run(row)
    scheduled_us = visible_us
    if row.paused:
        visible_us, pending_deadline_us = HELD_US, None
    return TaskRow(
        task_id=None,
        namespace=row.namespace,
        run_id=row.run_id,
        workflow_id=row.workflow_id,
        workflow_type=row.workflow_type,
        kind=kind,
        task_queue=task_queue,
        state=TaskState.PENDING,
        visible_us=visible_us,
        lease_expires_us=None,
        fencing_token=0,
        attempt=attempt,
        scheduled_event_id=scheduled_event_id,
        activity_id=activity_id,
        activity_type=activity_type,
        input=input,
        options=options,
        scheduled_us=scheduled_us,
        started_us=None,
        pending_deadline_us=pending_deadline_us,
        schedule_to_close_deadline_us=schedule_to_close_deadline_us,
        last_heartbeat_us=None,
        heartbeat_details=None,
        last_failure=None,
        retry_delays="[]",
        identity="",
        cancel_requested=0,
        priority_key=priority.priority_key,
        fairness_key=priority.fairness_key,
        fairness_weight=priority.fairness_weight,
        concurrency_key=concurrency_key or None,
    )


def run_deadline(
    execution_expiration_us: int | None, run_expiration_us: int | None
) -> tuple[int | None, WorkflowTimeoutType | None]:
    """When a run times out and why: the earlier of its execution and run expirations (None: never)."""
    return min(
        (
            (deadline, kind)
            for deadline, kind in (
                (execution_expiration_us, WorkflowTimeoutType.EXECUTION),
                (run_expiration_us, WorkflowTimeoutType.RUN),
            )
            if deadline is not None
        ),
        default=(None, None),
    )


def new_run(
    tx: Transaction,
    now: int,
    *,
    namespace: str,
    workflow_id: str,
    workflow_type: str,
    task_queue: str,
    input: common_pb2.Payloads,
    identity: str,
    execution_timeout_s: float,
    run_timeout_s: float,
    task_timeout_s: float,
    default_task_timeout_s: float,
    started: dict[str, Any],
    run_id: str | None = None,
    execution_expiration_us: int | None = None,
    first_events: Sequence[tuple[EventType, Mapping[str, Any]]] = (),
    first_task_delay_s: float = 0.0,
    dag_digest: str | None = None,
    priority: TaskPriority = DEFAULT_PRIORITY,
) -> _Mutation:
    """A new run with its WorkflowExecutionStarted and first workflow task, to be saved.

    ``started`` adds attributes to the started event; ``first_events`` (e.g. the
    signal of a signal-with-start) come between it and the workflow task. The run
    closes at the earlier of its execution and run timeouts (0 = none); the
    execution timeout counts from ``execution_expiration_us`` when the run
    continues a chain; a ``task_timeout_s`` of 0 means ``default_task_timeout_s``. A run with
    ``dag_digest`` executes that DAG version and gets no workflow task (dag_runs.py).
    """
    run_id = run_id or time_ordered_run_id()
    if execution_expiration_us is None and execution_timeout_s > 0:
        execution_expiration_us = now + us(execution_timeout_s)
    run_expiration_us = now + us(run_timeout_s) if run_timeout_s > 0 else None
    deadline_us, deadline_kind = run_deadline(execution_expiration_us, run_expiration_us)
    row = ExecutionRow(
        namespace=namespace,
        run_id=run_id,
        workflow_id=workflow_id,
        workflow_type=workflow_type,
        task_queue=task_queue,
        status=ExecutionStatus.RUNNING,
        next_event_id=1,
        version=1,
        start_us=now,
        close_us=None,
        wft_state=WorkflowTaskState.NONE,
        wft_attempt=1,
        wft_scheduled_us=None,
        wft_started_us=None,
        wft_scheduled_event_id=0,
        wft_started_event_id=0,
        wft_timeout_s=task_timeout_s or default_task_timeout_s,
        last_wft_failure=None,
        buffered_events="[]",
        deadline_us=deadline_us,
        deadline_kind=deadline_kind,
        cancel_requested=0,
        dag_digest=dag_digest,
        priority_key=priority.priority_key,
        fairness_key=priority.fairness_key,
        fairness_weight=priority.fairness_weight,
    )
    m = _Mutation(tx, row, now, new=True)
    attributes: dict[str, Any] = {
        "workflow_id": workflow_id,
        "workflow_type": workflow_type,
        "task_queue": task_queue,
        "input": payloads_json(input),
        "identity": identity,
        "workflow_execution_timeout": execution_timeout_s,
        "workflow_run_timeout": run_timeout_s,
        "workflow_task_timeout": row.wft_timeout_s,
        "run_id": run_id,
        "original_execution_run_id": run_id,
        "first_execution_run_id": run_id,
    }
    if execution_expiration_us is not None:
        attributes["workflow_execution_expiration_us"] = execution_expiration_us
    if priority != DEFAULT_PRIORITY:
        attributes["priority"] = priority.to_json()
    m.append(EventType.WORKFLOW_EXECUTION_STARTED, {**attributes, **started})
    for event_type, event_attributes in first_events:
        m.append(event_type, event_attributes)
    if dag_digest is None:
        m.schedule_workflow_task(attempt=1, delay_s=first_task_delay_s)
    return m


def activity_lease_expiry(task: TaskRow, options: dict[str, Any], now: int) -> int:
    """When a started activity's lease ends: the earliest of start-to-close,
    schedule-to-close and the heartbeat deadline."""
    assert task.started_us is not None
    candidates = [task.started_us + us(options["start_to_close_timeout"])]
    if task.schedule_to_close_deadline_us is not None:
        candidates.append(task.schedule_to_close_deadline_us)
    if options["heartbeat_timeout"]:
        candidates.append(now + us(options["heartbeat_timeout"]))
    return min(candidates)
