"""The flow-control calls of :class:`flowforge.client.Client`: fleet-wide
concurrency limits per key (docs/flow-control.md)."""

from __future__ import annotations

import dataclasses
from datetime import datetime

from flowforge._rpc import WorkflowServiceClient
from flowforge._workflow_executions import _timestamp_to_datetime
from flowforge.api.v1 import flow_control_pb2 as pb

__all__ = ["ConcurrencyLimit"]


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
