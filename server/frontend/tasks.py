"""Task RPCs of workers: long polls for workflow and activity tasks (and queries, which
arrive on the workflow task queue), and the reports that complete, fail or heartbeat
them (their logic is in reports.py, shared with the worker stream)."""

from __future__ import annotations

from flowforge.api.v1 import workflow_service_pb2 as pb
from flowforge.server.frontend import reports
from flowforge.server.frontend._base import Context, ServiceBase, rpc
from flowforge.server.frontend.protos import activity_task_proto, query_task_proto, workflow_task_proto
from flowforge.server.frontend.validation import execution_key, name, poll
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

    async def _hand_over_eager(self, response: reports.EagerAnswer, context: Context) -> bool:
        """False (and every task it leased eagerly released) if the reporter hung up meanwhile."""
        if not _gone(context):
            return True
        for task in reports.eager_tasks(response):
            await reports.release(self._engine, task)
        return False

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
        response = await reports.workflow_task_completed(self._engine, request)
        if not await self._hand_over_eager(response, context):
            return pb.RespondWorkflowTaskCompletedResponse()
        return response

    @rpc
    async def RespondWorkflowTaskFailed(
        self, request: pb.RespondWorkflowTaskFailedRequest, context: Context
    ) -> pb.RespondWorkflowTaskFailedResponse:
        return await reports.workflow_task_failed(self._engine, request)

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
        return await reports.activity_task_heartbeat(self._engine, request)

    @rpc
    async def RespondActivityTaskCompleted(
        self, request: pb.RespondActivityTaskCompletedRequest, context: Context
    ) -> pb.RespondActivityTaskCompletedResponse:
        response = await reports.activity_task_completed(self._engine, request)
        if not await self._hand_over_eager(response, context):
            return pb.RespondActivityTaskCompletedResponse()
        return response

    @rpc
    async def RespondActivityTaskFailed(
        self, request: pb.RespondActivityTaskFailedRequest, context: Context
    ) -> pb.RespondActivityTaskFailedResponse:
        return await reports.activity_task_failed(self._engine, request)

    @rpc
    async def RespondActivityTaskCanceled(
        self, request: pb.RespondActivityTaskCanceledRequest, context: Context
    ) -> pb.RespondActivityTaskCanceledResponse:
        return await reports.activity_task_canceled(self._engine, request)

    @rpc
    async def GetActivityTaskToken(
        self, request: pb.GetActivityTaskTokenRequest, context: Context
    ) -> pb.GetActivityTaskTokenResponse:
        namespace, workflow_id, run_id = execution_key(request)
        token = await self._engine.activity_task_token(
            namespace, workflow_id, run_id, name(request.activity_id, "activity_id")
        )
        return pb.GetActivityTaskTokenResponse(task_token=token)
