"""The flow-control calls of :class:`flowforge.client.Client`: fleet-wide
concurrency limits per key and dispatch rate limits (docs/flow-control.md)."""

from __future__ import annotations

import dataclasses
from datetime import datetime

from flowforge._rpc import WorkflowServiceClient
from flowforge._workflow_executions import _timestamp_to_datetime
from flowforge.api.v1 import flow_control_pb2 as pb

__all__ = ["ConcurrencyLimit", "RateLimit"]


@dataclasses.dataclass(frozen=True)
class ConcurrencyLimit:
    """One concurrency key's fleet-wide limit and what it holds now.

    Attributes:
        concurrency_key: The key given to ``execute_activity(concurrency_key=...)``.
        max_running: Most activities of the key leased at once.
        running: Activities of the key leased now.
        waiting: Activities of the key waiting for a slot.
        update_time: When the limit was last set (UTC).
    """

    concurrency_key: str
    max_running: int
    running: int
    waiting: int
    update_time: datetime | None


@dataclasses.dataclass(frozen=True)
class RateLimit:
    """A dispatch rate limit on a task queue or a concurrency key.

    Attributes:
        task_queue: The task queue it limits (empty for a key's limit).
        concurrency_key: The concurrency key it limits (empty for a queue's limit).
        per_second: Activity tasks handed out per second at most, smoothly.
        update_time: When the limit was last set (UTC).
    """

    task_queue: str
    concurrency_key: str
    per_second: float
    update_time: datetime | None


class _FlowControlCalls:
    """The flow-control calls of :class:`flowforge.client.Client` (a base class of it)."""

    _workflow_service: WorkflowServiceClient
    _namespace: str
    _identity: str

    async def set_concurrency_limit(self, concurrency_key: str, max_running: int, *, reason: str = "") -> None:
        """Sets the namespace's fleet-wide limit on activities of ``concurrency_key``
        leased at once (0 removes it). Needs the operator role; audited with ``reason``.

        Raises:
            RPCError: ``INVALID_ARGUMENT`` for an empty key or a negative limit.
        """
        request = pb.SetConcurrencyLimitRequest(
            namespace=self._namespace,
            concurrency_key=concurrency_key,
            max_running=max_running,
            reason=reason,
            identity=self._identity,
        )
        await self._workflow_service.call("SetConcurrencyLimit", request)

    async def list_concurrency_limits(self) -> list[ConcurrencyLimit]:
        """The namespace's concurrency limits by key, with their running and waiting activities."""
        request = pb.ListConcurrencyLimitsRequest(namespace=self._namespace)
        response: pb.ListConcurrencyLimitsResponse = await self._workflow_service.call("ListConcurrencyLimits", request)
        return [
            ConcurrencyLimit(
                concurrency_key=limit.concurrency_key,
                max_running=limit.max_running,
                running=limit.running,
                waiting=limit.waiting,
                update_time=_timestamp_to_datetime(limit.update_time, limit.HasField("update_time")),
            )
            for limit in response.limits
        ]

    async def set_rate_limit(
        self, per_second: float, *, task_queue: str = "", concurrency_key: str = "", reason: str = ""
    ) -> None:
        """Sets the namespace's dispatch rate limit on one task queue or one concurrency
        key (give exactly one), in activity tasks per second across every worker and
        server (Temporal's ``max_task_queue_activities_per_second``, set server-side);
        0 removes it. Needs the operator role; audited with ``reason``.

        Raises:
            RPCError: ``INVALID_ARGUMENT`` for both or neither target, or a negative rate.
        """
        request = pb.SetRateLimitRequest(
            namespace=self._namespace,
            task_queue=task_queue,
            concurrency_key=concurrency_key,
            per_second=per_second,
            reason=reason,
            identity=self._identity,
        )
        await self._workflow_service.call("SetRateLimit", request)

    async def list_rate_limits(self) -> list[RateLimit]:
        """The namespace's rate limits, queues first."""
        request = pb.ListRateLimitsRequest(namespace=self._namespace)
        response: pb.ListRateLimitsResponse = await self._workflow_service.call("ListRateLimits", request)
        return [
            RateLimit(
                task_queue=limit.task_queue,
                concurrency_key=limit.concurrency_key,
                per_second=limit.per_second,
                update_time=_timestamp_to_datetime(limit.update_time, limit.HasField("update_time")),
            )
            for limit in response.limits
        ]
