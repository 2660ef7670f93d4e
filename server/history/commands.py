"""Command application: one handler per command type, looked up in a table.

Each handler appends the command's event to the completing workflow task's
mutation and records the rows it implies; outcomes that the workflow must see
later (a child started, a signal delivered) are collected and delivered after
all commands, in command order.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from flowforge.api.schema import (
    EventType,
    ExecutionStatus,
    SignalExternalWorkflowExecutionFailedCause,
    StartChildWorkflowExecutionFailedCause,
    TaskKind,
    TaskState,
    dumps,
    duration_s,
    failure_json,
    message_to_json_dict,
    payloads_json,
)
from flowforge.api.v1 import command_pb2, common_pb2
from flowforge.server.errors import InvalidArgument
from flowforge.server.history.data import StartSignal
from flowforge.server.history.executions import Executions
from flowforge.server.history.mutation import _Mutation, new_run, new_task_row, us
from flowforge.server.history.visibility_writes import visibility_attributes
from flowforge.server.retries import StoredRetryPolicy
from flowforge.server.stores.base import ChildExecutionRow, DuplicateRunningExecution, TimerRow, Transaction

__all__ = ["Applying", "Commands"]

# Commands whose only new deadlines are the mutation's own timers and tasks.
DEADLINE_COMMANDS = frozenset({"schedule_activity_task", "start_timer", "cancel_timer"})


@dataclasses.dataclass
class Applying:
    """The workflow task completion the commands are applied to."""

    m: _Mutation
    completed_id: int
    """The WorkflowTaskCompleted event every command's event refers to."""
    outcomes: list[tuple[EventType, dict[str, Any]]] = dataclasses.field(default_factory=list)
    """Events delivered after every command was applied, in order."""


