"""Sticky execution: a worker that keeps a run cached gets only its new events.

The workflow task handed back with a report (an activity completion, or a workflow
task completion with ``return_new_workflow_task``) carries the history from the
event the reporting worker's cached instance stopped at; a worker that lost the
instance meanwhile reads the rest with ``GetWorkflowExecutionHistory``.

The SDK workers here do not fold workflow tasks into activity completions
(``fold_workflow_tasks=False``): a fold leaves no workflow task to hand back, and this is
the path a completion takes when it cannot fold (tests/integration/test_folding_worker.py).
"""

from __future__ import annotations

import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import grpc
import pytest

from flowforge import Client, workflow
from flowforge.api.v1 import workflow_service_pb2
from flowforge.converter import default_converter
from flowforge.server import FlowForgeServer
from flowforge.worker import Worker
from tests.integration._processes import ServerProcess, WorkerProcess, read_ledger
from tests.integration._protocol import NS, Wire, schedule_activity
from tests.integration._worker_app import ManySteps
from testsupport.waiting import wait_until
from testsupport.workloads import noop

STEPS = 20


@workflow.defn
class Sequence:
    """``steps`` activities one after another, then ``steps`` timers of 1 ms."""

    @workflow.run
    async def run(self, steps: int) -> int:
        total = 0
        for i in range(steps):
            total += await workflow.execute_activity(noop, i, start_to_close_timeout=timedelta(seconds=30))
        return total


class HistoriesSeen:
    """Wraps a client's service: the workflow tasks its worker received, and history reads.

    Tasks are seen where responses are decoded and claims made where requests are
    encoded, which both worker transports (unary calls and the worker stream) go through.
    """

    def __init__(self, client: Client, *, claim_cached_through: int = 0) -> None:
        self.first_event_ids: list[int] = []
        self.events = 0
        self.history_reads = 0
        """GetWorkflowExecutionHistory calls other than result()'s long poll."""
        service = client.workflow_service
        call, encode, decode = service.call, service.encode_request, service.decode_response

        async def counted(rpc: str, request: Any, **kwargs: Any) -> Any:
            if rpc == "GetWorkflowExecutionHistory" and not (request.wait_new_event or request.close_event_only):
                self.history_reads += 1
            return await call(rpc, request, **kwargs)

        async def claimed(rpc: str, request: Any) -> Any:
            if claim_cached_through and rpc == "RespondActivityTaskCompleted" and request.eager_workflow_task_queue:
                # As if the worker held the run cached but lost it before the answer came.
                request.eager_workflow_task_cached_event_id = claim_cached_through
            return await encode(rpc, request)

        async def seen(rpc: str, response: Any) -> Any:
            response = await decode(rpc, response)
            task = response if rpc == "PollWorkflowTaskQueue" else getattr(response, "workflow_task", None)
            if task is not None and task.task_token and not task.HasField("query"):
                self.first_event_ids.append(task.history[0].event_id)
                self.events += len(task.history)
            return response

        service.call = counted  # type: ignore[method-assign]
        service.encode_request = claimed  # type: ignore[method-assign]
        service.decode_response = seen  # type: ignore[method-assign]


async def test_a_worker_that_keeps_the_run_cached_gets_only_the_new_events(server: FlowForgeServer) -> None:
    client = await Client.connect(f"127.0.0.1:{server.port}")
    seen = HistoriesSeen(client)
    queue = f"sticky-{uuid.uuid4().hex[:8]}"
    try:
        async with Worker(client, task_queue=queue, workflows=[Sequence], activities=[noop], fold_workflow_tasks=False):
            handle = await client.start_workflow(Sequence.run, STEPS, id=f"seq-{queue}", task_queue=queue)
            assert await handle.result() == sum(range(STEPS))
        assert seen.history_reads == 0
        history = await handle.fetch_history()
    finally:
        await client.close()
    tasks = len(seen.first_event_ids)
    assert tasks == STEPS + 1
    # The first task is polled (whole history); every later one continues the cache.
    assert seen.first_event_ids[0] == 1
    assert all(first > 1 for first in seen.first_event_ids[1:]), seen.first_event_ids
    # Whole histories would be ~ 5k + 3 events for task k (~1,000 in all). The completion's
    # appended events bring the cached instance to the run's last event (ActivityTaskScheduled),
    # so a tail is that event plus the 4 the activity and the new task added.
    whole = sum(e.event_id <= 3 + 5 * k for k in range(tasks) for e in history.events)
    scheduled = [e.event_id for e in history.events if e.event_type == "ActivityTaskScheduled"]
    assert seen.first_event_ids[1:] == scheduled
    assert seen.events <= 5 * tasks < whole / 4


