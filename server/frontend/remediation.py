"""Remediation RPCs on executions: reset, pause and unpause, and batch jobs (docs/operations.md)."""

from __future__ import annotations

from flowforge.api.v1 import remediation_pb2 as pb
from flowforge.server.frontend._base import Context, ServiceBase, rpc
from flowforge.server.frontend.protos import timestamp
from flowforge.server.frontend.validation import batch_start, execution_key, name, page_size, reset_point
from flowforge.server.stores.rows import BatchJobRow

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

    @rpc
    async def StartBatchOperation(
        self, request: pb.StartBatchOperationRequest, context: Context
    ) -> pb.StartBatchOperationResponse:
        namespace, operation, query, arguments, rps = batch_start(request)
        job_id = await self._engine.start_batch(
            namespace,
            operation,
            query,
            reason=name(request.reason, "reason"),
            identity=name(request.identity, "identity", required=False),
            arguments=arguments,
            rps=rps,
        )
        return pb.StartBatchOperationResponse(job_id=job_id)

    @rpc
    async def DescribeBatchOperation(
        self, request: pb.DescribeBatchOperationRequest, context: Context
    ) -> pb.DescribeBatchOperationResponse:
        row = await self._engine.describe_batch(name(request.namespace, "namespace"), name(request.job_id, "job_id"))
        return pb.DescribeBatchOperationResponse(operation=_batch_proto(row))

    @rpc
    async def ListBatchOperations(
        self, request: pb.ListBatchOperationsRequest, context: Context
    ) -> pb.ListBatchOperationsResponse:
        rows = await self._engine.list_batches(name(request.namespace, "namespace"), page_size(request.limit))
        return pb.ListBatchOperationsResponse(operations=[_batch_proto(row) for row in rows])

    @rpc
    async def PauseActivity(self, request: pb.PauseActivityRequest, context: Context) -> pb.PauseActivityResponse:
        namespace, workflow_id, run_id = execution_key(request)
        await self._engine.pause_activity(
            namespace,
            workflow_id,
            run_id,
            name(request.activity_id, "activity_id"),
            reason=name(request.reason, "reason"),
            identity=name(request.identity, "identity", required=False),
        )
        return pb.PauseActivityResponse()

    @rpc
    async def UnpauseActivity(self, request: pb.UnpauseActivityRequest, context: Context) -> pb.UnpauseActivityResponse:
        namespace, workflow_id, run_id = execution_key(request)
        activity_id = name(request.activity_id, "activity_id")
        name(request.reason, "reason")
        await self._engine.unpause_activity(namespace, workflow_id, run_id, activity_id)
        return pb.UnpauseActivityResponse()


def _batch_proto(row: BatchJobRow) -> pb.BatchOperation:
    return pb.BatchOperation(
        job_id=row.id,
        operation=row.operation,
        query=row.query,
        reason=row.reason,
        identity=row.identity,
        state=row.state,
        total=row.total,
        done=row.done,
        failed=row.failed,
        rps=row.rps,
        create_time=timestamp(row.create_us),
        update_time=timestamp(row.update_us),
    )
