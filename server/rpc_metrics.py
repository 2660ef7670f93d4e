"""A gRPC server interceptor that counts and times every unary RPC
(``flowforge_rpc_requests_total{method,code}``, ``flowforge_rpc_latency_seconds{method}``).

It is the outermost interceptor, so refusals by the authentication interceptor are
counted with their code too. Streaming RPCs (health ``Watch``, reflection) pass
through untouched.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

import grpc

from flowforge.server.metrics import ServerMetrics

__all__ = ["RpcMetricsInterceptor"]

_Behavior = Callable[[Any, grpc.aio.ServicerContext[Any, Any]], Awaitable[Any]]


class RpcMetricsInterceptor(grpc.aio.ServerInterceptor):
    """Counts each unary RPC by method and status code, and observes its latency."""

    def __init__(self, metrics: ServerMetrics) -> None:
        self._metrics = metrics

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler[Any, Any] | None]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler[Any, Any] | None:
        handler = await continuation(handler_call_details)
        if handler is None or handler.unary_unary is None:
            return handler
        method: str = handler_call_details.method.rpartition("/")[2]
        return grpc.unary_unary_rpc_method_handler(
            self._measured(method, handler.unary_unary),  # type: ignore[arg-type]  # aio handlers are async
            request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer,
        )

    def _measured(self, method: str, inner: _Behavior) -> _Behavior:
        requests, latency = self._metrics.rpc_requests, self._metrics.rpc_latency

        async def measured(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
            began = time.perf_counter()
            code = grpc.StatusCode.UNKNOWN
            try:
                response = await inner(request, context)
                code = _code(context.code()) or grpc.StatusCode.OK
                return response
            except asyncio.CancelledError:
                code = grpc.StatusCode.CANCELLED
                raise
            except BaseException:
                code = _code(context.code()) or grpc.StatusCode.UNKNOWN
                raise
            finally:
                requests.labels(method, code.name).inc()
                latency.labels(method).observe(time.perf_counter() - began)

        return measured


def _code(value: object) -> grpc.StatusCode | None:
    """The status a handler set: grpc.aio reports it as a StatusCode or its number."""
    if isinstance(value, grpc.StatusCode):
        return value
    if isinstance(value, int):
        return next((c for c in grpc.StatusCode if c.value[0] == value), None)
    return None
