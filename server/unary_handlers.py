"""The one way the server's interceptors wrap an RPC handler (observer, authentication,
malformed requests): the same handler with another behaviour, and maybe another deserializer.
Unary handlers and bidirectional streams (the worker stream) are wrapped alike, once per
method (:class:`WrappedHandlers`), and the chain of interceptors is run once per method
(:class:`InterceptorChain`)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any, TypeAlias, cast

import grpc

__all__ = [
    "InterceptorChain",
    "StreamBehavior",
    "UnaryBehavior",
    "WrappedHandlers",
    "with_behavior",
    "with_stream_behavior",
]

#: What a unary aio handler runs: (request, context) -> response.
UnaryBehavior = Callable[[Any, grpc.aio.ServicerContext[Any, Any]], Awaitable[Any]]
#: What a bidirectional streaming aio handler runs: (request iterator, context), writing
#: its responses with ``context.write``.
StreamBehavior = Callable[[AsyncIterator[Any], grpc.aio.ServicerContext[Any, Any]], Awaitable[None]]


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


def with_stream_behavior(
    handler: grpc.RpcMethodHandler[Any, Any],
    wrap: Callable[[StreamBehavior], StreamBehavior],
    request_deserializer: Callable[[bytes], Any] | None = None,
) -> grpc.RpcMethodHandler[Any, Any]:
    """:func:`with_behavior` for a bidirectional streaming ``handler``."""
    inner = cast(StreamBehavior, handler.stream_stream)
    return grpc.stream_stream_rpc_method_handler(
        wrap(inner),
        request_deserializer=request_deserializer or handler.request_deserializer,
        response_serializer=handler.response_serializer,
    )


_Handler: TypeAlias = "grpc.RpcMethodHandler[Any, Any]"


class WrappedHandlers:
    """The handler an interceptor built for each method, built once.

    An interceptor is handed, for a method, the same handler on every call (the
    registered one, or the one the next interceptor built and kept here), so
    wrapping it anew per call would only cost time on every RPC. Methods are the
    registered ones only (an unknown method has no handler), so this stays small.
    """

    def __init__(self) -> None:
        self._built: dict[str, tuple[_Handler, _Handler]] = {}

    def get(self, method: str, handler: _Handler, build: Callable[[], _Handler]) -> _Handler:
        """What ``build`` makes of ``handler`` for ``method``: the kept one while ``handler``
        is the same object it was built from, else built now and kept."""
        kept = self._built.get(method)
        if kept is not None and kept[0] is handler:
            return kept[1]
        built = build()
        self._built[method] = (handler, built)
        return built


class InterceptorChain(grpc.aio.ServerInterceptor):
    """The server's interceptors, the first outermost, run once per method.

    grpc.aio runs every interceptor's ``intercept_service`` on every call, each awaiting
    the next. The server's interceptors decide by the method and the handler they wrap
    alone (never by a call's metadata: what a call carries is read by the behaviour they
    build), so the handler they build together for a method is kept and handed out to
    its later calls while the registered handler is the same object. Unknown methods
    (no handler) are not kept.

    Args:
        interceptors: The interceptors, as ``grpc.aio.server(interceptors=...)`` takes them.
    """

    def __init__(self, interceptors: Sequence[grpc.aio.ServerInterceptor]) -> None:
        self._interceptors = tuple(interceptors)
        self._built: dict[str, tuple[_Handler, _Handler | None]] = {}

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[_Handler | None]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> _Handler | None:
        handler = await continuation(handler_call_details)
        if handler is None:
            return await self._through(0, handler, handler_call_details)
        method: str = handler_call_details.method
        kept = self._built.get(method)
        if kept is not None and kept[0] is handler:
            return kept[1]
        built = await self._through(0, handler, handler_call_details)
        self._built[method] = (handler, built)
        return built

    async def _through(self, index: int, handler: _Handler | None, details: grpc.HandlerCallDetails) -> _Handler | None:
        """What the interceptors from ``index`` on make of ``handler``."""
        if index == len(self._interceptors):
            return handler

        async def inner(inner_details: grpc.HandlerCallDetails) -> _Handler | None:
            return await self._through(index + 1, handler, inner_details)

        return await self._interceptors[index].intercept_service(inner, details)
