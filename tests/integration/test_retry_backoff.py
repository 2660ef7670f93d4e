"""Retry backoff with full jitter, end to end: the server draws each delay uniformly
in ``[0, min(maximum_interval, initial_interval * backoff_coefficient ** (n - 1))]``,
records the delays it chose in history (``ActivityTaskStarted.retry_delays``) and
holds each retry back for its delay. Runs against SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import itertools
import time
from datetime import timedelta

from flowforge import Client, RetryPolicy, activity, workflow
from flowforge.exceptions import ApplicationError
from tests.integration._reliability import DEADLINE_S, assert_gapless, events, fast_worker, of_type

QUEUE = "retry-backoff"
INITIAL, COEFFICIENT, MAXIMUM, ATTEMPTS = 0.05, 2.0, 0.2, 6
POLICY = RetryPolicy(
    initial_interval=timedelta(seconds=INITIAL),
    backoff_coefficient=COEFFICIENT,
    maximum_interval=timedelta(seconds=MAXIMUM),
    maximum_attempts=ATTEMPTS,
    full_jitter=True,
)

attempt_started_at: dict[str, list[float]] = {}


@activity.defn
async def flaky(key: str) -> int:
    """Fails every attempt but the last one allowed."""
    attempt_started_at.setdefault(key, []).append(time.monotonic())
    attempt = activity.info().attempt
    if attempt < ATTEMPTS:
        raise ApplicationError(f"attempt {attempt} failed", type="Flaky")
    return attempt


@workflow.defn
class RetriesFlaky:
    @workflow.run
    async def run(self, key: str) -> int:
        return await workflow.execute_activity(
            flaky, key, start_to_close_timeout=timedelta(seconds=10), retry_policy=POLICY
        )


async def test_full_jitter_delays_are_recorded_in_history_each_within_its_bound_and_honoured(
    sdk_client: Client, store_kind: str
) -> None:
    key = f"jitter-{store_kind}"
    async with fast_worker(sdk_client, QUEUE, workflows=[RetriesFlaky], activities=[flaky]):
        handle = await sdk_client.start_workflow(RetriesFlaky.run, key, id=key, task_queue=QUEUE)
        assert await asyncio.wait_for(handle.result(), DEADLINE_S) == ATTEMPTS

    history = await events(handle)
    assert_gapless(history)
    started = of_type(history, "ActivityTaskStarted")
    assert len(started) == 1 and started[0].attributes["attempt"] == ATTEMPTS
    assert started[0].attributes["last_failure"]["message"] == f"attempt {ATTEMPTS - 1} failed"
    delays = started[0].attributes["retry_delays"]
    bounds = [min(MAXIMUM, INITIAL * COEFFICIENT ** (n - 1)) for n in range(1, ATTEMPTS)]
    assert bounds == [0.05, 0.1, 0.2, 0.2, 0.2]
    assert len(delays) == len(bounds)
    assert all(0.0 <= delay <= bound for delay, bound in zip(delays, bounds, strict=False)), (delays, bounds)
    assert any(delay < bound for delay, bound in zip(delays, bounds, strict=False)), (
        "jitter drew no delay below its bound"
    )
    # Each retry started no earlier than its delay after the attempt before it.
    starts = attempt_started_at[key]
    assert len(starts) == ATTEMPTS
    for (before, after), delay in zip(itertools.pairwise(starts), delays, strict=False):
        assert after - before >= delay - 0.005
