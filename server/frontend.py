"""The frontend: the gRPC WorkflowService. It validates every request, calls the
history engine or matching, and maps errors to gRPC status codes (rule 8: bad
input gets a clear error and changes nothing; the server keeps serving)."""

from __future__ import annotations

import base64
import functools
import json
import logging
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import grpc
from google.protobuf import duration_pb2, timestamp_pb2

from flowforge.api.schema import duration_s, failure_from_json
from flowforge.api.v1 import common_pb2, event_pb2
from flowforge.api.v1 import workflow_service_pb2 as pb
from flowforge.api.v1 import workflow_service_pb2_grpc as pb_grpc
from flowforge.server import _schedule_proto
from flowforge.server.errors import InvalidArgument, ServiceError
from flowforge.server.events import EventRouter, PublishedEvent, trigger_row
from flowforge.server.history import HistoryEngine, LeasedActivityTask, LeasedQuery, LeasedWorkflowTask, StartSignal
from flowforge.server.matching import Matching
from flowforge.server.scheduler import Scheduler, Schedules
from flowforge.server.stores.base import EventTriggerRow, ExecutionRow, HistoryEventRow, NamespaceRow, TaskRow
from flowforge.server.visibility import SYSTEM_ATTRIBUTES

__all__ = ["WorkflowService"]

log = logging.getLogger("flowforge.server.frontend")

_MAX_NAME = 1000
_MAX_POLL_TIMEOUT_S = 600.0
_DEFAULT_POLL_TIMEOUT_S = 60.0
# How long a query waits for a worker when the caller set no deadline, and at most.
_DEFAULT_QUERY_TIMEOUT_S = 30.0
_MAX_QUERY_TIMEOUT_S = 600.0
_MAX_QUERY_ERROR = 4000
# Leave time for the empty answer to reach a caller whose deadline is near.
_DEADLINE_MARGIN_S = 1.0
_Response = TypeVar("_Response")

_STATUS_NAMES = {
    "RUNNING": 1,
    "COMPLETED": 2,
    "FAILED": 3,
    "CANCELED": 4,
    "TERMINATED": 5,
    "CONTINUED_AS_NEW": 6,
    "TIMED_OUT": 7,
}
_STATUS_BY_NUMBER = {number: name for name, number in _STATUS_NAMES.items()}


def _rpc(method: Callable[..., Awaitable[_Response]]) -> Callable[..., Awaitable[_Response]]:
    """Maps engine errors to status codes; an unexpected error is logged (without
    the request, which may hold payloads or tokens) and answered INTERNAL."""

    @functools.wraps(method)
    async def wrapper(self: WorkflowService, request: Any, context: grpc.aio.ServicerContext) -> _Response:
        try:
            return await method(self, request, context)
        except ServiceError as error:
            await context.abort(error.status, error.message)
        except grpc.aio.AbortError:
            raise
        except Exception:
            log.exception("%s failed", method.__name__)
            await context.abort(grpc.StatusCode.INTERNAL, f"internal error in {method.__name__}; see the server log")
        raise AssertionError("unreachable")

    return wrapper


def _name(value: str, field: str, *, required: bool = True) -> str:
    if not value:
        if required:
            raise InvalidArgument(f"{field} is required")
        return value
    if len(value) > _MAX_NAME:
        raise InvalidArgument(f"{field} is {len(value)} characters long; the limit is {_MAX_NAME}")
    if any(ord(ch) < 32 for ch in value):
        raise InvalidArgument(f"{field} must not contain control characters")
    return value


def _seconds(duration: duration_pb2.Duration, field: str) -> float:
    seconds = duration_s(duration)
    if seconds < 0:
        raise InvalidArgument(f"{field} must not be negative")
    return seconds


def _timestamp(us: int | None) -> timestamp_pb2.Timestamp | None:
    if us is None:
        return None
    stamp = timestamp_pb2.Timestamp()
    stamp.FromMicroseconds(us)
    return stamp


def _event_proto(event: HistoryEventRow) -> common_pb2.HistoryEvent:
    return common_pb2.HistoryEvent(
        event_id=event.event_id,
        event_type=event.event_type,
        event_time=_timestamp(event.event_us),
        attributes_json=event.attributes,
    )


def _namespace_proto(row: NamespaceRow) -> pb.Namespace:
    return pb.Namespace(
        name=row.name,
        description=row.description,
        retention=duration_pb2.Duration(seconds=row.retention_s),
        create_time=_timestamp(row.create_us),
    )


def _first_worker_build_id(events: list[HistoryEventRow]) -> str:
    """Versioning: the build id in the run's first WorkflowTaskCompleted event."""
    first_completed = next((e for e in events if e.event_type == "WorkflowTaskCompleted"), None)
    return json.loads(first_completed.attributes).get("worker_build_id", "") if first_completed else ""


