"""kill -9 of a worker or of the server at the worst moment: nothing is lost or done twice.

Each runs with the worker on its stream and on unary RPCs (``task_transport``): on the
stream, the server dies under the worker's open stream, which reconnects to the
restarted server."""

from __future__ import annotations

import base64
from collections import Counter
from datetime import timedelta
from pathlib import Path

import grpc
import pytest

from flowforge import Client, WorkflowExecutionStatus
from flowforge.api.v1 import workflow_service_pb2 as pb
from flowforge.client import RPCRetryConfig
from flowforge.converter import default_converter
from flowforge.exceptions import RPCError
from tests.integration._processes import ServerProcess, WorkerProcess, read_ledger
from tests.integration._protocol import Wire
from tests.integration._worker_app import OneStep, StepTimerStep
from testsupport.waiting import wait_until


async def test_a_killed_workers_activity_runs_again_elsewhere_with_the_same_key_and_its_late_report_is_refused(
    client: Client, server_process: ServerProcess, ledger: Path, tmp_path: Path, task_transport: str
) -> None:
    doomed = WorkerProcess(server_process.address, "crash", ledger, tmp_path, name="doomed")
    try:
        handle = await client.start_workflow(
            OneStep.run,
            {"key": "k1", "block_first_attempt": True, "start_to_close": 2},
            id="worker-crash",
            task_queue="crash",
        )
        first = await wait_until(
            lambda: next((e for e in read_ledger(ledger) if e["event"] == "start"), None),
            timeout=30,
            what="the first attempt to start",
        )
        assert first["attempt"] == 1 and first["pid"] == doomed.process.pid
        doomed.kill9()
    finally:
        doomed.stop()

    survivor = WorkerProcess(server_process.address, "crash", ledger, tmp_path, name="survivor")
    try:
        assert await handle.result() == {"key": "k1", "attempt": 2}
    finally:
        survivor.stop()

    starts = [e for e in read_ledger(ledger) if e["event"] == "start"]
    assert [(e["attempt"], e["pid"]) for e in starts] == [(1, first["pid"]), (2, survivor.process.pid)]
    assert starts[0]["idempotency_key"] == starts[1]["idempotency_key"]
    assert [e["attempt"] for e in read_ledger(ledger) if e["event"] == "done"] == [2]

    history = await handle.fetch_history()
    before = [(e.event_id, e.event_type) for e in history.events]
    assert Counter(t for _, t in before)["ActivityTaskCompleted"] == 1
    started = next(e for e in history.events if e.event_type == "ActivityTaskStarted")
    assert started.attributes["attempt"] == 2
    assert started.attributes["last_failure"]["timeout_type"] == "TIMEOUT_TYPE_START_TO_CLOSE"

    # The killed attempt's completion arrives late: fenced off, nothing changes.
    wire = Wire(server_process.address)
    try:
        with pytest.raises(grpc.aio.AioRpcError) as error:
            await wire.stub.RespondActivityTaskCompleted(
                pb.RespondActivityTaskCompletedRequest(
                    namespace="default",
                    task_token=base64.b64decode(starts[0]["task_token"]),
                    result=default_converter.to_payloads(["stale"]),
                )
            )
        assert error.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    finally:
        await wire.close()
    after = await handle.fetch_history()
    assert [(e.event_id, e.event_type) for e in after.events] == before
    assert (await handle.describe()).status == WorkflowExecutionStatus.COMPLETED


async def test_a_killed_server_restarts_on_its_store_and_every_execution_completes_once(
    server_process: ServerProcess, ledger: Path, tmp_path: Path, task_transport: str
) -> None:
    client = await Client.connect(server_process.address)
    impatient = await Client.connect(server_process.address, rpc_retry=RPCRetryConfig(maximum_elapsed=timedelta(0)))
    worker = WorkerProcess(server_process.address, "server-crash", ledger, tmp_path)
    try:
        handles = [
            await client.start_workflow(
                StepTimerStep.run,
                {"key": f"wf{i}", "seconds": 0.5, "timer_seconds": 1.5},
                id=f"server-crash-{i}",
                task_queue="server-crash",
            )
            for i in range(8)
        ]
        # Kill it while first activities are finishing and timers are pending.
        await wait_until(
            lambda: sum(e["event"] == "done" for e in read_ledger(ledger)) >= 3,
            timeout=60,
            what="some first activities to finish",
        )
        server_process.kill9()
        with pytest.raises(RPCError) as error:
            await impatient.get_workflow_handle("server-crash-0").describe()
        assert error.value.status in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)
        server_process.start()
        results = [await handle.result() for handle in handles]
    finally:
        worker.stop()
    assert results == [
        [{"key": f"wf{i}/1", "attempt": r[0]["attempt"]}, {"key": f"wf{i}/2", "attempt": r[1]["attempt"]}]
        for i, r in enumerate(results)
    ]
    for _i, handle in enumerate(handles):
        history = await handle.fetch_history()
        assert [e.event_id for e in history.events] == list(range(1, len(history.events) + 1))
        types = Counter(e.event_type for e in history.events)
        assert types["WorkflowExecutionStarted"] == types["WorkflowExecutionCompleted"] == 1
        assert types["ActivityTaskScheduled"] == types["ActivityTaskCompleted"] == 2
        assert types["TimerStarted"] == types["TimerFired"] == 1
    executions = [e async for e in client.list_workflows()]
    assert sorted(e.workflow_id for e in executions) == sorted(f"server-crash-{i}" for i in range(8))
    assert {e.status for e in executions} == {WorkflowExecutionStatus.COMPLETED}
    # Each activity's side effect finished once per key, unless its attempt was cut short.
    done = Counter(e["key"] for e in read_ledger(ledger) if e["event"] == "done")
    assert set(done) == {f"wf{i}/{step}" for i in range(8) for step in (1, 2)}
    await client.close()
    await impatient.close()
