"""Eager start (docs/worker-stream.md): a start whose queue has a worker stream's
workflow poll waiting in the same server leases the run's first workflow task to that
stream in the start's own transaction, each store in turn; without one it is a start as
before, and a stream that goes away before the hand-over gets the lease released."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from flowforge.api.v1 import common_pb2
from flowforge.server import FlowForgeServer, ServerConfig
from flowforge.server.history import EagerStart
from tests.integration._protocol import NS, Wire, event_types
from tests.integration._stream_client import WORKFLOW, RawWorkerStream, credit
from testsupport.counting import StoreCounters
from testsupport.waiting import wait_until


@pytest.fixture
async def server(store_url: str) -> AsyncIterator[FlowForgeServer]:
    """A server whose parked polls never look again on their own (no periodic re-check
    during a test), so a poll seen waiting stays claimable."""
    instance = FlowForgeServer(ServerConfig(store=store_url, port=0, poll_recheck_interval_s=300.0))
    await instance.start()
    yield instance
    await instance.stop()


def _queue() -> str:
    return f"eager-{uuid.uuid4().hex[:8]}"


async def _idle(server: FlowForgeServer, queue: str, count: int = 1) -> None:
    await wait_until(
        lambda: server.matching.idle_workflow_polls(NS, queue) == count,
        timeout=10.0,
        what="the stream's polls to wait on the queue",
        interval=0.01,
    )


async def test_a_start_with_a_stream_poll_waiting_is_pushed_with_one_commit(
    server: FlowForgeServer, wire: Wire
) -> None:
    queue = _queue()
    stream = RawWorkerStream(wire.channel)
    try:
        await stream.hello(NS, credit(queue, WORKFLOW), identity="eager-worker")
        await _idle(server, queue)
        store = StoreCounters(server.store)
        await wire.start(f"{queue}-1", task_queue=queue)
        (pushed,) = await stream.tasks(1)
        # The start's transaction leased the task: no lease transaction of its own.
        assert store.counts["write_transactions"] == 1, dict(store.counts)
        assert pushed.workflow_task.workflow_execution.workflow_id == f"{queue}-1"
        history = await wire.history(f"{queue}-1")
        assert [t for _, t, _ in history] == [
            "WorkflowExecutionStarted",
            "WorkflowTaskScheduled",
            "WorkflowTaskStarted",
        ]
        assert history[-1][2]["identity"] == "eager-worker"
        assert history[-1][2]["scheduled_event_id"] == 2
    finally:
        stream.cancel()


async def test_a_start_with_no_stream_poll_waiting_is_leased_by_a_poll_as_before(
    server: FlowForgeServer, wire: Wire
) -> None:
    queue = _queue()
    store = StoreCounters(server.store)
    await wire.start(f"{queue}-1", task_queue=queue)
    task = await wire.poll_workflow_task(queue)
    assert task.workflow_execution.workflow_id == f"{queue}-1"
    assert store.counts["write_transactions"] == 2, dict(store.counts)  # the start, then the poll's lease
    assert event_types(await wire.history(f"{queue}-1"))[-1] == "WorkflowTaskStarted"


async def test_a_stream_gone_before_the_hand_over_has_the_lease_released_at_once(
    server: FlowForgeServer, wire: Wire
) -> None:
    queue = _queue()
    stream = RawWorkerStream(wire.channel)
    await stream.hello(NS, credit(queue, WORKFLOW))
    await _idle(server, queue)
    # Hold the start after its claim of the stream's poll, before its transaction.
    engine = server.engine
    entered, gate = asyncio.Event(), asyncio.Event()
    ensure_namespace: Callable[[str], Awaitable[None]] = engine.ensure_namespace

    async def held(namespace: str) -> None:
        entered.set()
        await gate.wait()
        await ensure_namespace(namespace)

    engine.ensure_namespace = held  # type: ignore[method-assign]
    try:
        start = asyncio.create_task(wire.start(f"{queue}-1", task_queue=queue))
        await asyncio.wait_for(entered.wait(), 10.0)
        assert server.matching.idle_workflow_polls(NS, queue) == 0  # claimed
        stream.cancel()
        await wait_until(
            lambda: (engine.metrics.registry.get_sample_value("flowforge_worker_streams") or 0) == 0,
            timeout=10.0,
            what="the server to close the stream",
            interval=0.01,
        )
    finally:
        engine.ensure_namespace = ensure_namespace  # type: ignore[method-assign]
        gate.set()
    await start
    # Offered again at once (the task's lease has its whole timeout left): the next attempt.
    task = await wire.poll_workflow_task(queue, timeout=5.0)
    assert task.workflow_execution.workflow_id == f"{queue}-1"
    assert task.attempt == 2


async def test_a_signal_with_start_that_creates_a_run_is_pushed_and_one_that_signals_hands_nothing(
    server: FlowForgeServer, wire: Wire
) -> None:
    queue = _queue()
    stream = RawWorkerStream(wire.channel)
    try:
        await stream.hello(NS, credit(queue, WORKFLOW, 2))
        await _idle(server, queue, 2)
        store = StoreCounters(server.store)
        await wire.start(f"{queue}-1", task_queue=queue, start_signal="go")
        (pushed,) = await stream.tasks(1)
        assert pushed.workflow_task.workflow_execution.workflow_id == f"{queue}-1"
        assert store.counts["write_transactions"] == 1, dict(store.counts)
        types = event_types(await wire.history(f"{queue}-1"))
        assert types[0] == "WorkflowExecutionStarted" and types[-1] == "WorkflowTaskStarted"
        assert "WorkflowExecutionSignaled" in types
        # The run is running: the second signals it and leases nothing (its task is leased).
        await _idle(server, queue, 1)
        await wire.start(f"{queue}-1", task_queue=queue, start_signal="go")
        await _idle(server, queue, 1)  # the claimed poll was handed nothing and waits again
    finally:
        stream.cancel()


async def test_a_poll_cancelled_right_after_the_hand_over_gives_the_lease_back(
    server: FlowForgeServer, wire: Wire
) -> None:
    # The hand-over and the poll's cancellation in the same turn of the event loop: the
    # lease reached the poll but will never be pushed, so the poll gives it back itself.
    queue = _queue()
    poll = asyncio.create_task(server.matching.poll_workflow_task(NS, queue, "doomed", 60.0, claimable=True))
    await _idle(server, queue)
    claimed = server.matching.claim_idle_workflow_poll(NS, queue)
    assert claimed is not None and claimed.identity == "doomed"
    eager = EagerStart(claimed.identity)
    await server.engine.start_workflow(
        namespace=NS,
        workflow_id=f"{queue}-1",
        workflow_type="wf",
        task_queue=queue,
        input=common_pb2.Payloads(),
        request_id=f"{queue}-1",
        identity="starter",
        execution_timeout_s=0,
        run_timeout_s=0,
        task_timeout_s=0,
        eager=eager,
    )
    assert eager.started is not None
    await server.matching.hand_over(claimed, eager.started)
    poll.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await poll
    task = await wire.poll_workflow_task(queue, timeout=5.0)
    assert task.workflow_execution.workflow_id == f"{queue}-1"
    assert task.attempt == 2
