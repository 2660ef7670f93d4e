"""Executions: start, describe, history, cancel, terminate and signal."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from typing import Any

from flowforge.api.schema import DagJSON, EventType, ExecutionStatus
from flowforge.api.v1 import common_pb2
from flowforge.server.errors import AlreadyExists, FailedPrecondition, NotFound
from flowforge.server.history.cron import cron_delay_s
from flowforge.server.history.data import DEFAULT_PRIORITY, StartSignal, TaskPriority, header_attributes
from flowforge.server.history.execution_limits import check_signal
from flowforge.server.history.id_policies import apply_id_policies
from flowforge.server.history.mutation import (
    EagerStart,
    StartedWorkflowTask,
    _Mutation,
    close_channel,
    new_run,
    run_channel,
)
from flowforge.server.history.run_close import RunClose
from flowforge.server.history.visibility_writes import visibility_attributes
from flowforge.server.stores.base import (
    ChildExecutionRow,
    ConcurrencyConflict,
    DuplicateRunningExecution,
    ExecutionRow,
    HistoryEventRow,
    TaskRow,
    Transaction,
)

__all__ = ["Executions"]

# A signal's request id shares the request_ids table with starts, under its own prefix.
_SIGNAL_REQUEST_PREFIX = "signal:"


@dataclasses.dataclass
class _Started:
    """What a start's transaction hands back."""

    run_id: str
    started: bool
    deadline_us: int | None = None
    workflow_task: StartedWorkflowTask | None = None


