"""The rest of the everyday Temporal surface: @workflow.init, workflow.instance(), wait,
as_completed, awaitable list_schedules, start_local's dev-server options."""

from __future__ import annotations

import asyncio
import threading
import uuid
from datetime import timedelta

import pytest
from temporalio import activity, workflow
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker


@activity.defn
async def greet(name: str) -> str:
    return f"hello {name}"


@workflow.defn
class Everyday:
    @workflow.init
    def __init__(self, names: list[str]) -> None:
        self.names = list(names)

    @workflow.run
    async def run(self, names: list[str]) -> dict:
        assert workflow.instance() is self
        handles = [
            workflow.start_activity(greet, name, start_to_close_timeout=timedelta(seconds=10)) for name in self.names
        ]
        in_completion_order = [await next_done for next_done in workflow.as_completed(handles)]
        done, pending = await workflow.wait(handles, timeout=timedelta(seconds=30))
        return {"greetings": sorted(in_completion_order), "done": len(done), "pending": len(pending)}


async def test_init_instance_wait_and_as_completed(client: Client) -> None:
    task_queue = f"everyday-{uuid.uuid4()}"
    async with Worker(client, task_queue=task_queue, workflows=[Everyday], activities=[greet]):
        result = await client.execute_workflow(
            Everyday.run, ["ada", "grace"], id=f"everyday-{uuid.uuid4()}", task_queue=task_queue
        )
    assert result == {"greetings": ["hello ada", "hello grace"], "done": 2, "pending": 0}


async def test_list_schedules_is_awaitable(client: Client) -> None:
    assert [s async for s in await client.list_schedules()] == []


async def test_start_local_accepts_temporals_dev_server_options() -> None:
    async with await WorkflowEnvironment.start_local(
        dev_server_log_level="warn", ui=False, dev_server_extra_args=["--dynamic-config-value", "x=1"]
    ) as env:
        assert env.client.namespace == "default"
    with pytest.raises(TypeError, match="dev_server_typo"):
        WorkflowEnvironment.start_local(dev_server_typo=True)


def test_workflow_init_must_decorate_init() -> None:
    with pytest.raises(TypeError, match="goes on __init__"):

        @workflow.init
        def setup(self: object) -> None: ...

    assert asyncio.iscoroutinefunction(Everyday.run)


activity_started = threading.Event()


@activity.defn
async def until_worker_shutdown() -> str:
    activity_started.set()
    while not activity.is_worker_shutdown():
        await asyncio.sleep(0.02)
    return "saw the worker shut down"


@workflow.defn
class ShutdownAware:
    @workflow.run
    async def run(self) -> str:
        return await workflow.execute_activity(until_worker_shutdown, start_to_close_timeout=timedelta(seconds=30))


async def test_an_activity_sees_its_worker_shut_down(client: Client) -> None:
    activity_started.clear()
    task_queue = f"shutdown-{uuid.uuid4()}"
    async with Worker(client, task_queue=task_queue, workflows=[ShutdownAware], activities=[until_worker_shutdown]):
        handle = await client.start_workflow(ShutdownAware.run, id=f"shutdown-{uuid.uuid4()}", task_queue=task_queue)
        assert await asyncio.get_running_loop().run_in_executor(None, activity_started.wait, 30)
    # The worker drained: the activity finished within the graceful timeout and was reported.
    async with Worker(client, task_queue=task_queue, workflows=[ShutdownAware]):
        assert await handle.result() == "saw the worker shut down"
