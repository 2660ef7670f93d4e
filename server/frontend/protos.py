"""Responses built from the server's rows: the protobuf form of events, tasks,
executions, namespaces and triggers."""

from __future__ import annotations

import json
from typing import Any, cast

from google.protobuf import duration_pb2, timestamp_pb2

from flowforge.api.schema import ExecutionStatus, json_dict_to_message
from flowforge.api.v1 import common_pb2, event_pb2
from flowforge.api.v1 import workflow_service_pb2 as pb
from flowforge.server.history import LeasedActivityTask, LeasedQuery, LeasedWorkflowTask
from flowforge.server.stores.base import EventTriggerRow, ExecutionRow, HistoryEventRow, NamespaceRow

__all__ = [
    "activity_task_proto",
    "duration",
    "event_proto",
    "execution_fields",
    "execution_info",
    "indexed_value_type",
    "namespace_proto",
    "optional_timestamp",
    "query_task_proto",
    "timestamp",
    "trigger_proto",
    "workflow_task_proto",
]

# The stored activity options that a poll response carries as durations.
_ACTIVITY_TIMEOUTS = ("start_to_close_timeout", "heartbeat_timeout", "schedule_to_close_timeout")


def timestamp(us: int) -> timestamp_pb2.Timestamp:
    stamp = timestamp_pb2.Timestamp()
    stamp.FromMicroseconds(us)
    return stamp


def optional_timestamp(us: int | None) -> timestamp_pb2.Timestamp | None:
    return None if us is None else timestamp(us)


def duration(seconds: float) -> duration_pb2.Duration:
    value = duration_pb2.Duration()
    value.FromMicroseconds(round(seconds * 1_000_000))
    return value


def event_proto(event: HistoryEventRow) -> common_pb2.HistoryEvent:
    return common_pb2.HistoryEvent(
        event_id=event.event_id,
        event_type=event.event_type,
        event_time=timestamp(event.event_us),
        attributes_json=event.attributes,
    )


def namespace_proto(row: NamespaceRow) -> pb.Namespace:
    return pb.Namespace(
        name=row.name,
        description=row.description,
        retention=duration_pb2.Duration(seconds=row.retention_s),
        create_time=timestamp(row.create_us),
        max_running_executions=row.max_running_executions,
        start_rate=row.start_rate,
        max_concurrent_activities=row.max_concurrent_activities,
        last_purge_time=timestamp(row.last_purge_us) if row.last_purge_us is not None else None,
        purged_executions=row.purged_executions,
    )


def workflow_task_proto(leased: LeasedWorkflowTask) -> pb.PollWorkflowTaskQueueResponse:
    row = leased.execution
    return pb.PollWorkflowTaskQueueResponse(
        task_token=leased.token,
        workflow_execution=common_pb2.WorkflowExecution(workflow_id=row.workflow_id, run_id=row.run_id),
        workflow_type=row.workflow_type,
        history=[event_proto(e) for e in leased.history],
        attempt=row.wft_attempt,
        task_queue=row.task_queue,
    )


def query_task_proto(leased: LeasedQuery) -> pb.PollWorkflowTaskQueueResponse:
    """A query handed to a workflow poller, with the history to replay before answering."""
    query = leased.query
    return pb.PollWorkflowTaskQueueResponse(
        task_token=leased.token,
        workflow_execution=common_pb2.WorkflowExecution(workflow_id=query.workflow_id, run_id=query.run_id),
        workflow_type=query.workflow_type,
        history=[event_proto(e) for e in leased.history],
        attempt=1,
        task_queue=query.task_queue,
        query=pb.WorkflowQuery(query_type=query.query_type, query_args=common_pb2.Payloads.FromString(query.args)),
    )


def activity_task_proto(leased: LeasedActivityTask) -> pb.PollActivityTaskQueueResponse:
    task = leased.task
    options = json.loads(task.options)
    response = pb.PollActivityTaskQueueResponse(
        task_token=leased.token,
        workflow_execution=common_pb2.WorkflowExecution(workflow_id=task.workflow_id, run_id=task.run_id),
        workflow_type=task.workflow_type,
        activity_id=task.activity_id,
        activity_type=task.activity_type,
        attempt=task.attempt,
        idempotency_key=f"{task.run_id}/{task.activity_id}",
        scheduled_time=timestamp(task.scheduled_us),
        started_time=optional_timestamp(task.started_us),
        task_queue=task.task_queue,
    )
    if task.input:
        response.input.ParseFromString(task.input)
    if task.heartbeat_details:
        response.heartbeat_details.ParseFromString(task.heartbeat_details)
    for field in _ACTIVITY_TIMEOUTS:
        if options.get(field):
            getattr(response, field).FromMicroseconds(int(options[field] * 1e6))
    if options.get("header"):
        response.header.CopyFrom(json_dict_to_message(options["header"], common_pb2.Header))
    return response


def execution_info(
    row: ExecutionRow, visibility: tuple[common_pb2.SearchAttributes, common_pb2.Memo]
) -> pb.WorkflowExecutionInfo:
    return pb.WorkflowExecutionInfo(**execution_fields(row), search_attributes=visibility[0], memo=visibility[1])


def execution_fields(row: ExecutionRow) -> dict[str, Any]:
    """The fields a listed and a described execution share (id, type, queue, status, times, length)."""
    return {
        "execution": common_pb2.WorkflowExecution(workflow_id=row.workflow_id, run_id=row.run_id),
        "workflow_type": row.workflow_type,
        "task_queue": row.task_queue,
        "status": ExecutionStatus(row.status).proto,
        "start_time": timestamp(row.start_us),
        "close_time": optional_timestamp(row.close_us),
        "history_length": row.next_event_id - 1,
    }


def indexed_value_type(value_type: str) -> common_pb2.IndexedValueType:
    number = common_pb2.IndexedValueType.Value(f"INDEXED_VALUE_TYPE_{value_type}")
    return cast(common_pb2.IndexedValueType, number)  # the stubs type Value() as a plain int


def trigger_proto(row: EventTriggerRow) -> event_pb2.EventTrigger:
    trigger = event_pb2.EventTrigger(
        trigger_id=row.trigger_id,
        event_type=row.event_type,
        filter=json.loads(row.filter),
        input_paths=json.loads(row.input_paths),
        workflow_type=row.workflow_type,
        task_queue=row.task_queue,
        workflow_id_prefix=row.workflow_id_prefix,
        create_time=timestamp(row.create_us),
    )
    for field, seconds in (
        (trigger.workflow_execution_timeout, row.execution_timeout_s),
        (trigger.workflow_run_timeout, row.run_timeout_s),
        (trigger.workflow_task_timeout, row.task_timeout_s),
    ):
        if seconds:
            field.FromMicroseconds(int(seconds * 1_000_000))
    return trigger