def _workflow_task_proto(leased: LeasedWorkflowTask) -> pb.PollWorkflowTaskQueueResponse:
    row = leased.execution
    return pb.PollWorkflowTaskQueueResponse(
        task_token=leased.token,
        workflow_execution=common_pb2.WorkflowExecution(workflow_id=row.workflow_id, run_id=row.run_id),
        workflow_type=row.workflow_type,
        history=[_event_proto(e) for e in leased.history],
        attempt=row.wft_attempt,
        task_queue=row.task_queue,
    )


def _activity_task_proto(leased: LeasedActivityTask) -> pb.PollActivityTaskQueueResponse:
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
        scheduled_time=_timestamp(task.scheduled_us),
        started_time=_timestamp(task.started_us),
        task_queue=task.task_queue,
    )
    if task.input:
        response.input.ParseFromString(task.input)
    if task.heartbeat_details:
        response.heartbeat_details.ParseFromString(task.heartbeat_details)
    for field in ("start_to_close_timeout", "heartbeat_timeout", "schedule_to_close_timeout"):
        if options.get(field):
            getattr(response, field).FromMicroseconds(int(options[field] * 1e6))
    return response


def _failure_of(raw: str | None) -> common_pb2.Failure | None:
    return failure_from_json(json.loads(raw)) if raw else None


def _dag(events: list[HistoryEventRow], tasks: list[TaskRow]) -> list[pb.DagNode]:
    nodes: dict[int, pb.DagNode] = {}
    outcome_state = {
        "ActivityTaskCompleted": "COMPLETED",
        "ActivityTaskFailed": "FAILED",
        "ActivityTaskTimedOut": "TIMED_OUT",
        "ActivityTaskCanceled": "CANCELED",
    }
    for event in events:
        if event.event_type == "ActivityTaskScheduled":
            a = json.loads(event.attributes)
            nodes[event.event_id] = pb.DagNode(
                activity_id=a["activity_id"],
                activity_type=a["activity_type"],
                scheduled_event_id=event.event_id,
                depends_on_activity_ids=a.get("depends_on_activity_ids", []),
                state="SCHEDULED",
                attempt=1,
            )
        elif event.event_type == "ActivityTaskStarted":
            a = json.loads(event.attributes)
            if a["scheduled_event_id"] in nodes:
                nodes[a["scheduled_event_id"]].attempt = a["attempt"]
        elif event.event_type in outcome_state:
            a = json.loads(event.attributes)
            if a["scheduled_event_id"] in nodes:
                nodes[a["scheduled_event_id"]].state = outcome_state[event.event_type]
    for task in tasks:
        node = nodes.get(task.scheduled_event_id) if task.kind == "ACTIVITY" else None
        if node is not None:
            node.attempt = task.attempt
            node.state = "STARTED" if task.state == "LEASED" else ("RETRYING" if task.attempt > 1 else "SCHEDULED")
    return list(nodes.values())


def _start_signal(request: pb.StartWorkflowExecutionRequest) -> StartSignal | None:
    """The signal of a signal-with-start, if the request carries one."""
    if not request.start_signal:
        if request.start_signal_input.payloads:
            raise InvalidArgument("start_signal_input is set but start_signal (the signal name) is empty")
        return None
    return StartSignal(_name(request.start_signal, "start_signal"), request.start_signal_input)


def _execution_info(
    row: ExecutionRow, visibility: tuple[common_pb2.SearchAttributes, common_pb2.Memo]
) -> pb.WorkflowExecutionInfo:
    return pb.WorkflowExecutionInfo(
        execution=common_pb2.WorkflowExecution(workflow_id=row.workflow_id, run_id=row.run_id),
        workflow_type=row.workflow_type,
        task_queue=row.task_queue,
        status=_STATUS_NAMES[row.status],
        start_time=_timestamp(row.start_us),
        close_time=_timestamp(row.close_us),
        history_length=row.next_event_id - 1,
        search_attributes=visibility[0],
        memo=visibility[1],
    )


def _indexed_value_type(value_type: str) -> int:
    return common_pb2.IndexedValueType.Value(f"INDEXED_VALUE_TYPE_{value_type}")


def _page_size(requested: int) -> int:
    """A list RPC's page size: 100 when unset, at most 1000."""
    page_size = requested or 100
    if not 0 < page_size <= 1000:
        raise InvalidArgument("page_size must be between 1 and 1000")
    return page_size


def _text_page_token(token: bytes) -> str:
    """The key a keyset page continues after, as the previous page returned it."""
    try:
        return token.decode()
    except UnicodeDecodeError:
        raise InvalidArgument("next_page_token is malformed; pass back the one the last page returned") from None


def _page_cursor(token: bytes) -> tuple[int, str] | None:
    """The (start_us, run_id) keyset cursor inside a list page token."""
    if not token:
        return None
    try:
        start_us, run_id = json.loads(base64.urlsafe_b64decode(token))
        if not isinstance(start_us, int) or not isinstance(run_id, str) or not -(2**63) <= start_us < 2**63:
            raise ValueError(token)
        return start_us, run_id
    except (ValueError, TypeError):
        raise InvalidArgument("next_page_token is malformed; pass back the one the last page returned") from None


