"""A traced worker process for tests/integration/test_tracing.py: its spans go to the
ledger (``FLOWFORGE_TEST_LEDGER``) one JSON line each, written as each span ends, so
what a worker emitted before a kill -9 is kept.

    python -m tests.integration._traced_worker_app ADDRESS TASK_QUEUE
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Sequence
from datetime import timedelta

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

from flowforge import Client, activity, workflow
from flowforge.contrib.opentelemetry import TracingInterceptor
from flowforge.worker import Worker
from tests.integration._processes import record


def span_record(span: ReadableSpan) -> dict[str, object]:
    """What the test checks of a span, as plain JSON."""
    assert span.context is not None
    return {
        "name": span.name,
        "trace_id": span.context.trace_id,
        "span_id": span.context.span_id,
        "parent_id": span.parent.span_id if span.parent is not None else None,
        "attributes": dict(span.attributes or {}),
    }


class LedgerSpanExporter(SpanExporter):
    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        for span in spans:
            record(event="span", **span_record(span))
        return SpanExportResult.SUCCESS


@activity.defn
async def shout(text: str) -> str:
    return text.upper()


@workflow.defn
class TracedChild:
    @workflow.run
    async def run(self, text: str) -> str:
        return await workflow.execute_activity(shout, text, start_to_close_timeout=timedelta(seconds=10))


@workflow.defn
class Traced:
    """A child, then a signal, then two activities in parallel."""

    def __init__(self) -> None:
        self.go = False

    @workflow.signal
    def proceed(self) -> None:
        self.go = True

    @workflow.run
    async def run(self, text: str) -> list[str]:
        child = await workflow.execute_child_workflow(TracedChild.run, text, id=f"{workflow.info().workflow_id}-child")
        await workflow.wait_condition(lambda: self.go)
        a, b = await asyncio.gather(
            workflow.execute_activity(shout, "a", start_to_close_timeout=timedelta(seconds=10)),
            workflow.execute_activity(shout, "b", start_to_close_timeout=timedelta(seconds=10)),
        )
        return [child, a, b]


async def main(address: str, task_queue: str) -> None:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(LedgerSpanExporter()))
    client = await Client.connect(address, interceptors=[TracingInterceptor(provider.get_tracer("worker"))])
    await Worker(
        client,
        task_queue=task_queue,
        workflows=[Traced, TracedChild],
        activities=[shout],
        graceful_shutdown_timeout=timedelta(seconds=0),
    ).run()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
