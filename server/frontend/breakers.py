"""Circuit-breaker RPCs: one breaker per activity type (docs/flow-control.md)."""

from __future__ import annotations

from flowforge.api.v1 import flow_control_pb2 as pb
from flowforge.server.errors import InvalidArgument
from flowforge.server.frontend._base import Context, ServiceBase, rpc
from flowforge.server.frontend.protos import timestamp
from flowforge.server.frontend.validation import name, text

__all__ = ["BreakerHandlers"]


def _reason(value: str) -> str:
    if not value.strip():
        raise InvalidArgument("reason is required: say why the breaker is opened or closed by hand")
    return text(value, "reason")


class BreakerHandlers(ServiceBase):
    @rpc
    async def SetBreaker(self, request: pb.SetBreakerRequest, context: Context) -> pb.SetBreakerResponse:
        text(request.reason, "reason")
        await self._engine.set_breaker(
            name(request.namespace, "namespace"),
            name(request.activity_type, "activity_type"),
            request.failure_rate,
            request.min_calls,
            request.window_seconds,
            request.open_seconds,
        )
        return pb.SetBreakerResponse()

    @rpc
    async def OpenBreaker(self, request: pb.OpenBreakerRequest, context: Context) -> pb.OpenBreakerResponse:
        await self._force(request, "open")
        return pb.OpenBreakerResponse()

    @rpc
    async def CloseBreaker(self, request: pb.CloseBreakerRequest, context: Context) -> pb.CloseBreakerResponse:
        await self._force(request, "closed")
        return pb.CloseBreakerResponse()

    async def _force(self, request: pb.OpenBreakerRequest | pb.CloseBreakerRequest, state: str) -> None:
        reason = _reason(request.reason)
        await self._engine.force_breaker(
            name(request.namespace, "namespace"), name(request.activity_type, "activity_type"), state, reason
        )

    @rpc
    async def ListBreakers(self, request: pb.ListBreakersRequest, context: Context) -> pb.ListBreakersResponse:
        rows = await self._engine.list_breakers(name(request.namespace, "namespace"))
        return pb.ListBreakersResponse(
            breakers=[
                pb.Breaker(
                    activity_type=row.activity_type,
                    state=row.state,
                    since=timestamp(row.since_us),
                    failure_rate=row.failure_rate,
                    min_calls=row.min_calls,
                    window_seconds=row.window_s,
                    open_seconds=row.open_s,
                    successes=row.successes,
                    failures=row.failures,
                    probe_in_flight=bool(row.probe_in_flight),
                    reason=row.reason,
                )
                for row in rows
            ]
        )
