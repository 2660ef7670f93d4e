"""Activities of a workflow run: scheduling, awaiting, cancelling and resolving them from history."""

from __future__ import annotations

import asyncio
import dataclasses
import functools
from collections.abc import Set as AbstractSet
from typing import Any, cast

from flowforge import exceptions
from flowforge._activity_calls import ActivityCancellationType, ActivityHandle, _ActivityCall
from flowforge._workflow_commands import ActivityOutcomeAttributes, CommandBuffer
from flowforge._workflow_dag import DagTracker
from flowforge.api import schema
from flowforge.api.schema import EventType
from flowforge.api.v1 import command_pb2, common_pb2
from flowforge.converter import DataConverter, failure_to_error

__all__ = ["Activities"]


@dataclasses.dataclass(eq=False)
class _Activity:
    activity_id: str
    activity_type: str
    result_type: Any
    cancellation_type: ActivityCancellationType
    command: command_pb2.Command
    # Resolved with the result Payloads, or an ActivityError, by the outcome event.
    outcome: asyncio.Future[common_pb2.Payloads]
    handle: ActivityHandle[Any] = dataclasses.field(init=False)
    cancel_requested: bool = False
    # Its ActivityTaskScheduled event, once history matched the command (0 before).
    scheduled_event_id: int = 0


