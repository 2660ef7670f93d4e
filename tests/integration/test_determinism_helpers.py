"""workflow.now(), uuid4(), random() and logger end to end: a worker is replaced in the
middle of an execution, the new one replays its history, and the values the workflow
drew before the switch come out the same; the log is not repeated by the replay.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import timedelta
from typing import Any

import pytest

from flowforge import Client, activity, workflow
from flowforge.worker import Worker
from tests.integration._reliability import DEADLINE_S
from testsupport.waiting import wait_until

TASK_QUEUE = "draws"
released = asyncio.Event()
seen_by_activity: list[dict[str, Any]] = []


@activity.defn
async def record_draw(draw: dict[str, Any]) -> None:
    seen_by_activity.append(draw)


@activity.defn
async def await_release() -> None:
    await released.wait()


@workflow.defn
class Draws:
    @workflow.run
    async def run(self) -> dict[str, Any]:
        draw = {
            "uuid": str(workflow.uuid4()),
            "random": workflow.random().random(),
            "now": workflow.now().isoformat(),
        }
        workflow.logger.info("drew %s", draw["uuid"])
        await workflow.execute_activity(record_draw, draw, start_to_close_timeout=timedelta(seconds=10))
        await workflow.execute_activity(await_release, start_to_close_timeout=timedelta(seconds=30))
        workflow.logger.info("released")
        return {**draw, "now_after_release": workflow.now().isoformat()}


async def test_values_drawn_before_a_worker_switch_are_drawn_again_on_replay_and_logs_are_not_repeated(
    sdk_client: Client, caplog: pytest.LogCaptureFixture
) -> None:
    client = sdk_client
    released.clear()
    seen_by_activity.clear()
    caplog.set_level(logging.INFO, logger="flowforge.workflow")
    async with Worker(client, task_queue=TASK_QUEUE, activities=[record_draw, await_release]):
        async with Worker(client, task_queue=TASK_QUEUE, workflows=[Draws]):
            handle = await client.start_workflow(Draws.run, id="draws", task_queue=TASK_QUEUE)

            async def waiting_for_release() -> bool:
                return any(a.activity_type == "await_release" for a in (await handle.describe()).pending_activities)

            await wait_until(waiting_for_release, timeout=DEADLINE_S, what="the workflow waiting for release")
        # A new worker has no cached instance: it replays the whole history.
        async with Worker(client, task_queue=TASK_QUEUE, workflows=[Draws]):
            released.set()
            result = await handle.result()

    (drawn_before_switch,) = seen_by_activity
    assert {key: result[key] for key in ("uuid", "random", "now")} == drawn_before_switch
    assert result["now_after_release"] > result["now"]  # now() is the time of the running workflow task
    messages = [r.getMessage() for r in caplog.records if r.name == "flowforge.workflow"]
    assert [m.split(" (")[0] for m in messages] == [f"drew {drawn_before_switch['uuid']}", "released"]
    assert all(getattr(r, "workflow_id", None) == "draws" for r in caplog.records if r.name == "flowforge.workflow")
