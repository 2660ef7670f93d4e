"""Workflow tasks: lease, hand-out, complete (with eager dispatch) and fail."""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import json
import logging
from collections.abc import Sequence

from flowforge.api.schema import (
    EventType,
    ExecutionStatus,
    TaskKind,
    TaskState,
    WorkflowTaskFailedCause,
    WorkflowTaskState,
    failure_json,
)
from flowforge.api.v1 import command_pb2, common_pb2
from flowforge.server.errors import FailedPrecondition
from flowforge.server.history.command_validation import CLOSE_COMMANDS, CommandValidator
from flowforge.server.history.commands import DEADLINE_COMMANDS, Commands
from flowforge.server.history.data import (
    LeasedActivityTask,
    LeasedWorkflowTask,
    WorkflowTaskCompletion,
    WorkflowTaskReport,
)
from flowforge.server.history.execution_limits import LimitBreach, check_completion
from flowforge.server.history.flow_control import FlowControl
from flowforge.server.history.folds import LastEvents
from flowforge.server.history.group_commit import GroupCommit
from flowforge.server.history.mutation import StartedWorkflowTask, _Mutation, activity_lease_expiry
from flowforge.server.observations import TaskStarted, observe
from flowforge.server.stores.base import HistoryEventRow, TaskRow, Transaction
from flowforge.server.tokens import TaskToken

__all__ = ["WorkflowTasks"]

log = logging.getLogger("flowforge.server.history")

# Report transactions under way at once on a store with row locks (PostgreSQL): a
# group's statements are round trips one after the other, so with one at a time the
# reports of a whole server queue behind one connection's latency.
REPORT_TRANSACTIONS_AT_ONCE = 4

# Commands whose new deadlines the completing mutation knows: its own timers and tasks,
# and the run's close when it reaches no other run.
_PRECISE_COMMANDS = DEADLINE_COMMANDS | CLOSE_COMMANDS

# The most events a lease's transaction reads for a worker that keeps the run cached:
# the tail of its last task (a few events) before what the transaction appended. A
# longer gap (a cold cache) is read after the commit, outside the write lock.
_GAP_READ_IN_TRANSACTION = 32


def _after_event(started: StartedWorkflowTask, cached_event_id: int) -> int:
    """The last event the worker need not be sent (it re-reads the one it stopped at)."""
    return cached_event_id - 1 if 1 < cached_event_id < started.next_event_id else 0


def _known_history(started: StartedWorkflowTask, after: int) -> list[HistoryEventRow] | None:
    """The history past ``after`` from what the leasing transaction holds, or None if it
    does not hold all of it (ids without a gap through the task's started event)."""
    known = started.earlier + started.appended
    if not known or known[0].event_id > after + 1:
        return None
    if known[-1].event_id - known[0].event_id != len(known) - 1 or known[-1].event_id < started.next_event_id - 1:
        return None
    return [e for e in known if e.event_id > after]


@dataclasses.dataclass
class _Completed:
    """What a workflow task completion's transaction hands back."""

    activity_tasks: list[TaskRow]
    workflow_task: StartedWorkflowTask | None = None
    deadline_us: int | None = None
    appended: list[HistoryEventRow] = dataclasses.field(default_factory=list)
    """The events appended after the completed task's WorkflowTaskStarted."""
    run_id: str = ""


