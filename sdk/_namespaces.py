"""Namespaces as the client creates, changes and lists them."""

from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta

from flowforge._rpc import WorkflowServiceClient
from flowforge._workflow_executions import _timestamp_to_datetime
from flowforge.api.v1 import workflow_service_pb2

__all__ = ["NamespaceDescription"]


@dataclasses.dataclass(frozen=True)
class NamespaceDescription:
    """A namespace as :meth:`Client.describe_namespace` and :meth:`Client.list_namespaces` return it.

    Attributes:
        name: The namespace's name.
        description: What it is for, for people.
        retention: How long closed executions are kept.
        create_time: When it was created (UTC).
        max_running_executions: Starts are refused while this many runs are running (0: no limit).
        start_rate: Starts admitted per second, in bursts of up to ``max(1, start_rate)`` (0: no limit).
        max_concurrent_activities: Activity tasks leased at once at most; more wait in
            their queue (0: no limit).
        last_purge_time: When the retention sweeper last purged closed runs, if ever (UTC).
        purged_executions: How many closed runs retention has purged in all.
    """

    name: str
    description: str
    retention: timedelta
    create_time: datetime | None
    max_running_executions: int = 0
    start_rate: float = 0.0
    max_concurrent_activities: int = 0
    last_purge_time: datetime | None = None
    purged_executions: int = 0

    @classmethod
    def _from_proto(cls, proto: workflow_service_pb2.Namespace) -> NamespaceDescription:
        return cls(
            name=proto.name,
            description=proto.description,
            retention=proto.retention.ToTimedelta(),
            create_time=_timestamp_to_datetime(proto.create_time, proto.HasField("create_time")),
            max_running_executions=proto.max_running_executions,
            start_rate=proto.start_rate,
            max_concurrent_activities=proto.max_concurrent_activities,
            last_purge_time=_timestamp_to_datetime(proto.last_purge_time, proto.HasField("last_purge_time")),
            purged_executions=proto.purged_executions,
        )


class _NamespaceCalls:
    """The namespace calls of :class:`flowforge.client.Client` (a base class of it)."""

    _workflow_service: WorkflowServiceClient

    async def register_namespace(
        self,
        name: str,
        *,
        description: str = "",
        retention: timedelta | None = None,
        max_running_executions: int = 0,
        start_rate: float = 0.0,
        max_concurrent_activities: int = 0,
    ) -> None:
        """Creates a namespace.

        Args:
            name: The namespace's name.
            description: What it is for, for people.
            retention: How long closed executions are kept; the server's default
                when ``None``.
            max_running_executions: Quota: starts are refused (``RESOURCE_EXHAUSTED``)
                while this many runs are running; 0 is no limit.
            start_rate: Quota: starts admitted per second; 0 is no limit.
            max_concurrent_activities: Quota: activity tasks leased at once; more
                wait in their queue; 0 is no limit.

        Raises:
            RPCError: ``ALREADY_EXISTS`` when the namespace exists, or another refusal.
        """
        request = workflow_service_pb2.RegisterNamespaceRequest(
            name=name,
            description=description,
            max_running_executions=max_running_executions,
            start_rate=start_rate,
            max_concurrent_activities=max_concurrent_activities,
        )
        if retention is not None:
            request.retention.FromTimedelta(retention)
        await self._workflow_service.call("RegisterNamespace", request)

    async def update_namespace(
        self,
        name: str,
        *,
        description: str | None = None,
        retention: timedelta | None = None,
        max_running_executions: int | None = None,
        start_rate: float | None = None,
        max_concurrent_activities: int | None = None,
    ) -> NamespaceDescription:
        """Changes the settings given (``None`` keeps one) and returns the namespace.

        Args are those of :meth:`register_namespace`; a quota of 0 removes it.

        Raises:
            RPCError: ``NOT_FOUND`` when there is no such namespace, or another refusal.
        """
        request = workflow_service_pb2.UpdateNamespaceRequest(name=name)
        if description is not None:
            request.description = description
        if retention is not None:
            request.retention.FromTimedelta(retention)
        if max_running_executions is not None:
            request.max_running_executions = max_running_executions
        if start_rate is not None:
            request.start_rate = start_rate
        if max_concurrent_activities is not None:
            request.max_concurrent_activities = max_concurrent_activities
        response = await self._workflow_service.call("UpdateNamespace", request)
        return NamespaceDescription._from_proto(response.namespace)

    async def describe_namespace(self, name: str) -> NamespaceDescription:
        """One namespace.

        Raises:
            RPCError: ``NOT_FOUND`` when there is no such namespace.
        """
        request = workflow_service_pb2.DescribeNamespaceRequest(name=name)
        response = await self._workflow_service.call("DescribeNamespace", request)
        return NamespaceDescription._from_proto(response.namespace)

    async def list_namespaces(self) -> list[NamespaceDescription]:
        """Every namespace of the server, by name."""
        response = await self._workflow_service.call("ListNamespaces", workflow_service_pb2.ListNamespacesRequest())
        return [NamespaceDescription._from_proto(namespace) for namespace in response.namespaces]
