"""DescribeTaskQueue (``client.describe_task_queue``): the backlog per kind with its
oldest task's age while nobody polls, then the pollers with their identity and last
poll and a dispatch rate once a worker ran the queue's work; bad input is refused.
Runs against SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import grpc
import pytest

from flowforge import Client, activity, workflow
from flowforge.exceptions import RPCError
from flowforge.server import FlowForgeServer
from tests.integration._reliability import DEADLINE_S, fast_worker

QUEUE = "described"


@activity.defn
async def noop() -> None:
    return None


@workflow.defn
class Brief:
    @workflow.run
    async def run(self) -> str:
        await workflow.execute_activity(noop, start_to_close_timeout=timedelta(seconds=10))
        return "done"


async def test_backlog_then_pollers_and_dispatch_rate(sdk_client: Client) -> None:
    empty = await sdk_client.describe_task_queue(QUEUE)
    assert empty.pollers == []
    assert {kind: b.ready_tasks for kind, b in empty.backlogs.items()} == {"workflow": 0, "activity": 0}

    handles = [await sdk_client.start_workflow(Brief.run, id=f"brief-{n}", task_queue=QUEUE) for n in range(2)]
    waiting = await sdk_client.describe_task_queue(QUEUE)
    assert waiting.backlogs["workflow"].ready_tasks == 2
    assert waiting.backlogs["workflow"].oldest_task_age > timedelta(0)
    assert waiting.backlogs["activity"].ready_tasks == 0
    assert waiting.pollers == []

    began = datetime.now(UTC)
    async with fast_worker(sdk_client, QUEUE, workflows=[Brief], activities=[noop], identity="worker-a@test"):
        for handle in handles:
            assert await asyncio.wait_for(handle.result(), DEADLINE_S) == "done"
        busy = await sdk_client.describe_task_queue(QUEUE)
    assert {(p.identity, p.kind) for p in busy.pollers} == {
        ("worker-a@test", "workflow"),
        ("worker-a@test", "activity"),
    }
    for poller in busy.pollers:
        assert poller.last_access_time is not None and poller.last_access_time >= began - timedelta(seconds=1)
    assert busy.backlogs["workflow"].ready_tasks == 0
    assert busy.backlogs["workflow"].oldest_task_age == timedelta(0)
    # Each run's first workflow task was taken by a poll (later ones may be handed out eagerly).
    assert busy.backlogs["workflow"].dispatch_rate >= 2 / 60


async def test_bad_input_is_refused_with_a_clear_status(sdk_client: Client, server: FlowForgeServer) -> None:
    with pytest.raises(RPCError) as empty:
        await sdk_client.describe_task_queue("")
    assert empty.value.status == grpc.StatusCode.INVALID_ARGUMENT
    assert "task_queue is required" in empty.value.message
    other = await Client.connect(f"127.0.0.1:{server.port}", namespace="no-such-namespace")
    try:
        with pytest.raises(RPCError) as unknown:
            await other.describe_task_queue(QUEUE)
        assert unknown.value.status == grpc.StatusCode.NOT_FOUND
    finally:
        await other.close()
