"""The one way the server's interceptors wrap a unary RPC handler (observer, authentication,
malformed requests): the same handler with another behaviour, and maybe another deserializer."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, cast

import grpc

__all__ = ["UnaryBehavior", "with_behavior"]

#: What a unary aio handler runs: (request, context) -> response.
UnaryBehavior = Callable[[Any, grpc.aio.ServicerContext[Any, Any]], Awaitable[Any]]


def with_behavior(
    handler: grpc.RpcMethodHandler[Any, Any],
    wrap: Callable[[UnaryBehavior], UnaryBehavior],
    request_deserializer: Callable[[bytes], Any] | None = None,
) -> grpc.RpcMethodHandler[Any, Any]:
    """``handler`` (unary) running ``wrap`` of its behaviour instead, decoding requests with
    ``request_deserializer`` (its own when None) and encoding responses as it did."""
    # grpc's stubs type the behaviour as synchronous; an aio server's handlers are async.
    inner = cast(UnaryBehavior, handler.unary_unary)
    return grpc.unary_unary_rpc_method_handler(
        wrap(inner),
        request_deserializer=request_deserializer or handler.request_deserializer,
        response_serializer=handler.response_serializer,
    )
