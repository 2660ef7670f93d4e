"""Synchronous activities in a thread pool receive cancellation as Temporal delivers it."""

from __future__ import annotations

import asyncio
import concurrent.futures
import multiprocessing
import threading
import time
import uuid
from datetime import timedelta

from temporalio import activity, workflow
from temporalio.client import Client
from temporalio.exceptions import CancelledError
from temporalio.worker import SharedStateManager, Worker

seen: list[str] = []
started = threading.Event()


@activity.defn
def crunch_forever(label: str) -> str:
    started.set()
    try:
        while True:
            activity.heartbeat(label)
            time.sleep(0.05)
    except CancelledError:
        seen.append(f"{label}: CancelledError in the thread")
        raise


@workflow.defn
class Cruncher:
    def __init__(self) -> None:
        self.stop = False

    @workflow.run
    async def run(self, label: str) -> str:
        handle = workflow.start_activity(
            crunch_forever,
            label,
            start_to_close_timeout=timedelta(seconds=60),
            heartbeat_timeout=timedelta(seconds=1),
            cancellation_type=workflow.ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
        )
        await workflow.wait_condition(lambda: self.stop)
        handle.cancel()
        try:
            return await handle
        except asyncio.CancelledError:
            return "stopped"

    @workflow.signal
    def halt(self) -> None:
        self.stop = True


async def test_cancellation_is_raised_inside_a_sync_activity_thread(client: Client) -> None:
    seen.clear()
    started.clear()
    task_queue = f"threads-{uuid.uuid4()}"
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as executor:
        async with Worker(
            client, task_queue=task_queue, workflows=[Cruncher], activities=[crunch_forever], activity_executor=executor
        ):
            handle = await client.start_workflow(
                Cruncher.run, "job", id=f"crunch-{uuid.uuid4()}", task_queue=task_queue
            )
            assert await asyncio.get_running_loop().run_in_executor(None, started.wait, 30)
            await handle.signal(Cruncher.halt)
            assert await handle.result() == "stopped"
    assert seen == ["job: CancelledError in the thread"]


@activity.defn
def square_in_process(n: int) -> str:
    activity.heartbeat("squaring")
    return f"{activity.info().activity_type}: {n * n}"


@activity.defn
def wait_in_process(n: int) -> str:
    while not activity.is_cancelled():
        activity.heartbeat(n)
        time.sleep(0.05)
    raise CancelledError("stopped in the process")


@workflow.defn
class InProcess:
    def __init__(self) -> None:
        self.stop = False

    @workflow.run
    async def run(self, n: int) -> list[str]:
        squared = await workflow.execute_activity(square_in_process, n, start_to_close_timeout=timedelta(seconds=60))
        handle = workflow.start_activity(
            wait_in_process,
            n,
            start_to_close_timeout=timedelta(seconds=60),
            heartbeat_timeout=timedelta(seconds=1),
            cancellation_type=workflow.ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
        )
        await workflow.wait_condition(lambda: self.stop)
        handle.cancel()
        try:
            return [squared, await handle]
        except asyncio.CancelledError:
            return [squared, "stopped"]

    @workflow.signal
    def halt(self) -> None:
        self.stop = True


async def test_a_process_pool_with_a_shared_state_manager(client: Client) -> None:
    task_queue = f"processes-{uuid.uuid4()}"
    spawn = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(max_workers=2, mp_context=spawn) as pool, spawn.Manager() as manager:
        async with Worker(
            client,
            task_queue=task_queue,
            workflows=[InProcess],
            activities=[square_in_process, wait_in_process],
            activity_executor=pool,
            shared_state_manager=SharedStateManager.create_from_multiprocessing(manager),
        ):
            handle = await client.start_workflow(InProcess.run, 7, id=f"process-{uuid.uuid4()}", task_queue=task_queue)
            deadline = time.monotonic() + 60
            while True:  # until the pool's process runs and heartbeats wait_in_process
                pending = (await handle.describe()).pending_activities
                if any(a.activity_type == "wait_in_process" and a.last_heartbeat_time for a in pending):
                    break
                assert time.monotonic() < deadline, "wait_in_process never heartbeated from its process"
                await asyncio.sleep(0.1)
            await handle.signal(InProcess.halt)
            assert await handle.result() == ["square_in_process: 49", "stopped"]
    canceled = [e for e in (await handle.fetch_history()).events if e.event_type == "ActivityTaskCanceled"]
    assert len(canceled) == 1  # acknowledged by the activity in its process, through the shared state
