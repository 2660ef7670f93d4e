"""The remediation calls of :class:`flowforge.client.Client` on executions: reset,
pause and unpause, and batch operations (docs/operations.md). They need the operator role and are audited with their reason."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from flowforge._rpc import WorkflowServiceClient
from flowforge._workflow_executions import _timestamp_to_datetime
from flowforge.api.v1 import common_pb2
from flowforge.api.v1 import remediation_pb2 as pb
from flowforge.converter import DataConverter

__all__ = ["BatchOperation"]


@dataclasses.dataclass(frozen=True)
class BatchOperation:
    """A batch job and its progress.

    Attributes:
        job_id: What :meth:`Client.describe_batch_operation` takes.
        operation: ``cancel``, ``terminate``, ``signal``, ``reset`` or ``pause``.
        query: The visibility query that chose the executions.
        reason: Why, as given.
        identity: Who started it.
        state: ``RUNNING`` or ``COMPLETED``.
        total: Executions the query matched when it started.
        done: Executions the operation was applied to.
        failed: Executions that refused it (closed meanwhile, ...).
        rps: Its pace, executions a second at most.
        create_time: When it started.
        update_time: Its last progress.
    """

    job_id: str
    operation: str
    query: str
    reason: str
    identity: str
    state: str
    total: int
    done: int
    failed: int
    rps: float
    create_time: datetime | None
    update_time: datetime | None

    @classmethod
    def _from_proto(cls, proto: pb.BatchOperation) -> BatchOperation:
        return cls(
            job_id=proto.job_id,
            operation=proto.operation,
            query=proto.query,
            reason=proto.reason,
            identity=proto.identity,
            state=proto.state,
            total=proto.total,
            done=proto.done,
            failed=proto.failed,
            rps=proto.rps,
            create_time=_timestamp_to_datetime(proto.create_time, proto.HasField("create_time")),
            update_time=_timestamp_to_datetime(proto.update_time, proto.HasField("update_time")),
        )


class _RemediationCalls:
    """The remediation calls of :class:`flowforge.client.Client` (a base class of it)."""

    _workflow_service: WorkflowServiceClient
    _namespace: str
    _identity: str
    _data_converter: DataConverter

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

    async def pause_activity(
        self, workflow_id: str, activity_id: str, *, reason: str, run_id: str | None = None
    ) -> None:
        """Holds one pending activity of the run (Temporal's activity pause): an attempt that
        is running finishes, no further attempt starts; describe() shows it ``PAUSED``.

        Raises:
            RPCError: ``NOT_FOUND`` if it is not pending; ``FAILED_PRECONDITION`` if already paused.
        """
        request = pb.PauseActivityRequest(
            namespace=self._namespace,
            execution=common_pb2.WorkflowExecution(workflow_id=workflow_id, run_id=run_id or ""),
            activity_id=activity_id,
            reason=reason,
            identity=self._identity,
        )
        await self._workflow_service.call("PauseActivity", request)

    async def unpause_activity(
        self, workflow_id: str, activity_id: str, *, reason: str, run_id: str | None = None
    ) -> None:
        """Releases a paused activity: its next attempt is dispatched now.

        Raises:
            RPCError: ``NOT_FOUND`` if it is not pending; ``FAILED_PRECONDITION`` if not paused.
        """
        request = pb.UnpauseActivityRequest(
            namespace=self._namespace,
            execution=common_pb2.WorkflowExecution(workflow_id=workflow_id, run_id=run_id or ""),
            activity_id=activity_id,
            reason=reason,
            identity=self._identity,
        )
        await self._workflow_service.call("UnpauseActivity", request)

    async def start_batch_operation(
        self,
        operation: str,
        *,
        query: str,
        reason: str,
        signal_name: str = "",
        signal_args: Sequence[Any] = (),
        reset_type: str = "",
        rps: float = 0.0,
    ) -> str:
        """Starts a server-side job applying ``operation`` (``cancel``, ``terminate``,
        ``signal``, ``reset`` or ``pause``) to every execution ``query`` matches, at most
        ``rps`` a second (default 50); returns its id. It survives server restarts and
        audits each execution under the job. Needs the operator role.

        Raises:
            RPCError: ``INVALID_ARGUMENT`` for an unknown operation, a bad query, no reason.
        """
        request = pb.StartBatchOperationRequest(
            namespace=self._namespace,
            operation=operation,
            query=query,
            reason=reason,
            identity=self._identity,
            signal_name=signal_name,
            reset_type=reset_type,
            rps=rps,
        )
        if operation == "signal":
            request.signal_input.CopyFrom(self._data_converter.to_payloads(list(signal_args)))
        response: pb.StartBatchOperationResponse = await self._workflow_service.call("StartBatchOperation", request)
        return response.job_id

    async def describe_batch_operation(self, job_id: str) -> BatchOperation:
        """A batch job's progress.

        Raises:
            RPCError: ``NOT_FOUND`` for an unknown job.
        """
        request = pb.DescribeBatchOperationRequest(namespace=self._namespace, job_id=job_id)
        response: pb.DescribeBatchOperationResponse = await self._workflow_service.call(
            "DescribeBatchOperation", request
        )
        return BatchOperation._from_proto(response.operation)

    async def list_batch_operations(self, limit: int = 100) -> list[BatchOperation]:
        """The namespace's batch jobs, newest first."""
        request = pb.ListBatchOperationsRequest(namespace=self._namespace, limit=limit)
        response: pb.ListBatchOperationsResponse = await self._workflow_service.call("ListBatchOperations", request)
        return [BatchOperation._from_proto(o) for o in response.operations]
