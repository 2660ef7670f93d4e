"""Reset (Temporal's): a new run of the workflow that keeps the history of a base run up
to one of its workflow tasks, and runs that task again (docs/operations.md).

In one transaction: the base run's events up to the chosen ``WorkflowTaskStarted`` are
copied into a new run, followed by a ``WorkflowTaskFailed`` (cause ``RESET_WORKFLOW``,
naming both runs), the signals the base run received after that point (re-delivered,
Temporal's default) and a new workflow task. What the copied history left pending is
re-created: its activities as new tasks (first attempt), its timers due when they were
due. The workflow id's running run, if any, is terminated, naming the new run. A reset
to a point where a child workflow or a signal to another workflow was still pending is
refused: their other ends cannot be rewound.
"""

from __future__ import annotations

import json
from typing import Any

from flowforge.api.schema import (
    EventType,
    ExecutionStatus,
    WorkflowTaskFailedAttributes,
    WorkflowTaskFailedCause,
    WorkflowTaskState,
    payloads_from_json,
)
from flowforge.server.errors import FailedPrecondition, InvalidArgument
from flowforge.server.history.commands import activity_options
from flowforge.server.history.executions import Executions
from flowforge.server.history.mutation import _Mutation, activity_task_row, run_deadline, us
from flowforge.server.history.run_ids import time_ordered_run_id
from flowforge.server.stores.base import ExecutionRow, HistoryEventRow, TimerRow, Transaction

__all__ = ["RESET_TYPES", "Resets"]

#: ``first``: the run's first workflow task; ``last``: its last completed one.
RESET_TYPES = ("first", "last")

_ACTIVITY_OUTCOMES = frozenset(
    {
        EventType.ACTIVITY_TASK_COMPLETED,
        EventType.ACTIVITY_TASK_FAILED,
        EventType.ACTIVITY_TASK_TIMED_OUT,
        EventType.ACTIVITY_TASK_CANCELED,
    }
)
# Work whose other end is another execution: pending at the reset point, it cannot be rewound.
_EXTERNAL_STARTS = {
    EventType.START_CHILD_WORKFLOW_EXECUTION_INITIATED: "a child workflow",
    EventType.SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED: "a signal to another workflow",
}
_EXTERNAL_ENDS = frozenset(
    {
        EventType.START_CHILD_WORKFLOW_EXECUTION_FAILED,
        EventType.CHILD_WORKFLOW_EXECUTION_COMPLETED,
        EventType.CHILD_WORKFLOW_EXECUTION_FAILED,
        EventType.CHILD_WORKFLOW_EXECUTION_CANCELED,
        EventType.CHILD_WORKFLOW_EXECUTION_TERMINATED,
        EventType.CHILD_WORKFLOW_EXECUTION_TIMED_OUT,
        EventType.EXTERNAL_WORKFLOW_EXECUTION_SIGNALED,
        EventType.SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_FAILED,
    }
)


class Resets(Executions):
    """Resetting a workflow to one of its workflow tasks."""

    async def reset(
        self,
        namespace: str,
        workflow_id: str,
        run_id: str,
        *,
        event_id: int,
        reset_type: str,
        reason: str,
        identity: str,
        tx: Transaction | None = None,
    ) -> str:
        """Resets the run (the latest of ``workflow_id`` without ``run_id``) to the workflow
        task ``event_id`` names, or to its ``first`` or ``last`` one; returns the new run's id.
        Joins ``tx`` when given (a batch)."""
        await self.ensure_namespace(namespace)

        async def body(tx: Transaction) -> str:
            base = await self.resolve_execution(tx, namespace, workflow_id, run_id)
            now = self.clock.now_us()
            new_run_id = time_ordered_run_id()
            # The running run first: its buffered signals reach its history, and are re-delivered.
            current = await tx.get_latest_execution(namespace, base.workflow_id)
            if current is not None and current.status == ExecutionStatus.RUNNING:
                current = await tx.get_execution(namespace, current.run_id, for_update=True)
                assert current is not None
                old = _Mutation(tx, current, now)
                old.terminate(f"reset to run {new_run_id}: {reason}", identity)
                await old.save()
                await self._after_run_closed(old)
            events = await tx.read_events(namespace, base.run_id)
            started_id = _reset_point(events, event_id, reset_type)
            m = _new_run(tx, base, events, started_id, new_run_id, now, reason=reason, identity=identity)
            await m.save()
            await _copy_visibility(tx, namespace, base.run_id, new_run_id)
            return new_run_id

        return await (body(tx) if tx is not None else self._transaction(body))


