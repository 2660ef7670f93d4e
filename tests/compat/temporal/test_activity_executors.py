"""Synchronous activities in a thread pool receive cancellation as Temporal delivers it."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import time
import uuid
from datetime import timedelta

from temporalio import activity, workflow
from temporalio.client import Client
from temporalio.exceptions import CancelledError
from temporalio.worker import Worker

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
