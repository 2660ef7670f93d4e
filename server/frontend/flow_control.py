"""Flow-control RPCs: fleet-wide concurrency limits per key (docs/flow-control.md)."""

from __future__ import annotations

from flowforge.api.v1 import flow_control_pb2 as pb
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
