"""The reports of workers on their tasks, one function per kind: each takes the request
and returns the response. Their unary RPCs (tasks.py, signals_queries.py) and the
worker stream (worker_stream.py) both call them, so a report means the same on either.

A response may hand the worker tasks leased eagerly (the next workflow task, the
activities a completion scheduled); a caller that cannot deliver it gives them back
with :func:`release`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from typing import Any

from google.protobuf.message import Message

from flowforge.api.v1 import workflow_service_pb2 as pb
from flowforge.server.errors import InvalidArgument
from flowforge.server.frontend.malformed import timestamp_problem
from flowforge.server.frontend.protos import activity_task_proto, event_proto, workflow_task_proto
from flowforge.server.frontend.validation import cached_event_id, eager_activity_slots, name, query_answer
from flowforge.server.frontend.validation import workflow_task_failed_cause as failed_cause
from flowforge.server.history import FoldedWorkflowTask, HistoryEngine, WorkflowTaskCompletion, WorkflowTaskReport

__all__ = [
    "REPORTS",
    "EagerAnswer",
    "ReportKind",
    "activity_task_canceled",
    "activity_task_completed",
    "activity_task_failed",
    "activity_task_heartbeat",
    "eager_tasks",
    "query_task_completed",
    "release",
    "workflow_task_completed",
    "workflow_task_completed_response",
    "workflow_task_failed",
    "workflow_task_report",
]

#: A task handed to a worker: what a poll of its kind answers.
PushedTask = pb.PollWorkflowTaskQueueResponse | pb.PollActivityTaskQueueResponse
#: A report's answer that may hand out tasks leased eagerly.
EagerAnswer = pb.RespondWorkflowTaskCompletedResponse | pb.RespondActivityTaskCompletedResponse


async def workflow_task_completed(
    engine: HistoryEngine, request: pb.RespondWorkflowTaskCompletedRequest
) -> pb.RespondWorkflowTaskCompletedResponse:
    report = await workflow_task_report(engine, request, request.task_token)
    completion = await engine.complete_workflow_task(
        request.task_token,
        request.namespace,
        report.commands,
        report.identity,
        report.eager_activity_slots,
        report.worker_build_id,
        report.return_new_workflow_task,
        report.cached_event_id,
    )
    return workflow_task_completed_response(completion, report)


async def workflow_task_report(
    engine: HistoryEngine, request: pb.RespondWorkflowTaskCompletedRequest, token: bytes, where: str = ""
) -> WorkflowTaskReport:
    """A workflow task completion's fields, checked (``where``: the request's place in
    the call, for the messages); eager activity slots as the namespace allows them
    (``token``: a lease in that namespace)."""
    slots = eager_activity_slots(request.eager_activity_slots, f"{where}eager_activity_slots")
    return WorkflowTaskReport(
        request.commands,
        name(request.identity, f"{where}identity", required=False),
        await engine.eager_activity_slots(token, slots),
        name(request.worker_build_id, f"{where}worker_build_id", required=False),
        request.return_new_workflow_task,
        cached_event_id(request.cached_event_id, f"{where}cached_event_id"),
    )


def workflow_task_completed_response(
    completion: WorkflowTaskCompletion, report: WorkflowTaskReport
) -> pb.RespondWorkflowTaskCompletedResponse:
    """The answer to a workflow task completion (``report``), from what the engine handed back."""
    response = pb.RespondWorkflowTaskCompletedResponse(
        activity_tasks=[activity_task_proto(t) for t in completion.activity_tasks]
    )
    if completion.workflow_task is not None:
        response.workflow_task.CopyFrom(workflow_task_proto(completion.workflow_task))
    if report.cached_event_id:
        response.appended_events.extend(event_proto(event) for event in completion.appended_events)
    return response


async def workflow_task_failed(
    engine: HistoryEngine, request: pb.RespondWorkflowTaskFailedRequest
) -> pb.RespondWorkflowTaskFailedResponse:
    await engine.fail_workflow_task(
        request.task_token,
        request.namespace,
        failed_cause(request.cause),
        request.failure,
        name(request.identity, "identity", required=False),
    )
    return pb.RespondWorkflowTaskFailedResponse()


async def query_task_completed(
    engine: HistoryEngine, request: pb.RespondQueryTaskCompletedRequest
) -> pb.RespondQueryTaskCompletedResponse:
    result, error_message = query_answer(request)
    await engine.answer_query(request.task_token, request.namespace, result, error_message)
    return pb.RespondQueryTaskCompletedResponse()


async def activity_task_heartbeat(
    engine: HistoryEngine, request: pb.RecordActivityTaskHeartbeatRequest
) -> pb.RecordActivityTaskHeartbeatResponse:
    cancel_requested = await engine.record_heartbeat(request.task_token, request.namespace, request.details)
    return pb.RecordActivityTaskHeartbeatResponse(cancel_requested=cancel_requested)


async def activity_task_completed(
    engine: HistoryEngine, request: pb.RespondActivityTaskCompletedRequest
) -> pb.RespondActivityTaskCompletedResponse:
    eager_queue = name(request.eager_workflow_task_queue, "eager_workflow_task_queue", required=False)
    identity = name(request.identity, "identity", required=False)
    fold = await _folded_workflow_task(engine, request, identity) if request.HasField("folded_workflow_task") else None
    completion = await engine.complete_activity_task(
        request.task_token,
        request.namespace,
        request.result,
        identity,
        eager_queue,
        cached_event_id(request.eager_workflow_task_cached_event_id, "eager_workflow_task_cached_event_id"),
        fold,
    )
    response = pb.RespondActivityTaskCompletedResponse()
    if completion.workflow_task is not None:
        response.workflow_task.CopyFrom(workflow_task_proto(completion.workflow_task))
    if completion.folded is not None:
        assert fold is not None
        response.workflow_task_folded = True
        response.folded_workflow_task_completed.CopyFrom(
            workflow_task_completed_response(completion.folded, fold.completion)
        )
    return response


async def _folded_workflow_task(
    engine: HistoryEngine, request: pb.RespondActivityTaskCompletedRequest, identity: str
) -> FoldedWorkflowTask:
    """The request's folded workflow task, checked; its completion's identity defaults to the request's."""
    folded = request.folded_workflow_task
    if folded.last_event_id < 1:
        raise InvalidArgument(
            "folded_workflow_task.last_event_id must be the id of the run's last event the worker's instance"
            f" processed (1 or more), not {folded.last_event_id}"
        )
    if not folded.HasField("started_time"):
        raise InvalidArgument("folded_workflow_task.started_time is required: the workflow time the task ran at")
    problem = timestamp_problem(folded.started_time.seconds, folded.started_time.nanos)
    if problem is not None:
        raise InvalidArgument(f"folded_workflow_task.started_time {problem}")
    if folded.started_time.nanos % 1000:
        # History keeps whole microseconds: the code must have run at the time replay will see.
        raise InvalidArgument(
            "folded_workflow_task.started_time must be a whole number of microseconds (nanos a multiple of"
            f" 1000, not {folded.started_time.nanos}): history records no finer time, so the task must run at that one"
        )
    completion = folded.completion
    if completion.task_token:
        raise InvalidArgument(
            "folded_workflow_task.completion.task_token must be empty: a folded workflow task has no lease of its"
            " own (the activity's task_token fences both)"
        )
    if completion.namespace and completion.namespace != request.namespace:
        raise InvalidArgument(
            f"folded_workflow_task.completion.namespace is {completion.namespace!r}; leave it empty or name the"
            f" request's namespace {request.namespace!r}"
        )
    report = await workflow_task_report(engine, completion, request.task_token, "folded_workflow_task.completion.")
    if not report.identity:
        report = dataclasses.replace(report, identity=identity)
    return FoldedWorkflowTask(folded.last_event_id, folded.started_time.ToMicroseconds(), report)


