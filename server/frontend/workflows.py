"""Execution RPCs: start, describe, read history, cancel, terminate."""

from __future__ import annotations

import uuid

from flowforge.api.v1 import workflow_service_pb2 as pb
from flowforge.server.frontend._base import Context, ServiceBase, rpc
from flowforge.server.frontend.dead_letters import attempt_proto
from flowforge.server.frontend.describe import describe_response
from flowforge.server.frontend.protos import event_proto
from flowforge.server.frontend.validation import execution_key, history_page, name, seconds, start_signal, text
from flowforge.server.history import EagerStart
from flowforge.server.history.cron import check_cron_schedule
from flowforge.server.history.data import DEFAULT_PRIORITY
from flowforge.server.history.flow_control import priority_from_proto
from flowforge.server.history.id_policies import known_enum

__all__ = ["WorkflowHandlers"]


class WorkflowHandlers(ServiceBase):
    @rpc
    async def StartWorkflowExecution(
        self, request: pb.StartWorkflowExecutionRequest, context: Context
    ) -> pb.StartWorkflowExecutionResponse:
        request_id = name(request.request_id, "request_id", required=False) or str(uuid.uuid4())
        namespace, task_queue = name(request.namespace, "namespace"), name(request.task_queue, "task_queue")
        # Eager start: a worker stream's workflow poll waiting on the queue here is given
        # the run's first task, leased in the start's transaction (docs/worker-stream.md).
        poll = self._matching.claim_idle_workflow_poll(namespace, task_queue)
        eager = None if poll is None else EagerStart(poll.identity)
        try:
            run_id, started = await self._start(request, request_id, namespace, task_queue, eager)
        finally:
            if poll is not None and eager is not None:
                await self._matching.hand_over(poll, eager.started)
        return pb.StartWorkflowExecutionResponse(run_id=run_id, started=started)

    async def _start(
        self,
        request: pb.StartWorkflowExecutionRequest,
        request_id: str,
        namespace: str,
        task_queue: str,
        eager: EagerStart | None,
    ) -> tuple[str, bool]:
        return await self._engine.start_workflow(
            namespace=namespace,
            workflow_id=name(request.workflow_id, "workflow_id"),
            workflow_type=name(request.workflow_type, "workflow_type"),
            task_queue=task_queue,
            input=request.input,
            request_id=request_id,
            identity=name(request.identity, "identity", required=False),
            execution_timeout_s=seconds(request.workflow_execution_timeout, "workflow_execution_timeout"),
            run_timeout_s=seconds(request.workflow_run_timeout, "workflow_run_timeout"),
            task_timeout_s=seconds(request.workflow_task_timeout, "workflow_task_timeout"),
            start_signal=start_signal(request),
            search_attributes=request.search_attributes,
            memo=request.memo,
            header=request.header,
            cron_schedule=check_cron_schedule(request.cron_schedule) if request.cron_schedule else "",
            id_reuse_policy=known_enum(
                request.workflow_id_reuse_policy, pb.WorkflowIdReusePolicy, "workflow_id_reuse_policy"
            ),
            id_conflict_policy=known_enum(
                request.workflow_id_conflict_policy, pb.WorkflowIdConflictPolicy, "workflow_id_conflict_policy"
            ),
            priority=priority_from_proto(request.priority, DEFAULT_PRIORITY),
            eager=eager,
        )

    @rpc
    async def DescribeWorkflowExecution(
        self, request: pb.DescribeWorkflowExecutionRequest, context: Context
    ) -> pb.DescribeWorkflowExecutionResponse:
        row, tasks, events = await self._engine.describe(*execution_key(request))
        visibility = await self._engine.visibility(row.namespace, row.run_id)
        children = await self._engine.pending_children(row.namespace, row.run_id)
        open_breakers = await self._engine.open_breaker_types(row.namespace)
        response = describe_response(row, tasks, events, visibility, children, open_breakers)
        attempts = await self._engine.activity_attempts(row.namespace, row.run_id)
        response.activity_attempts.extend(attempt_proto(a) for a in attempts)
        return response

    @rpc
    async def GetWorkflowExecutionHistory(
        self, request: pb.GetWorkflowExecutionHistoryRequest, context: Context
    ) -> pb.GetWorkflowExecutionHistoryResponse:
        namespace, workflow_id, run_id = execution_key(request)
        after_event_id, page_size, wait_s = history_page(request, context, self._engine.config.default_history_wait_s)
        resolved_run_id, events, has_more = await self._engine.get_history(
            namespace,
            workflow_id,
            run_id,
            after_event_id=after_event_id,
            page_size=page_size,
            wait=request.wait_new_event,
            close_event_only=request.close_event_only,
            wait_timeout_s=wait_s,
        )
        return pb.GetWorkflowExecutionHistoryResponse(
            events=[event_proto(e) for e in events], run_id=resolved_run_id, has_more=has_more
        )

    @rpc
    async def RequestCancelWorkflowExecution(
        self, request: pb.RequestCancelWorkflowExecutionRequest, context: Context
    ) -> pb.RequestCancelWorkflowExecutionResponse:
        namespace, workflow_id, run_id = execution_key(request)
        await self._engine.request_cancel(
            namespace,
            workflow_id,
            run_id,
            text(request.reason, "reason"),
            name(request.identity, "identity", required=False),
        )
        return pb.RequestCancelWorkflowExecutionResponse()

    @rpc
    async def TerminateWorkflowExecution(
        self, request: pb.TerminateWorkflowExecutionRequest, context: Context
    ) -> pb.TerminateWorkflowExecutionResponse:
        namespace, workflow_id, run_id = execution_key(request)
        await self._engine.terminate(
            namespace,
            workflow_id,
            run_id,
            text(request.reason, "reason"),
            name(request.identity, "identity", required=False),
        )
        return pb.TerminateWorkflowExecutionResponse()
