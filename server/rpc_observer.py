"""What the server records about every unary RPC, in one outermost interceptor:

- metrics: ``flowforge_rpc_requests_total{method,code}`` and
  ``flowforge_rpc_latency_seconds{method}`` (refusals by the authentication
  interceptor, which runs inside this one, are counted with their code too);
- a span, when the server traces (``--otlp-endpoint``) and the call belongs to a
  trace (server/tracing.py), with its store transactions as children;
- log fields: the request's namespace, workflow id and run id are bound for every
  line logged while it is handled (:func:`flowforge.logging.bind`), and at DEBUG
  each RPC is logged with its code and time (an access log).

Streaming RPCs (health ``Watch``, reflection) pass through untouched.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import grpc
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer
from prometheus_client import Counter

from flowforge.logging import bind
from flowforge.server.metrics import ServerMetrics
from flowforge.server.tracing import caller_context
from flowforge.server.unary_handlers import UnaryBehavior, WrappedHandlers, with_behavior

__all__ = ["RpcObserver"]

log = logging.getLogger("flowforge.server.rpc")

# What a call gets for a span when the server does not trace (reusable, costs nothing).
_UNTRACED: contextlib.nullcontext[None] = contextlib.nullcontext()


class RpcObserver(grpc.aio.ServerInterceptor):
    """Counts and times each unary RPC, and binds its ids to the log lines it causes."""

    def __init__(self, metrics: ServerMetrics, tracer: Tracer | None = None) -> None:
        self._metrics = metrics
        self._tracer = tracer
        self._handlers = WrappedHandlers()

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler[Any, Any] | None]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler[Any, Any] | None:
        handler = await continuation(handler_call_details)
        if handler is None or handler.unary_unary is None:
            return handler
        full_method: str = handler_call_details.method
        return self._handlers.get(
            full_method, handler, lambda: with_behavior(handler, lambda inner: self._observed(full_method, inner))
        )

    def _observed(self, full_method: str, inner: UnaryBehavior) -> UnaryBehavior:
        method = full_method.rpartition("/")[2]
        # The method's series, looked up once (labels() takes a lock and builds a key).
        latency = self._metrics.rpc_latency.labels(method)
        requests: dict[grpc.StatusCode, Counter] = {}

        async def observed(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
            began = time.perf_counter()
            code = grpc.StatusCode.UNKNOWN
            ids = _ids(request)
            spanned = self._span(full_method, request, context, ids) if self._tracer is not None else _UNTRACED
            with bind(**ids), spanned as span:
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
                    if span is not None:
                        span.set_attribute("rpc.grpc.status_code", code.value[0])
                        if code != grpc.StatusCode.OK:
                            span.set_status(Status(StatusCode.ERROR, code.name))
                    took = time.perf_counter() - began
                    counter = requests.get(code)
                    if counter is None:
                        counter = requests[code] = self._metrics.rpc_requests.labels(method, code.name)
                    counter.inc()
                    latency.observe(took)
                    if log.isEnabledFor(logging.DEBUG):  # the access log
                        log.debug("%s answered %s in %.3f s", method, code.name, took)

        return observed

    @contextlib.contextmanager
    def _span(
        self, full_method: str, request: Any, context: grpc.aio.ServicerContext[Any, Any], ids: dict[str, str]
    ) -> Iterator[Span | None]:
        """The RPC's server span, current while it is handled; None when not traced."""
        parent = caller_context(context.invocation_metadata(), request) if self._tracer is not None else None
        if self._tracer is None or parent is None:
            yield None
            return
        service, _, method = full_method.lstrip("/").partition("/")
        attributes = {"rpc.system": "grpc", "rpc.service": service, "rpc.method": method}
        attributes.update((f"flowforge.{name}", value) for name, value in ids.items() if value)
        with self._tracer.start_as_current_span(
            full_method.lstrip("/"),
            context=parent,
            kind=SpanKind.SERVER,
            attributes=attributes,
            record_exception=False,
            set_status_on_exception=False,
        ) as span:
            yield span


def _ids(request: Any) -> dict[str, str]:
    """The namespace, workflow id and run id a request names (no payloads)."""
    sources = _ID_SOURCES.get(type(request))
    if sources is None:
        sources = _ID_SOURCES[type(request)] = _id_sources(request)
    namespace, execution_field, workflow_id, run_id = sources
    execution = getattr(request, execution_field) if execution_field else request
    return {
        "namespace": getattr(request, namespace) if namespace else "",
        "workflow_id": getattr(execution, workflow_id) if workflow_id else "",
        "run_id": getattr(execution, run_id) if run_id else "",
    }


# The fields _ids reads, by request type: looked up once, since a getattr of a field a
# message does not have raises (and catches) an AttributeError inside protobuf each call.
_ID_SOURCES: dict[type, tuple[str, str, str, str]] = {}


def _id_sources(request: Any) -> tuple[str, str, str, str]:
    """(namespace field, execution field, workflow id field, run id field) of
    ``request``'s type, each "" where it has none; the ids come from the execution
    message when the request has a ``workflow_execution``, else from the request."""
    fields = getattr(getattr(request, "DESCRIPTOR", None), "fields_by_name", {})
    execution = fields["workflow_execution"].message_type if "workflow_execution" in fields else None
    inner = execution.fields_by_name if execution is not None else fields

    def named(candidates: Any, name: str) -> str:
        return name if name in candidates else ""

    return (
        named(fields, "namespace"),
        "workflow_execution" if execution is not None else "",
        named(inner, "workflow_id"),
        named(inner, "run_id"),
    )


def _code(value: object) -> grpc.StatusCode | None:
    """The status a handler set: grpc.aio reports it as a StatusCode or its number."""
    if isinstance(value, grpc.StatusCode):
        return value
    if isinstance(value, int):
        return next((c for c in grpc.StatusCode if c.value[0] == value), None)
    return None
