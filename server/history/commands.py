"""Command application: load → apply → save, with one handler per command type
looked up in a table (:data:`_APPLY`).

The commands of a workflow task are first checked without state
(command_validation.py); then what they need of the run is loaded, each kind of
row in one statement (:meth:`Commands._load`); each handler then appends its
command's event and changes :class:`~flowforge.server.history.command_state.Applying`
in memory (an id already in use raises INVALID_ARGUMENT before anything was
written); finally :meth:`Commands._save` writes every change. Outcomes the
workflow must see later (a child started, a signal delivered) are delivered after
all commands, in command order.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from flowforge.api.schema import (
    ActivityTaskCanceledAttributes,
    ActivityTaskCancelRequestedAttributes,
    ActivityTaskScheduledAttributes,
    EventType,
    ExecutionStatus,
    MarkerRecordedAttributes,
    TaskState,
    TimerCanceledAttributes,
    TimerStartedAttributes,
    UpsertWorkflowSearchAttributesAttributes,
    WorkflowExecutionCanceledAttributes,
    WorkflowExecutionCompletedAttributes,
    WorkflowExecutionContinuedAsNewAttributes,
    WorkflowExecutionFailedAttributes,
    duration_s,
    failure_json,
    message_to_json_dict,
    payloads_json,
)
from flowforge.api.v1 import command_pb2, common_pb2
from flowforge.server.errors import InvalidArgument
from flowforge.server.history.child_commands import ChildCommands
from flowforge.server.history.command_state import Applying
from flowforge.server.history.data import TaskPriority
from flowforge.server.history.flow_control import priority_from_proto
from flowforge.server.history.mutation import _Mutation, activity_task_row, us
from flowforge.server.history.run_ids import time_ordered_run_id
from flowforge.server.history.visibility_writes import stored_values
from flowforge.server.retries import StoredRetryPolicy
from flowforge.server.stores.base import TimerRow

__all__ = ["DEADLINE_COMMANDS", "Commands", "activity_options", "schedule_activity"]

# Commands whose only new deadlines are the mutation's own timers and tasks.
DEADLINE_COMMANDS = frozenset({"schedule_activity_task", "start_timer", "cancel_timer"})
# Commands that set search attributes (of the run, or of the child they start).
_SEARCH_ATTRIBUTE_COMMANDS = ("upsert_workflow_search_attributes", "start_child_workflow_execution")
# What an activity task row keeps of its ActivityTaskScheduled event (its "options").
_ACTIVITY_OPTIONS = (
    "schedule_to_close_timeout",
    "schedule_to_start_timeout",
    "start_to_close_timeout",
    "heartbeat_timeout",
    "retry_policy",
    "cancellation_type",
    "header",
    "dead_letter",
    "priority",
    "concurrency_key",
)
_CHILD_COMMANDS = ("request_cancel_external_workflow_execution", "signal_external_workflow_execution")


def activity_options(scheduled: Mapping[str, Any]) -> dict[str, Any]:
    """What an activity task row keeps of its ActivityTaskScheduled event's attributes."""
    return {key: value for key, value in scheduled.items() if key in _ACTIVITY_OPTIONS}