async def test_a_worker_that_lost_the_run_reads_the_whole_history_and_finishes(server: FlowForgeServer) -> None:
    client = await Client.connect(f"127.0.0.1:{server.port}")
    # Every activity completion claims the run cached through event 2 while the worker
    # keeps no instance at all: each handed-back task is a tail the worker cannot use.
    seen = HistoriesSeen(client, claim_cached_through=2)
    queue = f"sticky-miss-{uuid.uuid4().hex[:8]}"
    try:
        async with Worker(client, task_queue=queue, workflows=[Sequence], activities=[noop], max_cached_workflows=0):
            handle = await client.start_workflow(Sequence.run, 5, id=f"miss-{queue}", task_queue=queue)
            assert await handle.result() == sum(range(5))
        assert seen.history_reads >= 5
        history = await handle.fetch_history()
    finally:
        await client.close()
    assert seen.first_event_ids == [1, 2, 2, 2, 2, 2]
    types = [e.event_type for e in history.events]
    assert types.count("ActivityTaskCompleted") == 5 and types[-1] == "WorkflowExecutionCompleted"
    assert "WorkflowTaskFailed" not in types


async def test_a_small_cache_that_evicts_runs_under_way_still_completes_them_all(server: FlowForgeServer) -> None:
    client = await Client.connect(f"127.0.0.1:{server.port}")
    seen = HistoriesSeen(client)
    queue = f"sticky-evict-{uuid.uuid4().hex[:8]}"
    try:
        async with Worker(
            client,
            task_queue=queue,
            workflows=[Sequence],
            activities=[noop],
            max_cached_workflows=2,
            fold_workflow_tasks=False,
        ):
            handles = [
                await client.start_workflow(Sequence.run, 6, id=f"evict-{queue}-{i}", task_queue=queue)
                for i in range(8)
            ]
            for handle in handles:
                assert await handle.result() == sum(range(6))
            for handle in handles:
                types = [e.event_type for e in (await handle.fetch_history()).events]
                assert types.count("ActivityTaskCompleted") == 6 and "WorkflowTaskFailed" not in types
    finally:
        await client.close()
    assert any(first > 1 for first in seen.first_event_ids)


async def test_a_killed_worker_holding_runs_cached_leaves_them_to_another_that_finishes_them(
    client: Client, server_process: ServerProcess, ledger: Path, tmp_path: Path
) -> None:
    steps = 8
    doomed = WorkerProcess(server_process.address, "sticky-crash", ledger, tmp_path, name="doomed")
    try:
        handles = [
            await client.start_workflow(
                ManySteps.run,
                {"key": f"r{i}", "steps": steps, "seconds": 0.05, "start_to_close": 2},
                id=f"sticky-crash-{i}",
                task_queue="sticky-crash",
            )
            for i in range(3)
        ]
        await wait_until(
            lambda: len([e for e in read_ledger(ledger) if e["event"] == "done"]) >= 6,
            timeout=30,
            what="a few steps of each run to finish on the doomed worker",
        )
        doomed.kill9()
    finally:
        doomed.stop()
    survivor = WorkerProcess(server_process.address, "sticky-crash", ledger, tmp_path, name="survivor")
    try:
        for i, handle in enumerate(handles):
            result = await handle.result()
            assert [r["key"] for r in result] == [f"r{i}/{s}" for s in range(steps)]
    finally:
        survivor.stop()
    for handle in handles:
        events = (await handle.fetch_history()).events
        assert [e.event_id for e in events] == list(range(1, len(events) + 1))
        types = [e.event_type for e in events]
        assert types.count("ActivityTaskCompleted") == steps
        assert types.count("WorkflowExecutionCompleted") == 1


async def _complete_activity(
    wire: Wire, token: bytes, cached_event_id: int
) -> workflow_service_pb2.RespondActivityTaskCompletedResponse:
    return await wire.stub.RespondActivityTaskCompleted(
        workflow_service_pb2.RespondActivityTaskCompletedRequest(
            namespace=NS,
            task_token=token,
            result=default_converter.to_payloads([1]),
            identity="sticky-test",
            eager_workflow_task_queue="q",
            eager_workflow_task_cached_event_id=cached_event_id,
        )
    )


async def test_over_the_wire_the_tail_starts_at_the_cached_event_and_a_bad_position_gets_the_whole(
    wire: Wire,
) -> None:
    await wire.start("sticky-wire")
    task = await wire.poll_workflow_task()
    response = await wire.complete_workflow_task(
        task.task_token, schedule_activity("a"), schedule_activity("b"), schedule_activity("c"), eager=3
    )
    a, b, c = (t.task_token for t in response.activity_tasks)
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await _complete_activity(wire, a, -1)
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "eager_workflow_task_cached_event_id" in (refused.value.details() or "")

    # Cached through event 3 (the first task's WorkflowTaskStarted): the tail from it.
    tail = (await _complete_activity(wire, a, 3)).workflow_task
    assert [e.event_id for e in tail.history] == list(range(3, tail.history[-1].event_id + 1))
    assert tail.history[-1].event_type == "WorkflowTaskStarted"
    await wire.complete_workflow_task(tail.task_token)
    # A position past the history (or 1) is no position: the whole history.
    for token, position in ((b, 10_000), (c, 1)):
        whole = (await _complete_activity(wire, token, position)).workflow_task
        assert [e.event_id for e in whole.history] == list(range(1, whole.history[-1].event_id + 1))
        await wire.complete_workflow_task(whole.task_token)
