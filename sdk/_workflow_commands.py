"""Commands of a workflow task, and how replay matches them with history.

Each command a workflow task completes with is recorded as one history event
(``StartTimer`` -> ``TimerStarted``, ...). On replay the code must produce the
same commands again: this module names the event each command becomes and the
fields replay compares between the two (docs/history-events.md).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator, Mapping
from typing import Any, cast

from flowforge import exceptions, workflow
from flowforge.api import schema
from flowforge.api.schema import EventType
from flowforge.api.v1 import command_pb2, common_pb2
from flowforge.converter import DataConverter, default_converter, error_to_failure

__all__ = [
    "ACTIVITY_OUTCOME_EVENT_TYPES",
    "CHILD_EVENT_TYPES",
    "COMMAND_EVENT_TYPES",
    "DELIVERED_EVENT_TYPES",
    "DEPRECATED_DETAIL",
    "LOCAL_ACTIVITY_MARKER_NAME",
    "LOCAL_ACTIVITY_SEQ_DETAIL",
    "PATCH_ID_DETAIL",
    "PATCH_MARKER_NAME",
    "SIGNAL_CHILD_OUTCOMES",
    "UPDATE_ID_DETAIL",
    "UPDATE_MARKER_NAME",
    "UPDATE_STAGE_DETAIL",
    "WORKFLOW_TASK_NOT_COMPLETED",
    "ActivityOutcomeAttributes",
    "ChildEventAttributes",
    "CommandBuffer",
    "SignalChildOutcomeAttributes",
    "attributes_of",
    "close_command",
    "command_event_fields",
    "command_signature",
    "cron_continuation",
    "describe_command",
    "fail_command",
    "marker_fields",
    "recorded_marker_details",
    "signature",
]

# Events written for the commands of a completed workflow task; replay matches them.
COMMAND_EVENT_TYPES = frozenset(
    {
        EventType.ACTIVITY_TASK_SCHEDULED,
        EventType.TIMER_STARTED,
        EventType.TIMER_CANCELED,
        EventType.ACTIVITY_TASK_CANCEL_REQUESTED,
        EventType.MARKER_RECORDED,
        EventType.WORKFLOW_EXECUTION_COMPLETED,
        EventType.WORKFLOW_EXECUTION_FAILED,
        EventType.WORKFLOW_EXECUTION_CANCELED,
        EventType.UPSERT_WORKFLOW_SEARCH_ATTRIBUTES,
        EventType.START_CHILD_WORKFLOW_EXECUTION_INITIATED,
        EventType.REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED,
        EventType.SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED,
        EventType.WORKFLOW_EXECUTION_CONTINUED_AS_NEW,
    }
)
# Events that resolve an activity's outcome.
ACTIVITY_OUTCOME_EVENT_TYPES = frozenset(
    {
        EventType.ACTIVITY_TASK_COMPLETED,
        EventType.ACTIVITY_TASK_FAILED,
        EventType.ACTIVITY_TASK_TIMED_OUT,
        EventType.ACTIVITY_TASK_CANCELED,
    }
)
# Events that resolve a child workflow's start or its outcome.
CHILD_EVENT_TYPES = frozenset(
    {
        EventType.START_CHILD_WORKFLOW_EXECUTION_FAILED,
        EventType.CHILD_WORKFLOW_EXECUTION_STARTED,
        EventType.CHILD_WORKFLOW_EXECUTION_COMPLETED,
        EventType.CHILD_WORKFLOW_EXECUTION_FAILED,
        EventType.CHILD_WORKFLOW_EXECUTION_CANCELED,
        EventType.CHILD_WORKFLOW_EXECUTION_TERMINATED,
        EventType.CHILD_WORKFLOW_EXECUTION_TIMED_OUT,
    }
)
SIGNAL_CHILD_OUTCOMES = frozenset(
    {EventType.EXTERNAL_WORKFLOW_EXECUTION_SIGNALED, EventType.SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_FAILED}
)
# Events delivered to workflow code, in batches, when the next workflow task runs.
DELIVERED_EVENT_TYPES = frozenset(
    {
        EventType.WORKFLOW_EXECUTION_STARTED,
        EventType.TIMER_FIRED,
        EventType.WORKFLOW_EXECUTION_CANCEL_REQUESTED,
        EventType.WORKFLOW_EXECUTION_SIGNALED,
        *ACTIVITY_OUTCOME_EVENT_TYPES,
        *CHILD_EVENT_TYPES,
        *SIGNAL_CHILD_OUTCOMES,
    }
)
WORKFLOW_TASK_NOT_COMPLETED = frozenset({EventType.WORKFLOW_TASK_FAILED, EventType.WORKFLOW_TASK_TIMED_OUT})

# The attributes of the events ACTIVITY_OUTCOME_EVENT_TYPES, CHILD_EVENT_TYPES and
# SIGNAL_CHILD_OUTCOMES name (every one carries the id of the event it resolves).
ActivityOutcomeAttributes = (
    schema.ActivityTaskCompletedAttributes
    | schema.ActivityTaskFailedAttributes
    | schema.ActivityTaskTimedOutAttributes
    | schema.ActivityTaskCanceledAttributes
)
ChildEventAttributes = (
    schema.StartChildWorkflowExecutionFailedAttributes
    | schema.ChildWorkflowExecutionStartedAttributes
    | schema.ChildWorkflowExecutionCompletedAttributes
    | schema.ChildWorkflowExecutionFailedAttributes
    | schema.ChildWorkflowExecutionCanceledAttributes
    | schema.ChildWorkflowExecutionTerminatedAttributes
    | schema.ChildWorkflowExecutionTimedOutAttributes
)
SignalChildOutcomeAttributes = (
    schema.ExternalWorkflowExecutionSignaledAttributes | schema.SignalExternalWorkflowExecutionFailedAttributes
)

# Versioning: the marker workflow.patched() records, and the keys of its details.
PATCH_MARKER_NAME = "patch"
PATCH_ID_DETAIL = "patch_id"
DEPRECATED_DETAIL = "deprecated"
# Local activities: the marker recording an outcome, keyed by the activity's start order.
LOCAL_ACTIVITY_MARKER_NAME = "local_activity"
LOCAL_ACTIVITY_SEQ_DETAIL = "local_activity_seq"
# Updates: one marker per stage an update reached in the workflow, keyed by update id.
UPDATE_MARKER_NAME = "update"
UPDATE_ID_DETAIL = "update_id"
UPDATE_STAGE_DETAIL = "stage"


class CommandBuffer:
    """The commands of the running activation, in the order the code issued them."""

    def __init__(self) -> None:
        self._commands: list[command_pb2.Command] = []

    def __len__(self) -> int:
        return len(self._commands)

    def __iter__(self) -> Iterator[command_pb2.Command]:
        return iter(self._commands)

    def append(self, command: command_pb2.Command) -> None:
        """Adds a command the code issued."""
        self._commands.append(command)

    def clear(self) -> None:
        """Starts a new activation with no commands."""
        self._commands = []

    def truncate(self, length: int) -> list[command_pb2.Command]:
        """Drops the commands after the first ``length`` and returns them."""
        dropped = self._commands[length:]
        del self._commands[length:]
        return dropped

    def discard_unsent(self, command: command_pb2.Command) -> bool:
        """Drops a command of the running activation; False when it was already sent."""
        for index, candidate in enumerate(self._commands):
            if candidate is command:
                del self._commands[index]
                return True
        return False


def attributes_of(event: common_pb2.HistoryEvent) -> dict[str, Any]:
    """The event's attributes, decoded from their JSON form."""
    attributes: dict[str, Any] = json.loads(event.attributes_json) if event.attributes_json else {}
    return attributes


