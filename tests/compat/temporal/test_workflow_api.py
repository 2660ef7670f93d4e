"""Workflow code using Temporal's workflow-module surface beyond the basics."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from datetime import timedelta

from temporalio import workflow
from temporalio.client import Client
from temporalio.worker import Replayer, Worker

with workflow.unsafe.imports_passed_through():
    import json  # noqa: F401 - the idiom Temporal code uses around its imports

observed_replaying: list[bool] = []


@dataclass
class Outcome:
    replaying_at_start: bool
    in_sandbox: bool
    unrestricted_inside: bool


@workflow.defn
class UnsafeCalls:
    @workflow.run
    async def run(self) -> Outcome:
        with workflow.unsafe.sandbox_unrestricted():
            time.time()  # would fail the workflow task outside the block
            unrestricted = workflow.unsafe.is_sandbox_unrestricted()
        observed_replaying.append(workflow.unsafe.is_replaying())
        await workflow.sleep(timedelta(milliseconds=10))
        return Outcome(observed_replaying[-1], workflow.unsafe.in_sandbox(), unrestricted)


async def test_workflow_unsafe_calls_and_replay(client: Client) -> None:
    task_queue = f"unsafe-{uuid.uuid4()}"
    assert not workflow.unsafe.is_replaying()
    async with Worker(client, task_queue=task_queue, workflows=[UnsafeCalls]):
        handle = await client.start_workflow(UnsafeCalls.run, id=f"unsafe-{uuid.uuid4()}", task_queue=task_queue)
        assert await handle.result() == Outcome(replaying_at_start=False, in_sandbox=False, unrestricted_inside=True)
    history = await handle.fetch_history()
    observed_replaying.clear()
    await Replayer(workflows=[UnsafeCalls]).replay_workflow(history)
    assert observed_replaying == [True]
