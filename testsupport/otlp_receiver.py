"""A test OTLP/HTTP trace receiver: ``POST /v1/traces`` (protobuf) on a free local port,
keeping every span it is sent as a plain dict (name, trace/span/parent ids as ints,
attributes)."""

from __future__ import annotations

import socket
from typing import Any, Self

from aiohttp import web
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

__all__ = ["OtlpReceiver"]


class OtlpReceiver:
    """Collects spans exported to :attr:`url` (use as an async context manager)."""

    def __init__(self) -> None:
        self.spans: list[dict[str, Any]] = []
        self._runner: web.AppRunner | None = None
        self.url = ""

    async def __aenter__(self) -> Self:
        app = web.Application()
        app.router.add_post("/v1/traces", self._traces)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        await web.SockSite(self._runner, sock).start()
        return self

    async def __aexit__(self, *_: object) -> None:
        assert self._runner is not None
        await self._runner.cleanup()

    async def _traces(self, request: web.Request) -> web.Response:
        export = trace_service_pb2.ExportTraceServiceRequest.FromString(await request.read())
        for resource in export.resource_spans:
            for scope in resource.scope_spans:
                for span in scope.spans:
                    self.spans.append(
                        {
                            "name": span.name,
                            "trace_id": int.from_bytes(span.trace_id, "big"),
                            "span_id": int.from_bytes(span.span_id, "big"),
                            "parent_id": int.from_bytes(span.parent_span_id, "big") if span.parent_span_id else None,
                            "attributes": {a.key: a.value.string_value or a.value.int_value for a in span.attributes},
                        }
                    )
        return web.Response(
            body=trace_service_pb2.ExportTraceServiceResponse().SerializeToString(),
            content_type="application/x-protobuf",
        )
