"""Namespace quotas, held in the store (docs/security.md, "Limits and quotas").

- max_running_executions: a start over it is RESOURCE_EXHAUSTED naming the quota;
  once a run closes, a start is admitted again. With two replica processes on one
  PostgreSQL database starting at once, exactly N are admitted.
- start_rate: a token bucket in the namespace row; a start over it is refused with
  the time to retry, and admitted once the bucket refilled (a ManualClock moves time).
- max_concurrent_activities: a poll leases no activity task past the quota; the
  task waits (never dropped) and is leased once a slot frees.
- namespace update changes a quota and describe shows it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest

from flowforge.api.v1 import workflow_service_pb2 as pb
from flowforge.server import FlowForgeServer, ServerConfig
from flowforge.server.clock import ManualClock
from tests.integration._processes import ServerProcess
from tests.integration._protocol import Wire, schedule_activity, seconds
from testsupport.waiting import wait_until

NS = "quota"


async def _start(wire: Wire, workflow_id: str, namespace: str = NS, task_queue: str = "q") -> str:
    response = await wire.stub.StartWorkflowExecution(
        pb.StartWorkflowExecutionRequest(
            namespace=namespace,
            workflow_id=workflow_id,
            workflow_type="wf",
            task_queue=task_queue,
            request_id=workflow_id,
        )
    )
    return response.run_id


async def _refused(wire: Wire, workflow_id: str) -> str:
    with pytest.raises(grpc.aio.AioRpcError) as refusal:
        await _start(wire, workflow_id)
    assert refusal.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, refusal.value.details()
    return refusal.value.details() or ""


async def _register(wire: Wire, **quotas: float) -> None:
    await wire.stub.RegisterNamespace(pb.RegisterNamespaceRequest(name=NS, **quotas))  # type: ignore[arg-type]


@pytest.fixture
async def clocked(store_url: str) -> AsyncIterator[tuple[FlowForgeServer, ManualClock, Wire]]:
    clock = ManualClock()
    server = FlowForgeServer(ServerConfig(store=store_url, port=0, poll_recheck_interval_s=0.1, clock=clock))
    await server.start()
    wire = Wire(f"127.0.0.1:{server.port}")
    yield server, clock, wire
    await wire.close()
    await server.stop()


async def test_running_executions_quota_refuses_then_admits_after_a_close(wire: Wire) -> None:
    await _register(wire, max_running_executions=2)
    await _start(wire, "a")
    await _start(wire, "b")
    message = await _refused(wire, "c")
    assert "max_running_executions" in message and "'quota'" in message and "retry after" in message
    # A repeated request id of an admitted start is not a new start: it is answered, not refused.
    await _start(wire, "a")
    await wire.stub.TerminateWorkflowExecution(
        pb.TerminateWorkflowExecutionRequest(namespace=NS, execution={"workflow_id": "a"}, reason="make room")
    )
    await _start(wire, "c")
    await _refused(wire, "d")
    # Other namespaces are not limited by this one's quota.
    for index in range(3):
        await _start(wire, f"other-{index}", namespace="default")


async def test_start_rate_is_a_token_bucket_in_the_store(clocked: tuple[FlowForgeServer, ManualClock, Wire]) -> None:
    _server, clock, wire = clocked
    await _register(wire, start_rate=2.0)  # bursts of 2, then one every 0.5 s
    await _start(wire, "r1")
    await _start(wire, "r2")
    message = await _refused(wire, "r3")
    assert "start_rate" in message and "retry in 0.500s" in message
    clock.advance(250_000)
    assert "retry in 0.250s" in await _refused(wire, "r3")
    clock.advance(250_000)
    await _start(wire, "r3")
    await _refused(wire, "r4")
    clock.advance(10_000_000)  # the bucket holds at most 2
    await _start(wire, "r4")
    await _start(wire, "r5")
    await _refused(wire, "r6")
    # Removing the quota admits at once.
    await wire.stub.UpdateNamespace(pb.UpdateNamespaceRequest(name=NS, start_rate=0))
    await _start(wire, "r6")


async def test_concurrent_activities_wait_for_a_free_slot(wire: Wire) -> None:
    await _register(wire, max_concurrent_activities=1)
    await _start(wire, "acts")
    task = await wire.stub.PollWorkflowTaskQueue(
        pb.PollWorkflowTaskQueueRequest(namespace=NS, task_queue="q", identity="t", poll_timeout=seconds(10))
    )
    assert task.task_token
    completed = await wire.stub.RespondWorkflowTaskCompleted(
        pb.RespondWorkflowTaskCompletedRequest(
            namespace=NS,
            task_token=task.task_token,
            commands=[schedule_activity("one"), schedule_activity("two")],
            eager_activity_slots=5,
        )
    )
    assert not completed.activity_tasks, "no eager leases past a concurrency quota"

    async def poll(timeout: float) -> pb.PollActivityTaskQueueResponse:
        return await wire.stub.PollActivityTaskQueue(
            pb.PollActivityTaskQueueRequest(namespace=NS, task_queue="q", identity="t", poll_timeout=seconds(timeout))
        )

    first = await poll(10)
    assert first.task_token
    second = await poll(0.5)
    assert not second.task_token, "the second activity waits while the first holds the only slot"
    waiting = asyncio.create_task(poll(10))
    await wire.stub.RespondActivityTaskCompleted(
        pb.RespondActivityTaskCompletedRequest(namespace=NS, task_token=first.task_token)
    )
    second = await asyncio.wait_for(waiting, 15)
    assert second.task_token and {first.activity_id, second.activity_id} == {"one", "two"}


async def test_update_and_describe_show_the_quotas(wire: Wire) -> None:
    await _register(wire)
    updated = await wire.stub.UpdateNamespace(
        pb.UpdateNamespaceRequest(name=NS, max_running_executions=7, max_concurrent_activities=3)
    )
    described = (await wire.stub.DescribeNamespace(pb.DescribeNamespaceRequest(name=NS))).namespace
    assert updated.namespace == described
    assert (described.max_running_executions, described.start_rate, described.max_concurrent_activities) == (7, 0, 3)
    assert described.retention.seconds == 30 * 86400, "fields not given keep their values"
    for bad in (
        pb.UpdateNamespaceRequest(name=NS, start_rate=float("nan")),
        pb.UpdateNamespaceRequest(name=NS, start_rate=-1),
        pb.UpdateNamespaceRequest(name=NS, max_running_executions=-5),
        pb.UpdateNamespaceRequest(name=NS, retention=seconds(1e12)),
        pb.UpdateNamespaceRequest(name=NS, description="x" * 5000),
    ):
        with pytest.raises(grpc.aio.AioRpcError) as refusal:
            await wire.stub.UpdateNamespace(bad)
        assert refusal.value.code() == grpc.StatusCode.INVALID_ARGUMENT, refusal.value.details()
    with pytest.raises(grpc.aio.AioRpcError) as missing:
        await wire.stub.UpdateNamespace(pb.UpdateNamespaceRequest(name="nobody", start_rate=1))
    assert missing.value.code() == grpc.StatusCode.NOT_FOUND


STARTS_PER_REPLICA = 30
QUOTA = 12


@pytest.mark.postgres
async def test_running_quota_holds_with_two_replicas_starting_at_once(postgres_dsn: str, tmp_path: Path) -> None:
    replicas = [ServerProcess(postgres_dsn, tmp_path, name=f"replica-{i}") for i in range(2)]
    wires: list[Wire] = []
    try:
        for replica in replicas:
            replica.start()
            wires.append(Wire(replica.address))
        await _register(wires[0], max_running_executions=QUOTA)
        # Each replica must see the namespace (and its quota) before the race starts.
        await wait_until(lambda: _described(wires[1]), timeout=30, what="the second replica to see the quota")

        async def attempt(wire: Wire, workflow_id: str) -> bool:
            try:
                await _start(wire, workflow_id)
            except grpc.aio.AioRpcError as error:
                assert error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, error.details()
                return False
            return True

        outcomes = await asyncio.gather(*(attempt(wires[i % 2], f"race-{i}") for i in range(2 * STARTS_PER_REPLICA)))
        assert sum(outcomes) == QUOTA
        listed = await wires[1].stub.CountWorkflowExecutions(
            pb.CountWorkflowExecutionsRequest(namespace=NS, query="ExecutionStatus = 'Running'")
        )
        assert listed.count == QUOTA
    finally:
        for wire in wires:
            await wire.close()
        for replica in replicas:
            replica.stop()


async def _described(wire: Wire) -> bool:
    response = await wire.stub.DescribeNamespace(pb.DescribeNamespaceRequest(name=NS))
    return response.namespace.max_running_executions == QUOTA