def signature(name: str, fields: Mapping[str, str]) -> str:
    """``name(key='value', ...)``, for messages."""
    if not fields:
        return name
    return f"{name}({', '.join(f'{key}={value!r}' for key, value in fields.items())})"


def command_signature(command: command_pb2.Command) -> tuple[str, EventType, dict[str, str]]:
    """The command's name, the event type history records for it, and the fields replay compares."""
    kind = command.WhichOneof("attributes")
    if kind == "schedule_activity_task":
        attributes = command.schedule_activity_task
        fields = {"activity_type": attributes.activity_type, "activity_id": attributes.activity_id}
        return "ScheduleActivityTask", EventType.ACTIVITY_TASK_SCHEDULED, fields
    if kind == "start_timer":
        return "StartTimer", EventType.TIMER_STARTED, {"timer_id": command.start_timer.timer_id}
    if kind == "cancel_timer":
        return "CancelTimer", EventType.TIMER_CANCELED, {"timer_id": command.cancel_timer.timer_id}
    if kind == "request_cancel_activity_task":
        fields = {"activity_id": command.request_cancel_activity_task.activity_id}
        return "RequestCancelActivityTask", EventType.ACTIVITY_TASK_CANCEL_REQUESTED, fields
    if kind == "record_marker":
        return "RecordMarker", EventType.MARKER_RECORDED, marker_fields(command.record_marker.details)
    if kind == "complete_workflow_execution":
        return "CompleteWorkflowExecution", EventType.WORKFLOW_EXECUTION_COMPLETED, {}
    if kind == "fail_workflow_execution":
        return "FailWorkflowExecution", EventType.WORKFLOW_EXECUTION_FAILED, {}
    if kind == "cancel_workflow_execution":
        return "CancelWorkflowExecution", EventType.WORKFLOW_EXECUTION_CANCELED, {}
    if kind == "upsert_workflow_search_attributes":
        names = command.upsert_workflow_search_attributes.search_attributes.indexed_fields
        return (
            "UpsertWorkflowSearchAttributes",
            EventType.UPSERT_WORKFLOW_SEARCH_ATTRIBUTES,
            {"names": ",".join(sorted(names))},
        )
    if kind == "start_child_workflow_execution":
        child = command.start_child_workflow_execution
        fields = {"workflow_type": child.workflow_type, "workflow_id": child.workflow_id}
        return "StartChildWorkflowExecution", EventType.START_CHILD_WORKFLOW_EXECUTION_INITIATED, fields
    if kind == "request_cancel_external_workflow_execution":
        fields = {"workflow_id": command.request_cancel_external_workflow_execution.workflow_id}
        return (
            "RequestCancelExternalWorkflowExecution",
            EventType.REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED,
            fields,
        )
    if kind == "signal_external_workflow_execution":
        signal = command.signal_external_workflow_execution
        fields = {"workflow_id": signal.workflow_id, "signal_name": signal.signal_name}
        return "SignalExternalWorkflowExecution", EventType.SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED, fields
    if kind == "continue_as_new_workflow_execution":
        fields = {"workflow_type": command.continue_as_new_workflow_execution.workflow_type}
        return "ContinueAsNewWorkflowExecution", EventType.WORKFLOW_EXECUTION_CONTINUED_AS_NEW, fields
    raise ValueError(f"unknown command {kind!r}")


