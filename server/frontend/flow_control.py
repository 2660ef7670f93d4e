"""Flow-control RPCs: fleet-wide concurrency limits per key and dispatch rate limits (docs/flow-control.md)."""

from __future__ import annotations

from flowforge.api.v1 import flow_control_pb2 as pb
from flowforge.server.errors import InvalidArgument
from flowforge.server.frontend._base import Context, ServiceBase, rpc
from flowforge.server.frontend.protos import timestamp
from flowforge.server.frontend.validation import name, text

__all__ = ["FlowControlHandlers"]


class FlowControlHandlers(ServiceBase):
    @rpc
    async def SetConcurrencyLimit(
        self, request: pb.SetConcurrencyLimitRequest, context: Context
    ) -> pb.SetConcurrencyLimitResponse:
        text(request.reason, "reason")
        await self._engine.set_concurrency_limit(
            name(request.namespace, "namespace"), name(request.concurrency_key, "concurrency_key"), request.max_running
        )
        return pb.SetConcurrencyLimitResponse()

    @rpc
    async def ListConcurrencyLimits(
        self, request: pb.ListConcurrencyLimitsRequest, context: Context
    ) -> pb.ListConcurrencyLimitsResponse:
        rows = await self._engine.list_concurrency_limits(name(request.namespace, "namespace"))
        return pb.ListConcurrencyLimitsResponse(
            limits=[
                pb.ConcurrencyLimit(
                    concurrency_key=row.concurrency_key,
                    max_running=row.max_running,
                    running=row.running,
                    waiting=row.waiting,
                    update_time=timestamp(row.update_us),
                )
                for row in rows
            ]
        )

    @rpc
    async def SetRateLimit(self, request: pb.SetRateLimitRequest, context: Context) -> pb.SetRateLimitResponse:
        text(request.reason, "reason")
        if bool(request.task_queue) == bool(request.concurrency_key):
            raise InvalidArgument("give exactly one of task_queue and concurrency_key")
        scope, target = (
            ("task_queue", name(request.task_queue, "task_queue"))
            if request.task_queue
            else ("concurrency_key", name(request.concurrency_key, "concurrency_key"))
        )
        await self._engine.set_rate_limit(name(request.namespace, "namespace"), scope, target, request.per_second)
        return pb.SetRateLimitResponse()

    @rpc
    async def ListRateLimits(self, request: pb.ListRateLimitsRequest, context: Context) -> pb.ListRateLimitsResponse:
        rows = await self._engine.list_rate_limits(name(request.namespace, "namespace"))
        return pb.ListRateLimitsResponse(
            limits=[
                pb.RateLimit(
                    task_queue=row.name if row.scope == "task_queue" else "",
                    concurrency_key=row.name if row.scope == "concurrency_key" else "",
                    per_second=row.per_second,
                    update_time=timestamp(row.update_us),
                )
                for row in rows
            ]
        )
