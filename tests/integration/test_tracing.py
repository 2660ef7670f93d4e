"""Tracing with ``flowforge.contrib.opentelemetry.TracingInterceptor``: a workflow with a
child, a signal and parallel activities gives one trace, under the caller's span, with
Temporal's span names, each span once and the parents docs/observability.md describes:

- in one process, with a worker without a cache (every workflow task replays the
  whole history first): replays emit no workflow span again;
- across two worker processes with a kill -9 of the first mid-run: the second replays
  the run and continues the same trace, adding no duplicate; the server, exporting to
  a test OTLP receiver (``--otlp-endpoint``), joins the trace with its RPC spans under
  the client's and worker's spans, and its store transactions under those.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from flowforge import Client
from flowforge.contrib.opentelemetry import TracingInterceptor
from flowforge.server import FlowForgeServer
from tests.integration._processes import ServerProcess, WorkerProcess, read_ledger
from tests.integration._reliability import DEADLINE_S, fast_worker
from tests.integration._traced_worker_app import Traced, TracedChild, shout, span_record
from testsupport.otlp_receiver import OtlpReceiver
from testsupport.waiting import wait_until

QUEUE = "traced"
EXPECTED = {
    "caller": 1,
    "StartWorkflow:Traced": 1,
    "RunWorkflow:Traced": 1,
    "StartChildWorkflow:TracedChild": 1,
    "RunWorkflow:TracedChild": 1,
    "StartActivity:shout": 3,
    "RunActivity:shout": 3,
    "SignalWorkflow:proceed": 1,
    "HandleSignal:proceed": 1,
}
# Each span's parent, by name (StartActivity hangs off the span that started its run).
PARENTS = {
    "StartWorkflow:Traced": {"caller"},
    "SignalWorkflow:proceed": {"caller"},
    "RunWorkflow:Traced": {"StartWorkflow:Traced"},
    "StartChildWorkflow:TracedChild": {"StartWorkflow:Traced"},
    "RunWorkflow:TracedChild": {"StartChildWorkflow:TracedChild"},
    "StartActivity:shout": {"StartWorkflow:Traced", "StartChildWorkflow:TracedChild"},
    "RunActivity:shout": {"StartActivity:shout"},
    "HandleSignal:proceed": {"SignalWorkflow:proceed"},
}


def check_trace(spans: list[dict[str, Any]]) -> None:
    """One trace, each span once, every parent as :data:`PARENTS` says."""
    assert Counter(s["name"] for s in spans) == EXPECTED
    assert len({s["trace_id"] for s in spans}) == 1, "spans of more than one trace"
    by_id = {s["span_id"]: s for s in spans}
    assert len(by_id) == len(spans)
    for span in spans:
        if span["name"] == "caller":
            continue
        assert span["parent_id"] in by_id, f"{span['name']} has no parent in the trace"
        assert by_id[span["parent_id"]]["name"] in PARENTS[span["name"]], span["name"]
    # Each attempt ran under its own StartActivity: three activities, three parents.
    assert len({s["parent_id"] for s in spans if s["name"] == "RunActivity:shout"}) == 3


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    memory = InMemorySpanExporter()
    yield memory
    memory.clear()


def traced_client_tracer(exporter: InMemorySpanExporter) -> TracerProvider:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider


async def test_replays_in_one_process_emit_each_span_once(
    server: FlowForgeServer, exporter: InMemorySpanExporter
) -> None:
    provider = traced_client_tracer(exporter)
    client = await Client.connect(
        f"127.0.0.1:{server.port}", interceptors=[TracingInterceptor(provider.get_tracer("test"))]
    )
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
    check_trace([span_record(s) for s in exporter.get_finished_spans()])


async def test_a_worker_killed_mid_run_leaves_one_trace_that_the_next_worker_continues(
    store_url: str, tmp_path: Path, exporter: InMemorySpanExporter
) -> None:
    async with OtlpReceiver() as receiver:
        server_process = ServerProcess(store_url, tmp_path, extra_args=("--otlp-endpoint", receiver.url))
        await asyncio.to_thread(server_process.start)
        try:
            client_and_worker_spans = await run_across_a_kill(server_process, tmp_path, exporter)
        finally:
            await asyncio.to_thread(server_process.stop)  # SIGTERM: the server exports what it buffered
        server_spans = list(receiver.spans)
    check_trace(client_and_worker_spans)
    check_server_spans(server_spans, client_and_worker_spans)


def check_server_spans(server_spans: list[dict[str, Any]], spans: list[dict[str, Any]]) -> None:
    """The server's spans are in the same trace, under the spans of the calls that caused them."""
    (trace_id,) = {s["trace_id"] for s in spans}
    by_id = {s["span_id"]: s for s in [*spans, *server_spans]}
    ours = [s for s in server_spans if s["trace_id"] == trace_id]
    names = Counter(s["name"] for s in ours)
    service = "flowforge.api.v1.WorkflowService/"
    assert names[service + "StartWorkflowExecution"] == 1, names
    assert names[service + "SignalWorkflowExecution"] == 1, names
    for span in ours:
        parent = by_id[span["parent_id"]]["name"]
        if span["name"] == service + "StartWorkflowExecution":
            assert parent == "StartWorkflow:Traced"
            assert span["attributes"]["flowforge.workflow_id"] == "traced-2"
        elif span["name"] == service + "SignalWorkflowExecution":
            assert parent == "SignalWorkflow:proceed"
        elif span["name"] == "store.transaction":
            assert parent.startswith(service)
    assert names["store.transaction"] >= 2


async def run_across_a_kill(
    server_process: ServerProcess, tmp_path: Path, exporter: InMemorySpanExporter
) -> list[dict[str, Any]]:
    """Runs the workflow, killing its first worker mid-run; returns the client's and workers' spans."""
    ledger = tmp_path / "spans.jsonl"
    provider = traced_client_tracer(exporter)
    client = await Client.connect(server_process.address, interceptors=[TracingInterceptor(provider.get_tracer("t"))])
    first = WorkerProcess(
        server_process.address, QUEUE, ledger, tmp_path, name="first", app="tests.integration._traced_worker_app"
    )
    second: WorkerProcess | None = None
    try:
        with provider.get_tracer("test").start_as_current_span("caller"):
            handle = await client.start_workflow(Traced.run, "c", id="traced-2", task_queue=QUEUE)

            async def waiting_for_the_signal() -> bool:
                events = [e.event_type for e in (await handle.fetch_history()).events]
                return "ChildWorkflowExecutionCompleted" in events and events[-1] == "WorkflowTaskCompleted"

            await wait_until(waiting_for_the_signal, timeout=DEADLINE_S, what="the run to wait for its signal")
            first.kill9()
            second = WorkerProcess(
                server_process.address,
                QUEUE,
                ledger,
                tmp_path,
                name="second",
                app="tests.integration._traced_worker_app",
            )
            await handle.signal(Traced.proceed)
            assert await asyncio.wait_for(handle.result(), DEADLINE_S) == ["C", "A", "B"]
    finally:
        first.stop()
        if second is not None:
            second.stop()
        await client.close()
    worker_spans = [line for line in read_ledger(ledger) if line["event"] == "span"]
    by_process = Counter(line["pid"] for line in worker_spans)
    assert by_process[first.process.pid] > 0 and second is not None and by_process[second.process.pid] > 0
    return [span_record(s) for s in exporter.get_finished_spans()] + worker_spans