def _reset_point(events: list[HistoryEventRow], event_id: int, reset_type: str) -> int:
    """The id of the WorkflowTaskStarted event the reset keeps history up to."""
    started = [e.event_id for e in events if e.event_type == EventType.WORKFLOW_TASK_STARTED]
    following = {e.event_id: e.event_type for e in events}
    completed = [s for s in started if following.get(s + 1) == EventType.WORKFLOW_TASK_COMPLETED]
    if reset_type == "first":
        if not started:
            raise FailedPrecondition("the run has no workflow task yet; there is nothing to reset to")
        return started[0]
    if reset_type == "last":
        if not completed:
            raise FailedPrecondition("the run has no completed workflow task; reset it with --type first")
        return completed[-1]
    kind = following.get(event_id)
    if kind == EventType.WORKFLOW_TASK_COMPLETED:
        event_id -= 1  # its task's started event
    elif kind == EventType.WORKFLOW_TASK_SCHEDULED and following.get(event_id + 1) == EventType.WORKFLOW_TASK_STARTED:
        event_id += 1
    if event_id not in started:
        points = ", ".join(str(s) for s in started[:20]) or "none"
        raise InvalidArgument(
            f"event {event_id} is not a workflow task of the run; reset to a WorkflowTaskStarted or"
            f" WorkflowTaskCompleted event (WorkflowTaskStarted ids: {points}) or use --type first|last"
        )
    return event_id


def _new_run(
    tx: Transaction,
    base: ExecutionRow,
    events: list[HistoryEventRow],
    started_id: int,
    new_run_id: str,
    now: int,
    *,
    reason: str,
    identity: str,
) -> _Mutation:
    """The new run: the kept history, the reset's WorkflowTaskFailed, the signals after
    the point, a new workflow task, and the activities and timers left pending."""
    kept = [e for e in events if e.event_id <= started_id]
    started_attributes: dict[str, Any] = json.loads(kept[0].attributes)
    activities, timers, cancel_requested = _pending(kept)
    deadline_us, deadline_kind = _deadline(started_attributes, now)
    row = ExecutionRow(
        namespace=base.namespace,
        run_id=new_run_id,
        workflow_id=base.workflow_id,
        workflow_type=base.workflow_type,
        task_queue=base.task_queue,
        status=ExecutionStatus.RUNNING,
        next_event_id=started_id + 1,
        version=1,
        start_us=now,
        close_us=None,
        wft_state=WorkflowTaskState.NONE,
        wft_attempt=1,
        wft_scheduled_us=None,
        wft_started_us=None,
        wft_scheduled_event_id=0,
        wft_started_event_id=0,
        wft_timeout_s=base.wft_timeout_s,
        last_wft_failure=None,
        buffered_events="[]",
        deadline_us=deadline_us,
        deadline_kind=deadline_kind,
        cancel_requested=int(cancel_requested),
        # Its tasks keep their place in dispatch order, as a continued run's do.
        priority_key=base.priority_key,
        fairness_key=base.fairness_key,
        fairness_weight=base.fairness_weight,
    )
    m = _Mutation(tx, row, now, new=True)
    m.events = [HistoryEventRow(e.event_id, e.event_type, e.event_us, e.attributes) for e in kept]
    reset: WorkflowTaskFailedAttributes = {
        "scheduled_event_id": json.loads(kept[-1].attributes)["scheduled_event_id"],
        "started_event_id": started_id,
        "cause": WorkflowTaskFailedCause.RESET_WORKFLOW,
        "failure": {"message": f"reset: {reason}", "source": "server"},
        "identity": identity,
        "base_run_id": base.run_id,
        "new_run_id": new_run_id,
    }
    m.append(EventType.WORKFLOW_TASK_FAILED, reset)
    for event in events[started_id:]:
        if event.event_type == EventType.WORKFLOW_EXECUTION_SIGNALED:
            m.append(EventType.WORKFLOW_EXECUTION_SIGNALED, json.loads(event.attributes))
    m.schedule_workflow_task(attempt=1)
    for scheduled_event_id, scheduled in activities.items():
        m.new_tasks.append(
            activity_task_row(
                row,
                scheduled_event_id=scheduled_event_id,
                activity_id=scheduled["activity_id"],
                activity_type=scheduled["activity_type"],
                task_queue=scheduled["task_queue"],
                input=payloads_from_json(scheduled.get("input")).SerializeToString(),
                options=activity_options(scheduled),
                now=now,
            )
        )
    m.new_timers += [
        TimerRow(row.namespace, new_run_id, timer_id, timer_started_id, fire_us)
        for timer_id, (timer_started_id, fire_us) in timers.items()
    ]
    return m


