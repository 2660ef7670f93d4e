"""The tracing interceptor: spans with Temporal's names, the W3C trace context in headers.

Spans (each with the ids as attributes, never payloads):

- client: ``StartWorkflow:TYPE``, ``SignalWorkflow:NAME``, ``QueryWorkflow:NAME``;
- workflow: ``RunWorkflow:TYPE`` when a run starts, ``HandleSignal:NAME`` when a
  signal reaches it, ``StartActivity:TYPE`` and ``StartChildWorkflow:TYPE`` when it
  schedules them;
- activity: ``RunActivity:TYPE`` around each attempt.

The trace context travels in the call's header under :data:`HEADER_KEY` (a JSON
payload of W3C ``traceparent``/``tracestate``), which the server records in history.
So the workflow side continues the caller's trace on whichever worker runs it, after
a crash too. Workflow spans are emitted as they happen and never while replaying
history (they last an instant: a run outlives workers), so a replay on another
worker adds no duplicate. Their parent is the span that started the run
(``StartWorkflow`` or the parent's ``StartChildWorkflow``), which every worker can
read from history, so the tree is the same whichever worker ran which part; a
signal's ``HandleSignal`` hangs off its ``SignalWorkflow``, an attempt's
``RunActivity`` off its ``StartActivity``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, MutableMapping
from contextlib import contextmanager
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Tracer
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from flowforge import activity, workflow
from flowforge._client_interceptors import (
    Interceptor as ClientInterceptor,
)
from flowforge._client_interceptors import (
    OutboundInterceptor,
    QueryWorkflowInput,
    SignalWorkflowInput,
    StartWorkflowInput,
)
from flowforge._worker_interceptors import (
    ActivityInboundInterceptor,
    ExecuteActivityInput,
    ExecuteWorkflowInput,
    HandleSignalInput,
    StartActivityInput,
    StartChildWorkflowInput,
    WorkflowInboundInterceptor,
    WorkflowInterceptorClassInput,
    WorkflowOutboundInterceptor,
    is_replaying,
)
from flowforge._worker_interceptors import (
    Interceptor as WorkerInterceptor,
)
from flowforge.api.v1 import common_pb2, workflow_service_pb2

__all__ = ["HEADER_KEY", "TracingInterceptor"]

#: The header that carries the trace context (Temporal's name).
HEADER_KEY = "_tracer-data"
_PROPAGATOR = TraceContextTextMapPropagator()


def _inject(headers: MutableMapping[str, common_pb2.Payload], context: otel_context.Context | None = None) -> None:
    carrier: dict[str, str] = {}
    _PROPAGATOR.inject(carrier, context=context)
    if carrier:
        headers[HEADER_KEY] = common_pb2.Payload(
            metadata={"encoding": b"json/plain"}, data=json.dumps(carrier, sort_keys=True).encode()
        )


def _extract(headers: Mapping[str, common_pb2.Payload]) -> otel_context.Context | None:
    payload = headers.get(HEADER_KEY)
    if payload is None:
        return None
    try:
        carrier = json.loads(payload.data)
    except ValueError:
        return None  # not ours to fail on: trace without a parent
    return _PROPAGATOR.extract(carrier) if isinstance(carrier, dict) else None


def _workflow_attributes() -> dict[str, str]:
    info = workflow.info()
    return {
        "flowforge.namespace": info.namespace,
        "flowforge.workflow_id": info.workflow_id,
        "flowforge.run_id": info.run_id,
    }


class TracingInterceptor(ClientInterceptor, WorkerInterceptor):
    """Traces a client and every worker built on it with OpenTelemetry.

    Args:
        tracer: The tracer to use; by default one from the global tracer provider.
    """

    def __init__(self, tracer: Tracer | None = None) -> None:
        self.tracer = tracer or trace.get_tracer("flowforge")

    def intercept_client(self, next: OutboundInterceptor) -> OutboundInterceptor:
        return _ClientOutbound(next, self.tracer)

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return _ActivityInbound(next, self.tracer)

    def workflow_interceptor_class(self, input: WorkflowInterceptorClassInput) -> type[WorkflowInboundInterceptor]:
        tracer = self.tracer

        class _BoundWorkflowInbound(_WorkflowInbound):
            _tracer = tracer

        return _BoundWorkflowInbound


@contextmanager
def _client_span(tracer: Tracer, name: str, attributes: dict[str, str]) -> Iterator[Span]:
    with tracer.start_as_current_span(name, kind=SpanKind.CLIENT, attributes=attributes) as span:
        yield span


class _ClientOutbound(OutboundInterceptor):
    def __init__(self, next: OutboundInterceptor, tracer: Tracer) -> None:
        super().__init__(next)
        self._tracer = tracer

    async def start_workflow(self, input: StartWorkflowInput) -> workflow_service_pb2.StartWorkflowExecutionResponse:
        attributes = {"flowforge.workflow_id": input.id, "flowforge.task_queue": input.task_queue}
        with _client_span(self._tracer, f"StartWorkflow:{input.workflow}", attributes) as span:
            _inject(input.headers)
            response = await super().start_workflow(input)
            span.set_attribute("flowforge.run_id", response.run_id)
            return response

    async def signal_workflow(self, input: SignalWorkflowInput) -> None:
        attributes = {"flowforge.workflow_id": input.id, "flowforge.run_id": input.run_id or ""}
        with _client_span(self._tracer, f"SignalWorkflow:{input.signal}", attributes):
            _inject(input.headers)
            await super().signal_workflow(input)

    async def query_workflow(self, input: QueryWorkflowInput) -> workflow_service_pb2.QueryWorkflowResponse:
        attributes = {"flowforge.workflow_id": input.id, "flowforge.run_id": input.run_id or ""}
        with _client_span(self._tracer, f"QueryWorkflow:{input.query}", attributes):
            return await super().query_workflow(input)


class _ActivityInbound(ActivityInboundInterceptor):
    def __init__(self, next: ActivityInboundInterceptor, tracer: Tracer) -> None:
        super().__init__(next)
        self._tracer = tracer

    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        info = activity.info()
        attributes: dict[str, str | int] = {
            "flowforge.namespace": info.namespace,
            "flowforge.workflow_id": info.workflow_id,
            "flowforge.run_id": info.run_id,
            "flowforge.activity_id": info.activity_id,
            "flowforge.attempt": info.attempt,
        }
        with self._tracer.start_as_current_span(
            f"RunActivity:{info.activity_type}",
            context=_extract(input.headers),
            kind=SpanKind.SERVER,
            attributes=attributes,
        ):
            return await super().execute_activity(input)


class _WorkflowInbound(WorkflowInboundInterceptor):
    """Emits the workflow's spans (never while replaying) and stamps its commands' headers."""

    _tracer: Tracer

    def __init__(self, next: WorkflowInboundInterceptor) -> None:
        super().__init__(next)
        # The span that started the run: the parent of the run's own spans.
        self.parent: otel_context.Context | None = None

    def init(self, outbound: WorkflowOutboundInterceptor) -> None:
        super().init(_WorkflowOutbound(outbound, self))

    def instant_span(self, name: str, parent: otel_context.Context | None, **attributes: str) -> Span | None:
        """A span that starts and ends now, unless history is being replayed (then None)."""
        if is_replaying():
            return None
        span = self._tracer.start_span(
            name, context=parent, kind=SpanKind.INTERNAL, attributes={**_workflow_attributes(), **attributes}
        )
        span.end()
        return span

    async def execute_workflow(self, input: ExecuteWorkflowInput) -> Any:
        self.parent = _extract(input.headers)
        self.instant_span(f"RunWorkflow:{input.workflow_type}", self.parent)
        return await super().execute_workflow(input)

    def handle_signal(self, input: HandleSignalInput) -> None:
        self.instant_span(f"HandleSignal:{input.signal}", _extract(input.headers))
        super().handle_signal(input)


class _WorkflowOutbound(WorkflowOutboundInterceptor):
    def __init__(self, next: WorkflowOutboundInterceptor, inbound: _WorkflowInbound) -> None:
        super().__init__(next)
        self._inbound = inbound

    def _stamp(self, name: str, headers: MutableMapping[str, common_pb2.Payload], **attributes: str) -> None:
        span = self._inbound.instant_span(name, self._inbound.parent, **attributes)
        if span is not None:
            _inject(headers, trace.set_span_in_context(span))

    def start_activity(self, input: StartActivityInput) -> Any:
        self._stamp(f"StartActivity:{input.activity_type}", input.headers)
        return super().start_activity(input)

    def start_child_workflow(self, input: StartChildWorkflowInput) -> Any:
        self._stamp(
            f"StartChildWorkflow:{input.workflow_type}", input.headers, **{"flowforge.child_workflow_id": input.id}
        )
        return super().start_child_workflow(input)
