"""Signal and query RPCs (docs/signals-and-queries.md): a client signals or queries an
execution; a worker answers the query it polled."""

from __future__ import annotations

from flowforge.api.v1 import workflow_service_pb2 as pb
from flowforge.server.frontend import reports
from flowforge.server.frontend._base import Context, ServiceBase, rpc
from flowforge.server.frontend.validation import execution_key, name, query_timeout
from flowforge.server.history import StartSignal

__all__ = ["SignalQueryHandlers"]


class SignalQueryHandlers(ServiceBase):
    @rpc
    async def SignalWorkflowExecution(
        self, request: pb.SignalWorkflowExecutionRequest, context: Context
    ) -> pb.SignalWorkflowExecutionResponse:
        namespace, workflow_id, run_id = execution_key(request)
        await self._engine.signal_workflow(
            namespace,
            workflow_id,
            run_id,
            StartSignal(name(request.signal_name, "signal_name"), request.input, request.header),
            name(request.identity, "identity", required=False),
            name(request.request_id, "request_id", required=False),
        )
        return pb.SignalWorkflowExecutionResponse()

    @rpc
    async def QueryWorkflow(self, request: pb.QueryWorkflowRequest, context: Context) -> pb.QueryWorkflowResponse:
        namespace, workflow_id, run_id = execution_key(request)
        query_type = name(request.query.query_type, "query.query_type")
        result = await self._engine.query_workflow(
            namespace, workflow_id, run_id, query_type, request.query.query_args, query_timeout(context)
        )
        return pb.QueryWorkflowResponse(query_result=result)

    @rpc
    async def RespondQueryTaskCompleted(
        self, request: pb.RespondQueryTaskCompletedRequest, context: Context
    ) -> pb.RespondQueryTaskCompletedResponse:
        return await reports.query_task_completed(self._engine, request)