class WorkflowService(pb_grpc.WorkflowServiceServicer):
    """gRPC ``flowforge.api.v1.WorkflowService`` over one history engine."""

    def __init__(
        self, engine: HistoryEngine, matching: Matching, events: EventRouter, schedules: Schedules, scheduler: Scheduler
    ) -> None:
        self._engine = engine
        self._matching = matching
        self._events = events
        self._schedules = schedules
        self._scheduler = scheduler

    # namespaces

    @_rpc
    async def RegisterNamespace(
        self, request: pb.RegisterNamespaceRequest, context: Any
    ) -> pb.RegisterNamespaceResponse:
        name = _name(request.name, "name")
        retention = int(_seconds(request.retention, "retention")) or 30 * 24 * 3600
        row = await self._engine.register_namespace(name, request.description, retention)
        return pb.RegisterNamespaceResponse(namespace=_namespace_proto(row))

    @_rpc
    async def DescribeNamespace(
        self, request: pb.DescribeNamespaceRequest, context: Any
    ) -> pb.DescribeNamespaceResponse:
        row = await self._engine.describe_namespace(_name(request.name, "name"))
        return pb.DescribeNamespaceResponse(namespace=_namespace_proto(row))

    @_rpc
    async def ListNamespaces(self, request: pb.ListNamespacesRequest, context: Any) -> pb.ListNamespacesResponse:
        rows = await self._engine.list_namespaces()
        return pb.ListNamespacesResponse(namespaces=[_namespace_proto(r) for r in rows])

    # executions

    @_rpc
    async def StartWorkflowExecution(
        self, request: pb.StartWorkflowExecutionRequest, context: Any
    ) -> pb.StartWorkflowExecutionResponse:
        request_id = _name(request.request_id, "request_id", required=False) or str(uuid.uuid4())
        run_id, started = await self._engine.start_workflow(
            namespace=_name(request.namespace, "namespace"),
            workflow_id=_name(request.workflow_id, "workflow_id"),
            workflow_type=_name(request.workflow_type, "workflow_type"),
            task_queue=_name(request.task_queue, "task_queue"),
            input=request.input,
            request_id=request_id,
            identity=_name(request.identity, "identity", required=False),
            execution_timeout_s=_seconds(request.workflow_execution_timeout, "workflow_execution_timeout"),
            run_timeout_s=_seconds(request.workflow_run_timeout, "workflow_run_timeout"),
            task_timeout_s=_seconds(request.workflow_task_timeout, "workflow_task_timeout"),
            start_signal=_start_signal(request),
            search_attributes=request.search_attributes,
            memo=request.memo,
        )
        return pb.StartWorkflowExecutionResponse(run_id=run_id, started=started)

    def _execution(self, request: Any) -> tuple[str, str, str]:
        namespace = _name(request.namespace, "namespace")
        workflow_id = _name(request.execution.workflow_id, "execution.workflow_id", required=False)
        run_id = _name(request.execution.run_id, "execution.run_id", required=False)
        if not workflow_id and not run_id:
            raise InvalidArgument("execution.workflow_id (or execution.run_id) is required")
        return namespace, workflow_id, run_id

    @_rpc
    async def DescribeWorkflowExecution(
        self, request: pb.DescribeWorkflowExecutionRequest, context: Any
    ) -> pb.DescribeWorkflowExecutionResponse:
        row, tasks, events = await self._engine.describe(*self._execution(request))
        response = pb.DescribeWorkflowExecutionResponse(
            execution=common_pb2.WorkflowExecution(workflow_id=row.workflow_id, run_id=row.run_id),
            workflow_type=row.workflow_type,
            task_queue=row.task_queue,
            status=_STATUS_NAMES[row.status],
            start_time=_timestamp(row.start_us),
            close_time=_timestamp(row.close_us),
            history_length=row.next_event_id - 1,
            dag=_dag(events, tasks),
        )
        response.first_worker_build_id = _first_worker_build_id(events)
        origin = json.loads(events[0].attributes).get("origin") if events else None
        if origin:
            response.origin_json = json.dumps(origin, sort_keys=True)
        search_attributes, memo = await self._engine.visibility(row.namespace, row.run_id)
        response.search_attributes.CopyFrom(search_attributes)
        response.memo.CopyFrom(memo)
        for task in tasks:
            if task.kind == "ACTIVITY":
                pending = response.pending_activities.add(
                    activity_id=task.activity_id,
                    activity_type=task.activity_type,
                    state="STARTED" if task.state == "LEASED" else "SCHEDULED",
                    attempt=task.attempt,
                    last_worker_identity=task.identity,
                )
                if task.last_heartbeat_us:
                    pending.last_heartbeat_time.FromMicroseconds(task.last_heartbeat_us)
                if task.state == "PENDING":
                    pending.next_attempt_schedule_time.FromMicroseconds(task.visible_us)
                if task.last_failure:
                    pending.last_failure.CopyFrom(failure_from_json(json.loads(task.last_failure)))
        if row.status == "RUNNING" and row.wft_state != "NONE":
            response.pending_workflow_task.state = row.wft_state
            response.pending_workflow_task.attempt = row.wft_attempt
        if row.status == "RUNNING" and row.last_wft_failure:
            last = json.loads(row.last_wft_failure)
            failure = failure_from_json(last.get("failure"))
            if last.get("cause"):
                failure.message = f"[{last['cause']}] {failure.message}"
            response.pending_workflow_task.last_failure.CopyFrom(failure)
        await self._describe_lineage(response, row, events)
        return response

    # child workflows and continue-as-new

    async def _describe_lineage(
        self, response: pb.DescribeWorkflowExecutionResponse, row: ExecutionRow, events: list[HistoryEventRow]
    ) -> None:
        """The run's parent and predecessor (from its started event) and its pending children."""
        started = json.loads(events[0].attributes) if events else {}
        if started.get("parent_run_id"):
            response.parent_execution.workflow_id = started["parent_workflow_id"]
            response.parent_execution.run_id = started["parent_run_id"]
        response.continued_execution_run_id = started.get("continued_execution_run_id", "")
        for child in await self._engine.pending_children(row.namespace, row.run_id):
            response.pending_children.add(
                workflow_id=child.workflow_id,
                run_id=child.run_id,
                workflow_type=child.workflow_type,
                initiated_event_id=child.initiated_event_id,
                parent_close_policy=common_pb2.ParentClosePolicy.Value(
                    f"PARENT_CLOSE_POLICY_{child.parent_close_policy}"
                ),
            )

    @_rpc
    async def GetWorkflowExecutionHistory(
        self, request: pb.GetWorkflowExecutionHistoryRequest, context: Any
    ) -> pb.GetWorkflowExecutionHistoryResponse:
        namespace, workflow_id, run_id = self._execution(request)
        if request.after_event_id < 0:
            raise InvalidArgument("after_event_id must not be negative")
        page_size = request.maximum_page_size or 1000
        if not 0 < page_size <= 10_000:
            raise InvalidArgument("maximum_page_size must be between 1 and 10000")
        wait_s = _seconds(request.wait_timeout, "wait_timeout") or self._engine.config.default_history_wait_s
        remaining = context.time_remaining()
        if remaining is not None:
            wait_s = max(0.0, min(wait_s, remaining - _DEADLINE_MARGIN_S))
        resolved_run_id, events, has_more = await self._engine.get_history(
            namespace,
            workflow_id,
            run_id,
            after_event_id=request.after_event_id,
            page_size=page_size,
            wait=request.wait_new_event,
            close_event_only=request.close_event_only,
            wait_timeout_s=wait_s,
        )
        return pb.GetWorkflowExecutionHistoryResponse(
            events=[_event_proto(e) for e in events], run_id=resolved_run_id, has_more=has_more
        )

    @_rpc
    async def SignalWorkflowExecution(
        self, request: pb.SignalWorkflowExecutionRequest, context: Any
    ) -> pb.SignalWorkflowExecutionResponse:
        namespace, workflow_id, run_id = self._execution(request)
        await self._engine.signal_workflow(
            namespace,
            workflow_id,
            run_id,
            StartSignal(_name(request.signal_name, "signal_name"), request.input),
            _name(request.identity, "identity", required=False),
            _name(request.request_id, "request_id", required=False),
        )
        return pb.SignalWorkflowExecutionResponse()

    @_rpc
    async def RequestCancelWorkflowExecution(
        self, request: pb.RequestCancelWorkflowExecutionRequest, context: Any
    ) -> pb.RequestCancelWorkflowExecutionResponse:
        namespace, workflow_id, run_id = self._execution(request)
        await self._engine.request_cancel(
            namespace, workflow_id, run_id, request.reason, _name(request.identity, "identity", required=False)
        )
        return pb.RequestCancelWorkflowExecutionResponse()

    @_rpc
    async def TerminateWorkflowExecution(
        self, request: pb.TerminateWorkflowExecutionRequest, context: Any
    ) -> pb.TerminateWorkflowExecutionResponse:
        namespace, workflow_id, run_id = self._execution(request)
        await self._engine.terminate(
            namespace, workflow_id, run_id, request.reason, _name(request.identity, "identity", required=False)
        )
        return pb.TerminateWorkflowExecutionResponse()

    # workflow tasks

    def _poll_timeout(self, request: Any, context: Any) -> float:
        timeout = _seconds(request.poll_timeout, "poll_timeout") or _DEFAULT_POLL_TIMEOUT_S
        if timeout > _MAX_POLL_TIMEOUT_S:
            raise InvalidArgument(f"poll_timeout may be at most {_MAX_POLL_TIMEOUT_S:.0f}s")
        remaining = context.time_remaining()
        if remaining is not None:
            timeout = max(0.0, min(timeout, remaining - _DEADLINE_MARGIN_S))
        return timeout

    async def _hand_over(self, token: bytes, context: Any) -> bool:
        """False (and the lease released) if the poller hung up while we leased."""
        if context.cancelled() or context.done():
            await self._engine.release_lease(token)
            return False
        return True

    @_rpc
    async def PollWorkflowTaskQueue(
        self, request: pb.PollWorkflowTaskQueueRequest, context: Any
    ) -> pb.PollWorkflowTaskQueueResponse:
        namespace = _name(request.namespace, "namespace")
        task_queue = _name(request.task_queue, "task_queue")
        identity = _name(request.identity, "identity", required=False)
        timeout = self._poll_timeout(request, context)
        await self._engine.ensure_namespace(namespace)
        leased = await self._matching.poll_workflow_task(namespace, task_queue, identity, timeout)
        if isinstance(leased, LeasedQuery):
            return await self._hand_over_query(leased, context)
        if leased is None or not await self._hand_over(leased.token, context):
            return pb.PollWorkflowTaskQueueResponse()
        return _workflow_task_proto(leased)

    @_rpc
    async def RespondWorkflowTaskCompleted(
        self, request: pb.RespondWorkflowTaskCompletedRequest, context: Any
    ) -> pb.RespondWorkflowTaskCompletedResponse:
        if request.eager_activity_slots < 0:
            raise InvalidArgument("eager_activity_slots must not be negative")
        completion = await self._engine.complete_workflow_task(
            request.task_token,
            request.namespace,
            request.commands,
            _name(request.identity, "identity", required=False),
            min(request.eager_activity_slots, 1000),
            _name(request.worker_build_id, "worker_build_id", required=False),
            request.return_new_workflow_task,
        )
        response = pb.RespondWorkflowTaskCompletedResponse(
            activity_tasks=[_activity_task_proto(t) for t in completion.activity_tasks]
        )
        leased = completion.workflow_task
        if leased is not None and await self._hand_over(leased.token, context):
            response.workflow_task.CopyFrom(_workflow_task_proto(leased))
        return response

    @_rpc
    async def RespondWorkflowTaskFailed(
        self, request: pb.RespondWorkflowTaskFailedRequest, context: Any
    ) -> pb.RespondWorkflowTaskFailedResponse:
        cause = pb.WorkflowTaskFailedCause.Name(request.cause).removeprefix("WORKFLOW_TASK_FAILED_CAUSE_")
        await self._engine.fail_workflow_task(
            request.task_token,
            request.namespace,
            cause,
            request.failure,
            _name(request.identity, "identity", required=False),
        )
        return pb.RespondWorkflowTaskFailedResponse()

    # queries (signals and queries feature)

    async def _hand_over_query(self, leased: LeasedQuery, context: Any) -> pb.PollWorkflowTaskQueueResponse:
        if context.cancelled() or context.done():
            await self._engine.release_query(leased.token)
            return pb.PollWorkflowTaskQueueResponse()
        query = leased.query
        return pb.PollWorkflowTaskQueueResponse(
            task_token=leased.token,
            workflow_execution=common_pb2.WorkflowExecution(workflow_id=query.workflow_id, run_id=query.run_id),
            workflow_type=query.workflow_type,
            history=[_event_proto(e) for e in leased.history],
            attempt=1,
            task_queue=query.task_queue,
            query=pb.WorkflowQuery(query_type=query.query_type, query_args=common_pb2.Payloads.FromString(query.args)),
        )

    @_rpc
    async def QueryWorkflow(self, request: pb.QueryWorkflowRequest, context: Any) -> pb.QueryWorkflowResponse:
        namespace, workflow_id, run_id = self._execution(request)
        query_type = _name(request.query.query_type, "query.query_type")
        timeout = _DEFAULT_QUERY_TIMEOUT_S
        remaining = context.time_remaining()
        if remaining is not None:
            timeout = max(0.0, min(_MAX_QUERY_TIMEOUT_S, remaining - _DEADLINE_MARGIN_S))
        result = await self._engine.query_workflow(
            namespace, workflow_id, run_id, query_type, request.query.query_args, timeout
        )
        return pb.QueryWorkflowResponse(query_result=result)

    @_rpc
    async def RespondQueryTaskCompleted(
        self, request: pb.RespondQueryTaskCompletedRequest, context: Any
    ) -> pb.RespondQueryTaskCompletedResponse:
        if request.completed_type == pb.QUERY_RESULT_TYPE_ANSWERED:
            await self._engine.answer_query(request.task_token, request.namespace, request.query_result, None)
        elif request.completed_type == pb.QUERY_RESULT_TYPE_FAILED:
            if request.query_result.payloads:
                raise InvalidArgument("a FAILED query answer carries an error_message, not a query_result")
            message = request.error_message[:_MAX_QUERY_ERROR] or "the worker gave no reason"
            await self._engine.answer_query(request.task_token, request.namespace, None, message)
        else:
            raise InvalidArgument("completed_type must be QUERY_RESULT_TYPE_ANSWERED or QUERY_RESULT_TYPE_FAILED")
        return pb.RespondQueryTaskCompletedResponse()

    # activity tasks

    @_rpc
    async def PollActivityTaskQueue(
        self, request: pb.PollActivityTaskQueueRequest, context: Any
    ) -> pb.PollActivityTaskQueueResponse:
        namespace = _name(request.namespace, "namespace")
        task_queue = _name(request.task_queue, "task_queue")
        identity = _name(request.identity, "identity", required=False)
        timeout = self._poll_timeout(request, context)
        await self._engine.ensure_namespace(namespace)
        leased = await self._matching.poll_activity_task(namespace, task_queue, identity, timeout)
        if leased is None or not await self._hand_over(leased.token, context):
            return pb.PollActivityTaskQueueResponse()
        return _activity_task_proto(leased)

    @_rpc
    async def RecordActivityTaskHeartbeat(
        self, request: pb.RecordActivityTaskHeartbeatRequest, context: Any
    ) -> pb.RecordActivityTaskHeartbeatResponse:
        cancel_requested = await self._engine.record_heartbeat(request.task_token, request.namespace, request.details)
        return pb.RecordActivityTaskHeartbeatResponse(cancel_requested=cancel_requested)

    @_rpc
    async def RespondActivityTaskCompleted(
        self, request: pb.RespondActivityTaskCompletedRequest, context: Any
    ) -> pb.RespondActivityTaskCompletedResponse:
        eager_queue = _name(request.eager_workflow_task_queue, "eager_workflow_task_queue", required=False)
        leased = await self._engine.complete_activity_task(
            request.task_token,
            request.namespace,
            request.result,
            _name(request.identity, "identity", required=False),
            eager_queue,
        )
        if leased is None or not await self._hand_over(leased.token, context):
            return pb.RespondActivityTaskCompletedResponse()
        return pb.RespondActivityTaskCompletedResponse(workflow_task=_workflow_task_proto(leased))

    @_rpc
    async def RespondActivityTaskFailed(
        self, request: pb.RespondActivityTaskFailedRequest, context: Any
    ) -> pb.RespondActivityTaskFailedResponse:
        await self._engine.fail_activity_task(
            request.task_token, request.namespace, request.failure, _name(request.identity, "identity", required=False)
        )
        return pb.RespondActivityTaskFailedResponse()

    @_rpc
    async def RespondActivityTaskCanceled(
        self, request: pb.RespondActivityTaskCanceledRequest, context: Any
    ) -> pb.RespondActivityTaskCanceledResponse:
        await self._engine.cancel_activity_task(
            request.task_token, request.namespace, request.details, _name(request.identity, "identity", required=False)
        )
        return pb.RespondActivityTaskCanceledResponse()

    # event triggers

    @_rpc
    async def CreateEventTrigger(
        self, request: event_pb2.CreateEventTriggerRequest, context: Any
    ) -> event_pb2.CreateEventTriggerResponse:
        trigger = request.trigger
        row = trigger_row(
            namespace=_name(request.namespace, "namespace"),
            trigger_id=_name(trigger.trigger_id, "trigger.trigger_id"),
            event_type=_name(trigger.event_type, "trigger.event_type"),
            filter=list(trigger.filter),
            input_paths=list(trigger.input_paths),
            workflow_type=_name(trigger.workflow_type, "trigger.workflow_type"),
            task_queue=_name(trigger.task_queue, "trigger.task_queue"),
            workflow_id_prefix=_name(trigger.workflow_id_prefix, "trigger.workflow_id_prefix", required=False),
            execution_timeout_s=_seconds(trigger.workflow_execution_timeout, "trigger.workflow_execution_timeout"),
            run_timeout_s=_seconds(trigger.workflow_run_timeout, "trigger.workflow_run_timeout"),
            task_timeout_s=_seconds(trigger.workflow_task_timeout, "trigger.workflow_task_timeout"),
        )
        return event_pb2.CreateEventTriggerResponse(trigger=_trigger_proto(await self._events.create_trigger(row)))

    @_rpc
    async def DescribeEventTrigger(
        self, request: event_pb2.DescribeEventTriggerRequest, context: Any
    ) -> event_pb2.DescribeEventTriggerResponse:
        row = await self._events.describe_trigger(
            _name(request.namespace, "namespace"), _name(request.trigger_id, "trigger_id")
        )
        return event_pb2.DescribeEventTriggerResponse(trigger=_trigger_proto(row))

    @_rpc
    async def ListEventTriggers(
        self, request: event_pb2.ListEventTriggersRequest, context: Any
    ) -> event_pb2.ListEventTriggersResponse:
        page_size = _page_size(request.page_size)
        after = _text_page_token(request.next_page_token)
        rows = await self._events.list_triggers(
            _name(request.namespace, "namespace"), page_size=page_size, after_trigger_id=after
        )
        token = rows[-1].trigger_id.encode() if len(rows) == page_size else b""
        return event_pb2.ListEventTriggersResponse(triggers=[_trigger_proto(r) for r in rows], next_page_token=token)

    @_rpc
    async def DeleteEventTrigger(
        self, request: event_pb2.DeleteEventTriggerRequest, context: Any
    ) -> event_pb2.DeleteEventTriggerResponse:
        await self._events.delete_trigger(
            _name(request.namespace, "namespace"), _name(request.trigger_id, "trigger_id")
        )
        return event_pb2.DeleteEventTriggerResponse()

    @_rpc
    async def PublishEvent(
        self, request: event_pb2.PublishEventRequest, context: Any
    ) -> event_pb2.PublishEventResponse:
        return await self.publish_event(request)

    async def publish_event(self, request: event_pb2.PublishEventRequest) -> event_pb2.PublishEventResponse:
        """Validates and publishes an event: the one path for gRPC and the webhook.

        Raises:
            ServiceError: INVALID_ARGUMENT for a malformed event, NOT_FOUND for an
                unknown namespace, UNAVAILABLE when the store is down.
        """
        event = request.event
        if len(event.data) > self._engine.config.max_payload_bytes:
            raise InvalidArgument(
                f"event.data is {len(event.data)} bytes, over the server's payload limit of"
                f" {self._engine.config.max_payload_bytes} bytes"
            )
        try:
            data = json.loads(event.data) if event.data else None
        except ValueError:
            raise InvalidArgument("event.data must be UTF-8 JSON text (empty for null)") from None
        try:
            time = event.time.ToJsonString() if event.HasField("time") else None
        except ValueError:
            raise InvalidArgument("event.time is out of range (years 0001 to 9999)") from None
        published = PublishedEvent(
            id=_name(event.id, "event.id"),
            source=_name(event.source, "event.source"),
            type=_name(event.type, "event.type"),
            subject=_name(event.subject, "event.subject", required=False),
            time=time,
            data=data,
        )
        duplicate, workflows = await self._events.publish(
            _name(request.namespace, "namespace"), published, _name(request.identity, "identity", required=False)
        )
        return event_pb2.PublishEventResponse(
            duplicate=duplicate,
            workflows=[
                event_pb2.TriggeredWorkflow(
                    trigger_id=w.trigger_id, workflow_id=w.workflow_id, run_id=w.run_id, started=w.started
                )
                for w in workflows
            ],
        )

    # schedules (docs/schedules.md)

    def _schedule_key(self, request: Any) -> tuple[str, str]:
        return _name(request.namespace, "namespace"), _name(request.schedule_id, "schedule_id")

    @_rpc
    async def CreateSchedule(self, request: pb.CreateScheduleRequest, context: Any) -> pb.CreateScheduleResponse:
        namespace, schedule_id = self._schedule_key(request)
        schedule = request.schedule
        if not schedule.HasField("action"):
            raise InvalidArgument("schedule.action is required: the workflow each fire starts")
        self._engine.check_payloads(schedule.action.input, "the schedule's workflow input")
        await self._engine.check_visibility(namespace, schedule.action.search_attributes, schedule.action.memo)
        await self._schedules.create(
            namespace,
            schedule_id,
            _schedule_proto.spec_document(schedule.spec),
            _schedule_proto.action_document(schedule.action, _name),
            _schedule_proto.policy_document(schedule.policy),
            schedule.state.paused,
            schedule.state.note,
        )
        return pb.CreateScheduleResponse()

    @_rpc
    async def DescribeSchedule(self, request: pb.DescribeScheduleRequest, context: Any) -> pb.DescribeScheduleResponse:
        row, upcoming = await self._schedules.describe(*self._schedule_key(request))
        schedule, info = _schedule_proto.schedule_proto(row, upcoming)
        return pb.DescribeScheduleResponse(schedule=schedule, info=info)

    @_rpc
    async def ListSchedules(self, request: pb.ListSchedulesRequest, context: Any) -> pb.ListSchedulesResponse:
        namespace = _name(request.namespace, "namespace")
        page_size = _page_size(request.page_size)
        after = _text_page_token(request.next_page_token)
        rows = await self._schedules.list(namespace, after=after, limit=page_size)
        response = pb.ListSchedulesResponse(
            next_page_token=rows[-1].schedule_id.encode() if len(rows) == page_size else b""
        )
        for row in rows:
            schedule, info = _schedule_proto.schedule_proto(row, [])
            response.schedules.add(schedule_id=row.schedule_id, schedule=schedule, info=info)
        return response

    @_rpc
    async def PatchSchedule(self, request: pb.PatchScheduleRequest, context: Any) -> pb.PatchScheduleResponse:
        namespace, schedule_id = self._schedule_key(request)
        backfills = []
        for backfill in request.backfills:
            if not backfill.HasField("start_time") or not backfill.HasField("end_time"):
                raise InvalidArgument("a backfill needs start_time and end_time")
            backfills.append(
                (
                    backfill.start_time.ToMicroseconds(),
                    backfill.end_time.ToMicroseconds(),
                    _schedule_proto.overlap_name(backfill.overlap),
                )
            )
        trigger = _schedule_proto.overlap_name(request.trigger.overlap) if request.HasField("trigger") else None
        if not (request.pause or request.unpause or trigger is not None or backfills):
            raise InvalidArgument("nothing to do: set pause, unpause, trigger or backfills")
        await self._schedules.update(
            namespace,
            schedule_id,
            pause=request.pause,
            unpause=request.unpause,
            note=_name(request.note, "note", required=False),
            trigger=trigger,
            backfills=tuple(backfills),
        )
        return pb.PatchScheduleResponse()

    @_rpc
    async def DeleteSchedule(self, request: pb.DeleteScheduleRequest, context: Any) -> pb.DeleteScheduleResponse:
        await self._schedules.delete(*self._schedule_key(request))
        return pb.DeleteScheduleResponse()

    @_rpc
    async def GetSchedulerStatus(
        self, request: pb.GetSchedulerStatusRequest, context: Any
    ) -> pb.GetSchedulerStatusResponse:
        return _schedule_proto.status_proto(await self._scheduler.status())

    # visibility (docs/visibility.md)

    @_rpc
    async def ListWorkflowExecutions(
        self, request: pb.ListWorkflowExecutionsRequest, context: Any
    ) -> pb.ListWorkflowExecutionsResponse:
        namespace = _name(request.namespace, "namespace")
        page_size = _page_size(request.page_size)
        status = _STATUS_BY_NUMBER.get(request.status) if request.status else None
        if request.status and status is None:
            raise InvalidArgument(f"unknown status {request.status}")
        equal = {
            column: value
            for column, value in (
                ("status", status),
                ("workflow_type", _name(request.workflow_type, "workflow_type", required=False)),
                ("workflow_id", _name(request.workflow_id, "workflow_id", required=False)),
            )
            if value
        }
        rows, visibility = await self._engine.list_executions(
            namespace, request.query, page_size=page_size, before=_page_cursor(request.next_page_token), equal=equal
        )
        token = b""
        if len(rows) == page_size:
            token = base64.urlsafe_b64encode(json.dumps([rows[-1].start_us, rows[-1].run_id]).encode())
        return pb.ListWorkflowExecutionsResponse(
            executions=[_execution_info(r, visibility[r.run_id]) for r in rows], next_page_token=token
        )

    @_rpc
    async def CountWorkflowExecutions(
        self, request: pb.CountWorkflowExecutionsRequest, context: Any
    ) -> pb.CountWorkflowExecutionsResponse:
        count = await self._engine.count_executions(_name(request.namespace, "namespace"), request.query)
        return pb.CountWorkflowExecutionsResponse(count=count)

    @_rpc
    async def AddSearchAttributes(
        self, request: pb.AddSearchAttributesRequest, context: Any
    ) -> pb.AddSearchAttributesResponse:
        if not request.search_attributes:
            raise InvalidArgument("search_attributes is required: name -> IndexedValueType")
        attributes = {
            name: common_pb2.IndexedValueType.Name(value_type).removeprefix("INDEXED_VALUE_TYPE_")
            if value_type in common_pb2.IndexedValueType.values()
            else ""
            for name, value_type in request.search_attributes.items()
        }
        await self._engine.add_search_attributes(_name(request.namespace, "namespace"), attributes)
        return pb.AddSearchAttributesResponse()

    @_rpc
    async def ListSearchAttributes(
        self, request: pb.ListSearchAttributesRequest, context: Any
    ) -> pb.ListSearchAttributesResponse:
        custom = await self._engine.list_search_attributes(_name(request.namespace, "namespace"))
        return pb.ListSearchAttributesResponse(
            custom_attributes={name: _indexed_value_type(t) for name, t in custom.items()},
            system_attributes={name: _indexed_value_type(t) for name, (_, t) in SYSTEM_ATTRIBUTES.items()},
        )


def _trigger_proto(row: EventTriggerRow) -> event_pb2.EventTrigger:
    trigger = event_pb2.EventTrigger(
        trigger_id=row.trigger_id,
        event_type=row.event_type,
        filter=json.loads(row.filter),
        input_paths=json.loads(row.input_paths),
        workflow_type=row.workflow_type,
        task_queue=row.task_queue,
        workflow_id_prefix=row.workflow_id_prefix,
        create_time=_timestamp(row.create_us),
    )
    for field, seconds in (
        (trigger.workflow_execution_timeout, row.execution_timeout_s),
        (trigger.workflow_run_timeout, row.run_timeout_s),
        (trigger.workflow_task_timeout, row.task_timeout_s),
    ):
        if seconds:
            field.FromMicroseconds(int(seconds * 1_000_000))
    return trigger
