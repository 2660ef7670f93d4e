"""Remediation RPCs on executions: reset, pause and unpause (docs/operations.md)."""

from __future__ import annotations

from flowforge.api.v1 import remediation_pb2 as pb
from flowforge.server.frontend._base import Context, ServiceBase, rpc
from flowforge.server.frontend.validation import execution_key, name, reset_point

__all__ = ["RemediationHandlers"]


class RemediationHandlers(ServiceBase):
    @rpc
    async def ResetWorkflowExecution(
        self, request: pb.ResetWorkflowExecutionRequest, context: Context
    ) -> pb.ResetWorkflowExecutionResponse:
        namespace, workflow_id, run_id = execution_key(request)
        event_id, reset_type = reset_point(request)
        new_run_id = await self._engine.reset(
            namespace,
            workflow_id,
            run_id,
            event_id=event_id,
            reset_type=reset_type,
            reason=name(request.reason, "reason"),
            identity=name(request.identity, "identity", required=False),
        )
        return pb.ResetWorkflowExecutionResponse(run_id=new_run_id)

    @rpc
    async def PauseWorkflowExecution(
        self, request: pb.PauseWorkflowExecutionRequest, context: Context
    ) -> pb.PauseWorkflowExecutionResponse:
        namespace, workflow_id, run_id = execution_key(request)
        await self._engine.pause(
            namespace,
            workflow_id,
            run_id,
            reason=name(request.reason, "reason"),
            identity=name(request.identity, "identity", required=False),
        )
        return pb.PauseWorkflowExecutionResponse()

    @rpc
    async def UnpauseWorkflowExecution(
        self, request: pb.UnpauseWorkflowExecutionRequest, context: Context
    ) -> pb.UnpauseWorkflowExecutionResponse:
        namespace, workflow_id, run_id = execution_key(request)
        await self._engine.unpause(
            namespace,
            workflow_id,
            run_id,
            reason=name(request.reason, "reason"),
            identity=name(request.identity, "identity", required=False),
        )
        return pb.UnpauseWorkflowExecutionResponse()