class Commands(ChildCommands):
    """Loads what a workflow task's commands need, applies them by the table, saves their changes."""

    async def _load(self, m: _Mutation, commands: Sequence[command_pb2.Command]) -> Applying:
        """Reads what the commands need of the run before any is applied: each kind of row in one statement."""
        tx, row = m.tx, m.row
        by_kind: dict[str, list[Any]] = {}
        for command in commands:
            kind = command.WhichOneof("attributes")
            assert kind is not None, "validated"
            by_kind.setdefault(kind, []).append(getattr(command, kind))
        applying = Applying(m)
        activity_ids = [
            a.activity_id
            for k in ("schedule_activity_task", "request_cancel_activity_task")
            for a in by_kind.get(k, [])
        ]
        if activity_ids:
            tasks = await tx.get_activity_tasks(row.run_id, activity_ids)
            applying.activities = {task.activity_id or "": task for task in tasks}
            # A cancel may name a parked activity: it has a dead letter instead of a task.
            unknown = [
                a.activity_id
                for a in by_kind.get("request_cancel_activity_task", [])
                if a.activity_id not in applying.activities
            ]
            if unknown:
                parked = await tx.get_run_dead_letters(row.run_id, unknown)
                applying.parked = {dead_letter.activity_id: dead_letter for dead_letter in parked}
        timer_ids = [a.timer_id for k in ("start_timer", "cancel_timer") for a in by_kind.get(k, [])]
        if timer_ids:
            applying.timers = {timer.timer_id: timer for timer in await tx.get_timers(row.run_id, timer_ids)}
        names = {
            name
            for k in _SEARCH_ATTRIBUTE_COMMANDS
            for a in by_kind.get(k, [])
            for name in a.search_attributes.indexed_fields
        }
        if names:
            applying.attribute_types = await self._registered_types(tx, row.namespace, names)
        if any(k in by_kind for k in _CHILD_COMMANDS):
            applying.children = await tx.list_child_executions(row.namespace, row.run_id)
            runs = await tx.lock_executions([(c.namespace, c.run_id) for c in applying.children])
            applying.child_runs = {
                r.run_id: _Mutation(tx, r, m.now) for r in runs if r.status == ExecutionStatus.RUNNING
            }
        for a in by_kind.get("start_child_workflow_execution", []):
            latest = await tx.get_latest_execution(row.namespace, a.workflow_id)
            if latest is not None and latest.status == ExecutionStatus.RUNNING:
                applying.running_workflow_ids.add(a.workflow_id)
        if "continue_as_new_workflow_execution" in by_kind:
            await self._started_attributes_of(m)
        return applying

    @staticmethod
    def _invalid_search_attributes(applying: Applying, commands: Sequence[command_pb2.Command]) -> str | None:
        """Why the task's upserts or child starts cannot be applied (an unregistered attribute, a wrong
        type), or None."""
        for command in commands:
            kind = command.WhichOneof("attributes")
            if kind in _SEARCH_ATTRIBUTE_COMMANDS:
                try:
                    stored_values(
                        applying.attribute_types,
                        applying.m.row.namespace,
                        getattr(command, kind).search_attributes,
                        removals=kind == "upsert_workflow_search_attributes",
                    )
                except InvalidArgument as error:
                    return error.message
        return None

    def _apply(self, applying: Applying, commands: Sequence[command_pb2.Command]) -> None:
        """Applies the commands in order, in memory."""
        for command in commands:
            kind = command.WhichOneof("attributes")
            assert kind is not None, "validated"
            _APPLY[kind](self, applying, command)

    async def _save(self, applying: Applying) -> None:
        """Writes what the commands changed, and the run's mutation."""
        m = applying.m
        tx = m.tx
        for task in applying.canceled_activities:
            await tx.delete_task(task.task_id or 0)
        for dead_letter_id in applying.canceled_dead_letters:
            await tx.delete_dead_letter(dead_letter_id)
        for task in applying.cancel_requested.values():
            await tx.update_task(task)
        for timer_id in applying.canceled_timers:
            await tx.delete_timer(m.row.run_id, timer_id)
        for child in applying.started_children:
            await self._save_started_child(child)
        for child_run in applying.changed_children.values():
            await child_run.save()
        if applying.search_attributes is not None:
            await self._write_visibility(tx, m.row, applying.search_attributes)
        await m.save()

    # ------------------------------------------------------------------ activities and timers

    def _schedule_activity_task(self, applying: Applying, command: command_pb2.Command) -> None:
        m, a = applying.m, command.schedule_activity_task
        row = m.row
        if a.activity_id in applying.activities:
            raise InvalidArgument(f"activity_id {a.activity_id!r} is already in use by a pending activity of this run")
        schedule_to_close = duration_s(a.schedule_to_close_timeout)
        schedule_to_start = duration_s(a.schedule_to_start_timeout)
        policy = StoredRetryPolicy.from_proto(a.retry_policy if a.HasField("retry_policy") else None)
        scheduled: ActivityTaskScheduledAttributes = {
            "activity_id": a.activity_id,
            "activity_type": a.activity_type,
            "task_queue": a.task_queue or row.task_queue,
            "input": payloads_json(a.input),
            "schedule_to_close_timeout": schedule_to_close,
            "schedule_to_start_timeout": schedule_to_start,
            "start_to_close_timeout": duration_s(a.start_to_close_timeout) or schedule_to_close,
            "heartbeat_timeout": duration_s(a.heartbeat_timeout),
            "retry_policy": policy.to_json(),
            "cancellation_type": int(a.cancellation_type),
            "depends_on_activity_ids": list(a.depends_on_activity_ids),
            "workflow_task_completed_event_id": applying.completed_id,
        }
        if a.header.fields:
            scheduled["header"] = message_to_json_dict(a.header)
        if a.dead_letter:
            scheduled["dead_letter"] = True
        priority = priority_from_proto(a.priority, TaskPriority.of_run(row))
        if a.HasField("priority"):
            scheduled["priority"] = priority.to_json()
        if a.concurrency_key:
            scheduled["concurrency_key"] = a.concurrency_key
        schedule_activity(m, scheduled, a.input)

    def _request_cancel_activity_task(self, applying: Applying, command: command_pb2.Command) -> None:
        m = applying.m
        activity_id = command.request_cancel_activity_task.activity_id
        task = applying.activities.get(activity_id)
        parked = applying.parked.pop(activity_id, None)
        scheduled_event_id = task.scheduled_event_id if task else parked.scheduled_event_id if parked else 0
        requested: ActivityTaskCancelRequestedAttributes = {
            "scheduled_event_id": scheduled_event_id,
            "activity_id": activity_id,
            "workflow_task_completed_event_id": applying.completed_id,
        }
        m.append(EventType.ACTIVITY_TASK_CANCEL_REQUESTED, requested)
        if parked is not None or (task is not None and task.state == TaskState.PENDING):
            # Never started, or parked: it is cancelled now, nobody else to ask.
            if task is not None:
                del applying.activities[activity_id]
                applying.canceled_activities.append(task)
            if parked is not None:
                applying.canceled_dead_letters.append(parked.id)
            canceled: ActivityTaskCanceledAttributes = {"scheduled_event_id": scheduled_event_id, "started_event_id": 0}
            applying.outcomes.append((EventType.ACTIVITY_TASK_CANCELED, canceled))
        elif task is not None:
            task.cancel_requested = 1
            applying.cancel_requested[task.task_id or 0] = task

    def _start_timer(self, applying: Applying, command: command_pb2.Command) -> None:
        m, t = applying.m, command.start_timer
        row = m.row
        if t.timer_id in applying.timers or any(x.timer_id == t.timer_id for x in m.new_timers):
            raise InvalidArgument(f"timer_id {t.timer_id!r} is already in use by a pending timer of this run")
        started: TimerStartedAttributes = {
            "timer_id": t.timer_id,
            "start_to_fire_timeout": duration_s(t.start_to_fire_timeout),
            "workflow_task_completed_event_id": applying.completed_id,
        }
        started_id = m.append(EventType.TIMER_STARTED, started)
        fire_us = m.now + us(started["start_to_fire_timeout"])
        m.new_timers.append(TimerRow(row.namespace, row.run_id, t.timer_id, started_id, fire_us))

    def _cancel_timer(self, applying: Applying, command: command_pb2.Command) -> None:
        timer_id = command.cancel_timer.timer_id
        timer = applying.timers.pop(timer_id, None)
        if timer is not None:
            applying.canceled_timers.append(timer_id)
        canceled: TimerCanceledAttributes = {
            "timer_id": timer_id,
            "started_event_id": timer.started_event_id if timer else 0,
            "workflow_task_completed_event_id": applying.completed_id,
        }
        applying.m.append(EventType.TIMER_CANCELED, canceled)

    # ------------------------------------------------------------------ markers and visibility

    def _record_marker(self, applying: Applying, command: command_pb2.Command) -> None:
        marker = command.record_marker
        recorded: MarkerRecordedAttributes = {
            "marker_name": marker.marker_name,
            "details": {key: payloads_json(value) for key, value in sorted(marker.details.items())},
            "workflow_task_completed_event_id": applying.completed_id,
        }
        applying.m.append(EventType.MARKER_RECORDED, recorded)

    def _upsert_workflow_search_attributes(self, applying: Applying, command: command_pb2.Command) -> None:
        """The event, and the new visible values (written with the workflow task's other changes)."""
        m, upsert = applying.m, command.upsert_workflow_search_attributes
        values = stored_values(applying.attribute_types, m.row.namespace, upsert.search_attributes, removals=True)
        upserted: UpsertWorkflowSearchAttributesAttributes = {
            "search_attributes": message_to_json_dict(upsert.search_attributes),
            "workflow_task_completed_event_id": applying.completed_id,
        }
        m.append(EventType.UPSERT_WORKFLOW_SEARCH_ATTRIBUTES, upserted)
        applying.search_attributes = {**(applying.search_attributes or {}), **values}

    # ------------------------------------------------------------------ closing the run

    def _complete_workflow_execution(self, applying: Applying, command: command_pb2.Command) -> None:
        completed: WorkflowExecutionCompletedAttributes = {
            "result": payloads_json(command.complete_workflow_execution.result),
            "workflow_task_completed_event_id": applying.completed_id,
        }
        _close(applying, EventType.WORKFLOW_EXECUTION_COMPLETED, completed, ExecutionStatus.COMPLETED)

    def _fail_workflow_execution(self, applying: Applying, command: command_pb2.Command) -> None:
        failed: WorkflowExecutionFailedAttributes = {
            "failure": failure_json(command.fail_workflow_execution.failure),
            "workflow_task_completed_event_id": applying.completed_id,
        }
        _close(applying, EventType.WORKFLOW_EXECUTION_FAILED, failed, ExecutionStatus.FAILED)

    def _cancel_workflow_execution(self, applying: Applying, command: command_pb2.Command) -> None:
        canceled: WorkflowExecutionCanceledAttributes = {
            "details": payloads_json(command.cancel_workflow_execution.details),
            "workflow_task_completed_event_id": applying.completed_id,
        }
        _close(applying, EventType.WORKFLOW_EXECUTION_CANCELED, canceled, ExecutionStatus.CANCELED)

    def _continue_as_new_workflow_execution(self, applying: Applying, command: command_pb2.Command) -> None:
        """Closes the run; the next one is started when the close is followed up (run_close.py)."""
        a = command.continue_as_new_workflow_execution
        row = applying.m.row
        started = applying.m.started_attributes
        assert started is not None, "loaded"
        continued: WorkflowExecutionContinuedAsNewAttributes = {
            "new_execution_run_id": time_ordered_run_id(),
            "workflow_type": a.workflow_type or row.workflow_type,
            "task_queue": a.task_queue or row.task_queue,
            "input": payloads_json(a.input),
            "workflow_run_timeout": duration_s(a.workflow_run_timeout) or started["workflow_run_timeout"],
            "workflow_task_timeout": duration_s(a.workflow_task_timeout) or row.wft_timeout_s,
            "workflow_task_completed_event_id": applying.completed_id,
        }
        if a.HasField("last_completion_result"):
            continued["last_completion_result"] = payloads_json(a.last_completion_result)
        if a.HasField("last_failure"):
            continued["last_failure"] = failure_json(a.last_failure)
        _close(applying, EventType.WORKFLOW_EXECUTION_CONTINUED_AS_NEW, continued, ExecutionStatus.CONTINUED_AS_NEW)


