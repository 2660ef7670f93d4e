"""Tracing with ``flowforge.contrib.opentelemetry.TracingInterceptor``: a workflow with a
child, a signal and parallel activities gives one trace with Temporal's span names and
the right parents, and replays (a worker without a cache replays the whole history for
every workflow task) emit no workflow span twice."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Iterator
from datetime import timedelta

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from flowforge import Client, activity, workflow
from flowforge.contrib.opentelemetry import TracingInterceptor
from flowforge.server import FlowForgeServer
from tests.integration._reliability import DEADLINE_S, fast_worker
from testsupport.waiting import wait_until

QUEUE = "traced"


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


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    memory = InMemorySpanExporter()
    yield memory
    memory.clear()


def check_trace(spans: list[ReadableSpan], workflow_id: str) -> None:
    """One trace (under the caller's span), each workflow span once, and the parents
    docs/observability.md describes."""
    (caller,) = [s for s in spans if s.name == "caller"]
    ours = [s for s in spans if s.attributes and s.attributes.get("flowforge.workflow_id", "").startswith(workflow_id)]
    assert {s.context.trace_id for s in ours} == {caller.context.trace_id}, "spans of more than one trace"
    names = Counter(s.name for s in ours)
    assert names == {
        "StartWorkflow:Traced": 1,
        "RunWorkflow:Traced": 1,
        "StartChildWorkflow:TracedChild": 1,
        "RunWorkflow:TracedChild": 1,
        "StartActivity:shout": 3,
        "RunActivity:shout": 3,
        "SignalWorkflow:proceed": 1,
        "HandleSignal:proceed": 1,
    }, names
    by_id = {s.context.span_id: s for s in [*ours, caller]}

    def parent(span: ReadableSpan) -> str:
        assert span.parent is not None, f"{span.name} has no parent"
        return by_id[span.parent.span_id].name

    for span in ours:
        if span.name in ("StartWorkflow:Traced", "SignalWorkflow:proceed"):
            assert parent(span) == "caller"
        elif span.name == "RunWorkflow:Traced" or span.name.startswith("StartChildWorkflow"):
            assert parent(span) == "StartWorkflow:Traced"
        elif span.name == "RunWorkflow:TracedChild":
            assert parent(span) == "StartChildWorkflow:TracedChild"
        elif span.name == "StartActivity:shout":
            assert parent(span) in {"StartWorkflow:Traced", "StartChildWorkflow:TracedChild"}
        elif span.name == "RunActivity:shout":
            assert parent(span) == "StartActivity:shout"
            assert span.attributes is not None and span.attributes["flowforge.attempt"] == 1
        elif span.name == "HandleSignal:proceed":
            assert parent(span) == "SignalWorkflow:proceed"


async def test_one_trace_right_parents_and_no_workflow_span_twice_under_replay(
    server: FlowForgeServer, exporter: InMemorySpanExporter
) -> None:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing = TracingInterceptor(provider.get_tracer("test"))
    client = await Client.connect(f"127.0.0.1:{server.port}", interceptors=[tracing])
    try:
        # No cache: every workflow task replays the run's whole history first.
        async with fast_worker(
            client, QUEUE, workflows=[Traced, TracedChild], activities=[shout], max_cached_workflows=0
        ):
            with provider.get_tracer("test").start_as_current_span("caller"):
                handle = await client.start_workflow(Traced.run, "c", id="traced-1", task_queue=QUEUE)
                await wait_until(
                    lambda: any(s.name == "RunWorkflow:TracedChild" for s in exporter.get_finished_spans()),
                    timeout=DEADLINE_S,
                    what="the child to run",
                )
                await handle.signal(Traced.proceed)
                assert await asyncio.wait_for(handle.result(), DEADLINE_S) == ["C", "A", "B"]
    finally:
        await client.close()
    check_trace(list(exporter.get_finished_spans()), "traced-1")
