"""Task RPCs of workers: long polls for workflow and activity tasks (and queries, which
arrive on the workflow task queue), and the reports that complete, fail or heartbeat them."""

from __future__ import annotations

from flowforge.api.v1 import workflow_service_pb2 as pb
from flowforge.server.frontend._base import Context, ServiceBase, rpc
from flowforge.server.frontend.protos import activity_task_proto, query_task_proto, workflow_task_proto
from flowforge.server.frontend.validation import (
    cached_event_id,
    eager_activity_slots,
    execution_key,
    name,
    poll,
    workflow_task_failed_cause,
)
from flowforge.server.history import LeasedQuery

__all__ = ["TaskHandlers"]


def _gone(context: Context) -> bool:
    """Whether the caller hung up (a lease leased for it must be released)."""
    return context.cancelled() or context.done()


class TaskHandlers(ServiceBase):
    async def _hand_over(self, token: bytes, context: Context) -> bool:
        """False (and the lease released) if the poller hung up while we leased."""
        if _gone(context):
            await self._engine.release_lease(token)
            return False
        return True

    # workflow tasks

    @rpc
    async def PollWorkflowTaskQueue(
        self, request: pb.PollWorkflowTaskQueueRequest, context: Context
    ) -> pb.PollWorkflowTaskQueueResponse:
        namespace, task_queue, identity, timeout = poll(request, context)
        await self._engine.ensure_namespace(namespace)
        leased = await self._matching.poll_workflow_task(namespace, task_queue, identity, timeout)
        if isinstance(leased, LeasedQuery):
            if _gone(context):
                await self._engine.release_query(leased.token)
                return pb.PollWorkflowTaskQueueResponse()
            return query_task_proto(leased)
        if leased is None or not await self._hand_over(leased.token, context):
            return pb.PollWorkflowTaskQueueResponse()
        return workflow_task_proto(leased)

    @rpc
    async def RespondWorkflowTaskCompleted(
        self, request: pb.RespondWorkflowTaskCompletedRequest, context: Context
    ) -> pb.RespondWorkflowTaskCompletedResponse:
        slots = await self._engine.eager_activity_slots(
            request.task_token, eager_activity_slots(request.eager_activity_slots)
        )
        completion = await self._engine.complete_workflow_task(
            request.task_token,
            request.namespace,
            request.commands,
            name(request.identity, "identity", required=False),
            slots,
            name(request.worker_build_id, "worker_build_id", required=False),
            request.return_new_workflow_task,
            cached_event_id(request.cached_event_id, "cached_event_id"),
        )
        response = pb.RespondWorkflowTaskCompletedResponse(
            activity_tasks=[activity_task_proto(t) for t in completion.activity_tasks]
        )
        leased = completion.workflow_task
        if leased is not None and await self._hand_over(leased.token, context):
            response.workflow_task.CopyFrom(workflow_task_proto(leased))
        return response

    @rpc
    async def RespondWorkflowTaskFailed(
        self, request: pb.RespondWorkflowTaskFailedRequest, context: Context
    ) -> pb.RespondWorkflowTaskFailedResponse:
        await self._engine.fail_workflow_task(
            request.task_token,
            request.namespace,
            workflow_task_failed_cause(request.cause),
            request.failure,
            name(request.identity, "identity", required=False),
        )
        return pb.RespondWorkflowTaskFailedResponse()

    # activity tasks

    @rpc
    async def PollActivityTaskQueue(
        self, request: pb.PollActivityTaskQueueRequest, context: Context
    ) -> pb.PollActivityTaskQueueResponse:
        namespace, task_queue, identity, timeout = poll(request, context)
        await self._engine.ensure_namespace(namespace)
        leased = await self._matching.poll_activity_task(namespace, task_queue, identity, timeout)
        if leased is None or not await self._hand_over(leased.token, context):
            return pb.PollActivityTaskQueueResponse()
        return activity_task_proto(leased)

    @rpc
    async def RecordActivityTaskHeartbeat(
        self, request: pb.RecordActivityTaskHeartbeatRequest, context: Context
    ) -> pb.RecordActivityTaskHeartbeatResponse:
        cancel_requested = await self._engine.record_heartbeat(request.task_token, request.namespace, request.details)
        return pb.RecordActivityTaskHeartbeatResponse(cancel_requested=cancel_requested)

    @rpc
    async def RespondActivityTaskCompleted(
        self, request: pb.RespondActivityTaskCompletedRequest, context: Context
    ) -> pb.RespondActivityTaskCompletedResponse:
        eager_queue = name(request.eager_workflow_task_queue, "eager_workflow_task_queue", required=False)
        leased = await self._engine.complete_activity_task(
            request.task_token,
            request.namespace,
            request.result,
            name(request.identity, "identity", required=False),
            eager_queue,
            cached_event_id(request.eager_workflow_task_cached_event_id, "eager_workflow_task_cached_event_id"),
        )
        if leased is None or not await self._hand_over(leased.token, context):
            return pb.RespondActivityTaskCompletedResponse()
        return pb.RespondActivityTaskCompletedResponse(workflow_task=workflow_task_proto(leased))

    @rpc
    async def RespondActivityTaskFailed(
        self, request: pb.RespondActivityTaskFailedRequest, context: Context
    ) -> pb.RespondActivityTaskFailedResponse:
        await self._engine.fail_activity_task(
            request.task_token, request.namespace, request.failure, name(request.identity, "identity", required=False)
        )
        return pb.RespondActivityTaskFailedResponse()

    @rpc
    async def RespondActivityTaskCanceled(
        self, request: pb.RespondActivityTaskCanceledRequest, context: Context
    ) -> pb.RespondActivityTaskCanceledResponse:
        await self._engine.cancel_activity_task(
            request.task_token, request.namespace, request.details, name(request.identity, "identity", required=False)
        )
        return pb.RespondActivityTaskCanceledResponse()

    @rpc
    async def GetActivityTaskToken(
        self, request: pb.GetActivityTaskTokenRequest, context: Context
    ) -> pb.GetActivityTaskTokenResponse:
        namespace, workflow_id, run_id = execution_key(request)
        token = await self._engine.activity_task_token(
            namespace, workflow_id, run_id, name(request.activity_id, "activity_id")
        )
        return pb.GetActivityTaskTokenResponse(task_token=token)