def schedule_activity(m: _Mutation, scheduled: ActivityTaskScheduledAttributes, input: common_pb2.Payloads) -> int:
    """Appends ActivityTaskScheduled and adds its task row (also used by DAG runs); returns the event id."""
    scheduled_id = m.append(EventType.ACTIVITY_TASK_SCHEDULED, scheduled)
    m.new_tasks.append(
        activity_task_row(
            m.row,
            scheduled_event_id=scheduled_id,
            activity_id=scheduled["activity_id"],
            activity_type=scheduled["activity_type"],
            task_queue=scheduled["task_queue"],
            input=input.SerializeToString(),
            options=activity_options(scheduled),
            now=m.now,
        )
    )
    return scheduled_id


def _close(applying: Applying, event_type: EventType, attributes: Mapping[str, Any], status: ExecutionStatus) -> None:
    applying.m.append(event_type, attributes)
    applying.m.close(status)


_Handler = Callable[[Commands, Applying, command_pb2.Command], None]

# The command table: command type (the Command oneof's field) -> its handler.
_APPLY: dict[str, _Handler] = {
    "schedule_activity_task": Commands._schedule_activity_task,
    "request_cancel_activity_task": Commands._request_cancel_activity_task,
    "start_timer": Commands._start_timer,
    "cancel_timer": Commands._cancel_timer,
    "record_marker": Commands._record_marker,
    "upsert_workflow_search_attributes": Commands._upsert_workflow_search_attributes,
    "complete_workflow_execution": Commands._complete_workflow_execution,
    "fail_workflow_execution": Commands._fail_workflow_execution,
    "cancel_workflow_execution": Commands._cancel_workflow_execution,
    "continue_as_new_workflow_execution": Commands._continue_as_new_workflow_execution,
    "start_child_workflow_execution": Commands._start_child_workflow_execution,
    "request_cancel_external_workflow_execution": Commands._request_cancel_external_workflow_execution,
    "signal_external_workflow_execution": Commands._signal_external_workflow_execution,
}
