"""The circuit-breaker calls of :class:`flowforge.client.Client`: one breaker per
activity type, namespace-scoped (docs/flow-control.md)."""

from __future__ import annotations

import dataclasses
from datetime import datetime

from flowforge._rpc import WorkflowServiceClient
from flowforge._workflow_executions import _timestamp_to_datetime
from flowforge.api.v1 import flow_control_pb2 as pb

__all__ = ["Breaker"]


@dataclasses.dataclass(frozen=True)
class Breaker:
    """An activity type's circuit breaker.

    Attributes:
        activity_type: The activity type it guards.
        state: ``closed``, ``open`` or ``half_open``.
        since: When it entered that state (UTC).
        failure_rate: The failure rate at which it opens.
        min_calls: Outcomes a window needs before the rate counts.
        window_seconds: The counting window.
        open_seconds: How long it stays open before one probe.
        successes: Successful attempts in the current window.
        failures: Failed or timed-out attempts in the current window.
        probe_in_flight: Whether the half-open probe is running.
        reason: Why it last changed state.
    """

    activity_type: str
    state: str
    since: datetime | None
    failure_rate: float
    min_calls: int
    window_seconds: float
    open_seconds: float
    successes: int
    failures: int
    probe_in_flight: bool
    reason: str


class _BreakerCalls:
    """The circuit-breaker calls of :class:`flowforge.client.Client` (a base class of it)."""

    _workflow_service: WorkflowServiceClient
    _namespace: str
    _identity: str

    async def set_breaker(
        self,
        activity_type: str,
        *,
        failure_rate: float,
        min_calls: int,
        window_seconds: float,
        open_seconds: float,
        reason: str = "",
    ) -> None:
        """Sets the circuit breaker of ``activity_type``: it opens when at least
        ``min_calls`` outcomes in a window of ``window_seconds`` fail at ``failure_rate``
        or more, holds the type's tasks for ``open_seconds``, then lets one probe through.
        Needs the operator role; audited with ``reason``.

        Raises:
            RPCError: ``INVALID_ARGUMENT`` for a rate outside (0, 1] or a bad count or period.
        """
        request = pb.SetBreakerRequest(
            namespace=self._namespace,
            activity_type=activity_type,
            failure_rate=failure_rate,
            min_calls=min_calls,
            window_seconds=window_seconds,
            open_seconds=open_seconds,
            reason=reason,
            identity=self._identity,
        )
        await self._workflow_service.call("SetBreaker", request)

    async def open_breaker(self, activity_type: str, *, reason: str) -> None:
        """Opens the type's breaker by hand. Needs the operator role; audited with ``reason`` (required).

        Raises:
            RPCError: ``NOT_FOUND`` if the type has no breaker; ``INVALID_ARGUMENT`` without a reason.
        """
        await self._force("OpenBreaker", activity_type, reason)

    async def close_breaker(self, activity_type: str, *, reason: str) -> None:
        """Closes the type's breaker by hand. Needs the operator role; audited with ``reason`` (required).

        Raises:
            RPCError: ``NOT_FOUND`` if the type has no breaker; ``INVALID_ARGUMENT`` without a reason.
        """
        await self._force("CloseBreaker", activity_type, reason)

    async def _force(self, method: str, activity_type: str, reason: str) -> None:
        fields = {"namespace": self._namespace, "activity_type": activity_type, "reason": reason}
        request = (pb.OpenBreakerRequest if method == "OpenBreaker" else pb.CloseBreakerRequest)(
            **fields, identity=self._identity
        )
        await self._workflow_service.call(method, request)

    async def list_breakers(self) -> list[Breaker]:
        """The namespace's breakers by activity type, with their state, counts and since when."""
        request = pb.ListBreakersRequest(namespace=self._namespace)
        response: pb.ListBreakersResponse = await self._workflow_service.call("ListBreakers", request)
        return [
            Breaker(
                activity_type=b.activity_type,
                state=b.state,
                since=_timestamp_to_datetime(b.since, b.HasField("since")),
                failure_rate=b.failure_rate,
                min_calls=b.min_calls,
                window_seconds=b.window_seconds,
                open_seconds=b.open_seconds,
                successes=b.successes,
                failures=b.failures,
                probe_in_flight=b.probe_in_flight,
                reason=b.reason,
            )
            for b in response.breakers
        ]
