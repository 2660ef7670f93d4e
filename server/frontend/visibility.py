"""Visibility RPCs (docs/visibility.md): list and count executions, register and list
custom search attributes."""

from __future__ import annotations

from flowforge.api.v1 import workflow_service_pb2 as pb
from flowforge.server.frontend._base import Context, ServiceBase, rpc
from flowforge.server.frontend.protos import execution_info, indexed_value_type
from flowforge.server.frontend.validation import list_filters, name, page_size, search_attribute_types
from flowforge.server.visibility import SYSTEM_ATTRIBUTES

__all__ = ["VisibilityHandlers"]


class VisibilityHandlers(ServiceBase):
    @rpc
    async def ListWorkflowExecutions(
        self, request: pb.ListWorkflowExecutionsRequest, context: Context
    ) -> pb.ListWorkflowExecutionsResponse:
        namespace = name(request.namespace, "namespace")
        size = page_size(request.page_size)
        equal = list_filters(request)
        rows, visibility, token = await self._engine.list_executions(
            namespace, request.query, page_size=size, page_token=request.next_page_token, equal=equal
        )
        return pb.ListWorkflowExecutionsResponse(
            executions=[execution_info(r, visibility[r.run_id]) for r in rows], next_page_token=token
        )

    @rpc
    async def CountWorkflowExecutions(
        self, request: pb.CountWorkflowExecutionsRequest, context: Context
    ) -> pb.CountWorkflowExecutionsResponse:
        count = await self._engine.count_executions(name(request.namespace, "namespace"), request.query)
        return pb.CountWorkflowExecutionsResponse(count=count)

    @rpc
    async def AddSearchAttributes(
        self, request: pb.AddSearchAttributesRequest, context: Context
    ) -> pb.AddSearchAttributesResponse:
        attributes = search_attribute_types(request)
        await self._engine.add_search_attributes(name(request.namespace, "namespace"), attributes)
        return pb.AddSearchAttributesResponse()

    @rpc
    async def ListSearchAttributes(
        self, request: pb.ListSearchAttributesRequest, context: Context
    ) -> pb.ListSearchAttributesResponse:
        custom = await self._engine.list_search_attributes(name(request.namespace, "namespace"))
        return pb.ListSearchAttributesResponse(
            custom_attributes={attribute: indexed_value_type(t) for attribute, t in custom.items()},
            system_attributes={attribute: indexed_value_type(t) for attribute, (_, t) in SYSTEM_ATTRIBUTES.items()},
        )
