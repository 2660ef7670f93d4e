"""Namespace RPCs: register, describe, list."""

from __future__ import annotations

from flowforge.api.v1 import workflow_service_pb2 as pb
from flowforge.server.frontend._base import Context, ServiceBase, rpc
from flowforge.server.frontend.protos import namespace_proto
from flowforge.server.frontend.validation import name, seconds

__all__ = ["NamespaceHandlers"]

_DEFAULT_RETENTION_S = 30 * 24 * 3600


class NamespaceHandlers(ServiceBase):
    @rpc
    async def RegisterNamespace(
        self, request: pb.RegisterNamespaceRequest, context: Context
    ) -> pb.RegisterNamespaceResponse:
        namespace = name(request.name, "name")
        retention = int(seconds(request.retention, "retention")) or _DEFAULT_RETENTION_S
        row = await self._engine.register_namespace(namespace, request.description, retention)
        return pb.RegisterNamespaceResponse(namespace=namespace_proto(row))

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
