"""The history engine: every state change of an execution, each in one transaction.

Invariants kept here (numbers are DESIGN.md's rules):

1. The execution row, its new events and the task/timer rows they imply are
   written by one :meth:`_Mutation.save` inside one store transaction.
2. Event ids come only from ``executions.next_event_id``, which every save checks
   against the version it read (optimistic concurrency), so two writers can never
   both append event N; history rows are only ever inserted.
3. A report on a task must present the lease's fencing token
   (:meth:`HistoryEngine._leased_task`); otherwise it is refused and changes nothing.
4. An outcome deletes the task row in the same transaction that records the
   outcome, so a second report of the same task finds no lease: never a second event.
5. Workers only report; retries, timeouts and failures are decided here from the
   policy recorded when the activity was scheduled.

While a workflow task is started, new events are buffered on the execution row
and appended when the task closes (docs/history-events.md), so the batch a worker
saw is exactly what history says it saw.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import json
import logging
import random
import secrets
import time
import uuid
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any, TypeVar

from flowforge.api.v1 import command_pb2, common_pb2
from flowforge.converter import message_to_json_dict
from flowforge.server import _events
from flowforge.server._events import duration_s, failure_from_json, failure_json, payloads_from_json, payloads_json
from flowforge.server.clock import Clock, SystemClock
from flowforge.server.errors import (
    AlreadyExists,
    DeadlineExceeded,
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    Unavailable,
)
from flowforge.server.retries import StoredRetryPolicy, decide_retry
from flowforge.server.stores.base import (
    ChildExecutionRow,
    ConcurrencyConflict,
    DuplicateRunningExecution,
    ExecutionRow,
    HistoryEventRow,
    NamespaceRow,
    QueryRow,
    Store,
    StoreUnavailable,
    TaskRow,
    TimerRow,
    Transaction,
)
from flowforge.server.tokens import TaskToken, TokenSigner
from flowforge.server.visibility import (
    MAX_ATTRIBUTES_PER_EXECUTION,
    MAX_ATTRIBUTES_PER_NAMESPACE,
    VALUE_TYPES,
    check_attribute_name,
    compile_query,
    stored_value,
    value_proto,
)

__all__ = [
    "EngineConfig",
    "HistoryEngine",
    "LeasedActivityTask",
    "LeasedQuery",
    "LeasedWorkflowTask",
    "StartSignal",
    "WorkflowTaskCompletion",
]

log = logging.getLogger("flowforge.server.history")

_T = TypeVar("_T")

WORKFLOW = "WORKFLOW"
ACTIVITY = "ACTIVITY"
QUERY = "QUERY"
# How long a query row outlives its caller's deadline before the sweep may delete it.
_QUERY_ROW_GRACE_S = 60.0
_SECRET_KEY = "task_token_secret"
# A started event's "started_event_id" placeholder, resolved when the events are
# appended: buffered events get their ids only then.
_PREVIOUS_EVENT = "$previous"
# Commands whose only new deadlines are the mutation's own timers and tasks.
_DEADLINE_COMMANDS = frozenset({"schedule_activity_task", "start_timer", "cancel_timer"})
_CLOSE_COMMANDS = (
    "complete_workflow_execution",
    "fail_workflow_execution",
    "cancel_workflow_execution",
    "continue_as_new_workflow_execution",
)
_LINEAGE_COMMANDS = (
    "start_child_workflow_execution",
    "request_cancel_external_workflow_execution",
    "signal_external_workflow_execution",
    "continue_as_new_workflow_execution",
)


def _us(seconds: float) -> int:
    return round(seconds * 1_000_000)


def queue_channel(namespace: str, kind: str, task_queue: str) -> str:
    return f"q:{namespace}:{kind}:{task_queue}"


def run_channel(run_id: str) -> str:
    return f"r:{run_id}"


def query_answer_channel(query_id: int) -> str:
    """Woken when a worker answered the query."""
    return f"qa:{query_id}"


def close_channel(run_id: str) -> str:
    """Woken only when the run closes: result() waiters sleep through every other event."""
    return f"c:{run_id}"


@dataclasses.dataclass
class EngineConfig:
    """Server limits and defaults."""

    max_payload_bytes: int = 2 * 1024 * 1024
    """Largest Payloads (sum of its values) a request may carry."""
    default_workflow_task_timeout_s: float = 10.0
    """How long a worker may hold a workflow task before it is given to another."""
    max_workflow_task_retry_delay_s: float = 60.0
    """Cap of the backoff between attempts of a failing workflow task."""
    default_history_wait_s: float = 60.0
    query_lease_s: float = 10.0
    """How long a worker may take to answer a query before it is offered to another."""


@dataclasses.dataclass(frozen=True)
class StartSignal:
    """A signal to deliver: by SignalWorkflowExecution, or with a start (signal-with-start)."""

    name: str
    input: common_pb2.Payloads

    def attributes(self, identity: str) -> dict[str, Any]:
        """The attributes of its WorkflowExecutionSignaled event."""
        return {"signal_name": self.name, "input": payloads_json(self.input), "identity": identity}


@dataclasses.dataclass
class LeasedWorkflowTask:
    token: bytes
    execution: ExecutionRow
    task: TaskRow
    history: list[HistoryEventRow]


@dataclasses.dataclass
class LeasedQuery:
    """A query leased to a poll, with the history of the run it asks."""

    token: bytes
    query: QueryRow
    history: list[HistoryEventRow]


@dataclasses.dataclass
class LeasedActivityTask:
    token: bytes
    task: TaskRow


@dataclasses.dataclass
class WorkflowTaskCompletion:
    """What a workflow task completion hands back to the worker that reported it."""

    activity_tasks: list[LeasedActivityTask]
    workflow_task: LeasedWorkflowTask | None


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
        # What the row was, so a batch save writes only the columns that changed.
        self.original = copy.copy(row)
        self.events: list[HistoryEventRow] = []
        self.buffered: list[dict[str, Any]] = json.loads(row.buffered_events)
        self.new_tasks: list[TaskRow] = []
        self.new_timers: list[TimerRow] = []

    @property
    def running(self) -> bool:
        return self.row.status == "RUNNING"

    def append(self, event_type: str, attributes: dict[str, Any], event_us: int | None = None) -> int:
        event_id = self.row.next_event_id
        self.row.next_event_id += 1
        if attributes.get("started_event_id") == _PREVIOUS_EVENT:
            attributes = {**attributes, "started_event_id": event_id - 1}
        self.events.append(HistoryEventRow(event_id, event_type, event_us or self.now, _events.dumps(attributes)))
        return event_id

    def deliver(self, events: Sequence[tuple[str, dict[str, Any]] | tuple[str, dict[str, Any], int]]) -> None:
        """New events for the workflow code: buffered while a workflow task is
        started, otherwise appended, and a workflow task is scheduled if none is.
        An event may carry its own time (e.g. when an activity really started)."""
        timed = [(event[0], event[1], event[2] if len(event) > 2 else self.now) for event in events]  # type: ignore[misc]
        if self.row.wft_state == "STARTED":
            self.buffered.extend({"type": t, "attributes": a, "us": us} for t, a, us in timed)
            return
        for event_type, attributes, event_us in timed:
            self.append(event_type, attributes, event_us)
        if self.row.wft_state == "NONE":
            self.schedule_workflow_task(attempt=1)

    def flush_buffered(self) -> bool:
        """Appends the buffered events (after the workflow task closed); True if any."""
        flushed = bool(self.buffered)
        for event in self.buffered:
            self.append(event["type"], event["attributes"], event["us"])
        self.buffered = []
        return flushed

    def schedule_workflow_task(self, attempt: int, delay_s: float = 0.0) -> None:
        """Creates the run's workflow task. Attempts after the first are transient:
        their Scheduled/Started events are written only if the attempt completes."""
        row = self.row
        scheduled_event_id = 0
        if attempt == 1:
            scheduled_event_id = self.append(
                "WorkflowTaskScheduled",
                {"task_queue": row.task_queue, "attempt": 1, "start_to_close_timeout": row.wft_timeout_s},
            )
        visible = self.now + _us(delay_s)
        row.wft_state = "SCHEDULED"
        row.wft_attempt = attempt
        row.wft_scheduled_us = visible
        row.wft_started_us = None
        row.wft_scheduled_event_id = scheduled_event_id
        row.wft_started_event_id = 0
        self.new_tasks.append(
            TaskRow(
                task_id=None,
                namespace=row.namespace,
                run_id=row.run_id,
                workflow_id=row.workflow_id,
                workflow_type=row.workflow_type,
                kind=WORKFLOW,
                task_queue=row.task_queue,
                state="PENDING",
                visible_us=visible,
                lease_expires_us=None,
                fencing_token=0,
                attempt=attempt,
                scheduled_event_id=scheduled_event_id,
                activity_id=None,
                activity_type=None,
                input=None,
                options="{}",
                scheduled_us=visible,
                started_us=None,
                pending_deadline_us=None,
                schedule_to_close_deadline_us=None,
                last_heartbeat_us=None,
                heartbeat_details=None,
                last_failure=None,
                retry_delays="[]",
                identity="",
                cancel_requested=0,
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
                "WorkflowTaskScheduled",
                row.wft_scheduled_us,
                _events.dumps(
                    {
                        "task_queue": row.task_queue,
                        "attempt": row.wft_attempt,
                        "start_to_close_timeout": row.wft_timeout_s,
                    }
                ),
            ),
            HistoryEventRow(
                scheduled_id + 1,
                "WorkflowTaskStarted",
                row.wft_started_us,
                _events.dumps({"scheduled_event_id": scheduled_id, "identity": identity}),
            ),
        ]

    def close(self, status: str) -> None:
        self.row.status = status
        self.row.close_us = self.now
        self.row.wft_state = "NONE"
        self.row.deadline_us = None
        self.row.deadline_kind = None
        self.buffered = []
        self.new_tasks = []
        self.new_timers = []

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
        await _Mutation.save_all(self.tx, [self])

    @staticmethod
    async def save_all(tx: Transaction, mutations: list[_Mutation]) -> None:
        """Writes the mutations of several executions in ``tx``: with more than one,
        each kind of row (execution updates, events, tasks) goes in one batch, and
        the new tasks get no ``task_id`` in memory (polls hand them out)."""
        updates: dict[tuple[str, ...], list[tuple[ExecutionRow, int]]] = {}
        for m in mutations:
            m.row.buffered_events = json.dumps(m.buffered, separators=(",", ":")) if m.buffered else "[]"
            if m.new:
                await tx.insert_execution(m.row)
            elif len(mutations) == 1:
                await tx.update_execution(m.row, m.expected_version)
            else:
                updates.setdefault(m.changed_columns(), []).append((m.row, m.expected_version))
        for columns, rows in updates.items():
            await tx.update_executions(columns, rows)
        await tx.append_run_events([(m.row.namespace, m.row.run_id, m.events) for m in mutations])
        closed = [m.row.run_id for m in mutations if not m.running]
        for run_id in closed:
            await tx.delete_run_tasks(run_id)
            await tx.delete_run_timers(run_id)
        new_tasks = [task for m in mutations for task in m.new_tasks]
        if len(mutations) == 1:
            for task in new_tasks:
                await tx.insert_task(task)
        else:
            await tx.insert_tasks(new_tasks)
        for task in new_tasks:
            if task.state == "PENDING":
                tx.notify_after_commit(queue_channel(task.namespace, task.kind, task.task_queue))
        for m in mutations:
            for timer in m.new_timers:
                await tx.insert_timer(timer)
            if m.events:
                tx.notify_after_commit(run_channel(m.row.run_id))
        for run_id in closed:
            tx.notify_after_commit(close_channel(run_id))


class HistoryEngine:
    """Executions, their history and their tasks, on top of a :class:`Store`."""

    def __init__(self, store: Store, config: EngineConfig | None = None, clock: Clock | None = None) -> None:
        self.store = store
        self.config = config or EngineConfig()
        #: Every deadline is measured on this clock (a virtual one under time skipping).
        self.clock: Clock = clock or SystemClock()
        self._signer: TokenSigner | None = None
        self._known_namespaces: set[str] = set()
        # namespace -> name -> type of custom search attributes; a registered type never changes.
        self._attribute_types: dict[str, dict[str, str]] = {}
        self._rng = random.Random()
        #: Called with a deadline (µs) that may be earlier than the reaper's next wake-up.
        self.on_new_deadline: Callable[[int], None] = lambda _deadline: None

    async def start(self) -> None:
        """Loads (or creates, once) the secret that signs task tokens."""

        async def load(tx: Transaction) -> str:
            await tx.set_metadata_if_absent(_SECRET_KEY, secrets.token_hex(32))
            value = await tx.get_metadata(_SECRET_KEY)
            assert value is not None
            return value

        self._signer = TokenSigner(bytes.fromhex(await self._transaction(load)))

    @property
    def signer(self) -> TokenSigner:
        assert self._signer is not None, "HistoryEngine.start() was not awaited"
        return self._signer

    # ------------------------------------------------------------------ plumbing

    async def _transaction(self, body: Callable[[Transaction], Awaitable[_T]], *, shielded: bool = True) -> _T:
        """Runs ``body`` in a transaction, again from the start on a concurrency conflict.

        A shielded transaction runs to its end even if the caller goes away (the
        gRPC call is cancelled): a report that reached the server is recorded
        rather than rolled back half-way. Leases are not shielded, so a poll
        whose caller left rolls back instead of leasing to nobody.
        """
        if shielded:
            return await asyncio.shield(self._transaction(body, shielded=False))
        for attempt in range(1, 21):
            try:
                async with self.store.transaction() as tx:
                    return await body(tx)
            except ConcurrencyConflict:
                if attempt == 20:
                    raise Unavailable("too much contention on one execution; retry the call") from None
                await asyncio.sleep(self._rng.uniform(0, 0.002 * attempt))
            except StoreUnavailable as error:
                raise Unavailable(f"the store is unavailable ({error}); retry with backoff") from error
        raise AssertionError("unreachable")

    async def transaction(self, body: Callable[[Transaction], Awaitable[_T]]) -> _T:
        """Runs ``body`` in one write transaction, retried from the start on a
        concurrency conflict and shielded from the caller going away: for features
        beside the engine that write their own rows together with a start."""
        return await self._transaction(body)

    async def read(self, body: Callable[[Transaction], Awaitable[_T]]) -> _T:
        """Runs ``body`` on a read-only snapshot; UNAVAILABLE if the store is down."""
        try:
            async with self.store.read() as tx:
                return await body(tx)
        except StoreUnavailable as error:
            raise Unavailable(f"the store is unavailable ({error}); retry with backoff") from error

    def check_payloads(self, payloads: common_pb2.Payloads, what: str) -> None:
        size = sum(len(p.data) + sum(len(v) for v in p.metadata.values()) for p in payloads.payloads)
        if size > self.config.max_payload_bytes:
            raise InvalidArgument(
                f"{what} is {size} bytes, over the server's payload limit of {self.config.max_payload_bytes}"
                " bytes; configure payload storage in the client's DataConverter (payload_storage=..., see"
                " docs/payloads.md) so large payloads are stored by reference"
            )

    def check_failure(self, failure: common_pb2.Failure, what: str) -> None:
        size = failure.ByteSize()
        if size > self.config.max_payload_bytes:
            raise InvalidArgument(
                f"{what} is {size} bytes, over the server's payload limit of {self.config.max_payload_bytes} bytes"
            )

    # ---------------------------------------------------------------- namespaces

    async def ensure_namespace(self, name: str) -> None:
        """Raises NOT_FOUND unless the namespace exists (positive answers are cached)."""
        if name in self._known_namespaces:
            return
        row = await self.read(lambda tx: tx.get_namespace(name))
        if row is None:
            raise NotFound(
                f"namespace {name!r} does not exist; create it with `flowforge namespace create {name}`"
                " or use 'default'"
            )
        self._known_namespaces.add(name)

    async def register_namespace(self, name: str, description: str, retention_s: int) -> NamespaceRow:
        row = NamespaceRow(name, description, retention_s, self.clock.now_us())

        async def body(tx: Transaction) -> NamespaceRow:
            if await tx.get_namespace(name) is not None:
                raise AlreadyExists(f"namespace {name!r} already exists")
            await tx.insert_namespace(row)
            return row

        return await self._transaction(body)

    async def describe_namespace(self, name: str) -> NamespaceRow:
        row = await self.read(lambda tx: tx.get_namespace(name))
        if row is None:
            raise NotFound(f"namespace {name!r} does not exist")
        return row

    async def list_namespaces(self) -> list[NamespaceRow]:
        return await self.read(lambda tx: tx.list_namespaces())

    # ---------------------------------------------------------------- executions

    async def start_workflow(
        self,
        *,
        namespace: str,
        workflow_id: str,
        workflow_type: str,
        task_queue: str,
        input: common_pb2.Payloads,
        request_id: str,
        identity: str,
        execution_timeout_s: float,
        run_timeout_s: float,
        task_timeout_s: float,
        origin: dict[str, Any] | None = None,
        tx: Transaction | None = None,
        start_signal: StartSignal | None = None,
        search_attributes: common_pb2.SearchAttributes | None = None,
        memo: common_pb2.Memo | None = None,
    ) -> tuple[str, bool]:
        """Starts a run; returns (run_id, started). A repeated request_id returns the
        first run with started=False; a running workflow id gives ALREADY_EXISTS.

        The one admission path: client starts, schedules and events all come here.

        Args:
            origin: What started the run besides a direct request, e.g.
                ``{"kind": "schedule", "schedule_id": ..., "nominal_time": ...}``;
                recorded as ``origin`` in ``WorkflowExecutionStarted``.
            tx: A transaction to join instead of running one: the scheduler admits
                a fire and records it on the schedule atomically. The caller commits.
            start_signal: Signal-with-start: a running workflow id is signalled
                instead (started=False), and a new run gets the signal right after its start.
        """
        self.check_payloads(input, "the workflow input")
        if start_signal is not None:
            self.check_payloads(start_signal.input, "the signal input")
        search_attributes = search_attributes or common_pb2.SearchAttributes()
        memo = memo or common_pb2.Memo()
        self._check_visibility_input(search_attributes, memo, "search_attributes")
        await self.ensure_namespace(namespace)

        async def body(tx: Transaction) -> tuple[str, bool]:
            earlier = await tx.get_request_run_id(namespace, request_id)
            if earlier is not None:
                return earlier, False
            if start_signal is not None:
                running = await tx.get_latest_execution(namespace, workflow_id)
                if running is not None and running.status == "RUNNING":
                    await self._signal(tx, running, start_signal, identity)
                    await tx.insert_request_id(namespace, request_id, running.run_id, self.clock.now_us())
                    return running.run_id, False
            now = self.clock.now_us()
            m = self._new_run(
                tx,
                now,
                namespace=namespace,
                workflow_id=workflow_id,
                workflow_type=workflow_type,
                task_queue=task_queue,
                input=input,
                identity=identity,
                execution_timeout_s=execution_timeout_s,
                run_timeout_s=run_timeout_s,
                task_timeout_s=task_timeout_s,
                started={
                    "request_id": request_id,
                    **({"origin": origin} if origin else {}),
                    **self._visibility_attributes(search_attributes, memo),
                },
                first_events=[("WorkflowExecutionSignaled", start_signal.attributes(identity))] if start_signal else (),
            )
            run_id = m.row.run_id
            values = await self._stored_values(tx, namespace, search_attributes)
            try:
                await m.save()
            except DuplicateRunningExecution:
                if start_signal is not None:
                    raise ConcurrencyConflict(workflow_id) from None  # started meanwhile: run again, signal it
                running = await tx.get_latest_execution(namespace, workflow_id)
                raise AlreadyExists(
                    f"workflow id {workflow_id!r} already has a running execution"
                    f" (run_id {running.run_id if running else '?'}); wait for it to close or use another id"
                ) from None
            await self._write_visibility(tx, m.row, values, memo)
            await tx.insert_request_id(namespace, request_id, run_id, now)
            deadline[0] = m.earliest_new_deadline()
            return run_id, True

        deadline: list[int | None] = [None]
        run_id, started = await (body(tx) if tx is not None else self._transaction(body))
        if started and deadline[0] is not None:
            self.on_new_deadline(deadline[0])
        return run_id, started

    def _new_run(
        self,
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
        started: dict[str, Any],
        run_id: str | None = None,
        execution_expiration_us: int | None = None,
        first_events: Sequence[tuple[str, dict[str, Any]]] = (),
        first_task_delay_s: float = 0.0,
    ) -> _Mutation:
        """A new run with its WorkflowExecutionStarted and first workflow task, to be saved.

        ``started`` adds attributes to the started event; ``first_events`` (e.g. the
        signal of a signal-with-start) come between it and the workflow task. The run
        closes at the earlier of its execution and run timeouts (0 = none); the
        execution timeout counts from ``execution_expiration_us`` when the run
        continues a chain.
        """
        run_id = run_id or str(uuid.uuid4())
        if execution_expiration_us is None and execution_timeout_s > 0:
            execution_expiration_us = now + _us(execution_timeout_s)
        deadline_us, deadline_kind = min(
            (
                (deadline, kind)
                for deadline, kind in (
                    (execution_expiration_us, "EXECUTION"),
                    (now + _us(run_timeout_s) if run_timeout_s > 0 else None, "RUN"),
                )
                if deadline is not None
            ),
            default=(None, None),
        )
        row = ExecutionRow(
            namespace=namespace,
            run_id=run_id,
            workflow_id=workflow_id,
            workflow_type=workflow_type,
            task_queue=task_queue,
            status="RUNNING",
            next_event_id=1,
            version=1,
            start_us=now,
            close_us=None,
            wft_state="NONE",
            wft_attempt=1,
            wft_scheduled_us=None,
            wft_started_us=None,
            wft_scheduled_event_id=0,
            wft_started_event_id=0,
            wft_timeout_s=task_timeout_s or self.config.default_workflow_task_timeout_s,
            last_wft_failure=None,
            buffered_events="[]",
            deadline_us=deadline_us,
            deadline_kind=deadline_kind,
            cancel_requested=0,
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
        m.append("WorkflowExecutionStarted", {**attributes, **started})
        for event_type, event_attributes in first_events:
            m.append(event_type, event_attributes)
        m.schedule_workflow_task(attempt=1, delay_s=first_task_delay_s)
        return m

    async def resolve_execution(self, tx: Transaction, namespace: str, workflow_id: str, run_id: str) -> ExecutionRow:
        row = (
            await tx.get_execution(namespace, run_id)
            if run_id
            else await tx.get_latest_execution(namespace, workflow_id)
        )
        if row is None or (run_id and workflow_id and row.workflow_id != workflow_id):
            what = f"run {run_id!r} of workflow {workflow_id!r}" if run_id else f"workflow {workflow_id!r}"
            raise NotFound(f"{what} not found in namespace {namespace!r}")
        return row

    async def describe(
        self, namespace: str, workflow_id: str, run_id: str
    ) -> tuple[ExecutionRow, list[TaskRow], list[HistoryEventRow]]:
        await self.ensure_namespace(namespace)

        async def body(tx: Transaction) -> tuple[ExecutionRow, list[TaskRow], list[HistoryEventRow]]:
            row = await self.resolve_execution(tx, namespace, workflow_id, run_id)
            return row, await tx.list_run_tasks(namespace, row.run_id), await tx.read_events(namespace, row.run_id)

        return await self.read(body)

    async def get_history(
        self,
        namespace: str,
        workflow_id: str,
        run_id: str,
        *,
        after_event_id: int,
        page_size: int,
        wait: bool,
        close_event_only: bool,
        wait_timeout_s: float,
    ) -> tuple[str, list[HistoryEventRow], bool]:
        """Returns (run_id, events, has_more); with ``wait``, blocks until there is
        something past ``after_event_id`` (or the close event) or the wait ends."""
        await self.ensure_namespace(namespace)
        deadline = time.monotonic() + wait_timeout_s
        row = await self.read(lambda tx: self.resolve_execution(tx, namespace, workflow_id, run_id))
        while True:
            wake = self.store.notifier.listen(
                close_channel(row.run_id) if close_event_only else run_channel(row.run_id)
            )

            async def body(tx: Transaction) -> tuple[ExecutionRow, list[HistoryEventRow]]:
                current = await tx.get_execution(namespace, row.run_id)
                assert current is not None
                if close_event_only:
                    if current.status == "RUNNING":
                        return current, []
                    return current, await tx.read_events(namespace, current.run_id, current.next_event_id - 2, 1)
                return current, await tx.read_events(namespace, current.run_id, after_event_id, page_size + 1)

            current, events = await self.read(body)
            remaining = deadline - time.monotonic()
            if events or not wait or current.status != "RUNNING" or remaining <= 0:
                return current.run_id, events[:page_size], len(events) > page_size
            # Re-check now and then: with several replicas a notification may be lost.
            await self.store.wait_for_notification(wake, min(remaining, 5.0))

    async def request_cancel(
        self,
        namespace: str,
        workflow_id: str,
        run_id: str,
        reason: str,
        identity: str,
        tx: Transaction | None = None,
    ) -> None:
        """Delivers WorkflowExecutionCancelRequested to the workflow (once); joins
        ``tx`` when given (the scheduler's CANCEL_OTHER)."""
        await self.ensure_namespace(namespace)

        async def body(tx: Transaction) -> None:
            row = await self.resolve_execution(tx, namespace, workflow_id, run_id)
            if row.status != "RUNNING":
                raise FailedPrecondition(f"workflow {row.workflow_id!r} run {row.run_id} is already {row.status}")
            if row.cancel_requested:
                return
            m = _Mutation(tx, row, self.clock.now_us())
            row.cancel_requested = 1
            m.deliver([("WorkflowExecutionCancelRequested", {"reason": reason, "identity": identity})])
            await m.save()

        await (body(tx) if tx is not None else self._transaction(body))

    async def terminate(
        self,
        namespace: str,
        workflow_id: str,
        run_id: str,
        reason: str,
        identity: str,
        tx: Transaction | None = None,
    ) -> None:
        """Closes the run at once as TERMINATED; its tasks and timers are dropped.
        Joins ``tx`` when given (the scheduler's TERMINATE_OTHER)."""
        await self.ensure_namespace(namespace)

        async def body(tx: Transaction) -> None:
            row = await self.resolve_execution(tx, namespace, workflow_id, run_id)
            if row.status != "RUNNING":
                raise FailedPrecondition(f"workflow {row.workflow_id!r} run {row.run_id} is already {row.status}")
            m = _Mutation(tx, row, self.clock.now_us())
            self._abandon_started_workflow_task(m, cause="FORCE_CLOSE_COMMAND", message="terminated")
            m.append("WorkflowExecutionTerminated", {"reason": reason, "identity": identity})
            m.close("TERMINATED")
            await m.save()
            await self._after_run_closed(m)

        await (body(tx) if tx is not None else self._transaction(body))

    def _abandon_started_workflow_task(self, m: _Mutation, *, cause: str, message: str) -> None:
        """Keeps a started workflow task's events closed before the run closes."""
        row = m.row
        if row.wft_state == "STARTED" and row.wft_attempt == 1:
            m.append(
                "WorkflowTaskFailed",
                {
                    "scheduled_event_id": row.wft_scheduled_event_id,
                    "started_event_id": row.wft_started_event_id,
                    "cause": cause,
                    "failure": {"message": message, "source": "server"},
                    "identity": "server",
                },
            )
        m.flush_buffered()

    # ------------------------------------------------------------ signals

    # A signal's request id shares the request_ids table with starts, under its own prefix.
    _SIGNAL_REQUEST_PREFIX = "signal:"

    async def signal_workflow(
        self, namespace: str, workflow_id: str, run_id: str, signal: StartSignal, identity: str, request_id: str
    ) -> None:
        """Delivers WorkflowExecutionSignaled to a running execution, once per request id.

        The event is appended and a workflow task scheduled in one transaction, or
        buffered while a workflow task is started (appended when it closes). A closed
        execution gives FAILED_PRECONDITION, an unknown one NOT_FOUND; both change nothing.
        """
        self.check_payloads(signal.input, "the signal input")
        await self.ensure_namespace(namespace)

        async def body(tx: Transaction) -> None:
            row = await self.resolve_execution(tx, namespace, workflow_id, run_id)
            key = self._SIGNAL_REQUEST_PREFIX + request_id if request_id else ""
            if key and await tx.get_request_run_id(namespace, key) is not None:
                return  # a retry of a signal already delivered
            if row.status != "RUNNING":
                raise FailedPrecondition(
                    f"workflow {row.workflow_id!r} run {row.run_id} is already {row.status}; a closed"
                    " execution takes no signals"
                )
            await self._signal(tx, row, signal, identity)
            if key:
                await tx.insert_request_id(namespace, key, row.run_id, self.clock.now_us())

        await self._transaction(body)

    async def _signal(self, tx: Transaction, row: ExecutionRow, signal: StartSignal, identity: str) -> None:
        m = _Mutation(tx, row, self.clock.now_us())
        m.deliver([("WorkflowExecutionSignaled", signal.attributes(identity))])
        await m.save()

    # ------------------------------------------------------------ queries
    #
    # A query is answered by a worker, through the store, so that the replica that
    # took the call and the one the worker polls need not be the same: the call
    # writes a workflow_queries row and wakes the task queue's pollers; a poll leases
    # the row (before workflow tasks: queries are short and someone is waiting) and
    # returns it with the run's history; the worker's answer is written to the row
    # and wakes the caller, who reads it and deletes the row. Nothing touches the
    # execution row or its history, so a query works on closed runs too.

    async def query_workflow(
        self,
        namespace: str,
        workflow_id: str,
        run_id: str,
        query_type: str,
        args: common_pb2.Payloads,
        timeout_s: float,
    ) -> common_pb2.Payloads:
        """Asks a worker of the run's task queue to answer a query; waits up to ``timeout_s``.

        Raises INVALID_ARGUMENT when the worker reports the query failed (no such
        handler, the handler raised, the replay failed), DEADLINE_EXCEEDED when no
        worker answered in time.
        """
        self.check_payloads(args, "the query arguments")
        await self.ensure_namespace(namespace)
        deadline = time.monotonic() + timeout_s

        async def ask(tx: Transaction) -> QueryRow:
            row = await self.resolve_execution(tx, namespace, workflow_id, run_id)
            now = self.clock.now_us()
            await tx.delete_expired_queries(now)
            query = QueryRow(
                query_id=None,
                namespace=namespace,
                run_id=row.run_id,
                workflow_id=row.workflow_id,
                workflow_type=row.workflow_type,
                task_queue=row.task_queue,
                query_type=query_type,
                args=args.SerializeToString(),
                state="PENDING",
                visible_us=now,
                fencing_token=0,
                answer=None,
                error=None,
                create_us=now,
                expires_us=now + _us(timeout_s + _QUERY_ROW_GRACE_S),
            )
            await tx.insert_query(query)
            tx.notify_after_commit(queue_channel(namespace, WORKFLOW, row.task_queue))
            return query

        query = await self._transaction(ask)
        assert query.query_id is not None
        query_id = query.query_id
        try:
            while True:
                wake = self.store.notifier.listen(query_answer_channel(query_id))
                current = await self.read(lambda tx: tx.get_query(namespace, query_id))
                if current is not None and current.state == "ANSWERED":
                    if current.error is not None:
                        raise InvalidArgument(f"query {query_type!r} failed: {current.error}")
                    answer = common_pb2.Payloads()
                    answer.ParseFromString(current.answer or b"")
                    return answer
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise DeadlineExceeded(
                        f"no worker answered query {query_type!r} of workflow {query.workflow_id!r} within"
                        f" {timeout_s:g}s; is a worker for workflow type {query.workflow_type!r} polling task"
                        f" queue {query.task_queue!r}?"
                    )
                # Re-check now and then: with several replicas a notification may be lost.
                await self.store.wait_for_notification(wake, min(remaining, 1.0))
        finally:
            await self._transaction(lambda tx: tx.delete_query(namespace, query_id))

    async def visible_workflow_work(self, namespace: str, task_queue: str, limit: int) -> tuple[bool, int]:
        """Whether a query waits on the queue, and how many workflow tasks a poll could
        lease now (at most ``limit``): one read snapshot, no lock, for a poll's look."""

        async def body(tx: Transaction) -> tuple[bool, int]:
            now = self.clock.now_us()
            return (
                await tx.has_visible_query(namespace, task_queue, now),
                await tx.count_visible_tasks(namespace, WORKFLOW, task_queue, now, limit),
            )

        return await self.read(body)

    async def try_lease_query(self, namespace: str, task_queue: str) -> LeasedQuery | None:
        """Leases the oldest visible query of the queue, with its run's history, or returns None."""

        async def body(tx: Transaction) -> QueryRow | None:
            now = self.clock.now_us()
            query = await tx.lease_next_query(namespace, task_queue, now)
            if query is None:
                return None
            query.fencing_token += 1
            query.visible_us = now + _us(self.config.query_lease_s)
            await tx.update_query(query)
            return query

        query = await self._transaction(body, shielded=False)
        if query is None:
            return None
        history = await self.read(lambda tx: tx.read_events(namespace, query.run_id))
        return LeasedQuery(self._sign_query(query), query, history)

    def _sign_query(self, query: QueryRow) -> bytes:
        assert query.query_id is not None
        return self.signer.sign(TaskToken(query.namespace, query.query_id, query.fencing_token, QUERY, query.run_id))

    async def release_query(self, raw_token: bytes) -> None:
        """Offers a query leased to a poll whose caller went away to the next poll at once."""
        token = self.signer.verify(raw_token, QUERY)

        async def body(tx: Transaction) -> None:
            query = await tx.get_query(token.namespace, token.task_id, for_update=True)
            if query is not None and query.state == "PENDING" and query.fencing_token == token.fencing_token:
                query.visible_us = self.clock.now_us()
                await tx.update_query(query)
                tx.notify_after_commit(queue_channel(query.namespace, WORKFLOW, query.task_queue))

        await self._transaction(body)

    async def answer_query(
        self, raw_token: bytes, namespace: str, answer: common_pb2.Payloads | None, error: str | None
    ) -> None:
        """Records a worker's answer (or the query's failure) and wakes the caller.
        FAILED_PRECONDITION if the lease is gone (answered already, or the caller gave up)."""
        token = self._token(raw_token, namespace, QUERY)
        if answer is not None:
            self.check_payloads(answer, "the query result")

        async def body(tx: Transaction) -> None:
            query = await tx.get_query(token.namespace, token.task_id, for_update=True)
            if query is None or query.state != "PENDING" or query.fencing_token != token.fencing_token:
                raise FailedPrecondition(
                    "this query is no longer leased with this token (answered already, its lease expired,"
                    " or its caller gave up); the answer changes nothing"
                )
            query.state = "ANSWERED"
            query.answer = answer.SerializeToString() if answer is not None else None
            query.error = error if answer is None else None
            await tx.update_query(query)
            tx.notify_after_commit(query_answer_channel(query.query_id or 0))

        await self._transaction(body)

    # ------------------------------------------------------------ visibility (docs/visibility.md)

    def _check_visibility_input(
        self, attributes: common_pb2.SearchAttributes, memo: common_pb2.Memo, where: str
    ) -> None:
        """What can be checked without the registry: names, counts, the memo's size."""
        self._check_search_attribute_names(attributes, where)
        self.check_payloads(common_pb2.Payloads(payloads=memo.fields.values()), "the memo")

    async def check_visibility(
        self, namespace: str, attributes: common_pb2.SearchAttributes, memo: common_pb2.Memo
    ) -> None:
        """Raises INVALID_ARGUMENT unless a later start could carry these (a schedule's action):
        types never change once registered, so what passes now passes at every fire."""
        self._check_visibility_input(attributes, memo, "search_attributes")
        await self.ensure_namespace(namespace)
        await self.read(lambda tx: self._stored_values(tx, namespace, attributes))

    @staticmethod
    def _check_search_attribute_names(attributes: common_pb2.SearchAttributes, where: str) -> None:
        if len(attributes.indexed_fields) > MAX_ATTRIBUTES_PER_EXECUTION:
            raise InvalidArgument(
                f"{where}: {len(attributes.indexed_fields)} search attributes; at most"
                f" {MAX_ATTRIBUTES_PER_EXECUTION} per call"
            )
        for name in attributes.indexed_fields:
            check_attribute_name(name)

    @staticmethod
    def _visibility_attributes(search_attributes: common_pb2.SearchAttributes, memo: common_pb2.Memo) -> dict[str, Any]:
        """The WorkflowExecutionStarted attributes for a start's search attributes and memo (if any)."""
        attributes: dict[str, Any] = {}
        if search_attributes.indexed_fields:
            attributes["search_attributes"] = message_to_json_dict(search_attributes)
        if memo.fields:
            attributes["memo"] = message_to_json_dict(memo)
        return attributes

    async def _registered_types(self, tx: Transaction, namespace: str, names: Iterable[str]) -> dict[str, str]:
        """The namespace's registered attribute types, read again only when ``names`` holds one
        this replica has not seen registered (types never change, so cached ones stay true)."""
        types = self._attribute_types.get(namespace, {})
        if not set(names) <= types.keys():
            types = self._attribute_types[namespace] = await tx.get_search_attribute_types(namespace)
        return types

    async def _stored_values(
        self, tx: Transaction, namespace: str, attributes: common_pb2.SearchAttributes, *, removals: bool = False
    ) -> dict[str, Any]:
        """name -> StoredValue (None: remove), checked against the namespace's registered types."""
        if not attributes.indexed_fields:
            return {}
        types = await self._registered_types(tx, namespace, attributes.indexed_fields)
        values: dict[str, Any] = {}
        for name, value in sorted(attributes.indexed_fields.items()):
            if name not in types:
                raise InvalidArgument(
                    f"search attribute {name!r} is not registered in namespace {namespace!r}; register it first"
                    f" with `flowforge search-attribute create --name {name} --type Keyword` (or Int, Double, Bool,"
                    " Datetime) or client.add_search_attributes()"
                )
            if removals and value.WhichOneof("value") is None:
                values[name] = None
            else:
                values[name] = stored_value(name, types[name], value)
        return values

    @staticmethod
    async def _write_visibility(
        tx: Transaction, row: ExecutionRow, values: dict[str, Any], memo: common_pb2.Memo | None = None
    ) -> None:
        for name, value in values.items():
            if value is None:
                await tx.delete_search_attribute(row.run_id, name)
        await tx.set_search_attributes(
            row.namespace, row.run_id, {name: value for name, value in values.items() if value is not None}
        )
        if memo is not None and memo.fields:
            await tx.insert_memo(row.namespace, row.run_id, memo.SerializeToString(deterministic=True))

    async def _invalid_upserts(
        self, tx: Transaction, namespace: str, commands: Sequence[command_pb2.Command]
    ) -> str | None:
        """Why the task's upserts or child starts cannot be applied (an unregistered attribute, a wrong
        type), or None."""
        for command in commands:
            kind = command.WhichOneof("attributes")
            if kind in ("upsert_workflow_search_attributes", "start_child_workflow_execution"):
                try:
                    await self._stored_values(
                        tx,
                        namespace,
                        getattr(command, kind).search_attributes,
                        removals=kind == "upsert_workflow_search_attributes",
                    )
                except InvalidArgument as error:
                    return error.message
        return None

    async def _upsert_search_attributes(
        self, m: _Mutation, upsert: command_pb2.UpsertWorkflowSearchAttributesCommandAttributes, completed_id: int
    ) -> None:
        """The event and the new visible values, in the workflow task's transaction."""
        values = await self._stored_values(m.tx, m.row.namespace, upsert.search_attributes, removals=True)
        m.append(
            "UpsertWorkflowSearchAttributes",
            {
                "search_attributes": message_to_json_dict(upsert.search_attributes),
                "workflow_task_completed_event_id": completed_id,
            },
        )
        await self._write_visibility(m.tx, m.row, values)

    async def add_search_attributes(self, namespace: str, attributes: dict[str, str]) -> None:
        """Registers custom attributes (name -> type); the same type again is a no-op."""
        for name, value_type in attributes.items():
            check_attribute_name(name)
            if value_type not in VALUE_TYPES:
                raise InvalidArgument(f"search attribute {name!r} needs a type: one of {', '.join(VALUE_TYPES)}")
        await self.ensure_namespace(namespace)

        async def body(tx: Transaction) -> None:
            existing = await tx.get_search_attribute_types(namespace)
            if len(existing.keys() | attributes.keys()) > MAX_ATTRIBUTES_PER_NAMESPACE:
                raise FailedPrecondition(
                    f"namespace {namespace!r} would have {len(existing.keys() | attributes.keys())} custom search"
                    f" attributes; the limit is {MAX_ATTRIBUTES_PER_NAMESPACE} (reuse a registered one)"
                )
            for name, value_type in sorted(attributes.items()):
                if name not in existing:
                    await tx.insert_search_attribute_type(namespace, name, value_type, self.clock.now_us())
                elif existing[name] != value_type:
                    raise AlreadyExists(
                        f"search attribute {name!r} is already registered in namespace {namespace!r} as"
                        f" {existing[name]}; a type cannot change, register a new name instead"
                    )

        await self._transaction(body)

    async def list_search_attributes(self, namespace: str) -> dict[str, str]:
        await self.ensure_namespace(namespace)
        return await self.read(lambda tx: tx.get_search_attribute_types(namespace))

    async def list_executions(
        self,
        namespace: str,
        query: str,
        *,
        page_size: int,
        before: tuple[int, str] | None,
        equal: dict[str, str],
    ) -> tuple[list[ExecutionRow], dict[str, tuple[common_pb2.SearchAttributes, common_pb2.Memo]]]:
        """The runs matching ``query`` (newest first, one page) and their visibility data."""
        await self.ensure_namespace(namespace)

        async def body(tx: Transaction) -> tuple[list[ExecutionRow], dict[str, Any]]:
            condition = compile_query(query, namespace, await tx.get_search_attribute_types(namespace), equal=equal)
            rows = await tx.list_executions(namespace, condition, limit=page_size, before=before)
            return rows, await self._visibility_of(tx, namespace, [r.run_id for r in rows])

        return await self.read(body)

    async def count_executions(self, namespace: str, query: str) -> int:
        await self.ensure_namespace(namespace)

        async def body(tx: Transaction) -> int:
            condition = compile_query(query, namespace, await tx.get_search_attribute_types(namespace))
            return await tx.count_executions(namespace, condition)

        return await self.read(body)

    async def visibility(self, namespace: str, run_id: str) -> tuple[common_pb2.SearchAttributes, common_pb2.Memo]:
        """The run's current search attributes and its memo (for describe)."""
        found = await self.read(lambda tx: self._visibility_of(tx, namespace, [run_id]))
        return found[run_id]

    async def _visibility_of(
        self, tx: Transaction, namespace: str, run_ids: list[str]
    ) -> dict[str, tuple[common_pb2.SearchAttributes, common_pb2.Memo]]:
        values = await tx.get_search_attributes(namespace, run_ids)
        types = await self._registered_types(tx, namespace, {name for run in values.values() for name in run})
        memos = await tx.get_memos(namespace, run_ids)
        found = {}
        for run_id in run_ids:
            attributes = common_pb2.SearchAttributes()
            for name, value in values.get(run_id, {}).items():
                attributes.indexed_fields[name].CopyFrom(value_proto(types[name], value))
            memo = common_pb2.Memo()
            if run_id in memos:
                memo.ParseFromString(memos[run_id])
            found[run_id] = (attributes, memo)
        return found

    # ------------------------------------------------------------ workflow tasks

    def _sign(self, task: TaskRow) -> bytes:
        assert task.task_id is not None
        return self.signer.sign(TaskToken(task.namespace, task.task_id, task.fencing_token, task.kind, task.run_id))

    async def visible_tasks(self, namespace: str, kind: str, task_queue: str, limit: int) -> int:
        """How many tasks a poll of the queue could lease now, at most ``limit`` (a read, no lock)."""
        return await self.read(
            lambda tx: tx.count_visible_tasks(namespace, kind, task_queue, self.clock.now_us(), limit)
        )

    async def try_lease_workflow_task(
        self, namespace: str, task_queue: str, identity: str
    ) -> LeasedWorkflowTask | None:
        """Leases the oldest visible workflow task of the queue, or returns None."""

        async def body(tx: Transaction) -> tuple[TaskRow, ExecutionRow, list[HistoryEventRow], int] | None:
            now = self.clock.now_us()
            task = await tx.lease_next_task(namespace, WORKFLOW, task_queue, now)
            if task is None:
                return None
            row = await tx.get_execution(namespace, task.run_id)
            if row is None or row.status != "RUNNING" or row.wft_state != "SCHEDULED":
                # Cannot happen while rule 1 holds (a run's task rows change with its row);
                # drop the orphan rather than hand it out again and again.
                log.error("dropping orphaned workflow task %s of run %s", task.task_id, task.run_id)
                await tx.delete_task(task.task_id or 0)
                return None
            m = _Mutation(tx, row, now)
            transient = self._start_workflow_task(m, task, identity)
            await tx.update_task(task)
            await m.save()
            return task, row, transient, row.next_event_id

        leased = await self._transaction(body, shielded=False)
        if leased is None:
            return None
        return await self._hand_out_workflow_task(*leased)

    def _start_workflow_task(self, m: _Mutation, task: TaskRow, identity: str) -> list[HistoryEventRow]:
        """Leases the run's scheduled workflow task to ``identity``; returns the
        transient Scheduled/Started events of a retried task (not written)."""
        row, now = m.row, m.now
        task.state = "LEASED"
        task.fencing_token += 1
        task.started_us = now
        task.lease_expires_us = now + _us(row.wft_timeout_s)
        task.identity = identity
        row.wft_state = "STARTED"
        row.wft_started_us = now
        if row.wft_attempt == 1:
            row.wft_started_event_id = m.append(
                "WorkflowTaskStarted", {"scheduled_event_id": row.wft_scheduled_event_id, "identity": identity}
            )
            return []
        transient = m.transient_workflow_task_events(identity)
        row.wft_scheduled_event_id, row.wft_started_event_id = (e.event_id for e in transient)
        return transient

    async def _hand_out_workflow_task(
        self, task: TaskRow, row: ExecutionRow, transient: list[HistoryEventRow], next_event_id: int
    ) -> LeasedWorkflowTask:
        """The committed lease with its history, read after commit, outside the write
        lock. Nothing can be appended meanwhile but a terminate, hence the bound."""
        self.on_new_deadline(task.lease_expires_us or 0)
        events = await self.read(lambda tx: tx.read_events(row.namespace, row.run_id))
        history = [e for e in events if e.event_id < next_event_id] + transient
        return LeasedWorkflowTask(self._sign(task), row, task, history)

    async def _leased_task(self, tx: Transaction, token: TaskToken) -> TaskRow:
        """The task ``token`` leases, locked; FAILED_PRECONDITION if the lease is gone."""
        task = await tx.get_task(token.task_id, for_update=True)
        if (
            task is None
            or task.state != "LEASED"
            or task.fencing_token != token.fencing_token
            or task.namespace != token.namespace
            or task.run_id != token.run_id
        ):
            raise FailedPrecondition(
                f"this {token.kind.lower()} task is no longer leased with this token (it was completed already,"
                " or its lease expired and it was given to another attempt); the report changes nothing"
            )
        return task

    async def _execution_of(self, tx: Transaction, task: TaskRow) -> ExecutionRow:
        """The run of a locked task, locked too (after the task: one lock order), so
        reports on parallel activities of one run queue instead of conflicting."""
        row = await tx.get_execution(task.namespace, task.run_id, for_update=True)
        assert row is not None and row.status == "RUNNING", "task rows are deleted when their run closes"
        return row

    async def complete_workflow_task(
        self,
        raw_token: bytes,
        namespace: str,
        commands: Sequence[command_pb2.Command],
        identity: str,
        eager_activity_slots: int,
        worker_build_id: str = "",
        return_new_workflow_task: bool = False,
    ) -> WorkflowTaskCompletion:
        """Records the commands of a workflow task; returns the activity tasks leased
        eagerly and, if asked for, the run's next workflow task when the completion
        schedules one at once (leased to the caller in the same transaction).

        ``worker_build_id`` (the build of the worker that ran the task) is recorded
        in the WorkflowTaskCompleted event."""
        token = self._token(raw_token, namespace, WORKFLOW)
        self._validate_commands(commands)

        async def body(
            tx: Transaction,
        ) -> tuple[list[TaskRow], tuple[TaskRow, ExecutionRow, list[HistoryEventRow], int] | None]:
            task = await self._leased_task(tx, token)
            row = await self._execution_of(tx, task)
            now = self.clock.now_us()
            m = _Mutation(tx, row, now)
            await tx.delete_task(task.task_id or 0)
            closes = any(c.WhichOneof("attributes") in _CLOSE_COMMANDS for c in commands)
            if closes and m.buffered:
                # Temporal's "unhandled command": the workflow must first see what arrived.
                self._fail_started_workflow_task(
                    m,
                    task,
                    cause="UNHANDLED_COMMAND",
                    failure={
                        "message": "new events arrived while the workflow was closing; it runs again to see them",
                        "source": "server",
                    },
                    identity=identity,
                    retry_delay_s=0.0,
                    count_attempt=False,
                )
                await m.save()
                return [], None
            bad_search_attributes = await self._invalid_upserts(tx, row.namespace, commands)
            if bad_search_attributes is not None:
                # Temporal's BAD_SEARCH_ATTRIBUTES: retried, so registering the attribute unblocks the run.
                self._fail_started_workflow_task(
                    m,
                    task,
                    cause="BAD_SEARCH_ATTRIBUTES",
                    failure={"message": bad_search_attributes, "source": "server"},
                    identity=identity,
                    retry_delay_s=min(2.0 ** (row.wft_attempt - 1), self.config.max_workflow_task_retry_delay_s),
                )
                await m.save()
                return [], None
            if row.wft_attempt > 1:
                for event in m.transient_workflow_task_events(task.identity):
                    m.append(event.event_type, json.loads(event.attributes), event.event_us)
            completed_id = m.append(
                "WorkflowTaskCompleted",
                {
                    "scheduled_event_id": row.wft_scheduled_event_id,
                    "started_event_id": row.wft_started_event_id,
                    "identity": identity,
                    "worker_build_id": worker_build_id,
                },
            )
            row.wft_state = "NONE"
            row.wft_attempt = 1
            row.last_wft_failure = None
            outcomes: list[tuple[str, dict[str, Any]]] = []
            for command in commands:
                await self._apply_command(m, command, completed_id, outcomes)
            if m.running:
                flushed = m.flush_buffered()
                for event_type, attributes in outcomes:
                    m.append(event_type, attributes)
                if flushed or outcomes:
                    m.schedule_workflow_task(attempt=1)
                eager = self._lease_eagerly(m, eager_activity_slots, identity)
            else:
                eager = []
            next_task = self._new_workflow_task(m, row.task_queue) if return_new_workflow_task else None
            transient = self._start_workflow_task(m, next_task, identity) if next_task is not None else []
            await m.save()
            if not m.running:
                await self._after_run_closed(m)
            # Precise on the hot path; anything else (a continued or child run, a
            # closing parent) may add deadlines elsewhere, so the timekeeper looks now.
            hot_path = m.running and all(c.WhichOneof("attributes") in _DEADLINE_COMMANDS for c in commands)
            deadline[0] = m.earliest_new_deadline() if hot_path else now
            return eager, None if next_task is None else (next_task, row, transient, row.next_event_id)

        deadline: list[int | None] = [None]
        activity_tasks, next_workflow_task = await self._transaction(body)
        if deadline[0] is not None:
            self.on_new_deadline(deadline[0])
        return WorkflowTaskCompletion(
            [LeasedActivityTask(self._sign(t), t) for t in activity_tasks],
            None if next_workflow_task is None else await self._hand_out_workflow_task(*next_workflow_task),
        )

    def _lease_eagerly(self, m: _Mutation, slots: int, identity: str) -> list[TaskRow]:
        leased = []
        for task in m.new_tasks:
            if len(leased) >= slots:
                break
            if task.kind == ACTIVITY and task.task_queue == m.row.task_queue:
                options = json.loads(task.options)
                task.state = "LEASED"
                task.fencing_token = 1
                task.started_us = m.now
                task.identity = identity
                task.lease_expires_us = self._activity_lease_expiry(task, options, m.now)
                leased.append(task)
        return leased

    def _validate_commands(self, commands: Sequence[command_pb2.Command]) -> None:
        """Checks what can be checked without state; raises INVALID_ARGUMENT."""
        activity_ids: set[str] = set()
        timer_ids: set[str] = set()
        for index, command in enumerate(commands):
            kind = command.WhichOneof("attributes")
            where = f"command {index} ({kind})"
            if kind is None:
                raise InvalidArgument(f"command {index} has no attributes set")
            if kind in _CLOSE_COMMANDS and index != len(commands) - 1:
                raise InvalidArgument(f"{where} closes the workflow but is not the last command")
            if kind == "schedule_activity_task":
                a = command.schedule_activity_task
                if not a.activity_id or not a.activity_type:
                    raise InvalidArgument(f"{where}: activity_id and activity_type are required")
                if a.activity_id in activity_ids:
                    raise InvalidArgument(f"{where}: activity_id {a.activity_id!r} is used twice")
                activity_ids.add(a.activity_id)
                if duration_s(a.start_to_close_timeout) <= 0 and duration_s(a.schedule_to_close_timeout) <= 0:
                    raise InvalidArgument(
                        f"{where}: activity {a.activity_type!r} needs start_to_close_timeout or schedule_to_close_timeout"
                    )
                for name in (
                    "start_to_close_timeout",
                    "schedule_to_close_timeout",
                    "schedule_to_start_timeout",
                    "heartbeat_timeout",
                ):
                    if duration_s(getattr(a, name)) < 0:
                        raise InvalidArgument(f"{where}: {name} must not be negative")
                self.check_payloads(a.input, f"the input of activity {a.activity_type!r}")
            elif kind == "start_timer":
                t = command.start_timer
                if not t.timer_id or duration_s(t.start_to_fire_timeout) <= 0:
                    raise InvalidArgument(f"{where}: timer_id and a positive start_to_fire_timeout are required")
                if t.timer_id in timer_ids:
                    raise InvalidArgument(f"{where}: timer_id {t.timer_id!r} is used twice")
                timer_ids.add(t.timer_id)
            elif kind == "record_marker":
                marker = command.record_marker
                if not marker.marker_name:
                    raise InvalidArgument(f"{where}: marker_name is required")
                for key, payloads in marker.details.items():
                    self.check_payloads(payloads, f"the detail {key!r} of marker {marker.marker_name!r}")
            elif kind == "complete_workflow_execution":
                self.check_payloads(command.complete_workflow_execution.result, "the workflow result")
            elif kind == "fail_workflow_execution":
                self.check_failure(command.fail_workflow_execution.failure, "the workflow failure")
            elif kind == "upsert_workflow_search_attributes":
                self._check_search_attribute_names(command.upsert_workflow_search_attributes.search_attributes, where)
            elif kind in _LINEAGE_COMMANDS:
                self._validate_lineage_command(where, command)

    async def _apply_command(
        self,
        m: _Mutation,
        command: command_pb2.Command,
        completed_id: int,
        outcomes: list[tuple[str, dict[str, Any]]],
    ) -> None:
        row = m.row
        kind = command.WhichOneof("attributes")
        if kind == "schedule_activity_task":
            await self._schedule_activity(m, command.schedule_activity_task, completed_id)
        elif kind == "start_timer":
            t = command.start_timer
            if await m.tx.delete_timer(row.run_id, t.timer_id) is not None or any(
                x.timer_id == t.timer_id for x in m.new_timers
            ):
                raise InvalidArgument(f"timer_id {t.timer_id!r} is already in use by a pending timer of this run")
            seconds = duration_s(t.start_to_fire_timeout)
            started_id = m.append(
                "TimerStarted",
                {
                    "timer_id": t.timer_id,
                    "start_to_fire_timeout": seconds,
                    "workflow_task_completed_event_id": completed_id,
                },
            )
            m.new_timers.append(TimerRow(row.namespace, row.run_id, t.timer_id, started_id, m.now + _us(seconds)))
        elif kind == "cancel_timer":
            timer_id = command.cancel_timer.timer_id
            timer = await m.tx.delete_timer(row.run_id, timer_id)
            m.append(
                "TimerCanceled",
                {
                    "timer_id": timer_id,
                    "started_event_id": timer.started_event_id if timer else 0,
                    "workflow_task_completed_event_id": completed_id,
                },
            )
        elif kind == "request_cancel_activity_task":
            activity_id = command.request_cancel_activity_task.activity_id
            task = await m.tx.get_activity_task(row.run_id, activity_id)
            scheduled_event_id = task.scheduled_event_id if task else 0
            m.append(
                "ActivityTaskCancelRequested",
                {
                    "scheduled_event_id": scheduled_event_id,
                    "activity_id": activity_id,
                    "workflow_task_completed_event_id": completed_id,
                },
            )
            if task is not None and task.state == "PENDING":
                # Never started: it is cancelled now, nobody else to ask.
                await m.tx.delete_task(task.task_id or 0)
                outcomes.append(
                    ("ActivityTaskCanceled", {"scheduled_event_id": scheduled_event_id, "started_event_id": 0})
                )
            elif task is not None:
                task.cancel_requested = 1
                await m.tx.update_task(task)
        elif kind == "record_marker":
            marker = command.record_marker
            m.append(
                "MarkerRecorded",
                {
                    "marker_name": marker.marker_name,
                    "details": {key: payloads_json(value) for key, value in sorted(marker.details.items())},
                    "workflow_task_completed_event_id": completed_id,
                },
            )
        elif kind in _LINEAGE_COMMANDS:
            await self._apply_lineage_command(m, command, completed_id, outcomes)
        elif kind == "complete_workflow_execution":
            m.append(
                "WorkflowExecutionCompleted",
                {
                    "result": payloads_json(command.complete_workflow_execution.result),
                    "workflow_task_completed_event_id": completed_id,
                },
            )
            m.close("COMPLETED")
        elif kind == "fail_workflow_execution":
            m.append(
                "WorkflowExecutionFailed",
                {
                    "failure": failure_json(command.fail_workflow_execution.failure),
                    "workflow_task_completed_event_id": completed_id,
                },
            )
            m.close("FAILED")
        elif kind == "upsert_workflow_search_attributes":
            await self._upsert_search_attributes(m, command.upsert_workflow_search_attributes, completed_id)
        elif kind == "cancel_workflow_execution":
            m.append(
                "WorkflowExecutionCanceled",
                {
                    "details": payloads_json(command.cancel_workflow_execution.details),
                    "workflow_task_completed_event_id": completed_id,
                },
            )
            m.close("CANCELED")

    async def _schedule_activity(
        self, m: _Mutation, a: command_pb2.ScheduleActivityTaskCommandAttributes, completed_id: int
    ) -> None:
        row = m.row
        if await m.tx.get_activity_task(row.run_id, a.activity_id) is not None:
            raise InvalidArgument(f"activity_id {a.activity_id!r} is already in use by a pending activity of this run")
        schedule_to_close = duration_s(a.schedule_to_close_timeout)
        start_to_close = duration_s(a.start_to_close_timeout) or schedule_to_close
        schedule_to_start = duration_s(a.schedule_to_start_timeout)
        heartbeat = duration_s(a.heartbeat_timeout)
        policy = StoredRetryPolicy.from_proto(a.retry_policy if a.HasField("retry_policy") else None)
        task_queue = a.task_queue or row.task_queue
        options = {
            "schedule_to_close_timeout": schedule_to_close,
            "schedule_to_start_timeout": schedule_to_start,
            "start_to_close_timeout": start_to_close,
            "heartbeat_timeout": heartbeat,
            "retry_policy": policy.to_json(),
            "cancellation_type": int(a.cancellation_type),
        }
        scheduled_id = m.append(
            "ActivityTaskScheduled",
            {
                "activity_id": a.activity_id,
                "activity_type": a.activity_type,
                "task_queue": task_queue,
                "input": payloads_json(a.input),
                **options,
                "depends_on_activity_ids": list(a.depends_on_activity_ids),
                "workflow_task_completed_event_id": completed_id,
            },
        )
        s2c_deadline = m.now + _us(schedule_to_close) if schedule_to_close else None
        s2s_deadline = m.now + _us(schedule_to_start) if schedule_to_start else None
        pending_deadline = min((d for d in (s2c_deadline, s2s_deadline) if d is not None), default=None)
        m.new_tasks.append(
            TaskRow(
                task_id=None,
                namespace=row.namespace,
                run_id=row.run_id,
                workflow_id=row.workflow_id,
                workflow_type=row.workflow_type,
                kind=ACTIVITY,
                task_queue=task_queue,
                state="PENDING",
                visible_us=m.now,
                lease_expires_us=None,
                fencing_token=0,
                attempt=1,
                scheduled_event_id=scheduled_id,
                activity_id=a.activity_id,
                activity_type=a.activity_type,
                input=a.input.SerializeToString(),
                options=_events.dumps(options),
                scheduled_us=m.now,
                started_us=None,
                pending_deadline_us=pending_deadline,
                schedule_to_close_deadline_us=s2c_deadline,
                last_heartbeat_us=None,
                heartbeat_details=None,
                last_failure=None,
                retry_delays="[]",
                identity="",
                cancel_requested=0,
            )
        )

    def _fail_started_workflow_task(
        self,
        m: _Mutation,
        task: TaskRow,
        *,
        cause: str,
        failure: dict[str, Any],
        identity: str,
        retry_delay_s: float,
        count_attempt: bool = True,
        event_type: str = "WorkflowTaskFailed",
    ) -> None:
        """Closes the started workflow task as failed (or timed out) and schedules the next attempt."""
        row = m.row
        if row.wft_attempt == 1 or not count_attempt:
            # Later attempts are transient: their failure is shown by describe(), not logged to history.
            if row.wft_attempt > 1:
                for event in m.transient_workflow_task_events(task.identity):
                    m.append(event.event_type, json.loads(event.attributes), event.event_us)
            attributes: dict[str, Any] = {
                "scheduled_event_id": row.wft_scheduled_event_id,
                "started_event_id": row.wft_started_event_id,
            }
            if event_type == "WorkflowTaskFailed":
                attributes.update(cause=cause, failure=failure, identity=identity)
            else:
                attributes["timeout_type"] = "START_TO_CLOSE"
            m.append(event_type, attributes)
        row.last_wft_failure = _events.dumps({"cause": cause, "failure": failure, "attempt": row.wft_attempt})
        row.wft_state = "NONE"
        m.flush_buffered()
        m.schedule_workflow_task(attempt=row.wft_attempt + 1 if count_attempt else 1, delay_s=retry_delay_s)

    async def fail_workflow_task(
        self, raw_token: bytes, namespace: str, cause: str, failure: common_pb2.Failure, identity: str
    ) -> None:
        """Records a workflow task failure; the task is retried with backoff."""
        token = self._token(raw_token, namespace, WORKFLOW)
        self.check_failure(failure, "the failure")

        async def body(tx: Transaction) -> None:
            task = await self._leased_task(tx, token)
            row = await self._execution_of(tx, task)
            m = _Mutation(tx, row, self.clock.now_us())
            await tx.delete_task(task.task_id or 0)
            delay = min(2.0 ** (row.wft_attempt - 1), self.config.max_workflow_task_retry_delay_s)
            self._fail_started_workflow_task(
                m, task, cause=cause, failure=failure_json(failure), identity=identity, retry_delay_s=delay
            )
            await m.save()

        await self._transaction(body)
        self.on_new_deadline(self.clock.now_us())

    # ------------------------------------------------------------ activity tasks

    @staticmethod
    def _activity_lease_expiry(task: TaskRow, options: dict[str, Any], now: int) -> int:
        """The earliest of start-to-close, schedule-to-close and the heartbeat deadline."""
        assert task.started_us is not None
        candidates = [task.started_us + _us(options["start_to_close_timeout"])]
        if task.schedule_to_close_deadline_us is not None:
            candidates.append(task.schedule_to_close_deadline_us)
        if options["heartbeat_timeout"]:
            candidates.append(now + _us(options["heartbeat_timeout"]))
        return min(candidates)

    async def try_lease_activity_task(
        self, namespace: str, task_queue: str, identity: str
    ) -> LeasedActivityTask | None:
        """Leases the oldest visible activity task of the queue, or returns None.
        Touches only the task row: starting an activity writes no history."""

        async def body(tx: Transaction) -> TaskRow | None:
            now = self.clock.now_us()
            task = await tx.lease_next_task(namespace, ACTIVITY, task_queue, now)
            if task is None:
                return None
            task.state = "LEASED"
            task.fencing_token += 1
            task.started_us = now
            task.last_heartbeat_us = None
            task.identity = identity
            task.lease_expires_us = self._activity_lease_expiry(task, json.loads(task.options), now)
            await tx.update_task(task)
            return task

        task = await self._transaction(body, shielded=False)
        if task is None:
            return None
        self.on_new_deadline(task.lease_expires_us or 0)
        return LeasedActivityTask(self._sign(task), task)

    async def release_lease(self, raw_token: bytes) -> None:
        """Hands back a task leased to a poll whose caller went away before the answer
        reached it. An activity task returns to its queue without using an attempt; a
        workflow task's started event is already written, so it times out at once."""
        token = self.signer.verify(raw_token, expected_kind=None)

        async def body(tx: Transaction) -> None:
            try:
                task = await self._leased_task(tx, token)
            except FailedPrecondition:
                return
            if task.kind == ACTIVITY:
                task.state = "PENDING"
                task.lease_expires_us = None
                task.identity = ""
                await tx.update_task(task)
                tx.notify_after_commit(queue_channel(task.namespace, task.kind, task.task_queue))
                return
            row = await self._execution_of(tx, task)
            m = _Mutation(tx, row, self.clock.now_us())
            await tx.delete_task(task.task_id or 0)
            self._fail_started_workflow_task(
                m, task, cause="", failure={}, identity="", retry_delay_s=0.0, event_type="WorkflowTaskTimedOut"
            )
            await m.save()

        await self._transaction(body)

    def _token(self, raw_token: bytes, namespace: str, kind: str) -> TaskToken:
        token = self.signer.verify(raw_token, kind)
        if namespace and namespace != token.namespace:
            raise InvalidArgument(f"the task token belongs to namespace {token.namespace!r}, not {namespace!r}")
        return token

    async def record_heartbeat(self, raw_token: bytes, namespace: str, details: common_pb2.Payloads) -> bool:
        """Extends a heartbeating activity's lease; returns whether cancellation was requested."""
        token = self._token(raw_token, namespace, ACTIVITY)
        self.check_payloads(details, "the heartbeat details")

        async def body(tx: Transaction) -> bool:
            task = await self._leased_task(tx, token)
            now = self.clock.now_us()
            task.heartbeat_details = details.SerializeToString()
            task.last_heartbeat_us = now
            task.lease_expires_us = self._activity_lease_expiry(task, json.loads(task.options), now)
            await tx.update_task(task)
            return bool(task.cancel_requested)

        return await self._transaction(body)

    def _started_attributes(self, task: TaskRow, identity: str) -> dict[str, Any]:
        attributes: dict[str, Any] = {
            "scheduled_event_id": task.scheduled_event_id,
            "attempt": task.attempt,
            "identity": identity or task.identity,
            "retry_delays": json.loads(task.retry_delays),
        }
        if task.last_failure:
            attributes["last_failure"] = json.loads(task.last_failure)
        return attributes

    async def complete_activity_task(
        self,
        raw_token: bytes,
        namespace: str,
        result: common_pb2.Payloads,
        identity: str,
        eager_workflow_task_queue: str = "",
    ) -> LeasedWorkflowTask | None:
        """Records the completion. With ``eager_workflow_task_queue``, the workflow
        task it schedules on that queue is leased to the caller in the same
        transaction and returned (one round trip instead of a completion and a poll)."""
        token = self._token(raw_token, namespace, ACTIVITY)
        self.check_payloads(result, "the activity result")
        return await self._record_activity_outcome(
            token,
            identity,
            "ActivityTaskCompleted",
            {"result": payloads_json(result), "identity": identity},
            eager_workflow_task_queue,
        )

    async def fail_activity_task(
        self, raw_token: bytes, namespace: str, failure: common_pb2.Failure, identity: str
    ) -> None:
        token = self._token(raw_token, namespace, ACTIVITY)
        self.check_failure(failure, "the activity failure")

        async def body(tx: Transaction) -> None:
            task = await self._leased_task(tx, token)
            await self._activity_attempt_failed(tx, task, failure, identity, timed_out=False)

        await self._transaction(body)

    async def cancel_activity_task(
        self, raw_token: bytes, namespace: str, details: common_pb2.Payloads, identity: str
    ) -> None:
        token = self._token(raw_token, namespace, ACTIVITY)
        self.check_payloads(details, "the cancellation details")
        await self._record_activity_outcome(
            token, identity, "ActivityTaskCanceled", {"details": payloads_json(details), "identity": identity}
        )

    async def _record_activity_outcome(
        self,
        token: TaskToken,
        identity: str,
        outcome_type: str,
        attributes: dict[str, Any],
        eager_workflow_task_queue: str = "",
    ) -> LeasedWorkflowTask | None:
        """Ends the leased activity: its task row goes, Started + the outcome are
        delivered; returns the workflow task leased eagerly, if asked and scheduled."""

        async def body(tx: Transaction) -> tuple[TaskRow, ExecutionRow, list[HistoryEventRow], int] | None:
            task = await self._leased_task(tx, token)
            row = await self._execution_of(tx, task)
            m = _Mutation(tx, row, self.clock.now_us())
            await tx.delete_task(task.task_id or 0)
            m.deliver(
                [
                    ("ActivityTaskStarted", self._started_attributes(task, identity), task.started_us or m.now),
                    (
                        outcome_type,
                        {
                            "scheduled_event_id": task.scheduled_event_id,
                            "started_event_id": _PREVIOUS_EVENT,
                            **attributes,
                        },
                    ),
                ]
            )
            eager = self._new_workflow_task(m, eager_workflow_task_queue)
            transient = self._start_workflow_task(m, eager, identity) if eager is not None else []
            await m.save()
            return None if eager is None else (eager, row, transient, row.next_event_id)

        leased = await self._transaction(body)
        return None if leased is None else await self._hand_out_workflow_task(*leased)

    @staticmethod
    def _new_workflow_task(m: _Mutation, task_queue: str) -> TaskRow | None:
        """The workflow task this mutation scheduled on ``task_queue``, due now, if any."""
        if not task_queue:
            return None
        for task in m.new_tasks:
            if task.kind == WORKFLOW and task.task_queue == task_queue and task.visible_us <= m.now:
                return task
        return None

    async def _activity_attempt_failed(
        self,
        tx: Transaction,
        task: TaskRow,
        failure: common_pb2.Failure,
        identity: str,
        *,
        timed_out: bool,
        final_retry_state: str | None = None,
    ) -> None:
        """Retries the activity per its policy, or records its final failure."""
        now = self.clock.now_us()
        options = json.loads(task.options)
        if final_retry_state is None:
            decision = decide_retry(
                StoredRetryPolicy.from_json(options["retry_policy"]),
                attempt=task.attempt,
                failure=failure,
                now_us=now,
                schedule_to_close_deadline_us=task.schedule_to_close_deadline_us,
                rng=self._rng,
            )
            if task.cancel_requested and decision.delay_s is not None:
                decision = dataclasses.replace(decision, delay_s=None, retry_state="CANCEL_REQUESTED")
        else:
            decision = None
        if decision is not None and decision.delay_s is not None:
            delays = [*json.loads(task.retry_delays), round(decision.delay_s, 6)]
            task.state = "PENDING"
            task.lease_expires_us = None
            task.attempt += 1
            task.visible_us = now + _us(decision.delay_s)
            task.last_failure = _events.dumps(failure_json(failure))
            task.retry_delays = _events.dumps(delays)
            task.identity = ""
            # Schedule-to-start limits every attempt's wait in the queue, counted
            # from when the retry becomes due (the first attempt's is set at scheduling).
            schedule_to_start_deadline = (
                task.visible_us + _us(options["schedule_to_start_timeout"])
                if options["schedule_to_start_timeout"]
                else None
            )
            task.pending_deadline_us = min(
                (d for d in (task.schedule_to_close_deadline_us, schedule_to_start_deadline) if d is not None),
                default=None,
            )
            await tx.update_task(task)
            # Pollers re-check on their own within a second; no wake-up needed now.
            return
        row = await self._execution_of(tx, task)
        m = _Mutation(tx, row, now)
        await tx.delete_task(task.task_id or 0)
        retry_state = final_retry_state or (decision.retry_state if decision else "TIMEOUT")
        outcome_type = "ActivityTaskTimedOut" if timed_out else "ActivityTaskFailed"
        outcome: dict[str, Any] = {
            "scheduled_event_id": task.scheduled_event_id,
            "failure": failure_json(failure),
            "retry_state": retry_state,
        }
        events: list[Any] = []
        if task.state == "LEASED":
            events.append(("ActivityTaskStarted", self._started_attributes(task, identity), task.started_us or now))
            outcome["started_event_id"] = _PREVIOUS_EVENT
        else:
            outcome["started_event_id"] = 0
        if not timed_out:
            outcome["identity"] = identity
        events.append((outcome_type, outcome))
        m.deliver(events)
        await m.save()

    # ------------------------------------------------------------ reaper entry points

    async def expire_task(self, task_id: int) -> None:
        """Handles one task whose lease or pending deadline passed (called by the reaper)."""

        async def body(tx: Transaction) -> None:
            task = await tx.get_task(task_id, for_update=True)
            now = self.clock.now_us()
            if task is None:
                return
            lease_expired = task.state == "LEASED" and (task.lease_expires_us or 0) <= now
            pending_expired = (
                task.state == "PENDING" and task.pending_deadline_us is not None and task.pending_deadline_us <= now
            )
            if not (lease_expired or pending_expired):
                return  # another replica or a report got there first
            if task.kind == WORKFLOW:
                row = await self._execution_of(tx, task)
                m = _Mutation(tx, row, now)
                await tx.delete_task(task.task_id or 0)
                self._fail_started_workflow_task(
                    m, task, cause="", failure={}, identity="", retry_delay_s=0.0, event_type="WorkflowTaskTimedOut"
                )
                await m.save()
                return
            options = json.loads(task.options)
            timeout_type, final = self._which_timeout(task, options, now, lease_expired)
            failure = common_pb2.Failure(
                message=f"activity {timeout_type.lower().replace('_', '-')} timeout",
                type="TimeoutError",
                timeout_type=common_pb2.TimeoutType.Value(f"TIMEOUT_TYPE_{timeout_type}"),
                source="server",
            )
            if task.heartbeat_details:
                failure.details.ParseFromString(task.heartbeat_details)
            await self._activity_attempt_failed(
                tx, task, failure, "", timed_out=True, final_retry_state="TIMEOUT" if final else None
            )

        await self._transaction(body)

    @staticmethod
    def _which_timeout(task: TaskRow, options: dict[str, Any], now: int, lease_expired: bool) -> tuple[str, bool]:
        """(timeout type, whether it ends the activity without retry)."""
        if task.schedule_to_close_deadline_us is not None and task.schedule_to_close_deadline_us <= now:
            return "SCHEDULE_TO_CLOSE", True
        if not lease_expired:
            return "SCHEDULE_TO_START", True
        assert task.started_us is not None
        if task.started_us + _us(options["start_to_close_timeout"]) <= now:
            return "START_TO_CLOSE", False
        return "HEARTBEAT", False

    async def fire_due_timers(self, limit: int) -> int:
        """Fires up to ``limit`` due timers in one transaction; returns how many.

        The batch is claimed by deleting its rows (skipping rows another replica's
        timekeeper holds), so each timer fires exactly once however many replicas
        run; its executions are read (and locked) with one statement, in (namespace,
        run id) order, so two batches never wait on each other in a cycle, and a
        concurrent report waits rather than conflicts. Their events, workflow tasks
        and execution rows are written a batch at a time (:meth:`_Mutation.save_all`).
        """

        async def body(tx: Transaction) -> int:
            claimed = await tx.claim_due_timers(self.clock.now_us(), limit)
            timers_of_run: dict[tuple[str, str], list[TimerRow]] = {}
            for timer in sorted(claimed, key=lambda t: (t.fire_us, t.started_event_id)):
                timers_of_run.setdefault((timer.namespace, timer.run_id), []).append(timer)
            rows = await tx.lock_executions(list(timers_of_run))
            assert len(rows) == len(timers_of_run), "timers are deleted with their run"
            # One mutation per execution: its timers of the batch fire in due order,
            # with gapless event ids, through the same rules as any other delivery.
            now = self.clock.now_us()
            mutations = []
            for row in rows:
                assert row.status == "RUNNING", "timers are deleted when their run closes"
                m = _Mutation(tx, row, now)
                m.deliver(
                    [
                        ("TimerFired", {"timer_id": timer.timer_id, "started_event_id": timer.started_event_id})
                        for timer in timers_of_run[(row.namespace, row.run_id)]
                    ]
                )
                mutations.append(m)
            await _Mutation.save_all(tx, mutations)
            return len(claimed)

        return await self._transaction(body)

    async def time_out_execution(self, namespace: str, run_id: str) -> None:
        async def body(tx: Transaction) -> None:
            row = await tx.get_execution(namespace, run_id)
            now = self.clock.now_us()
            if row is None or row.status != "RUNNING" or row.deadline_us is None or row.deadline_us > now:
                return
            m = _Mutation(tx, row, now)
            self._abandon_started_workflow_task(m, cause="FORCE_CLOSE_COMMAND", message="workflow timed out")
            m.append("WorkflowExecutionTimedOut", {"timeout_type": row.deadline_kind or "EXECUTION"})
            m.close("TIMED_OUT")
            await m.save()
            await self._after_run_closed(m)

        await self._transaction(body)

    # ------------------------------------------------- child workflows and continue-as-new
    #
    # A child's run is created in the transaction that records
    # StartChildWorkflowExecutionInitiated in its parent, with a child_executions row
    # linking the two. Whatever closes a run (a close command, terminate, a timeout)
    # calls _after_run_closed in the same transaction, which delivers the child's
    # outcome to its parent and deletes the link, applies the run's parent close
    # policy to its own pending children, and starts the next run of a
    # continue-as-new: a crash can neither lose nor repeat any of it.

    def _validate_lineage_command(self, where: str, command: command_pb2.Command) -> None:
        kind = command.WhichOneof("attributes")
        if kind == "start_child_workflow_execution":
            a = command.start_child_workflow_execution
            for name in ("workflow_id", "workflow_type"):
                self._check_command_name(where, name, getattr(a, name), required=True)
            self._check_command_name(where, "task_queue", a.task_queue, required=False)
            for name in ("workflow_execution_timeout", "workflow_run_timeout", "workflow_task_timeout"):
                if duration_s(getattr(a, name)) < 0:
                    raise InvalidArgument(f"{where}: {name} must not be negative")
            if a.parent_close_policy not in common_pb2.ParentClosePolicy.values():
                raise InvalidArgument(f"{where}: unknown parent_close_policy {a.parent_close_policy}")
            self.check_payloads(a.input, f"the input of child workflow {a.workflow_id!r}")
            self._check_visibility_input(a.search_attributes, a.memo, where)
        elif kind == "request_cancel_external_workflow_execution":
            a = command.request_cancel_external_workflow_execution
            self._check_command_name(where, "workflow_id", a.workflow_id, required=True)
            if not a.child_workflow_only:
                raise InvalidArgument(
                    f"{where}: workflow code may only cancel its own children; set child_workflow_only"
                )
        elif kind == "signal_external_workflow_execution":
            a = command.signal_external_workflow_execution
            self._check_command_name(where, "workflow_id", a.workflow_id, required=True)
            self._check_command_name(where, "signal_name", a.signal_name, required=True)
            if not a.child_workflow_only:
                raise InvalidArgument(
                    f"{where}: workflow code may only signal its own children; set child_workflow_only"
                )
            self.check_payloads(a.input, f"the input of signal {a.signal_name!r}")
        else:
            a = command.continue_as_new_workflow_execution
            self._check_command_name(where, "workflow_type", a.workflow_type, required=False)
            self._check_command_name(where, "task_queue", a.task_queue, required=False)
            for name in ("workflow_run_timeout", "workflow_task_timeout"):
                if duration_s(getattr(a, name)) < 0:
                    raise InvalidArgument(f"{where}: {name} must not be negative")
            self.check_payloads(a.input, "the input of the continued run")

    @staticmethod
    def _check_command_name(where: str, field: str, value: str, *, required: bool) -> None:
        if not value:
            if required:
                raise InvalidArgument(f"{where}: {field} is required")
            return
        if len(value) > _MAX_NAME_LENGTH:
            raise InvalidArgument(f"{where}: {field} is {len(value)} characters long; the limit is {_MAX_NAME_LENGTH}")
        if any(ord(ch) < 32 for ch in value):
            raise InvalidArgument(f"{where}: {field} must not contain control characters")

    async def _apply_lineage_command(
        self,
        m: _Mutation,
        command: command_pb2.Command,
        completed_id: int,
        outcomes: list[tuple[str, dict[str, Any]]],
    ) -> None:
        kind = command.WhichOneof("attributes")
        if kind == "start_child_workflow_execution":
            await self._start_child(m, command.start_child_workflow_execution, completed_id, outcomes)
        elif kind == "request_cancel_external_workflow_execution":
            await self._request_cancel_child(m, command.request_cancel_external_workflow_execution, completed_id)
        elif kind == "signal_external_workflow_execution":
            await self._signal_child(m, command.signal_external_workflow_execution, completed_id, outcomes)
        else:
            a = command.continue_as_new_workflow_execution
            row = m.row
            started = json.loads((await m.tx.read_events(row.namespace, row.run_id, 0, 1))[0].attributes)
            m.append(
                "WorkflowExecutionContinuedAsNew",
                {
                    "new_execution_run_id": str(uuid.uuid4()),
                    "workflow_type": a.workflow_type or row.workflow_type,
                    "task_queue": a.task_queue or row.task_queue,
                    "input": payloads_json(a.input),
                    "workflow_run_timeout": duration_s(a.workflow_run_timeout) or started["workflow_run_timeout"],
                    "workflow_task_timeout": duration_s(a.workflow_task_timeout) or row.wft_timeout_s,
                    "workflow_task_completed_event_id": completed_id,
                },
            )
            m.close("CONTINUED_AS_NEW")

    async def _start_child(
        self,
        m: _Mutation,
        a: command_pb2.StartChildWorkflowExecutionCommandAttributes,
        completed_id: int,
        outcomes: list[tuple[str, dict[str, Any]]],
    ) -> None:
        parent = m.row
        policy = common_pb2.ParentClosePolicy.Name(a.parent_close_policy or common_pb2.PARENT_CLOSE_POLICY_TERMINATE)
        policy = policy.removeprefix("PARENT_CLOSE_POLICY_")
        task_queue = a.task_queue or parent.task_queue
        retry = (
            {"retry_policy": StoredRetryPolicy.from_proto(a.retry_policy).to_json()}
            if a.HasField("retry_policy")
            else {}
        )
        initiated_id = m.append(
            "StartChildWorkflowExecutionInitiated",
            {
                "workflow_id": a.workflow_id,
                "workflow_type": a.workflow_type,
                "task_queue": task_queue,
                "input": payloads_json(a.input),
                "workflow_execution_timeout": duration_s(a.workflow_execution_timeout),
                "workflow_run_timeout": duration_s(a.workflow_run_timeout),
                "workflow_task_timeout": duration_s(a.workflow_task_timeout),
                "parent_close_policy": policy,
                "workflow_task_completed_event_id": completed_id,
                **retry,
            },
        )
        child = self._new_run(
            m.tx,
            m.now,
            namespace=parent.namespace,
            workflow_id=a.workflow_id,
            workflow_type=a.workflow_type,
            task_queue=task_queue,
            input=a.input,
            identity=f"parent {parent.workflow_id}",
            execution_timeout_s=duration_s(a.workflow_execution_timeout),
            run_timeout_s=duration_s(a.workflow_run_timeout),
            task_timeout_s=duration_s(a.workflow_task_timeout),
            started={
                "parent_workflow_namespace": parent.namespace,
                "parent_workflow_id": parent.workflow_id,
                "parent_run_id": parent.run_id,
                "parent_initiated_event_id": initiated_id,
                **retry,
                **self._visibility_attributes(a.search_attributes, a.memo),
            },
        )
        identity = {"initiated_event_id": initiated_id, "workflow_id": a.workflow_id, "workflow_type": a.workflow_type}
        try:
            await child.save()
        except DuplicateRunningExecution:
            outcomes.append(("StartChildWorkflowExecutionFailed", {**identity, "cause": "WORKFLOW_ALREADY_EXISTS"}))
            return
        await self._write_visibility(
            m.tx, child.row, await self._stored_values(m.tx, parent.namespace, a.search_attributes), a.memo
        )
        await m.tx.insert_child_execution(
            ChildExecutionRow(
                namespace=parent.namespace,
                parent_run_id=parent.run_id,
                initiated_event_id=initiated_id,
                workflow_id=a.workflow_id,
                run_id=child.row.run_id,
                workflow_type=a.workflow_type,
                parent_close_policy=policy,
            )
        )
        outcomes.append(("ChildWorkflowExecutionStarted", {**identity, "run_id": child.row.run_id}))

    async def _request_cancel_child(
        self, m: _Mutation, a: command_pb2.RequestCancelExternalWorkflowExecutionCommandAttributes, completed_id: int
    ) -> None:
        """Delivers the cancel request to the child in this transaction; a child that
        closed meanwhile needs none (its outcome is on its way to the parent)."""
        row = m.row
        child = await self._pending_child(m, a.workflow_id, a.run_id)
        m.append(
            "RequestCancelExternalWorkflowExecutionInitiated",
            {
                "workflow_id": a.workflow_id,
                "run_id": a.run_id,
                "child_workflow_only": True,
                "workflow_task_completed_event_id": completed_id,
            },
        )
        if child is not None:
            await self._request_cancel_run(
                m.tx, row.namespace, child.run_id, m.now, reason=f"cancelled by its parent {row.workflow_id}"
            )

    async def _pending_child(self, m: _Mutation, workflow_id: str, run_id: str) -> ChildExecutionRow | None:
        """The run's pending child with this workflow id (and run id, if given)."""
        children = await m.tx.list_child_executions(m.row.namespace, m.row.run_id)
        return next((c for c in children if c.workflow_id == workflow_id and run_id in ("", c.run_id)), None)

    async def _signal_child(
        self,
        m: _Mutation,
        a: command_pb2.SignalExternalWorkflowExecutionCommandAttributes,
        completed_id: int,
        outcomes: list[tuple[str, dict[str, Any]]],
    ) -> None:
        """Delivers the signal to the child in this transaction and reports back whether it could."""
        row = m.row
        initiated_id = m.append(
            "SignalExternalWorkflowExecutionInitiated",
            {
                "workflow_id": a.workflow_id,
                "run_id": a.run_id,
                "signal_name": a.signal_name,
                "input": payloads_json(a.input),
                "child_workflow_only": True,
                "workflow_task_completed_event_id": completed_id,
            },
        )
        child = await self._pending_child(m, a.workflow_id, a.run_id)
        target = await m.tx.get_execution(row.namespace, child.run_id) if child is not None else None
        identity = {"initiated_event_id": initiated_id, "workflow_id": a.workflow_id}
        if target is None or target.status != "RUNNING":
            outcomes.append(
                (
                    "SignalExternalWorkflowExecutionFailed",
                    {**identity, "run_id": a.run_id, "cause": "EXTERNAL_WORKFLOW_EXECUTION_NOT_FOUND"},
                )
            )
            return
        await self._signal(m.tx, target, StartSignal(a.signal_name, a.input), f"parent {row.workflow_id}")
        outcomes.append(("ExternalWorkflowExecutionSignaled", {**identity, "run_id": target.run_id}))

    async def _request_cancel_run(self, tx: Transaction, namespace: str, run_id: str, now: int, *, reason: str) -> None:
        row = await tx.get_execution(namespace, run_id)
        if row is None or row.status != "RUNNING" or row.cancel_requested:
            return
        cm = _Mutation(tx, row, now)
        row.cancel_requested = 1
        cm.deliver([("WorkflowExecutionCancelRequested", {"reason": reason, "identity": "server"})])
        await cm.save()

    @staticmethod
    async def _started_attributes_of(m: _Mutation) -> dict[str, Any]:
        """The attributes of the run's WorkflowExecutionStarted event."""
        return json.loads((await m.tx.read_events(m.row.namespace, m.row.run_id, 0, 1))[0].attributes)

    async def _after_run_closed(self, m: _Mutation) -> None:
        """The consequences of closing ``m``'s run, in its transaction (see above)."""
        row = m.row
        close_event = m.events[-1]
        attributes = json.loads(close_event.attributes)
        new_run_id: str | None = None
        retry_state: str | None = None
        # Only a run that goes on (continued, or retried) needs its start event: a
        # completing run, the common case, does not read it.
        if close_event.event_type == "WorkflowExecutionContinuedAsNew":
            new_run_id = await self._start_continued_run(m, await self._started_attributes_of(m), attributes)
        elif close_event.event_type == "WorkflowExecutionFailed" or attributes.get("timeout_type") == "RUN":
            new_run_id, retry_state = await self._retry_run(m, await self._started_attributes_of(m), attributes)
        for child in await m.tx.list_child_executions(row.namespace, row.run_id):
            await m.tx.delete_child_execution(row.namespace, row.run_id, child.initiated_event_id)
            await self._apply_parent_close_policy(m.tx, child, m.now, parent=row)
        link = await m.tx.get_child_execution(row.namespace, row.run_id)
        if link is None:
            return
        if new_run_id is not None:
            await m.tx.move_child_execution(row.namespace, row.run_id, new_run_id)
            return
        await m.tx.delete_child_execution(row.namespace, link.parent_run_id, link.initiated_event_id)
        parent = await m.tx.get_execution(row.namespace, link.parent_run_id)
        if parent is None or parent.status != "RUNNING":
            return
        outcome_type, outcome = _CHILD_OUTCOMES[close_event.event_type]
        pm = _Mutation(m.tx, parent, m.now)
        pm.deliver(
            [
                (
                    outcome_type,
                    {
                        "initiated_event_id": link.initiated_event_id,
                        "workflow_id": row.workflow_id,
                        "run_id": row.run_id,
                        "workflow_type": row.workflow_type,
                        **{key: attributes.get(key) for key in outcome},
                        **({"retry_state": retry_state} if retry_state else {}),
                    },
                )
            ]
        )
        await pm.save()

    async def _retry_run(self, m: _Mutation, started: dict[str, Any], closed: dict[str, Any]) -> tuple[str | None, str]:
        """Starts the next attempt of a failed (or run-timed-out) run that has a retry
        policy, after its backoff; returns (the new run id or None, the retry state)."""
        if "retry_policy" not in started:
            return None, "NON_RETRYABLE_FAILURE" if "failure" in closed else "TIMEOUT"
        attempt = int(started.get("attempt", 1))
        failure = (
            failure_from_json(closed["failure"])
            if "failure" in closed
            else common_pb2.Failure(message="workflow run timed out", type="TimeoutError")
        )
        decision = decide_retry(
            StoredRetryPolicy.from_json(started["retry_policy"]),
            attempt=attempt,
            failure=failure,
            now_us=m.now,
            schedule_to_close_deadline_us=started.get("workflow_execution_expiration_us"),
            rng=self._rng,
        )
        if decision.delay_s is None:
            return None, decision.retry_state
        row = m.row
        retry = {
            "new_execution_run_id": str(uuid.uuid4()),
            "workflow_type": row.workflow_type,
            "task_queue": row.task_queue,
            "input": started["input"],
            "workflow_run_timeout": started["workflow_run_timeout"],
            "workflow_task_timeout": row.wft_timeout_s,
        }
        new_run_id = await self._start_continued_run(
            m, started, retry, extra={"attempt": attempt + 1, "initiator": "RETRY"}, first_task_delay_s=decision.delay_s
        )
        return new_run_id, decision.retry_state

    async def _start_continued_run(
        self,
        m: _Mutation,
        started: dict[str, Any],
        continued: dict[str, Any],
        *,
        extra: dict[str, Any] | None = None,
        first_task_delay_s: float = 0.0,
    ) -> str:
        """Starts the run a continue-as-new (or a retry) asked for: same workflow id,
        fresh history, the execution timeout still counted from the chain's first run."""
        row = m.row
        carried = {key: started[key] for key in _CARRIED_START_ATTRIBUTES if key in started}
        # Like Temporal, the new run keeps the memo and the search attributes as they are now (upserts included).
        search_attributes, memo = (await self._visibility_of(m.tx, row.namespace, [row.run_id]))[row.run_id]
        new = self._new_run(
            m.tx,
            m.now,
            namespace=row.namespace,
            workflow_id=row.workflow_id,
            workflow_type=continued["workflow_type"],
            task_queue=continued["task_queue"],
            input=payloads_from_json(continued["input"]),
            identity=started.get("identity", ""),
            execution_timeout_s=started.get("workflow_execution_timeout", 0.0),
            run_timeout_s=continued["workflow_run_timeout"],
            task_timeout_s=continued["workflow_task_timeout"],
            started={
                **carried,
                "continued_execution_run_id": row.run_id,
                **self._visibility_attributes(search_attributes, memo),
                **(extra or {}),
            },
            run_id=continued["new_execution_run_id"],
            execution_expiration_us=started.get("workflow_execution_expiration_us"),
            first_task_delay_s=first_task_delay_s,
        )
        await new.save()
        values = await self._stored_values(m.tx, row.namespace, search_attributes)
        await self._write_visibility(m.tx, new.row, values, memo)
        return new.row.run_id

    async def _apply_parent_close_policy(
        self, tx: Transaction, child: ChildExecutionRow, now: int, *, parent: ExecutionRow
    ) -> None:
        if child.parent_close_policy == "ABANDON":
            return
        reason = (
            f"parent {parent.workflow_id} closed ({parent.status}; parent close policy {child.parent_close_policy})"
        )
        if child.parent_close_policy == "REQUEST_CANCEL":
            await self._request_cancel_run(tx, child.namespace, child.run_id, now, reason=reason)
            return
        row = await tx.get_execution(child.namespace, child.run_id)
        if row is None or row.status != "RUNNING":
            return
        cm = _Mutation(tx, row, now)
        self._abandon_started_workflow_task(cm, cause="FORCE_CLOSE_COMMAND", message="terminated")
        cm.append("WorkflowExecutionTerminated", {"reason": reason, "identity": "server"})
        cm.close("TERMINATED")
        await cm.save()
        await self._after_run_closed(cm)

    async def pending_children(self, namespace: str, run_id: str) -> list[ChildExecutionRow]:
        """The children a run started that have not closed yet (for describe())."""
        return await self.read(lambda tx: tx.list_child_executions(namespace, run_id))


# A closing child's event, and the event (with the attributes it copies) its parent gets.
_CHILD_OUTCOMES: dict[str, tuple[str, tuple[str, ...]]] = {
    "WorkflowExecutionCompleted": ("ChildWorkflowExecutionCompleted", ("result",)),
    "WorkflowExecutionFailed": ("ChildWorkflowExecutionFailed", ("failure",)),
    "WorkflowExecutionCanceled": ("ChildWorkflowExecutionCanceled", ("details",)),
    "WorkflowExecutionTerminated": ("ChildWorkflowExecutionTerminated", ("reason",)),
    "WorkflowExecutionTimedOut": ("ChildWorkflowExecutionTimedOut", ("timeout_type",)),
}
# What every run of a continue-as-new chain keeps from the first one.
_CARRIED_START_ATTRIBUTES = (
    "parent_workflow_namespace",
    "parent_workflow_id",
    "parent_run_id",
    "parent_initiated_event_id",
    "original_execution_run_id",
    "first_execution_run_id",
    "retry_policy",
)
_MAX_NAME_LENGTH = 1000