def _pending(kept: list[HistoryEventRow]) -> tuple[dict[int, dict[str, Any]], dict[str, tuple[int, int]], bool]:
    """What the kept history leaves pending: activities by scheduled event id, timers by
    id (started event, due time), and whether a cancellation was requested; FAILED_PRECONDITION
    if work with another execution is pending."""
    activities: dict[int, dict[str, Any]] = {}
    timers: dict[str, tuple[int, int]] = {}
    external: dict[int, str] = {}
    cancel_requested = False
    for event in kept:
        kind = EventType(event.event_type)
        attributes = json.loads(event.attributes)
        if kind == EventType.ACTIVITY_TASK_SCHEDULED:
            activities[event.event_id] = attributes
        elif kind in _ACTIVITY_OUTCOMES:
            activities.pop(attributes["scheduled_event_id"], None)
        elif kind == EventType.TIMER_STARTED:
            timers[attributes["timer_id"]] = (event.event_id, event.event_us + us(attributes["start_to_fire_timeout"]))
        elif kind in (EventType.TIMER_FIRED, EventType.TIMER_CANCELED):
            timers.pop(attributes["timer_id"], None)
        elif kind in _EXTERNAL_STARTS:
            external[event.event_id] = _EXTERNAL_STARTS[kind]
        elif kind in _EXTERNAL_ENDS:
            external.pop(attributes.get("initiated_event_id", 0), None)
        elif kind == EventType.WORKFLOW_EXECUTION_CANCEL_REQUESTED:
            cancel_requested = True
    if external:
        event_id, what = next(iter(external.items()))
        raise FailedPrecondition(
            f"at that point {what} (event {event_id}) was still pending, and the other execution cannot be"
            " rewound; reset to a later workflow task"
        )
    return activities, timers, cancel_requested


def _deadline(started: dict[str, Any], now: int) -> tuple[int | None, str | None]:
    """The new run's timeout: the execution's deadline is kept, the run timeout starts over."""
    run_timeout = started.get("workflow_run_timeout") or 0
    run_expiration_us = now + us(run_timeout) if run_timeout else None
    deadline_us, kind = run_deadline(started.get("workflow_execution_expiration_us"), run_expiration_us)
    return deadline_us, None if kind is None else str(kind)


async def _copy_visibility(tx: Transaction, namespace: str, base_run_id: str, new_run_id: str) -> None:
    """The new run is listed with the base run's search attributes and memo."""
    values = (await tx.get_search_attributes(namespace, [base_run_id])).get(base_run_id)
    if values:
        await tx.set_search_attributes(namespace, new_run_id, values)
    memo = (await tx.get_memos(namespace, [base_run_id])).get(base_run_id)
    if memo:
        await tx.insert_memo(namespace, new_run_id, memo)
