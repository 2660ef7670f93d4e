"""``activity.heartbeat(details)``: the last details an attempt recorded reach the
next attempt as ``activity.info().heartbeat_details``, so it can resume where the
previous one stopped. Runs against SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from flowforge import Client, RetryPolicy, activity, workflow
from tests.integration._reliability import DEADLINE_S, assert_gapless, events, fast_worker, of_type

QUEUE = "heartbeats"
HEARTBEAT_TIMEOUT = timedelta(seconds=1)


@activity.defn
async def resumable_copy(total: int) -> dict:
    """Copies ``total`` items, checkpointing each in a heartbeat. The first attempt
    stalls after item 3 without heartbeating again (a hung connection, say)."""
    info = activity.info()
    seen = list(info.heartbeat_details)
    done = seen[0]["copied"] if seen else 0
    while done < total:
        done += 1
        activity.heartbeat({"copied": done})
        if info.attempt == 1 and done == 3:
            await asyncio.sleep(60)  # stalls: only the heartbeat timeout ends this attempt
    return {"attempt": info.attempt, "heartbeat_details_seen": seen, "copied": done}


@workflow.defn
class Copies:
    @workflow.run
    async def run(self, total: int) -> dict:
        return await workflow.execute_activity(
            resumable_copy,
            total,
            start_to_close_timeout=timedelta(seconds=30),
            heartbeat_timeout=HEARTBEAT_TIMEOUT,
            retry_policy=RetryPolicy(initial_interval=timedelta(milliseconds=50)),
        )


async def test_the_last_heartbeat_details_reach_the_next_attempt_after_a_heartbeat_timeout(sdk_client: Client) -> None:
    async with fast_worker(sdk_client, QUEUE, workflows=[Copies], activities=[resumable_copy]):
        handle = await sdk_client.start_workflow(Copies.run, 5, id="heartbeat-resume", task_queue=QUEUE)
        result = await asyncio.wait_for(handle.result(), DEADLINE_S)

    # Attempt 2 started from attempt 1's last checkpoint, not from scratch.
    assert result == {"attempt": 2, "heartbeat_details_seen": [{"copied": 3}], "copied": 5}
    history = await events(handle)
    assert_gapless(history)
    started = of_type(history, "ActivityTaskStarted")
    assert [e.attributes["attempt"] for e in started] == [2]
    last_failure = started[0].attributes["last_failure"]
    assert last_failure["type"] == "TimeoutError" and last_failure["timeout_type"] == "TIMEOUT_TYPE_HEARTBEAT"
    assert len(of_type(history, "ActivityTaskCompleted")) == 1
