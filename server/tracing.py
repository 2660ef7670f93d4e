"""The server's own spans, exported over OTLP when ``--otlp-endpoint`` is given.

The server joins a caller's trace: an RPC that carries a W3C ``traceparent`` (the SDK
sends the current span's with every call) or a header with the trace context (a start
or a signal from a traced client) gets a server span under it, and each store
transaction of that RPC a child span. RPCs outside any trace (a worker's idle polls)
get none, so tracing costs nothing where nobody looks.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import Tracer
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from flowforge.contrib.opentelemetry import HEADER_KEY
from flowforge.contrib.opentelemetry._tracing import _extract

__all__ = ["ServerTracing", "caller_context"]

_PROPAGATOR = TraceContextTextMapPropagator()


class ServerTracing:
    """A tracer provider exporting to an OTLP/HTTP endpoint (``http://collector:4318``).

    Args:
        endpoint: The collector's base URL; spans go to ``{endpoint}/v1/traces``.
        service_name: ``service.name`` of the spans.
    """

    def __init__(self, endpoint: str, service_name: str = "flowforge-server") -> None:
        self._provider = TracerProvider(resource=Resource.create({"service.name": service_name}))
        exporter = OTLPSpanExporter(endpoint=endpoint.rstrip("/") + "/v1/traces")
        self._provider.add_span_processor(BatchSpanProcessor(exporter, schedule_delay_millis=1000))
        #: The tracer of the server's spans.
        self.tracer: Tracer = self._provider.get_tracer("flowforge.server")

    def shutdown(self) -> None:
        """Exports what is buffered and stops."""
        self._provider.shutdown()


def caller_context(metadata: Iterable[tuple[str, Any]] | None, request: Any) -> otel_context.Context | None:
    """The trace an RPC belongs to: its ``traceparent`` metadata, else the trace context
    in its header (a traced start or signal), else None (no span)."""
    carrier = {key: value for key, value in metadata or () if key in ("traceparent", "tracestate")}
    if carrier:
        return _PROPAGATOR.extract(carrier)
    header = getattr(request, "header", None)
    fields: Mapping[str, Any] = getattr(header, "fields", {})
    return _extract(fields) if HEADER_KEY in fields else None
