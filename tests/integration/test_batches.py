"""Batch operations end to end, on SQLite and PostgreSQL: a job chosen by a visibility
query, run by the server at its pace, tracked (describe, list), each execution audited
under the job; a batch terminate over 2,000 executions survives a server killed halfway
with exact counts while live starts keep their latency."""

from __future__ import annotations

import asyncio
import json
import statistics
import time
import uuid
from collections import Counter

import grpc
import pytest

from flowforge import Client
from flowforge.client import BatchOperation, WorkflowExecutionStatus
from flowforge.exceptions import RPCError
from flowforge.server import FlowForgeServer
from tests.integration._processes import ServerProcess
from testsupport.waiting import wait_until

QUEUE = "batch-nobody-polls"  # the executions wait for a worker that never comes


async def _start(client: Client, workflow_type: str, count: int, prefix: str) -> None:
    for first in range(0, count, 100):
        await asyncio.gather(
            *(
                client.start_workflow(workflow_type, id=f"{prefix}-{n}", task_queue=QUEUE)
                for n in range(first, min(count, first + 100))
            )
        )


async def _live_latencies(client: Client, prefix: str, count: int = 20) -> list[float]:
    """Seconds each of ``count`` live starts took, one after the other."""
    took = []
    for n in range(count):
        began = time.perf_counter()
        await client.start_workflow("Live", id=f"{prefix}-{n}", task_queue=QUEUE)
        took.append(time.perf_counter() - began)
    return took


async def _finished(client: Client, job_id: str, timeout: float) -> BatchOperation:
    async def check() -> BatchOperation | None:
        job = await client.describe_batch_operation(job_id)
        return job if job.state == "COMPLETED" else None

    return await wait_until(check, timeout=timeout, what=f"batch {job_id} to complete")


async def test_batches_pause_signal_and_terminate_what_the_query_matches_each_audited(
    sdk_client: Client, server: FlowForgeServer, store_kind: str
) -> None:
    prefix = f"batch-{store_kind}-{uuid.uuid4().hex[:6]}"
    await _start(sdk_client, "BatchTarget", 12, prefix)
    await _start(sdk_client, "Bystander", 3, f"{prefix}-by")
    query = "WorkflowType = 'BatchTarget'"

    paused = await _finished(
        sdk_client, await sdk_client.start_batch_operation("pause", query=query, reason="maintenance", rps=500), 30
    )
    assert (paused.total, paused.done, paused.failed) == (12, 12, 0)
    assert all([(await sdk_client.get_workflow_handle(f"{prefix}-{n}").describe()).pause for n in range(12)])
    assert (await sdk_client.get_workflow_handle(f"{prefix}-by-0").describe()).pause is None

    signalled = await _finished(
        sdk_client,
        await sdk_client.start_batch_operation(
            "signal", query=query, reason="nudge", signal_name="nudge", signal_args=[{"n": 1}], rps=500
        ),
        30,
    )
    assert signalled.done == 12
    history = await sdk_client.get_workflow_handle(f"{prefix}-3").fetch_history()
    (signal,) = [e for e in history.events if e.event_type == "WorkflowExecutionSignaled"]
    assert signal.attributes["signal_name"] == "nudge"

    job_id = await sdk_client.start_batch_operation("terminate", query=query, reason="cleanup", rps=500)
    terminated = await _finished(sdk_client, job_id, 30)
    assert (terminated.done, terminated.failed, terminated.operation) == (12, 0, "terminate")
    statuses = Counter([(await sdk_client.get_workflow_handle(f"{prefix}-{n}").describe()).status for n in range(12)])
    assert statuses == {WorkflowExecutionStatus.TERMINATED: 12}
    assert (await sdk_client.get_workflow_handle(f"{prefix}-by-0").describe()).status == WorkflowExecutionStatus.RUNNING
    assert (await sdk_client.list_batch_operations())[0].job_id == job_id

    rows = await server.engine.read(lambda tx: tx.list_audit_rows(after_seq=0, limit=1000))
    batch_rows = [r for r in rows if r.action == "BatchTerminate" and json.loads(r.details)["batch_id"] == job_id]
    assert len(batch_rows) == 12 and all(r.reason == "cleanup" for r in batch_rows)
    assert {r.target.split("/")[0] for r in batch_rows} == {f"workflow:{prefix}-{n}" for n in range(12)}


async def test_bad_batches_are_refused(sdk_client: Client) -> None:
    for operation, query, reason in (
        ("explode", "WorkflowType = 'x'", "r"),
        ("terminate", "", "r"),
        ("terminate", "WorkflowType = ", "r"),
        ("terminate", "WorkflowType = 'x'", ""),
        ("reset", "WorkflowType = 'x'", "r"),  # no reset type
    ):
        with pytest.raises(RPCError) as error:
            await sdk_client.start_batch_operation(operation, query=query, reason=reason)
        assert error.value.status == grpc.StatusCode.INVALID_ARGUMENT, (operation, query, reason)
    with pytest.raises(RPCError) as error:
        await sdk_client.describe_batch_operation("no-such-job")
    assert error.value.status == grpc.StatusCode.NOT_FOUND


@pytest.mark.slow
async def test_a_batch_terminate_over_2000_executions_survives_a_server_killed_halfway_with_exact_counts(
    server_process: ServerProcess,
) -> None:
    count = 2000
    client = await Client.connect(server_process.address)
    try:
        await _start(client, "Bulk", count, "bulk")
        await _start(client, "Live", 5, "live")
        before = statistics.median(await _live_latencies(client, "live-before"))
        job_id = await client.start_batch_operation(
            "terminate", query="WorkflowType = 'Bulk'", reason="decommission", rps=400
        )
        # Live traffic keeps its latency while the batch runs (paced, one short transaction each).
        during = statistics.median(await _live_latencies(client, "live-during"))
        assert during < max(5 * before, 0.25), (before, during)

        async def halfway() -> bool:
            job = await client.describe_batch_operation(job_id)
            return count // 4 <= job.done < count

        await wait_until(halfway, timeout=120, what="the batch to be under way")
        server_process.kill9()
        server_process.start()
        job = await _finished(client, job_id, 180)
        assert (job.total, job.done, job.failed) == (count, count, 0)
        assert (await client.count_workflows("WorkflowType = 'Bulk' AND ExecutionStatus = 'Terminated'")).count == count
        assert (await client.count_workflows("WorkflowType = 'Bulk' AND ExecutionStatus = 'Running'")).count == 0
        assert (await client.count_workflows("WorkflowType = 'Live' AND ExecutionStatus = 'Running'")).count == 45
    finally:
        await client.close()