class Executions(RunClose):
    """The life of an execution as its callers see it."""

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
        header: common_pb2.Header | None = None,
        cron_schedule: str = "",
        dag: DagJSON | None = None,
        id_reuse_policy: int = 0,
        id_conflict_policy: int = 0,
        priority: TaskPriority = DEFAULT_PRIORITY,
        eager: EagerStart | None = None,
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
            header: Context from the caller (e.g. the trace context), recorded in
                ``WorkflowExecutionStarted`` for the workflow's interceptors.
            cron_schedule: A checked cron expression: the run waits for its next time (cron.py).
            id_reuse_policy: A ``WorkflowIdReusePolicy`` value (id_policies.py); 0 allows reuse.
            id_conflict_policy: A ``WorkflowIdConflictPolicy`` value; 0 fails on a running execution.
            dag: The declarative DAG version the run executes instead of workflow code (dag_runs.py).
            priority: The run's dispatch order, inherited by its tasks (docs/flow-control.md).
            eager: A new run's first workflow task, if due now, is leased to ``eager.identity``
                in this transaction (as matching leases it) and left in ``eager.started``:
                one write transaction less on the way to the first task (docs/worker-stream.md).
        """
        self.check_payloads(input, "the workflow input")
        if start_signal is not None:
            self.check_payloads(start_signal.input, "the signal input")
        search_attributes = search_attributes or common_pb2.SearchAttributes()
        memo = memo or common_pb2.Memo()
        self._check_visibility_input(search_attributes, memo, "search_attributes")
        await self.ensure_namespace(namespace)

        async def body(tx: Transaction) -> _Started:
            earlier = await tx.get_request_run_id(namespace, request_id)
            if earlier is not None:
                return _Started(earlier, False)
            if start_signal is not None:
                running = await tx.get_latest_execution(namespace, workflow_id)
                if running is not None and running.status == ExecutionStatus.RUNNING:
                    await self._signal(tx, running, start_signal, identity)
                    await tx.insert_request_id(namespace, request_id, running.run_id, self.clock.now_us())
                    return _Started(running.run_id, False)
            now = self.clock.now_us()
            existing = await apply_id_policies(
                self,
                tx,
                namespace=namespace,
                workflow_id=workflow_id,
                reuse_policy=id_reuse_policy,
                conflict_policy=id_conflict_policy,
                now=now,
            )
            if existing is not None:
                await tx.insert_request_id(namespace, request_id, existing, now)
                return _Started(existing, False)
            await self.admit_start(tx, namespace)
            m = new_run(
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
                default_task_timeout_s=self.config.default_workflow_task_timeout_s,
                started={
                    "request_id": request_id,
                    **({"origin": origin} if origin else {}),
                    **header_attributes(header),
                    **visibility_attributes(search_attributes, memo),
                    **({"cron_schedule": cron_schedule} if cron_schedule else {}),
                    **({"dag": dag} if dag else {}),
                },
                first_task_delay_s=cron_delay_s(cron_schedule, now) if cron_schedule else 0.0,
                first_events=[(EventType.WORKFLOW_EXECUTION_SIGNALED, start_signal.attributes(identity))]
                if start_signal
                else (),
                dag_digest=dag["digest"] if dag else None,
                priority=priority,
            )
            run_id = m.row.run_id
            first = m.new_workflow_task(task_queue) if eager is not None else None
            workflow_task = m.start_workflow_task(first, eager.identity) if first and eager else None
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
            return _Started(run_id, True, m.earliest_new_deadline(), workflow_task)

        result = await (body(tx) if tx is not None else self._transaction(body))
        if result.started and result.deadline_us is not None:
            self.on_new_deadline(result.deadline_us)
        if eager is not None:
            eager.started = result.workflow_task
        return result.run_id, result.started

    async def resolve_execution(self, tx: Transaction, namespace: str, workflow_id: str, run_id: str) -> ExecutionRow:
        """The run ``run_id`` (of ``workflow_id``, if given), or the latest run of ``workflow_id``; NOT_FOUND if none."""
        row = (
            await tx.get_execution(namespace, run_id)
            if run_id
            else await tx.get_latest_execution(namespace, workflow_id)
        )
        if row is None or (run_id and workflow_id and row.workflow_id != workflow_id):
            what = f"run {run_id!r} of workflow {workflow_id!r}" if run_id else f"workflow {workflow_id!r}"
            raise NotFound(f"{what} not found in namespace {namespace!r}")
        return row

    async def _running_execution(self, tx: Transaction, namespace: str, workflow_id: str, run_id: str) -> ExecutionRow:
        """Like :meth:`resolve_execution`, and FAILED_PRECONDITION unless the run is running."""
        row = await self.resolve_execution(tx, namespace, workflow_id, run_id)
        if row.status != ExecutionStatus.RUNNING:
            raise FailedPrecondition(f"workflow {row.workflow_id!r} run {row.run_id} is already {row.status}")
        return row

    async def describe(
        self, namespace: str, workflow_id: str, run_id: str
    ) -> tuple[ExecutionRow, list[TaskRow], list[HistoryEventRow]]:
        """The run, its pending tasks and its history, from one snapshot."""
        await self.ensure_namespace(namespace)

        async def body(tx: Transaction) -> tuple[ExecutionRow, list[TaskRow], list[HistoryEventRow]]:
            row = await self.resolve_execution(tx, namespace, workflow_id, run_id)
            return row, await tx.list_run_tasks(namespace, row.run_id), await tx.read_events(namespace, row.run_id)

        return await self.read(body)

    async def pending_children(self, namespace: str, run_id: str) -> list[ChildExecutionRow]:
        """The children a run started that have not closed yet (for describe())."""
        return await self.read(lambda tx: tx.list_child_executions(namespace, run_id))

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
        something past ``after_event_id`` (or the close event) or the wait ends.

        A wait reads the store only when woken: each commit that appends to the run's
        history notifies its channel (``_Mutation.save_all``), and the PostgreSQL store
        wakes every waiter after its LISTEN connection was replaced. A wait that ends
        with nothing new is remembered, so the caller's next one parks without a read.
        """
        await self.ensure_namespace(namespace)
        deadline = time.monotonic() + wait_timeout_s
        channel = close_channel if close_event_only else run_channel
        key = (namespace, workflow_id, run_id, close_event_only)
        # What a wait is about: events past after_event_id, or only the close.
        watermark = 0 if close_event_only else after_event_id
        if wait:
            quiet = self._quiet_runs.unchanged(key, watermark, lambda run: self.store.notifier.listen(channel(run)))
            if quiet is not None:
                quiet_run_id, wake = quiet
                notified, handed = await self._park(quiet_run_id, wake, wait_timeout_s, close_event_only)
                if handed is not None:
                    return quiet_run_id, [handed], False
                if not notified:
                    return quiet_run_id, [], False
        # A run named by id is listened to before its lookup, which then serves as a
        # close-only wait's first look (one read fewer before it parks).
        listened = self.store.notifier.listen(channel(run_id)) if run_id else None
        row = await self.read(lambda tx: self.resolve_execution(tx, namespace, workflow_id, run_id), one_statement=True)
        if not (close_event_only and row.status == ExecutionStatus.RUNNING):
            listened = None
        while True:
            wake = listened if listened is not None else self.store.notifier.listen(channel(row.run_id))

            async def body(tx: Transaction) -> tuple[ExecutionRow, list[HistoryEventRow]]:
                current = await tx.get_execution(namespace, row.run_id)
                assert current is not None
                if close_event_only:
                    if current.status == ExecutionStatus.RUNNING:
                        return current, []
                    return current, await tx.read_events(namespace, current.run_id, current.next_event_id - 2, 1)
                return current, await tx.read_events(namespace, current.run_id, after_event_id, page_size + 1)

            current, events = (row, []) if listened is not None else await self.read(body)
            listened = None
            if wait and not events and current.status == ExecutionStatus.RUNNING:
                self._quiet_runs.remember(key, wake, current.run_id, watermark)
            remaining = deadline - time.monotonic()
            if events or not wait or current.status != ExecutionStatus.RUNNING or remaining <= 0:
                return current.run_id, events[:page_size], len(events) > page_size
            # No periodic re-check: every change of the run notifies (see above), so
            # a wait that ran out saw no change and answers without reading again.
            notified, handed = await self._park(current.run_id, wake, remaining, close_event_only)
            if handed is not None:
                return current.run_id, [handed], False
            if not notified:
                return current.run_id, [], False

    async def _park(
        self, run_id: str, wake: asyncio.Event, timeout_s: float, close_event_only: bool
    ) -> tuple[bool, HistoryEventRow | None]:
        """Waits on ``wake`` (whether it was notified); a wait for the close only also
        takes the close event its committing transaction left here (parked_closes.py)."""
        if not close_event_only:
            return await self.store.wait_for_notification(wake, timeout_s), None
        with self._parked_closes.waiting(run_id):
            notified = await self.store.wait_for_notification(wake, timeout_s)
            return notified, await self._parked_closes.close_event(run_id) if notified else None

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
            m = _Mutation(tx, await self._running_execution(tx, namespace, workflow_id, run_id), self.clock.now_us())
            if m.request_cancel(reason, identity):
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
            m = _Mutation(tx, await self._running_execution(tx, namespace, workflow_id, run_id), self.clock.now_us())
            m.terminate(reason, identity)
            await m.save()
            await self._after_run_closed(m)

        await (body(tx) if tx is not None else self._transaction(body))

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
            key = _SIGNAL_REQUEST_PREFIX + request_id if request_id else ""
            if key and await tx.get_request_run_id(namespace, key) is not None:
                return  # a retry of a signal already delivered
            if row.status != ExecutionStatus.RUNNING:
                raise FailedPrecondition(
                    f"workflow {row.workflow_id!r} run {row.run_id} is already {row.status}; a closed"
                    " execution takes no signals"
                )
            await self._signal(tx, row, signal, identity)
            if key:
                await tx.insert_request_id(namespace, key, row.run_id, self.clock.now_us())

        await self._transaction(body)

    async def _signal(self, tx: Transaction, row: ExecutionRow, signal: StartSignal, identity: str) -> None:
        await check_signal(tx, row, self.config.limits)
        m = _Mutation(tx, row, self.clock.now_us())
        m.deliver([(EventType.WORKFLOW_EXECUTION_SIGNALED, signal.attributes(identity))])
        await m.save()