class Commands(Executions):
    """The handlers of the command table :data:`_APPLY`."""

    async def _apply_commands(self, applying: Applying, commands: Sequence[command_pb2.Command]) -> None:
        for command in commands:
            kind = command.WhichOneof("attributes")
            assert kind is not None, "validated"
            await _APPLY[kind](self, applying, command)

    async def _invalid_search_attributes(
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

    # ------------------------------------------------------------------ activities and timers

    async def _schedule_activity_task(self, applying: Applying, command: command_pb2.Command) -> None:
        m, a = applying.m, command.schedule_activity_task
        row = m.row
        if await m.tx.get_activity_task(row.run_id, a.activity_id) is not None:
            raise InvalidArgument(f"activity_id {a.activity_id!r} is already in use by a pending activity of this run")
        schedule_to_close = duration_s(a.schedule_to_close_timeout)
        start_to_close = duration_s(a.start_to_close_timeout) or schedule_to_close
        schedule_to_start = duration_s(a.schedule_to_start_timeout)
        policy = StoredRetryPolicy.from_proto(a.retry_policy if a.HasField("retry_policy") else None)
        task_queue = a.task_queue or row.task_queue
        options = {
            "schedule_to_close_timeout": schedule_to_close,
            "schedule_to_start_timeout": schedule_to_start,
            "start_to_close_timeout": start_to_close,
            "heartbeat_timeout": duration_s(a.heartbeat_timeout),
            "retry_policy": policy.to_json(),
            "cancellation_type": int(a.cancellation_type),
        }
        scheduled_id = m.append(
            EventType.ACTIVITY_TASK_SCHEDULED,
            {
                "activity_id": a.activity_id,
                "activity_type": a.activity_type,
                "task_queue": task_queue,
                "input": payloads_json(a.input),
                **options,
                "depends_on_activity_ids": list(a.depends_on_activity_ids),
                "workflow_task_completed_event_id": applying.completed_id,
            },
        )
        s2c_deadline = m.now + us(schedule_to_close) if schedule_to_close else None
        s2s_deadline = m.now + us(schedule_to_start) if schedule_to_start else None
        m.new_tasks.append(
            new_task_row(
                row,
                kind=TaskKind.ACTIVITY,
                task_queue=task_queue,
                visible_us=m.now,
                attempt=1,
                scheduled_event_id=scheduled_id,
                activity_id=a.activity_id,
                activity_type=a.activity_type,
                input=a.input.SerializeToString(),
                options=dumps(options),
                pending_deadline_us=min((d for d in (s2c_deadline, s2s_deadline) if d is not None), default=None),
                schedule_to_close_deadline_us=s2c_deadline,
            )
        )

    async def _request_cancel_activity_task(self, applying: Applying, command: command_pb2.Command) -> None:
        m = applying.m
        activity_id = command.request_cancel_activity_task.activity_id
        task = await m.tx.get_activity_task(m.row.run_id, activity_id)
        scheduled_event_id = task.scheduled_event_id if task else 0
        m.append(
            EventType.ACTIVITY_TASK_CANCEL_REQUESTED,
            {
                "scheduled_event_id": scheduled_event_id,
                "activity_id": activity_id,
                "workflow_task_completed_event_id": applying.completed_id,
            },
        )
        if task is not None and task.state == TaskState.PENDING:
            # Never started: it is cancelled now, nobody else to ask.
            await m.tx.delete_task(task.task_id or 0)
            applying.outcomes.append(
                (EventType.ACTIVITY_TASK_CANCELED, {"scheduled_event_id": scheduled_event_id, "started_event_id": 0})
            )
        elif task is not None:
            task.cancel_requested = 1
            await m.tx.update_task(task)

    async def _start_timer(self, applying: Applying, command: command_pb2.Command) -> None:
        m, t = applying.m, command.start_timer
        row = m.row
        if await m.tx.delete_timer(row.run_id, t.timer_id) is not None or any(
            x.timer_id == t.timer_id for x in m.new_timers
        ):
            raise InvalidArgument(f"timer_id {t.timer_id!r} is already in use by a pending timer of this run")
        seconds = duration_s(t.start_to_fire_timeout)
        started_id = m.append(
            EventType.TIMER_STARTED,
            {
                "timer_id": t.timer_id,
                "start_to_fire_timeout": seconds,
                "workflow_task_completed_event_id": applying.completed_id,
            },
        )
        m.new_timers.append(TimerRow(row.namespace, row.run_id, t.timer_id, started_id, m.now + us(seconds)))

    async def _cancel_timer(self, applying: Applying, command: command_pb2.Command) -> None:
        m = applying.m
        timer_id = command.cancel_timer.timer_id
        timer = await m.tx.delete_timer(m.row.run_id, timer_id)
        m.append(
            EventType.TIMER_CANCELED,
            {
                "timer_id": timer_id,
                "started_event_id": timer.started_event_id if timer else 0,
                "workflow_task_completed_event_id": applying.completed_id,
            },
        )

    # ------------------------------------------------------------------ markers and visibility

    async def _record_marker(self, applying: Applying, command: command_pb2.Command) -> None:
        marker = command.record_marker
        applying.m.append(
            EventType.MARKER_RECORDED,
            {
                "marker_name": marker.marker_name,
                "details": {key: payloads_json(value) for key, value in sorted(marker.details.items())},
                "workflow_task_completed_event_id": applying.completed_id,
            },
        )

    async def _upsert_workflow_search_attributes(self, applying: Applying, command: command_pb2.Command) -> None:
        """The event and the new visible values, in the workflow task's transaction."""
        m, upsert = applying.m, command.upsert_workflow_search_attributes
        values = await self._stored_values(m.tx, m.row.namespace, upsert.search_attributes, removals=True)
        m.append(
            EventType.UPSERT_WORKFLOW_SEARCH_ATTRIBUTES,
            {
                "search_attributes": message_to_json_dict(upsert.search_attributes),
                "workflow_task_completed_event_id": applying.completed_id,
            },
        )
        await self._write_visibility(m.tx, m.row, values)

    # ------------------------------------------------------------------ closing the run

    async def _complete_workflow_execution(self, applying: Applying, command: command_pb2.Command) -> None:
        result = command.complete_workflow_execution.result
        self._close(
            applying,
            EventType.WORKFLOW_EXECUTION_COMPLETED,
            {"result": payloads_json(result)},
            ExecutionStatus.COMPLETED,
        )

    async def _fail_workflow_execution(self, applying: Applying, command: command_pb2.Command) -> None:
        failure = command.fail_workflow_execution.failure
        self._close(
            applying, EventType.WORKFLOW_EXECUTION_FAILED, {"failure": failure_json(failure)}, ExecutionStatus.FAILED
        )

    async def _cancel_workflow_execution(self, applying: Applying, command: command_pb2.Command) -> None:
        details = command.cancel_workflow_execution.details
        self._close(
            applying,
            EventType.WORKFLOW_EXECUTION_CANCELED,
            {"details": payloads_json(details)},
            ExecutionStatus.CANCELED,
        )

    async def _continue_as_new_workflow_execution(self, applying: Applying, command: command_pb2.Command) -> None:
        """Closes the run; the next one is started when the close is followed up (run_close.py)."""
        a = command.continue_as_new_workflow_execution
        row = applying.m.row
        started = await self._started_attributes_of(applying.m)
        continued = {
            "new_execution_run_id": str(uuid.uuid4()),
            "workflow_type": a.workflow_type or row.workflow_type,
            "task_queue": a.task_queue or row.task_queue,
            "input": payloads_json(a.input),
            "workflow_run_timeout": duration_s(a.workflow_run_timeout) or started["workflow_run_timeout"],
            "workflow_task_timeout": duration_s(a.workflow_task_timeout) or row.wft_timeout_s,
        }
        self._close(
            applying, EventType.WORKFLOW_EXECUTION_CONTINUED_AS_NEW, continued, ExecutionStatus.CONTINUED_AS_NEW
        )

    @staticmethod
    def _close(applying: Applying, event_type: EventType, attributes: dict[str, Any], status: ExecutionStatus) -> None:
        applying.m.append(event_type, {**attributes, "workflow_task_completed_event_id": applying.completed_id})
        applying.m.close(status)

    # ------------------------------------------------------------------ children

    async def _start_child_workflow_execution(self, applying: Applying, command: command_pb2.Command) -> None:
        m, a = applying.m, command.start_child_workflow_execution
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
            EventType.START_CHILD_WORKFLOW_EXECUTION_INITIATED,
            {
                "workflow_id": a.workflow_id,
                "workflow_type": a.workflow_type,
                "task_queue": task_queue,
                "input": payloads_json(a.input),
                "workflow_execution_timeout": duration_s(a.workflow_execution_timeout),
                "workflow_run_timeout": duration_s(a.workflow_run_timeout),
                "workflow_task_timeout": duration_s(a.workflow_task_timeout),
                "parent_close_policy": policy,
                "workflow_task_completed_event_id": applying.completed_id,
                **retry,
            },
        )
        child = new_run(
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
            default_task_timeout_s=self.config.default_workflow_task_timeout_s,
            started={
                "parent_workflow_namespace": parent.namespace,
                "parent_workflow_id": parent.workflow_id,
                "parent_run_id": parent.run_id,
                "parent_initiated_event_id": initiated_id,
                **retry,
                **visibility_attributes(a.search_attributes, a.memo),
            },
        )
        identity = {"initiated_event_id": initiated_id, "workflow_id": a.workflow_id, "workflow_type": a.workflow_type}
        try:
            await child.save()
        except DuplicateRunningExecution:
            applying.outcomes.append(
                (
                    EventType.START_CHILD_WORKFLOW_EXECUTION_FAILED,
                    {**identity, "cause": StartChildWorkflowExecutionFailedCause.WORKFLOW_ALREADY_EXISTS},
                )
            )
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
        applying.outcomes.append((EventType.CHILD_WORKFLOW_EXECUTION_STARTED, {**identity, "run_id": child.row.run_id}))

    async def _request_cancel_external_workflow_execution(
        self, applying: Applying, command: command_pb2.Command
    ) -> None:
        """Delivers the cancel request to the child in this transaction; a child that
        closed meanwhile needs none (its outcome is on its way to the parent)."""
        m, a = applying.m, command.request_cancel_external_workflow_execution
        child = await self._pending_child(m, a.workflow_id, a.run_id)
        m.append(
            EventType.REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED,
            {
                "workflow_id": a.workflow_id,
                "run_id": a.run_id,
                "child_workflow_only": True,
                "workflow_task_completed_event_id": applying.completed_id,
            },
        )
        if child is not None:
            await self._request_cancel_run(
                m.tx, m.row.namespace, child.run_id, m.now, reason=f"cancelled by its parent {m.row.workflow_id}"
            )

    async def _signal_external_workflow_execution(self, applying: Applying, command: command_pb2.Command) -> None:
        """Delivers the signal to the child in this transaction and reports back whether it could."""
        m, a = applying.m, command.signal_external_workflow_execution
        initiated_id = m.append(
            EventType.SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED,
            {
                "workflow_id": a.workflow_id,
                "run_id": a.run_id,
                "signal_name": a.signal_name,
                "input": payloads_json(a.input),
                "child_workflow_only": True,
                "workflow_task_completed_event_id": applying.completed_id,
            },
        )
        child = await self._pending_child(m, a.workflow_id, a.run_id)
        target = await m.tx.get_execution(m.row.namespace, child.run_id) if child is not None else None
        identity = {"initiated_event_id": initiated_id, "workflow_id": a.workflow_id}
        if target is None or target.status != ExecutionStatus.RUNNING:
            applying.outcomes.append(
                (
                    EventType.SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_FAILED,
                    {
                        **identity,
                        "run_id": a.run_id,
                        "cause": SignalExternalWorkflowExecutionFailedCause.EXTERNAL_WORKFLOW_EXECUTION_NOT_FOUND,
                    },
                )
            )
            return
        await self._signal(m.tx, target, StartSignal(a.signal_name, a.input), f"parent {m.row.workflow_id}")
        applying.outcomes.append(
            (EventType.EXTERNAL_WORKFLOW_EXECUTION_SIGNALED, {**identity, "run_id": target.run_id})
        )

    @staticmethod
    async def _pending_child(m: _Mutation, workflow_id: str, run_id: str) -> ChildExecutionRow | None:
        """The run's pending child with this workflow id (and run id, if given)."""
        children = await m.tx.list_child_executions(m.row.namespace, m.row.run_id)
        return next((c for c in children if c.workflow_id == workflow_id and run_id in ("", c.run_id)), None)


_Handler = Callable[[Commands, Applying, command_pb2.Command], Awaitable[None]]

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
