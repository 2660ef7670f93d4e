"""OpenTelemetry tracing for FlowForge clients and workers (Temporal's
``temporalio.contrib.opentelemetry``): ``Client.connect(..., interceptors=[TracingInterceptor()])``."""

from flowforge.contrib.opentelemetry._tracing import HEADER_KEY, TracingInterceptor

__all__ = ["HEADER_KEY", "TracingInterceptor"]
