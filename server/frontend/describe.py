"""``DescribeWorkflowExecution``'s answer, assembled from the run's row, tasks and history:
status, the DAG of activities, pending activities and workflow task, and lineage."""

from __future__ import annotations

import json
from typing import Any, cast

from flowforge.api.schema import (
    ActivityState,
    ActivityTaskScheduledAttributes,
    ActivityTaskStartedAttributes,
    EventType,
    ExecutionStatus,
    ParentClosePolicy,
    TaskKind,
    TaskState,
    WorkflowTaskState,
    failure_from_json,
)
from flowforge.api.v1 import common_pb2
from flowforge.api.v1 import workflow_service_pb2 as pb
from flowforge.server.frontend.protos import execution_fields
from flowforge.server.history.breakers import held_by_breaker
from flowforge.server.history.flow_control import waiting_reason
from flowforge.server.history.mutation import HELD_US
from flowforge.server.history.pauses import activity_paused
from flowforge.server.stores.base import ChildExecutionRow, ExecutionRow, HistoryEventRow, TaskRow

__all__ = ["describe_response"]

# The DAG state an activity's closing event leaves it in.
_OUTCOME_STATES = {
    EventType.ACTIVITY_TASK_COMPLETED: ActivityState.COMPLETED,
    EventType.ACTIVITY_TASK_FAILED: ActivityState.FAILED,
    EventType.ACTIVITY_TASK_TIMED_OUT: ActivityState.TIMED_OUT,
    EventType.ACTIVITY_TASK_CANCELED: ActivityState.CANCELED,
    EventType.ACTIVITY_TASK_DEAD_LETTERED: ActivityState.DEAD_LETTERED,
    EventType.ACTIVITY_TASK_DEAD_LETTER_RETRIED: ActivityState.SCHEDULED,
}


def describe_response(
    row: ExecutionRow,
    tasks: list[TaskRow],
    events: list[HistoryEventRow],
    visibility: tuple[common_pb2.SearchAttributes, common_pb2.Memo],
    children: list[ChildExecutionRow],
    open_breakers: set[str] | None = None,
) -> pb.DescribeWorkflowExecutionResponse:
    response = pb.DescribeWorkflowExecutionResponse(**execution_fields(row), dag=_dag(events, tasks))
    response.first_worker_build_id = _first_worker_build_id(events)
    origin = _started_attributes(events).get("origin")
    if origin:
        response.origin_json = json.dumps(origin, sort_keys=True)
    response.search_attributes.CopyFrom(visibility[0])
    response.memo.CopyFrom(visibility[1])
    _add_pending_activities(response, tasks, open_breakers or set())
    _add_pending_workflow_task(response, row)
    _add_lineage(response, events, children)
    if row.paused and row.pause_note:
        note = json.loads(row.pause_note)
        response.pause.identity = note["identity"]
        response.pause.reason = note["reason"]
        response.pause.pause_time.FromMicroseconds(note["since_us"])
    return response


def _started_attributes(events: list[HistoryEventRow]) -> dict[str, Any]:
    """The run's WorkflowExecutionStarted attributes (see WorkflowExecutionStartedAttributes)."""
    return json.loads(events[0].attributes) if events else {}


def _first_worker_build_id(events: list[HistoryEventRow]) -> str:
    """Versioning: the build id in the run's first WorkflowTaskCompleted event."""
    first_completed = next((e for e in events if e.event_type == EventType.WORKFLOW_TASK_COMPLETED), None)
    if first_completed is None:
        return ""
    return str(json.loads(first_completed.attributes).get("worker_build_id", ""))


