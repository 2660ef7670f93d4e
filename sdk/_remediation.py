"""The remediation calls of :class:`flowforge.client.Client` on executions: reset,
pause and unpause (docs/operations.md). They need the operator role and are audited with their reason."""

from __future__ import annotations

from flowforge._rpc import WorkflowServiceClient
from flowforge.api.v1 import common_pb2
from flowforge.api.v1 import remediation_pb2 as pb

__all__: list[str] = []


class _RemediationCalls:
    """The remediation calls of :class:`flowforge.client.Client` (a base class of it)."""

    _workflow_service: WorkflowServiceClient
    _namespace: str
    _identity: str

    async def reset_workflow(
        self,
        workflow_id: str,
        *,
        reason: str,
        run_id: str | None = None,
        event_id: int = 0,
        reset_type: str = "",
    ) -> str:
        """Temporal's reset: a new run of ``workflow_id`` that keeps the history of the run
        (``run_id``, default the latest) up to one of its workflow tasks and runs that task
        again. Name the task by ``event_id`` (its WorkflowTaskStarted or WorkflowTaskCompleted
        event) or ``reset_type`` (``"first"`` or ``"last"``: the last completed one). Signals
        received after that point are re-delivered; the running run, if any, is terminated;
        ``get_workflow_handle(workflow_id)`` then follows the new run. Returns its run id.

        Raises:
            RPCError: ``INVALID_ARGUMENT`` for a bad point or no reason; ``NOT_FOUND`` for an
                unknown workflow; ``FAILED_PRECONDITION`` when a child workflow was pending there.
        """
        request = pb.ResetWorkflowExecutionRequest(
            namespace=self._namespace,
            execution=common_pb2.WorkflowExecution(workflow_id=workflow_id, run_id=run_id or ""),
            event_id=event_id,
            reset_type=reset_type,
            reason=reason,
            identity=self._identity,
        )
        response: pb.ResetWorkflowExecutionResponse = await self._workflow_service.call(
            "ResetWorkflowExecution", request
        )
        return response.run_id

    async def pause_workflow(self, workflow_id: str, *, reason: str, run_id: str | None = None) -> None:
        """Holds the run (default the latest): no workflow task and no new activity task of
        it is dispatched; running activities finish and their results, signals and fired
        timers wait. ``describe().pause`` says by whom, why and since when.

        Raises:
            RPCError: ``FAILED_PRECONDITION`` if it is closed or already paused;
                ``INVALID_ARGUMENT`` without a reason.
        """
        request = pb.PauseWorkflowExecutionRequest(
            namespace=self._namespace,
            execution=common_pb2.WorkflowExecution(workflow_id=workflow_id, run_id=run_id or ""),
            reason=reason,
            identity=self._identity,
        )
        await self._workflow_service.call("PauseWorkflowExecution", request)

    async def unpause_workflow(self, workflow_id: str, *, reason: str, run_id: str | None = None) -> None:
        """Releases a paused run: it goes on exactly where it was.

        Raises:
            RPCError: ``FAILED_PRECONDITION`` if it is closed or not paused.
        """
        request = pb.UnpauseWorkflowExecutionRequest(
            namespace=self._namespace,
            execution=common_pb2.WorkflowExecution(workflow_id=workflow_id, run_id=run_id or ""),
            reason=reason,
            identity=self._identity,
        )
        await self._workflow_service.call("UnpauseWorkflowExecution", request)
