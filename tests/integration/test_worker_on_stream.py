"""The worker on its stream (``Worker(task_transport="stream")``, the default) against a
real server: activities, heartbeats, failures and retries, signals and queries all travel
on the one stream, and no poll or report goes as a unary call. Both stores.

The kill -9 of the server under an open stream, and a replica pair, are the crash,
chaos and replica tests run on both transports (the ``task_transport`` fixture).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from datetime import timedelta
from typing import Any

import pytest

from flowforge import Client, RetryPolicy, activity, workflow
from flowforge.exceptions import ActivityError, ApplicationError
from flowforge.server import FlowForgeServer
from flowforge.worker import _stream
from tests.integration._reliability import DEADLINE_S, assert_gapless, events, fast_worker, of_type
from testsupport.waiting import wait_until

QUEUE = "on-stream"

# What a worker polls and reports: on the stream none of these is a unary call.
_TASK_RPCS = frozenset(
    {
        "PollWorkflowTaskQueue",
        "PollActivityTaskQueue",
        "RespondWorkflowTaskCompleted",
        "RespondWorkflowTaskFailed",
        "RespondQueryTaskCompleted",
        "RecordActivityTaskHeartbeat",
        "RespondActivityTaskCompleted",
        "RespondActivityTaskFailed",
        "RespondActivityTaskCanceled",
    }
)


@activity.defn
async def flaky(key: str) -> str:
    """Fails its first attempt (a retry follows)."""
    if activity.info().attempt == 1:
        raise ApplicationError(f"{key}: first attempt fails")
    return f"{key}@{activity.info().attempt}"


@activity.defn
async def counting(steps: int) -> int:
    """Heartbeats each step; resumes from the last heartbeat."""
    done = next(iter(activity.info().heartbeat_details), 0)
    while done < steps:
        done += 1
        activity.heartbeat(done)
        await asyncio.sleep(0.01)
    return done


@activity.defn
async def refuses(reason: str) -> None:
    raise ApplicationError(reason, type="Refused", non_retryable=True)


@workflow.defn
class Mixed:
    """Activities (one retried, one heartbeating, one failing for good), a signal and a query."""

    def __init__(self) -> None:
        self._approved_by = ""
        self._stage = "started"

    @workflow.run
    async def run(self, key: str) -> dict[str, Any]:
        fast_retry = RetryPolicy(initial_interval=timedelta(milliseconds=50))
        retried, counted = await asyncio.gather(
            workflow.execute_activity(
                flaky, key, start_to_close_timeout=timedelta(seconds=10), retry_policy=fast_retry
            ),
            workflow.execute_activity(
                counting, 5, start_to_close_timeout=timedelta(seconds=10), heartbeat_timeout=timedelta(seconds=5)
            ),
        )
        try:
            await workflow.execute_activity(refuses, key, start_to_close_timeout=timedelta(seconds=10))
            refused = ""
        except ActivityError as error:
            refused = type(error.cause).__name__
        self._stage = "waiting"
        await workflow.wait_condition(lambda: bool(self._approved_by))
        return {"retried": retried, "counted": counted, "refused": refused, "approved_by": self._approved_by}

    @workflow.signal
    async def approve(self, who: str) -> None:
        self._approved_by = who

    @workflow.query
    def stage(self) -> str:
        return self._stage


def _record_unary_calls(client: Client) -> Counter[str]:
    """Counts the worker's unary calls by RPC (the worker shares the client's service)."""
    calls: Counter[str] = Counter()
    service = client.workflow_service
    unary = service.call

    async def counted(rpc: str, request: Any, **options: Any) -> Any:
        calls[rpc] += 1
        return await unary(rpc, request, **options)

    service.call = counted  # type: ignore[method-assign]
    return calls


async def test_workflows_with_activities_heartbeats_retries_signals_and_queries_complete_over_the_stream(
    server: FlowForgeServer,
) -> None:
    worker_client = await Client.connect(f"127.0.0.1:{server.port}")
    client = await Client.connect(f"127.0.0.1:{server.port}")
    unary_calls = _record_unary_calls(worker_client)
    try:
        async with fast_worker(
            worker_client, QUEUE, workflows=[Mixed], activities=[flaky, counting, refuses], task_transport="stream"
        ):
            handles = [
                await client.start_workflow(Mixed.run, f"k{i}", id=f"mixed-{i}", task_queue=QUEUE) for i in range(6)
            ]
            for handle in handles:
                await wait_until(
                    lambda handle=handle: _is(handle, "waiting"), timeout=DEADLINE_S, what="the workflow to wait"
                )
                await handle.signal(Mixed.approve, "ops")
            results = await asyncio.wait_for(asyncio.gather(*(h.result() for h in handles)), DEADLINE_S)
    finally:
        await worker_client.close()
    assert results == [
        {"retried": f"k{i}@2", "counted": 5, "refused": "ApplicationError", "approved_by": "ops"} for i in range(6)
    ]
    for handle in handles:
        history = await events(handle)
        assert_gapless(history)
        assert len(of_type(history, "WorkflowExecutionCompleted")) == 1
        assert len(of_type(history, "ActivityTaskCompleted")) == 2
        assert len(of_type(history, "ActivityTaskFailed")) == 1
    assert not set(unary_calls) & _TASK_RPCS, f"unary task calls on the stream path: {dict(unary_calls)}"
    await client.close()


async def _is(handle: Any, stage: str) -> bool:
    return bool(await handle.query(Mixed.stage) == stage)


async def test_the_unary_transport_polls_and_reports_with_unary_calls(server: FlowForgeServer) -> None:
    worker_client = await Client.connect(f"127.0.0.1:{server.port}")
    unary_calls = _record_unary_calls(worker_client)
    try:
        async with fast_worker(
            worker_client, "unary", workflows=[Mixed], activities=[flaky, counting, refuses], task_transport="unary"
        ):
            handle = await worker_client.start_workflow(Mixed.run, "u", id="unary-1", task_queue="unary")
            await wait_until(lambda: unary_calls["RespondActivityTaskFailed"], timeout=DEADLINE_S, what="a report")
            await handle.terminate(reason="test over")
    finally:
        await worker_client.close()
    assert unary_calls["PollActivityTaskQueue"] >= 1


async def test_an_idle_stream_is_renewed_and_work_that_comes_later_runs_on_the_new_one(
    server: FlowForgeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_stream, "_IDLE_RENEW_S", 0.3)
    worker_client = await Client.connect(f"127.0.0.1:{server.port}")
    unary_calls = _record_unary_calls(worker_client)
    opened = 0
    open_stream = worker_client.workflow_service.open_stream

    def counted(rpc: str) -> Any:
        nonlocal opened
        opened += 1
        return open_stream(rpc)

    worker_client.workflow_service.open_stream = counted  # type: ignore[method-assign]
    try:
        async with fast_worker(worker_client, "renewed", workflows=[Mixed], activities=[flaky, counting, refuses]):
            await wait_until(lambda: opened >= 3, timeout=DEADLINE_S, what="the idle stream to be renewed twice")
            handle = await worker_client.start_workflow(Mixed.run, "late", id="renewed-1", task_queue="renewed")
            await wait_until(lambda handle=handle: _is(handle, "waiting"), timeout=DEADLINE_S, what="the workflow")
            await handle.signal(Mixed.approve, "ops")
            assert (await asyncio.wait_for(handle.result(), DEADLINE_S))["counted"] == 5
    finally:
        await worker_client.close()
    assert not set(unary_calls) & _TASK_RPCS, dict(unary_calls)
