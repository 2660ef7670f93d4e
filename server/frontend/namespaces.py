"""Namespace RPCs: register, update, describe, list."""

from __future__ import annotations

import math
from typing import Protocol

from flowforge.api.v1 import workflow_service_pb2 as pb
from flowforge.server.errors import InvalidArgument
from flowforge.server.frontend._base import Context, ServiceBase, rpc
from flowforge.server.frontend.protos import namespace_proto
from flowforge.server.frontend.validation import name, seconds
from flowforge.server.history.namespaces import NamespaceChanges

__all__ = ["NamespaceHandlers"]

_DEFAULT_RETENTION_S = 30 * 24 * 3600
#: Retention is at most ten years.
MAX_RETENTION_S = 10 * 365 * 24 * 3600
MAX_DESCRIPTION = 1000
#: The largest max_running_executions and max_concurrent_activities (0: no limit).
MAX_QUOTA = 1_000_000_000
#: The largest start_rate, in starts per second (0: no limit).
MAX_START_RATE = 1_000_000.0


class _NamespaceSettings(Protocol):
    @property
    def description(self) -> str: ...
    @property
    def max_running_executions(self) -> int: ...
    @property
    def start_rate(self) -> float: ...
    @property
    def max_concurrent_activities(self) -> int: ...


def _description(value: str) -> str:
    if len(value) > MAX_DESCRIPTION:
        raise InvalidArgument(f"description is {len(value)} characters long; the limit is {MAX_DESCRIPTION}")
    return value


def _retention(request: pb.RegisterNamespaceRequest | pb.UpdateNamespaceRequest) -> int | None:
    if not request.HasField("retention"):
        return None
    value = seconds(request.retention, "retention")
    if value > MAX_RETENTION_S:
        raise InvalidArgument(f"retention may be at most {MAX_RETENTION_S}s (ten years)")
    if 0 < value < 1:
        raise InvalidArgument("retention must be at least 1s")
    return int(value) or None


def _quota(value: int, field: str) -> int:
    if not 0 <= value <= MAX_QUOTA:
        raise InvalidArgument(f"{field} must be between 0 (no limit) and {MAX_QUOTA}")
    return value


def _rate(value: float) -> float:
    if not math.isfinite(value) or not 0 <= value <= MAX_START_RATE:
        raise InvalidArgument(
            f"start_rate must be a number of starts per second from 0 (no limit) to {MAX_START_RATE:g}"
        )
    return value


def _changes(request: _NamespaceSettings, retention_s: int | None, present: set[str] | None) -> NamespaceChanges:
    """The settings of a request; with ``present``, only those fields (an update)."""

    def given(field: str) -> bool:
        return present is None or field in present

    return NamespaceChanges(
        description=_description(request.description) if given("description") else None,
        retention_s=retention_s,
        max_running_executions=(
            _quota(request.max_running_executions, "max_running_executions")
            if given("max_running_executions")
            else None
        ),
        start_rate=_rate(request.start_rate) if given("start_rate") else None,
        max_concurrent_activities=(
            _quota(request.max_concurrent_activities, "max_concurrent_activities")
            if given("max_concurrent_activities")
            else None
        ),
    )


class NamespaceHandlers(ServiceBase):
    @rpc
    async def RegisterNamespace(
        self, request: pb.RegisterNamespaceRequest, context: Context
    ) -> pb.RegisterNamespaceResponse:
        namespace = name(request.name, "name")
        changes = _changes(request, _retention(request) or _DEFAULT_RETENTION_S, None)
        row = await self._engine.register_namespace(namespace, changes)
        return pb.RegisterNamespaceResponse(namespace=namespace_proto(row))

    @rpc
    async def UpdateNamespace(self, request: pb.UpdateNamespaceRequest, context: Context) -> pb.UpdateNamespaceResponse:
        namespace = name(request.name, "name")
        present = {
            field
            for field in ("description", "max_running_executions", "start_rate", "max_concurrent_activities")
            if request.HasField(field)
        }
        changes = _changes(request, _retention(request), present)
        row = await self._engine.update_namespace(namespace, changes)
        return pb.UpdateNamespaceResponse(namespace=namespace_proto(row))

    @rpc
    async def DescribeNamespace(
        self, request: pb.DescribeNamespaceRequest, context: Context
    ) -> pb.DescribeNamespaceResponse:
        row = await self._engine.describe_namespace(name(request.name, "name"))
        return pb.DescribeNamespaceResponse(namespace=namespace_proto(row))

    @rpc
    async def ListNamespaces(self, request: pb.ListNamespacesRequest, context: Context) -> pb.ListNamespacesResponse:
        rows = await self._engine.list_namespaces()
        return pb.ListNamespacesResponse(namespaces=[namespace_proto(r) for r in rows])