async def activity_task_failed(
    engine: HistoryEngine, request: pb.RespondActivityTaskFailedRequest
) -> pb.RespondActivityTaskFailedResponse:
    await engine.fail_activity_task(
        request.task_token, request.namespace, request.failure, name(request.identity, "identity", required=False)
    )
    return pb.RespondActivityTaskFailedResponse()


async def activity_task_canceled(
    engine: HistoryEngine, request: pb.RespondActivityTaskCanceledRequest
) -> pb.RespondActivityTaskCanceledResponse:
    await engine.cancel_activity_task(
        request.task_token, request.namespace, request.details, name(request.identity, "identity", required=False)
    )
    return pb.RespondActivityTaskCanceledResponse()


@dataclasses.dataclass(frozen=True)
class ReportKind:
    """One kind of report: the unary RPC it replaces and the function that runs it."""

    rpc: str
    run: Callable[[HistoryEngine, Any], Awaitable[Message]]


#: The worker stream's reports by their field in ``WorkerReport.report`` (the same
#: name as the answer's field in ``WorkerReportResult.response``).
REPORTS: dict[str, ReportKind] = {
    "workflow_task_completed": ReportKind("RespondWorkflowTaskCompleted", workflow_task_completed),
    "workflow_task_failed": ReportKind("RespondWorkflowTaskFailed", workflow_task_failed),
    "query_task_completed": ReportKind("RespondQueryTaskCompleted", query_task_completed),
    "activity_task_heartbeat": ReportKind("RecordActivityTaskHeartbeat", activity_task_heartbeat),
    "activity_task_completed": ReportKind("RespondActivityTaskCompleted", activity_task_completed),
    "activity_task_failed": ReportKind("RespondActivityTaskFailed", activity_task_failed),
    "activity_task_canceled": ReportKind("RespondActivityTaskCanceled", activity_task_canceled),
}


def eager_tasks(response: Message) -> list[PushedTask]:
    """The tasks a report's response hands out (leased eagerly), if any: a folded
    workflow task's completion's among them."""
    tasks: list[PushedTask] = []
    if isinstance(response, pb.RespondActivityTaskCompletedResponse):
        if response.HasField("workflow_task"):
            tasks.append(response.workflow_task)
        response = response.folded_workflow_task_completed  # empty unless folded
    if isinstance(response, pb.RespondWorkflowTaskCompletedResponse):
        tasks.extend(response.activity_tasks)
        if response.HasField("workflow_task"):
            tasks.append(response.workflow_task)
    return tasks


async def release(engine: HistoryEngine, task: PushedTask) -> None:
    """Gives back a task that never reached its worker: a query goes to the next
    poll at once, an activity task back to its queue without using an attempt, and
    a workflow task times out at once (its started event is written)."""
    if isinstance(task, pb.PollWorkflowTaskQueueResponse) and task.HasField("query"):
        await engine.release_query(task.task_token)
    else:
        await engine.release_lease(task.task_token)
