"""Workflow runs as the client lists and describes them."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime
from typing import Any

import grpc

from flowforge._child_workflow_calls import ParentClosePolicy
from flowforge.api import schema
from flowforge.api.v1 import common_pb2, dead_letters_pb2, workflow_service_pb2
from flowforge.common import SearchAttributeValue, WorkflowExecutionStatus, _search_attributes_from_proto
from flowforge.converter import DataConverter
from flowforge.exceptions import RPCError

__all__ = [
    "ActivityAttempt",
    "DagNode",
    "PauseInfo",
    "PendingActivity",
    "PendingChildWorkflow",
    "PendingWorkflowTask",
    "WorkflowExecution",
    "WorkflowExecutionCount",
    "WorkflowExecutionDescription",
]


def _timestamp_to_datetime(timestamp: Any, present: bool) -> datetime | None:
    return timestamp.ToDatetime(tzinfo=UTC) if present else None


def _status_from_proto(value: int) -> WorkflowExecutionStatus:
    try:
        return WorkflowExecutionStatus(value)
    except ValueError:
        raise RPCError(
            f"the server sent an unknown workflow execution status ({value})",
            grpc.StatusCode.UNKNOWN,
        ) from None


def _failure_message(failure: common_pb2.Failure, present: bool) -> str | None:
    return failure.message if present else None


@dataclasses.dataclass(frozen=True)
class PauseInfo:
    """Why a run is paused.

    Attributes:
        identity: Who paused it.
        reason: Why.
        pause_time: Since when (UTC).
    """

    identity: str
    reason: str
    pause_time: datetime | None


@dataclasses.dataclass(frozen=True)
class ActivityAttempt:
    """One ended attempt of an activity.

    Attributes:
        attempt: Its number (1, 2, ...).
        identity: The worker that ran it.
        started_time: When the worker took it.
        ended_time: When its outcome was recorded.
        outcome: ``completed``, ``failed``, ``timed_out`` or ``canceled``.
        failure: Its failure as JSON (``message``, ``type``, ...); None if it completed.
        activity_id: The activity's id within the run.
        activity_type: The activity's type.
        scheduled_event_id: The activity's ActivityTaskScheduled event.
    """

    attempt: int
    identity: str
    started_time: datetime | None
    ended_time: datetime | None
    outcome: str
    failure: dict[str, Any] | None
    activity_id: str = ""
    activity_type: str = ""
    scheduled_event_id: int = 0

    @classmethod
    def _from_proto(cls, proto: dead_letters_pb2.ActivityAttempt) -> ActivityAttempt:
        return cls(
            attempt=proto.attempt,
            identity=proto.identity,
            started_time=_timestamp_to_datetime(proto.started_time, proto.HasField("started_time")),
            ended_time=_timestamp_to_datetime(proto.ended_time, proto.HasField("ended_time")),
            outcome=proto.outcome,
            failure=dict(schema.failure_json(proto.failure)) if proto.HasField("failure") else None,
            activity_id=proto.activity_id,
            activity_type=proto.activity_type,
            scheduled_event_id=proto.scheduled_event_id,
        )


@dataclasses.dataclass(frozen=True)
class WorkflowExecution:
    """One workflow run as listed by :meth:`Client.list_workflows`.

    Attributes:
        workflow_id: The workflow id.
        run_id: The run.
        workflow_type: The workflow type name.
        task_queue: The task queue its workflow tasks go to.
        status: Where the run is in its life.
        start_time: When the run started (UTC).
        close_time: When it closed (UTC), ``None`` while it runs.
        history_length: The number of events in its history.
        search_attributes: Its custom search attributes as they are now (name ->
            value), set at start and by ``workflow.upsert_search_attributes``.
        memo: The memo given at start, decoded (name -> value).
        raw: The protobuf message this was built from.
    """

    workflow_id: str
    run_id: str
    workflow_type: str
    task_queue: str
    status: WorkflowExecutionStatus
    start_time: datetime | None
    close_time: datetime | None
    history_length: int
    search_attributes: dict[str, SearchAttributeValue]
    memo: dict[str, Any]
    raw: Any

    @property
    def id(self) -> str:
        """The workflow id (Temporal's name for :attr:`workflow_id`)."""
        return self.workflow_id

    @property
    def raw_info(self) -> Any:
        """The protobuf message this was built from (Temporal's name for :attr:`raw`)."""
        return self.raw

    @classmethod
    def _from_proto(
        cls, proto: workflow_service_pb2.WorkflowExecutionInfo, converter: DataConverter
    ) -> WorkflowExecution:
        return cls(**_execution_fields(proto, converter))


def _execution_fields(
    proto: workflow_service_pb2.WorkflowExecutionInfo | workflow_service_pb2.DescribeWorkflowExecutionResponse,
    converter: DataConverter,
) -> dict[str, Any]:
    """The fields of :class:`WorkflowExecution` from either message that carries them."""
    return {
        "workflow_id": proto.execution.workflow_id,
        "run_id": proto.execution.run_id,
        "workflow_type": proto.workflow_type,
        "task_queue": proto.task_queue,
        "status": _status_from_proto(proto.status),
        "start_time": _timestamp_to_datetime(proto.start_time, proto.HasField("start_time")),
        "close_time": _timestamp_to_datetime(proto.close_time, proto.HasField("close_time")),
        "history_length": proto.history_length,
        "search_attributes": _search_attributes_from_proto(proto.search_attributes),
        "memo": _memo_from_proto(proto.memo, converter),
        "raw": proto,
    }


def _memo_from_proto(memo: common_pb2.Memo, converter: DataConverter) -> dict[str, Any]:
    return {name: converter.from_payload(memo.fields[name]) for name in sorted(memo.fields)}


@dataclasses.dataclass(frozen=True)
class WorkflowExecutionCount:
    """How many executions a query matched (:meth:`Client.count_workflows`).

    Attributes:
        count: The number of runs.
    """

    count: int


@dataclasses.dataclass(frozen=True)
class PendingActivity:
    """An activity of a run that has not finished yet.

    Attributes:
        activity_id: The activity's id within the run.
        activity_type: The activity's registered name.
        state: ``"SCHEDULED"`` (waiting for a worker) or ``"STARTED"`` (leased).
        attempt: The current attempt, from 1.
        last_heartbeat_time: When it last heartbeated (UTC), if ever.
        next_attempt_schedule_time: When the next retry is due (UTC), if waiting.
        last_failure: The message of the previous attempt's failure, if any.
        last_worker_identity: The worker that leased it last.
        waiting_reason: Why it is held back rather than handed to a worker, e.g.
            ``"waiting for a slot of concurrency key payments-api"``; empty if it is not.
    """

    activity_id: str
    activity_type: str
    state: str
    attempt: int
    last_heartbeat_time: datetime | None
    next_attempt_schedule_time: datetime | None
    last_failure: str | None
    last_worker_identity: str
    waiting_reason: str = ""


@dataclasses.dataclass(frozen=True)
class PendingWorkflowTask:
    """The workflow task a run is waiting on.

    Attributes:
        state: ``"SCHEDULED"`` or ``"STARTED"``.
        attempt: 1 unless earlier attempts failed.
        last_failure: Why the previous attempt failed (e.g. an unknown workflow
            type or a non-determinism error), ``None`` if it did not.
    """

    state: str
    attempt: int
    last_failure: str | None


@dataclasses.dataclass(frozen=True)
class DagNode:
    """One activity of a run's DAG.

    Attributes:
        activity_id: The activity's id within the run.
        activity_type: The activity's registered name.
        scheduled_event_id: The ``ActivityTaskScheduled`` event that created it.
        depends_on: Ids of the activities whose results the workflow had observed
            when it scheduled this one: the DAG's edges.
        state: ``SCHEDULED``, ``STARTED``, ``RETRYING``, ``COMPLETED``, ``FAILED``,
            ``TIMED_OUT`` or ``CANCELED``.
        attempt: The current or last attempt.
    """

    activity_id: str
    activity_type: str
    scheduled_event_id: int
    depends_on: list[str]
    state: str
    attempt: int


@dataclasses.dataclass(frozen=True)
class PendingChildWorkflow:
    """A child workflow a run started that has not closed yet.

    Attributes:
        workflow_id: The child's workflow id.
        run_id: The child's current run (it may have continued as new).
        workflow_type: The child's workflow type name.
        initiated_event_id: The parent's ``StartChildWorkflowExecutionInitiated`` event.
        parent_close_policy: What happens to the child if the parent closes first.
    """

    workflow_id: str
    run_id: str
    workflow_type: str
    initiated_event_id: int
    parent_close_policy: ParentClosePolicy


@dataclasses.dataclass(frozen=True)
class WorkflowExecutionDescription(WorkflowExecution):
    """A run as described by :meth:`WorkflowHandle.describe`.

    Attributes:
        pending_activities: Activities not finished yet.
        pending_workflow_task: The outstanding workflow task, ``None`` if there is none.
        dag: Every activity the run scheduled, with its dependencies.
        origin: What started the run when it was not a direct start, as recorded
            in ``WorkflowExecutionStarted`` (e.g. ``{"kind": "schedule",
            "schedule_id": ..., "nominal_time": ...}``); ``None`` for a direct start.
        first_worker_build_id: The build id of the worker that completed the
            run's first workflow task (``Worker(build_id=...)``); empty until then.
        pending_children: Child workflows the run started that have not closed yet.
        parent_workflow_id: The parent's workflow id, when the run is a child workflow.
        parent_run_id: The parent run that started this child.
        continued_run_id: The run this one continued as new from, if any.
        activity_attempts: Every ended attempt of every activity of the run, in order:
            worker identity, start, end, outcome and failure.
        pause: Set while an operator holds the run (``flowforge workflow pause``).
    """

    pending_activities: list[PendingActivity]
    pending_workflow_task: PendingWorkflowTask | None
    dag: list[DagNode]
    origin: dict[str, Any] | None = None
    first_worker_build_id: str = ""
    pending_children: list[PendingChildWorkflow] = dataclasses.field(default_factory=list)
    parent_workflow_id: str | None = None
    parent_run_id: str | None = None
    continued_run_id: str | None = None
    activity_attempts: list[ActivityAttempt] = dataclasses.field(default_factory=list)
    pause: PauseInfo | None = None

    @property
    def parent_id(self) -> str | None:
        """The parent's workflow id (Temporal's name for :attr:`parent_workflow_id`)."""
        return self.parent_workflow_id

    @property
    def raw_description(self) -> workflow_service_pb2.DescribeWorkflowExecutionResponse:
        """The ``DescribeWorkflowExecutionResponse`` this was built from (Temporal's name)."""
        response: workflow_service_pb2.DescribeWorkflowExecutionResponse = self.raw
        return response

    @classmethod
    def _from_describe_response(
        cls, proto: workflow_service_pb2.DescribeWorkflowExecutionResponse, converter: DataConverter
    ) -> WorkflowExecutionDescription:
        pending_task: PendingWorkflowTask | None = None
        if proto.HasField("pending_workflow_task"):
            task = proto.pending_workflow_task
            pending_task = PendingWorkflowTask(
                state=task.state,
                attempt=task.attempt,
                last_failure=_failure_message(task.last_failure, task.HasField("last_failure")),
            )
        return cls(
            **_execution_fields(proto, converter),
            pending_activities=[
                PendingActivity(
                    activity_id=a.activity_id,
                    activity_type=a.activity_type,
                    state=a.state,
                    attempt=a.attempt,
                    last_heartbeat_time=_timestamp_to_datetime(
                        a.last_heartbeat_time, a.HasField("last_heartbeat_time")
                    ),
                    next_attempt_schedule_time=_timestamp_to_datetime(
                        a.next_attempt_schedule_time, a.HasField("next_attempt_schedule_time")
                    ),
                    last_failure=_failure_message(a.last_failure, a.HasField("last_failure")),
                    last_worker_identity=a.last_worker_identity,
                    waiting_reason=a.waiting_reason,
                )
                for a in proto.pending_activities
            ],
            pending_workflow_task=pending_task,
            dag=[
                DagNode(
                    activity_id=node.activity_id,
                    activity_type=node.activity_type,
                    scheduled_event_id=node.scheduled_event_id,
                    depends_on=list(node.depends_on_activity_ids),
                    state=node.state,
                    attempt=node.attempt,
                )
                for node in proto.dag
            ],
            origin=json.loads(proto.origin_json) if proto.origin_json else None,
            activity_attempts=[ActivityAttempt._from_proto(a) for a in proto.activity_attempts],
            pause=(
                PauseInfo(
                    identity=proto.pause.identity,
                    reason=proto.pause.reason,
                    pause_time=_timestamp_to_datetime(proto.pause.pause_time, proto.pause.HasField("pause_time")),
                )
                if proto.HasField("pause")
                else None
            ),
            first_worker_build_id=proto.first_worker_build_id,
            pending_children=[
                PendingChildWorkflow(
                    workflow_id=child.workflow_id,
                    run_id=child.run_id,
                    workflow_type=child.workflow_type,
                    initiated_event_id=child.initiated_event_id,
                    parent_close_policy=ParentClosePolicy(child.parent_close_policy),
                )
                for child in proto.pending_children
            ],
            parent_workflow_id=proto.parent_execution.workflow_id or None,
            parent_run_id=proto.parent_execution.run_id or None,
            continued_run_id=proto.continued_execution_run_id or None,
        )