class Activities:
    """The activities a workflow run scheduled, by their deterministic ids.

    Args:
        loop: The workflow loop the activity handles run on.
        commands: Where schedule and cancel commands go.
        dag: Gives each activity its dependencies.
        converter: Encodes arguments and decodes results.
    """

    def __init__(
        self, loop: asyncio.AbstractEventLoop, commands: CommandBuffer, dag: DagTracker, converter: DataConverter
    ) -> None:
        self._loop = loop
        self._commands = commands
        self._dag = dag
        self._converter = converter
        self._seq = 0
        self._by_id: dict[str, _Activity] = {}
        self._by_scheduled_event: dict[int, _Activity] = {}
        # Ids of the activities history scheduled and gave no outcome yet: any may move the run.
        self._awaited: set[str] = set()

    def start(self, call: _ActivityCall) -> ActivityHandle[Any]:
        """Issues the ScheduleActivityTask command; the handle resolves with the outcome."""
        input_payloads = self._converter.to_payloads(call.args)
        self._seq += 1
        activity_id = str(self._seq)
        dependencies = self._dag.schedule(self._seq)
        attributes = command_pb2.ScheduleActivityTaskCommandAttributes(
            activity_id=activity_id,
            activity_type=call.activity_type,
            task_queue=call.task_queue,
            input=input_payloads,
            depends_on_activity_ids=list(map(str, dependencies)),  # no comprehension frame for the guard's hook
            cancellation_type=call.cancellation_type.value,
            dead_letter=call.dead_letter,
            concurrency_key=call.concurrency_key or "",
        )
        if call.priority is not None:
            attributes.priority.CopyFrom(call.priority.to_proto())
        # Each field by name, not getattr over a list: this runs in workflow code, where
        # the determinism guard's hook sees every call.
        if call.schedule_to_close_timeout is not None:
            attributes.schedule_to_close_timeout.FromTimedelta(call.schedule_to_close_timeout)
        if call.schedule_to_start_timeout is not None:
            attributes.schedule_to_start_timeout.FromTimedelta(call.schedule_to_start_timeout)
        if call.start_to_close_timeout is not None:
            attributes.start_to_close_timeout.FromTimedelta(call.start_to_close_timeout)
        if call.heartbeat_timeout is not None:
            attributes.heartbeat_timeout.FromTimedelta(call.heartbeat_timeout)
        if call.retry_policy is not None:
            attributes.retry_policy.CopyFrom(call.retry_policy.to_proto())
        for name, value in call.headers.items():
            attributes.header.fields[name].CopyFrom(value)
        command = command_pb2.Command(schedule_activity_task=attributes)
        self._commands.append(command)

        activity = _Activity(
            activity_id=activity_id,
            activity_type=call.activity_type,
            result_type=call.result_type,
            cancellation_type=call.cancellation_type,
            command=command,
            outcome=self._loop.create_future(),
        )
        self._by_id[activity_id] = activity
        activity.handle = ActivityHandle(
            self._await(activity),
            loop=self._loop,
            activity_id=activity_id,
            activity_type=call.activity_type,
        )
        activity.handle.add_done_callback(functools.partial(self._on_handle_done, activity))
        self._dag.track_task(activity.handle)
        return activity.handle

    def on_scheduled(self, event_id: int, activity_id: str) -> None:
        """History matched the activity's command with its ActivityTaskScheduled event."""
        activity = self._by_id[activity_id]
        activity.scheduled_event_id = event_id
        self._by_scheduled_event[event_id] = activity
        self._awaited.add(activity_id)

    def pending_scheduled_event_id(self, activity_id: str) -> int:
        """The ActivityTaskScheduled event id of activity ``activity_id`` if history scheduled
        it and it awaits its outcome, with no cancellation requested; else 0."""
        activity = self._by_id.get(activity_id)
        if activity is None or activity.outcome.done() or activity.cancel_requested:
            return 0
        return activity.scheduled_event_id

    def all_awaited_in(self, held: AbstractSet[str]) -> bool:
        """Whether every activity history scheduled and gave no outcome yet (whatever its
        cancellation) is in ``held``."""
        awaited = self._awaited
        return len(awaited) <= len(held) and all(activity_id in held for activity_id in awaited)

    def activity_id_scheduled_at(self, scheduled_event_id: int) -> str:
        """The id of the activity an ActivityTaskScheduled event scheduled, or ``""``."""
        activity = self._by_scheduled_event.get(scheduled_event_id)
        return activity.activity_id if activity is not None else ""

    def resolve(self, event: common_pb2.HistoryEvent, attributes: ActivityOutcomeAttributes) -> None:
        """Delivers an outcome event (completed, failed, timed out, canceled)."""
        scheduled_event_id = attributes["scheduled_event_id"]
        activity = self._by_scheduled_event.get(scheduled_event_id)
        if activity is None:
            raise ValueError(
                f"malformed history: event {event.event_id} {event.event_type} refers to event "
                f"{scheduled_event_id}, which is not an ActivityTaskScheduled event of this run"
            )
        self._awaited.discard(activity.activity_id)
        if activity.handle.done():
            return  # abandoned, or cancelled without waiting: nobody wants the outcome
        if event.event_type == EventType.ACTIVITY_TASK_COMPLETED:
            attributes = cast(schema.ActivityTaskCompletedAttributes, attributes)
            activity.outcome.set_result(schema.payloads_from_json(attributes.get("result")))
        else:
            activity.outcome.set_exception(self._error(activity, event, attributes))

    def _error(
        self, activity: _Activity, event: common_pb2.HistoryEvent, attributes: ActivityOutcomeAttributes
    ) -> exceptions.ActivityError:
        cause: exceptions.FailureError
        retry_state: str | None = None
        if event.event_type == EventType.ACTIVITY_TASK_CANCELED:
            attributes = cast(schema.ActivityTaskCanceledAttributes, attributes)
            details = schema.payloads_from_json(attributes.get("details"))
            cause = exceptions.CancelledError("activity cancelled", *self._converter.from_payloads(details))
            outcome = "was cancelled"
        else:
            attributes = cast(schema.ActivityTaskFailedAttributes | schema.ActivityTaskTimedOutAttributes, attributes)
            cause = failure_to_error(schema.failure_from_json(attributes.get("failure")), self._converter)
            outcome = "timed out" if event.event_type == EventType.ACTIVITY_TASK_TIMED_OUT else "failed"
            retry_state = attributes.get("retry_state")
        error = exceptions.ActivityError(
            f"activity {activity.activity_type!r} (id {activity.activity_id}) {outcome}",
            activity_type=activity.activity_type,
            activity_id=activity.activity_id,
            scheduled_event_id=attributes["scheduled_event_id"],
            retry_state=exceptions.RetryState[retry_state] if retry_state else exceptions.RetryState.UNSPECIFIED,
        )
        error.__cause__ = cause
        return error

    async def _await(self, activity: _Activity) -> Any:
        """The body of an activity's handle: waits for the outcome, applies cancellation."""
        while True:
            try:
                # Shielded: cancelling the handle must not cancel the outcome,
                # which WAIT_CANCELLATION_COMPLETED still waits for.
                payloads = await asyncio.shield(activity.outcome)
            except asyncio.CancelledError:
                if self._cancel(activity):
                    continue
                raise
            except exceptions.ActivityError as error:
                self._dag.observe(int(activity.activity_id))
                if activity.cancel_requested and isinstance(error.cause, exceptions.CancelledError):
                    # WAIT_CANCELLATION_COMPLETED, acknowledged: the await ends as
                    # every cancelled await does, whatever the cancellation type, so
                    # one `except asyncio.CancelledError` handles them all.
                    raise asyncio.CancelledError(str(error)) from error
                raise
            self._dag.observe(int(activity.activity_id))
            if not payloads.payloads:
                return None
            return self._converter.from_payload(payloads.payloads[0], activity.result_type)

    def _on_handle_done(self, activity: _Activity, handle: ActivityHandle[Any]) -> None:
        # A handle cancelled before its first step never ran _await.
        if handle.cancelled():
            self._cancel(activity)

    def _cancel(self, activity: _Activity) -> bool:
        """Applies the activity's cancellation type; returns whether to keep waiting for its outcome."""
        if activity.outcome.done():
            return False
        if self._commands.discard_unsent(activity.command):
            activity.outcome.cancel()  # the server never heard of it: no outcome will come
            return False
        if activity.cancellation_type is ActivityCancellationType.ABANDON:
            return False
        if not activity.cancel_requested:
            activity.cancel_requested = True
            self._commands.append(
                command_pb2.Command(
                    request_cancel_activity_task=command_pb2.RequestCancelActivityTaskCommandAttributes(
                        activity_id=activity.activity_id
                    )
                )
            )
        return activity.cancellation_type is ActivityCancellationType.WAIT_CANCELLATION_COMPLETED