def _dag(events: list[HistoryEventRow], tasks: list[TaskRow]) -> list[pb.DagNode]:
    nodes: dict[int, pb.DagNode] = {}
    for event in events:
        if event.event_type == EventType.ACTIVITY_TASK_SCHEDULED:
            scheduled: ActivityTaskScheduledAttributes = json.loads(event.attributes)
            nodes[event.event_id] = pb.DagNode(
                activity_id=scheduled["activity_id"],
                activity_type=scheduled["activity_type"],
                scheduled_event_id=event.event_id,
                depends_on_activity_ids=scheduled.get("depends_on_activity_ids", []),
                state=ActivityState.SCHEDULED,
                attempt=1,
            )
        elif event.event_type == EventType.ACTIVITY_TASK_STARTED:
            started: ActivityTaskStartedAttributes = json.loads(event.attributes)
            if started["scheduled_event_id"] in nodes:
                nodes[started["scheduled_event_id"]].attempt = started["attempt"]
        elif event.event_type in _OUTCOME_STATES:
            scheduled_event_id = json.loads(event.attributes)["scheduled_event_id"]
            if scheduled_event_id in nodes:
                nodes[scheduled_event_id].state = _OUTCOME_STATES[EventType(event.event_type)]
    for task in tasks:
        node = nodes.get(task.scheduled_event_id) if task.kind == TaskKind.ACTIVITY else None
        if node is not None:
            node.attempt = task.attempt
            node.state = _pending_state(task, retrying_shown=True)
    return list(nodes.values())


def _pending_state(task: TaskRow, *, retrying_shown: bool) -> ActivityState:
    if task.state == TaskState.LEASED:
        return ActivityState.STARTED
    return ActivityState.RETRYING if retrying_shown and task.attempt > 1 else ActivityState.SCHEDULED


def _add_pending_activities(
    response: pb.DescribeWorkflowExecutionResponse, tasks: list[TaskRow], open_breakers: set[str]
) -> None:
    for task in tasks:
        if task.kind != TaskKind.ACTIVITY:
            continue
        pending = response.pending_activities.add(
            activity_id=task.activity_id,
            activity_type=task.activity_type,
            state=ActivityState.PAUSED if activity_paused(task) else _pending_state(task, retrying_shown=False),
            attempt=task.attempt,
            last_worker_identity=task.identity,
            waiting_reason=waiting_reason(task) or held_by_breaker(task, open_breakers),
        )
        if task.last_heartbeat_us:
            pending.last_heartbeat_time.FromMicroseconds(task.last_heartbeat_us)
        if task.state == TaskState.PENDING and task.visible_us < HELD_US:  # held: when unpaused
            pending.next_attempt_schedule_time.FromMicroseconds(task.visible_us)
        if task.last_failure:
            pending.last_failure.CopyFrom(failure_from_json(json.loads(task.last_failure)))


def _add_pending_workflow_task(response: pb.DescribeWorkflowExecutionResponse, row: ExecutionRow) -> None:
    if row.status != ExecutionStatus.RUNNING:
        return
    if row.wft_state != WorkflowTaskState.NONE:
        response.pending_workflow_task.state = row.wft_state
        response.pending_workflow_task.attempt = row.wft_attempt
    if row.last_wft_failure:
        last = json.loads(row.last_wft_failure)
        failure = failure_from_json(last.get("failure"))
        if last.get("cause"):
            failure.message = f"[{last['cause']}] {failure.message}"
        response.pending_workflow_task.last_failure.CopyFrom(failure)


def _add_lineage(
    response: pb.DescribeWorkflowExecutionResponse, events: list[HistoryEventRow], children: list[ChildExecutionRow]
) -> None:
    """The run's parent and predecessor (from its started event) and its pending children."""
    started = _started_attributes(events)
    if started.get("parent_run_id"):
        response.parent_execution.workflow_id = started["parent_workflow_id"]
        response.parent_execution.run_id = started["parent_run_id"]
    response.continued_execution_run_id = started.get("continued_execution_run_id", "")
    for child in children:
        response.pending_children.add(
            workflow_id=child.workflow_id,
            run_id=child.run_id,
            workflow_type=child.workflow_type,
            initiated_event_id=child.initiated_event_id,
            parent_close_policy=_parent_close_policy(ParentClosePolicy(child.parent_close_policy)),
        )


def _parent_close_policy(policy: ParentClosePolicy) -> common_pb2.ParentClosePolicy:
    number = common_pb2.ParentClosePolicy.Value(f"PARENT_CLOSE_POLICY_{policy.value}")
    return cast(common_pb2.ParentClosePolicy, number)  # the stubs type Value() as a plain int
