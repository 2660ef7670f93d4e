"""Asynchronous activity completion as Temporal code does it."""

from __future__ import annotations

import asyncio
import time
import uuid
from datetime import timedelta

import pytest
from temporalio import activity, workflow
from temporalio.client import AsyncActivityCancelledError, Client, WorkflowFailureError
from temporalio.exceptions import ActivityError, ApplicationError, CancelledError
from temporalio.service import RPCError
from temporalio.worker import Worker

tokens: dict[str, bytes] = {}


@activity.defn
async def request_approval(request: str) -> str:
    tokens[request] = activity.info().task_token
    activity.raise_complete_async()


@workflow.defn
class Approval:
    @workflow.run
    async def run(self, request: str) -> str:
        return await workflow.execute_activity(request_approval, request, start_to_close_timeout=timedelta(seconds=60))


@workflow.defn
class CancellableApproval:
    def __init__(self) -> None:
        self.withdrawn = False

    @workflow.run
    async def run(self, request: str) -> str:
        handle = workflow.start_activity(
            request_approval,
            request,
            start_to_close_timeout=timedelta(seconds=60),
            cancellation_type=workflow.ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
        )
        await workflow.wait_condition(lambda: self.withdrawn)
        handle.cancel()
        try:
            return await handle
        except asyncio.CancelledError:
            return "withdrawn"

    @workflow.signal
    def withdraw(self) -> None:
        self.withdrawn = True


async def wait_for_token(request: str) -> bytes:
    deadline = time.monotonic() + 30
    while request not in tokens:
        assert time.monotonic() < deadline, f"no activity attempt for {request!r} started"
        await asyncio.sleep(0.05)
    return tokens[request]


async def test_complete_by_task_token_exactly_once(client: Client) -> None:
    task_queue = f"async-{uuid.uuid4()}"
    request = str(uuid.uuid4())
    async with Worker(client, task_queue=task_queue, workflows=[Approval], activities=[request_approval]):
        handle = await client.start_workflow(Approval.run, request, id=f"approval-{request}", task_queue=task_queue)
        activity_handle = client.get_async_activity_handle(task_token=await wait_for_token(request))
        await activity_handle.heartbeat("reviewing")
        await activity_handle.complete("approved")
        assert await handle.result() == "approved"
        with pytest.raises(RPCError):
            await activity_handle.complete("approved twice")
    completed = [e for e in (await handle.fetch_history()).events if e.event_type == "ActivityTaskCompleted"]
    assert len(completed) == 1


async def test_fail_by_workflow_and_activity_id(client: Client) -> None:
    task_queue = f"async-{uuid.uuid4()}"
    request = str(uuid.uuid4())
    async with Worker(client, task_queue=task_queue, workflows=[Approval], activities=[request_approval]):
        handle = await client.start_workflow(Approval.run, request, id=f"approval-{request}", task_queue=task_queue)
        await wait_for_token(request)
        by_id = client.get_async_activity_handle(workflow_id=handle.id, activity_id="1")
        await by_id.fail(ApplicationError("denied", type="Denied", non_retryable=True))
        with pytest.raises(WorkflowFailureError) as failed:
            await handle.result()
    assert isinstance(failed.value.cause, ActivityError)
    assert isinstance(failed.value.cause.cause, ApplicationError) and failed.value.cause.cause.type == "Denied"


async def test_cancellation_reaches_the_async_completer(client: Client) -> None:
    task_queue = f"async-{uuid.uuid4()}"
    request = str(uuid.uuid4())
    async with Worker(client, task_queue=task_queue, workflows=[CancellableApproval], activities=[request_approval]):
        handle = await client.start_workflow(
            CancellableApproval.run, request, id=f"approval-{request}", task_queue=task_queue
        )
        activity_handle = client.get_async_activity_handle(task_token=await wait_for_token(request))
        await handle.signal(CancellableApproval.withdraw)
        deadline = time.monotonic() + 30
        while True:
            try:
                await activity_handle.heartbeat()
            except AsyncActivityCancelledError:
                break
            assert time.monotonic() < deadline, "the cancellation request never reached the heartbeat"
            await asyncio.sleep(0.05)
        await activity_handle.report_cancellation()
        assert await handle.result() == "withdrawn"


woken: list[str] = []


@activity.defn
async def wait_until_cancelled(request: str) -> str:
    async def keep_heartbeating() -> None:
        while True:
            activity.heartbeat()
            await asyncio.sleep(0.1)

    heartbeats = asyncio.create_task(keep_heartbeating())
    try:
        await activity.wait_for_cancelled()
        woken.append(f"{request}: returned")
    except asyncio.CancelledError:
        woken.append(f"{request}: cancelled while waiting")
        raise
    finally:
        heartbeats.cancel()
    raise CancelledError("done waiting")


@workflow.defn
class Waiting:
    @workflow.run
    async def run(self, request: str) -> str:
        handle = workflow.start_activity(
            wait_until_cancelled,
            request,
            start_to_close_timeout=timedelta(seconds=60),
            heartbeat_timeout=timedelta(seconds=5),
            cancellation_type=workflow.ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
        )
        await workflow.sleep(timedelta(milliseconds=300))
        handle.cancel()
        try:
            return await handle
        except asyncio.CancelledError:
            return "cancelled"


async def test_wait_for_cancelled_ends_when_the_activity_is_cancelled(client: Client) -> None:
    task_queue = f"async-{uuid.uuid4()}"
    request = str(uuid.uuid4())
    async with Worker(client, task_queue=task_queue, workflows=[Waiting], activities=[wait_until_cancelled]):
        result = await client.execute_workflow(
            Waiting.run, request, id=f"waiting-{uuid.uuid4()}", task_queue=task_queue
        )
    assert result == "cancelled"
    # The wait ended with the cancellation (returning, or interrupted by asyncio's cancellation).
    assert [w for w in woken if w.startswith(request)] in (
        [f"{request}: returned"],
        [f"{request}: cancelled while waiting"],
    )