def describe_command(command: command_pb2.Command) -> str:
    """The command as a message names it, e.g. ``StartTimer(timer_id='1')``."""
    name, _, fields = command_signature(command)
    return signature(name, fields)


def command_event_fields(
    event: common_pb2.HistoryEvent, attributes: Mapping[str, Any], activity_id_scheduled_at: Callable[[int], str]
) -> dict[str, str]:
    """The fields of a command event that replay compares with the command.

    Args:
        event: The recorded command event.
        attributes: Its decoded attributes.
        activity_id_scheduled_at: The id of the activity an ``ActivityTaskScheduled``
            event id scheduled, or ``""`` (a cancel request names the activity by that event).
    """
    event_type = event.event_type
    if event_type == EventType.ACTIVITY_TASK_SCHEDULED:
        attributes = cast(schema.ActivityTaskScheduledAttributes, attributes)
        return {"activity_type": attributes["activity_type"], "activity_id": attributes["activity_id"]}
    if event_type in (EventType.TIMER_STARTED, EventType.TIMER_CANCELED):
        attributes = cast(schema.TimerStartedAttributes | schema.TimerCanceledAttributes, attributes)
        return {"timer_id": attributes["timer_id"]}
    if event_type == EventType.MARKER_RECORDED:
        return marker_fields(recorded_marker_details(cast(schema.MarkerRecordedAttributes, attributes)))
    if event_type == EventType.ACTIVITY_TASK_CANCEL_REQUESTED:
        attributes = cast(schema.ActivityTaskCancelRequestedAttributes, attributes)
        return {"activity_id": activity_id_scheduled_at(attributes["scheduled_event_id"])}
    if event_type == EventType.UPSERT_WORKFLOW_SEARCH_ATTRIBUTES:
        attributes = cast(schema.UpsertWorkflowSearchAttributesAttributes, attributes)
        # Names only: a new deployment may compute other values without breaking replay.
        return {"names": ",".join(sorted((attributes.get("search_attributes") or {}).get("indexed_fields") or {}))}
    if event_type == EventType.START_CHILD_WORKFLOW_EXECUTION_INITIATED:
        attributes = cast(schema.StartChildWorkflowExecutionInitiatedAttributes, attributes)
        return {"workflow_type": attributes["workflow_type"], "workflow_id": attributes["workflow_id"]}
    if event_type == EventType.WORKFLOW_EXECUTION_CONTINUED_AS_NEW:
        attributes = cast(schema.WorkflowExecutionContinuedAsNewAttributes, attributes)
        return {"workflow_type": attributes["workflow_type"]}
    if event_type == EventType.REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED:
        attributes = cast(schema.RequestCancelExternalWorkflowExecutionInitiatedAttributes, attributes)
        return {"workflow_id": attributes["workflow_id"]}
    if event_type == EventType.SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED:
        attributes = cast(schema.SignalExternalWorkflowExecutionInitiatedAttributes, attributes)
        return {"workflow_id": attributes["workflow_id"], "signal_name": attributes["signal_name"]}
    return {}