class WorkflowTasks(Commands, FlowControl):
    """The workflow task of a run, from its lease to its completion or failure."""

    @functools.cached_property
    def _validator(self) -> CommandValidator:
        return CommandValidator(self.config.max_payload_bytes)

    @functools.cached_property
    def last_events(self) -> LastEvents:
        """The last events of runs this server's workflow task completions committed (folds.py)."""
        return LastEvents()

    @functools.cached_property
    def _reports(self) -> GroupCommit:
        """Workflow task completions, activity completions and cancellations, and the
        leases of workflow and activity tasks that arrive together commit together (one
        group for all: fewer transactions); where writes proceed in parallel, several
        groups at once."""
        return GroupCommit(
            self._transaction, max_in_flight=REPORT_TRANSACTIONS_AT_ONCE if self.store.parallel_writes else 1
        )

    async def try_lease_workflow_task(
        self, namespace: str, task_queue: str, identity: str
    ) -> LeasedWorkflowTask | None:
        """Leases the queue's next visible workflow task in dispatch order, or returns None."""

        async def body(tx: Transaction) -> StartedWorkflowTask | None:
            now = self.clock.now_us()
            task = await self.next_dispatchable(tx, namespace, TaskKind.WORKFLOW, task_queue)
            if task is None:
                return None
            row = await tx.get_execution(namespace, task.run_id)
            if row is None or row.status != ExecutionStatus.RUNNING or row.wft_state != WorkflowTaskState.SCHEDULED:
                # Cannot happen while rule 1 holds (a run's task rows change with its row);
                # drop the orphan rather than hand it out again and again.
                log.error("dropping orphaned workflow task %s of run %s", task.task_id, task.run_id)
                await tx.delete_task(task.task_id or 0)
                return None
            m = _Mutation(tx, row, now)
            started = m.start_workflow_task(task, identity)
            await tx.update_task(task)
            await m.save()
            return started

        # Grouped with the reports and leases that arrive together (group_commit.py).
        started = await self._reports.run("", body, lease=lambda started: self.give_back_workflow_task(started.task))
        return None if started is None else await self.hand_out_leased_workflow_task(started)

    async def hand_out_leased_workflow_task(self, started: StartedWorkflowTask) -> LeasedWorkflowTask:
        """A poll's committed lease (its own, or an eager start's) with its history."""
        try:
            return await self._hand_out_workflow_task(started)
        except asyncio.CancelledError:
            # The poll went away between the lease's commit and its history read (a call
            # cancelled, a worker stream stopping): the task is handed back now rather
            # than left leased to nobody until its timeout.
            await asyncio.shield(self.give_back_workflow_task(started.task))
            raise

    async def give_back_workflow_task(self, leased: TaskRow) -> None:
        """Ends the attempt of a workflow task leased to nobody, so the next is scheduled now."""
        token = TaskToken(leased.namespace, leased.task_id or 0, leased.fencing_token, leased.kind, leased.run_id)

        async def body(tx: Transaction) -> None:
            try:
                task = await self._leased_task(tx, token)
            except FailedPrecondition:
                return  # timed out or reported meanwhile
            await self.time_out_leased_workflow_task(tx, task)

        await self._transaction(body)

    async def time_out_leased_workflow_task(self, tx: Transaction, task: TaskRow) -> None:
        """Ends a leased workflow task's attempt at once (its started event is written
        already), so the next attempt is scheduled now: how a lease is handed back."""
        row = await self._execution_of(tx, task)
        m = _Mutation(tx, row, self.clock.now_us())
        await tx.delete_task(task.task_id or 0)
        m.time_out_started_workflow_task(task)
        await m.save()

    async def read_history_gap(self, tx: Transaction, started: StartedWorkflowTask, cached_event_id: int) -> None:
        """In the transaction that leased ``started``: reads the few events between those
        the worker keeps cached and those the transaction appended, so that the hand-out
        reads nothing after the commit (a read snapshot fewer on the task's path)."""
        if not started.appended:
            return
        after = _after_event(started, cached_event_id)
        gap = started.appended[0].event_id - 1 - after
        if 0 < gap <= _GAP_READ_IN_TRANSACTION:
            row = started.execution
            started.earlier = await tx.read_events(row.namespace, row.run_id, after_event_id=after, limit=gap)

    async def _hand_out_workflow_task(
        self, started: StartedWorkflowTask, cached_event_id: int = 0
    ) -> LeasedWorkflowTask:
        """The committed lease with its history: what its transaction appended and read
        when that covers it, else read after commit, outside the write lock. Nothing can
        be appended meanwhile but a terminate, hence the bound.

        Sticky execution: a worker that holds the run cached through
        ``cached_event_id`` gets (and the store reads) only the history from that
        event on; an id outside the stored history gets the whole of it."""
        task, row = started.task, started.execution
        self.on_new_deadline(task.lease_expires_us or 0)
        after = _after_event(started, cached_event_id)
        events = _known_history(started, after)
        if events is None:
            events = await self.read(
                lambda tx: tx.read_events(row.namespace, row.run_id, after_event_id=after), one_statement=True
            )
        history = [e for e in events if e.event_id < started.next_event_id] + started.transient
        return LeasedWorkflowTask(self._sign(task), row, task, history)

    async def complete_workflow_task(
        self,
        raw_token: bytes,
        namespace: str,
        commands: Sequence[command_pb2.Command],
        identity: str,
        eager_activity_slots: int,
        worker_build_id: str = "",
        return_new_workflow_task: bool = False,
        cached_event_id: int = 0,
    ) -> WorkflowTaskCompletion:
        """Records the commands of a workflow task; returns the activity tasks leased
        eagerly and, if asked for, the run's next workflow task when the completion
        schedules one at once (leased to the caller in the same transaction).

        ``worker_build_id`` (the build of the worker that ran the task) is recorded
        in the WorkflowTaskCompleted event; the next task carries only the history
        from ``cached_event_id`` on when the caller keeps the run cached through it."""
        token = self._token(raw_token, namespace, TaskKind.WORKFLOW)
        report = WorkflowTaskReport(
            commands, identity, eager_activity_slots, worker_build_id, return_new_workflow_task, cached_event_id
        )
        self._validator.validate(commands)

        async def body(tx: Transaction) -> _Completed:
            task = await self._leased_task(tx, token)
            row = await self._execution_of(tx, task)
            m = _Mutation(tx, row, self.clock.now_us())
            await tx.delete_task(task.task_id or 0)
            return await self.apply_workflow_task_completion(m, task, report)

        return await self.workflow_task_completion(await self._reports.run(token.run_id, body), cached_event_id)

    async def apply_workflow_task_completion(
        self, m: _Mutation, task: TaskRow, report: WorkflowTaskReport
    ) -> _Completed:
        """Applies ``report`` to the run's started workflow task (``task``, whose row
        the caller has deleted or never wrote) and saves ``m``: what a workflow task
        completion's transaction does, for RespondWorkflowTaskCompleted and for a
        workflow task folded into an activity's completion alike."""
        started_event_id = m.row.wft_started_event_id
        completed = await self._apply_completion(m, task, report)
        # After the task's WorkflowTaskStarted: a retried task's Scheduled/Started,
        # written only now, are already the worker's (it was handed them as transient).
        completed.appended = [e for e in m.events if e.event_id > started_event_id]
        completed.run_id = m.row.run_id
        return completed

    async def _apply_completion(self, m: _Mutation, task: TaskRow, report: WorkflowTaskReport) -> _Completed:
        tx, row, now = m.tx, m.row, m.now
        commands, identity = report.commands, report.identity
        closes = any(c.WhichOneof("attributes") in CLOSE_COMMANDS for c in commands)
        if closes and m.buffered:
            # Temporal's "unhandled command": the workflow must first see what arrived.
            m.fail_started_workflow_task(
                task,
                cause=WorkflowTaskFailedCause.UNHANDLED_COMMAND,
                failure={
                    "message": "new events arrived while the workflow was closing; it runs again to see them",
                    "source": "server",
                },
                identity=identity,
                retry_delay_s=0.0,
                count_attempt=False,
            )
            await m.save()
            return _Completed([])
        applying = await self._load(m, commands)
        bad_search_attributes = self._invalid_search_attributes(applying, commands)
        if bad_search_attributes is not None:
            # Temporal's BAD_SEARCH_ATTRIBUTES: retried, so registering the attribute unblocks the run.
            m.fail_started_workflow_task(
                task,
                cause=WorkflowTaskFailedCause.BAD_SEARCH_ATTRIBUTES,
                failure={"message": bad_search_attributes, "source": "server"},
                identity=identity,
                retry_delay_s=self._workflow_task_retry_delay(m),
            )
            await m.save()
            return _Completed([])
        # A folded task's activity events are in m.events, not yet written.
        breach = await check_completion(tx, row, row.wft_started_event_id, commands, self.config.limits, m.events)
        if breach is not None:
            return await self._refuse_over_limit(m, task, breach, identity)
        m.write_transient_workflow_task_events(task.identity)
        applying.completed_id = m.append(
            EventType.WORKFLOW_TASK_COMPLETED,
            {
                "scheduled_event_id": row.wft_scheduled_event_id,
                "started_event_id": row.wft_started_event_id,
                "identity": identity,
                "worker_build_id": report.worker_build_id,
            },
        )
        row.wft_state = WorkflowTaskState.NONE
        row.wft_attempt = 1
        row.last_wft_failure = None
        self._apply(applying, commands)
        eager: list[TaskRow] = []
        if m.running:
            flushed = m.flush_buffered()
            for event_type, attributes in applying.outcomes:
                m.append(event_type, attributes)
            if flushed or applying.outcomes:
                m.schedule_workflow_task(attempt=1)
            # A rate limit counts every dispatch, so none is handed out eagerly past it.
            rated = await self.has_rate_limits(row.namespace, tx)
            slots = report.eager_activity_slots
            eager = self._lease_eagerly(m, 0 if rated else slots, identity, await self._guarded_types(tx, m, slots))
        next_task = m.new_workflow_task(row.task_queue) if report.return_new_workflow_task else None
        started = m.start_workflow_task(next_task, identity) if next_task is not None else None
        if started is not None:
            await self.read_history_gap(tx, started, report.cached_event_id)
        await self._save(applying)
        reached_others = not m.running and await self._after_run_closed(m)
        # Precise on the hot path, a run that closes alone included (its deadlines
        # go with it); anything else (a continued or child run, a closing parent)
        # may add deadlines elsewhere, so the timekeeper looks now.
        hot_path = not reached_others and all(c.WhichOneof("attributes") in _PRECISE_COMMANDS for c in commands)
        return _Completed(eager, started, m.earliest_new_deadline() if hot_path else now)

    async def workflow_task_completion(self, completed: _Completed, cached_event_id: int) -> WorkflowTaskCompletion:
        """The committed completion's answer: its eager activity tasks signed, its next
        workflow task with its history (from ``cached_event_id`` on)."""
        if completed.appended:  # the run's last event now: a fold from it needs no read
            self.last_events.note(completed.run_id, completed.appended[-1])
        if completed.deadline_us is not None:
            self.on_new_deadline(completed.deadline_us)
        return WorkflowTaskCompletion(
            [LeasedActivityTask(self._sign(t), t) for t in completed.activity_tasks],
            None
            if completed.workflow_task is None
            else await self._hand_out_workflow_task(completed.workflow_task, cached_event_id),
            completed.appended,
        )

    async def _refuse_over_limit(self, m: _Mutation, task: TaskRow, breach: LimitBreach, identity: str) -> _Completed:
        """A completion past a per-execution limit: the run is terminated (history), or
        its workflow task fails and is retried later (pending activities, children)."""
        if breach.fatal:
            m.terminate(breach.message, "flowforge-server")
            await m.save()
            await self._after_run_closed(m)
            return _Completed([])
        m.fail_started_workflow_task(
            task,
            cause=WorkflowTaskFailedCause.BAD_COMMAND,
            failure={"message": breach.message, "source": "server"},
            identity=identity,
            retry_delay_s=self._workflow_task_retry_delay(m),
        )
        await m.save()
        return _Completed([])

    async def _guarded_types(self, tx: Transaction, m: _Mutation, slots: int) -> set[str]:
        """The activity types just scheduled that have a circuit breaker (read only when
        some could be leased eagerly): they go through their queue, where the breaker is kept."""
        if not slots or not any(t.kind == TaskKind.ACTIVITY for t in m.new_tasks):
            return set()
        if not await self.has_breakers(m.row.namespace, tx):
            return set()
        return {row.activity_type for row in await tx.list_breakers(m.row.namespace)}

    @staticmethod
    def _lease_eagerly(m: _Mutation, slots: int, identity: str, guarded: set[str]) -> list[TaskRow]:
        """Leases up to ``slots`` of the activity tasks just scheduled on the run's own queue
        to ``identity`` (not those of a ``guarded`` type)."""
        leased: list[TaskRow] = []
        for task in m.new_tasks:
            if len(leased) >= slots:
                break
            # A task with a concurrency key goes through its queue, where its limit is kept.
            if (
                task.kind == TaskKind.ACTIVITY
                and task.task_queue == m.row.task_queue
                and task.visible_us <= m.now
                and not task.concurrency_key
                and task.activity_type not in guarded
            ):
                observe(TaskStarted(task.namespace, task.task_queue, "activity", 0.0))  # handed out as scheduled
                task.state = TaskState.LEASED
                task.fencing_token = 1
                task.started_us = m.now
                task.identity = identity
                task.lease_expires_us = activity_lease_expiry(task, json.loads(task.options), m.now)
                leased.append(task)
        return leased

    def _workflow_task_retry_delay(self, m: _Mutation) -> float:
        """The backoff before the next attempt of the run's failing workflow task."""
        return min(2.0 ** (m.row.wft_attempt - 1), self.config.max_workflow_task_retry_delay_s)

    async def fail_workflow_task(
        self, raw_token: bytes, namespace: str, cause: str, failure: common_pb2.Failure, identity: str
    ) -> None:
        """Records a workflow task failure; the task is retried with backoff."""
        token = self._token(raw_token, namespace, TaskKind.WORKFLOW)
        self.check_failure(failure, "the failure")

        async def body(tx: Transaction) -> None:
            task = await self._leased_task(tx, token)
            row = await self._execution_of(tx, task)
            m = _Mutation(tx, row, self.clock.now_us())
            await tx.delete_task(task.task_id or 0)
            m.fail_started_workflow_task(
                task,
                cause=cause,
                failure=failure_json(failure),
                identity=identity,
                retry_delay_s=self._workflow_task_retry_delay(m),
            )
            await m.save()

        await self._transaction(body)
        self.on_new_deadline(self.clock.now_us())