def marker_fields(details: Mapping[str, common_pb2.Payloads]) -> dict[str, str]:
    """What replay compares of a marker: a patch's id (the deprecated flag may change), or a
    local activity's start order and type (its outcome is what history recorded)."""
    update_id = details.get(UPDATE_ID_DETAIL)
    if update_id is not None:
        stage = details.get(UPDATE_STAGE_DETAIL)
        return {
            "update_id": str(default_converter.from_payloads(update_id)[0]),
            "stage": str(default_converter.from_payloads(stage)[0]) if stage else "",
        }
    local_activity_seq = details.get(LOCAL_ACTIVITY_SEQ_DETAIL)
    if local_activity_seq is not None:
        activity_type = details.get("activity_type")
        return {
            "local_activity_seq": str(default_converter.from_payloads(local_activity_seq)[0]),
            "activity_type": str(default_converter.from_payloads(activity_type)[0]) if activity_type else "",
        }
    patch_id = details.get(PATCH_ID_DETAIL)
    return {"patch_id": str(default_converter.from_payloads(patch_id)[0]) if patch_id is not None else ""}


def recorded_marker_details(attributes: schema.MarkerRecordedAttributes) -> dict[str, common_pb2.Payloads]:
    """The details of a ``MarkerRecorded`` event, as payloads."""
    details = attributes.get("details") or {}
    return {key: schema.payloads_from_json(value) for key, value in details.items()}


def fail_command(error: exceptions.FailureError, converter: DataConverter) -> command_pb2.Command:
    """The FailWorkflowExecution command for a failure the workflow raised."""
    return command_pb2.Command(
        fail_workflow_execution=command_pb2.FailWorkflowExecutionCommandAttributes(
            failure=error_to_failure(error, converter)
        )
    )


def close_command(
    run_task: asyncio.Task[Any], *, cancel_requested: bool, converter: DataConverter
) -> command_pb2.Command:
    """The command that closes the run, from how its finished run method ended.

    Raises:
        RuntimeError: ``asyncio.CancelledError`` escaped although nobody asked to
            cancel the workflow (a bug in the workflow: it fails the workflow task).
    """
    try:
        result = run_task.result()
    except asyncio.CancelledError as error:
        if not cancel_requested:
            raise RuntimeError(
                "workflow code let asyncio.CancelledError escape, but nobody asked to cancel the workflow"
            ) from error
        return command_pb2.Command(cancel_workflow_execution=command_pb2.CancelWorkflowExecutionCommandAttributes())
    except workflow.ContinueAsNewError as error:
        return _continue_as_new_command(error, converter)
    except exceptions.FailureError as error:
        if cancel_requested and _is_cancellation(error):
            return command_pb2.Command(cancel_workflow_execution=command_pb2.CancelWorkflowExecutionCommandAttributes())
        return fail_command(error, converter)
    return command_pb2.Command(
        complete_workflow_execution=command_pb2.CompleteWorkflowExecutionCommandAttributes(
            result=converter.to_payloads([result])
        )
    )


def cron_continuation(
    command: command_pb2.Command, input: common_pb2.Payloads, last_completion_result: common_pb2.Payloads | None
) -> command_pb2.Command:
    """For a cron execution, the command closing a run: a run that completed or failed
    continues as new with the same input (the server delays it to the next cron time),
    carrying the last successful result and this run's failure; a cancelled run, or one
    that continued as new itself, closes as it asked."""
    kind = command.WhichOneof("attributes")
    if kind not in ("complete_workflow_execution", "fail_workflow_execution"):
        return command
    attributes = command_pb2.ContinueAsNewWorkflowExecutionCommandAttributes(input=input)
    if kind == "complete_workflow_execution":
        attributes.last_completion_result.CopyFrom(command.complete_workflow_execution.result)
    else:
        attributes.last_failure.CopyFrom(command.fail_workflow_execution.failure)
        if last_completion_result is not None:
            attributes.last_completion_result.CopyFrom(last_completion_result)
    return command_pb2.Command(continue_as_new_workflow_execution=attributes)


def _is_cancellation(error: exceptions.FailureError) -> bool:
    return isinstance(error, exceptions.CancelledError) or (
        isinstance(error, exceptions.ActivityError) and isinstance(error.cause, exceptions.CancelledError)
    )


def _continue_as_new_command(error: workflow.ContinueAsNewError, converter: DataConverter) -> command_pb2.Command:
    attributes = command_pb2.ContinueAsNewWorkflowExecutionCommandAttributes(
        workflow_type=error.workflow_type,
        task_queue=error.task_queue,
        input=converter.to_payloads(error.input),
    )
    if error.run_timeout is not None:
        attributes.workflow_run_timeout.FromTimedelta(error.run_timeout)
    if error.task_timeout is not None:
        attributes.workflow_task_timeout.FromTimedelta(error.task_timeout)
    return command_pb2.Command(continue_as_new_workflow_execution=attributes)
