"""Large payloads and the folded workflow task (worker/_fold.py), end to end.

A fold sends an activity's result and the commands of the workflow task it schedules in one
report. Each alone fits the server's request limit (server/app.py ``max_request_bytes``: a
few payloads at the payload limit), both together may not: on the worker stream such a report
ends the stream, and it was sent again on every new stream until it gave up (a minute), the
other tasks of the stream lost meanwhile and the activity's lease expiring. A fold that large
saves nothing worth it, so the worker sends that completion unfolded.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import uuid
from datetime import timedelta

import pytest

from flowforge import Client, activity, workflow
from flowforge.testing import Replayer
from tests.integration._reliability import DEADLINE_S, fast_worker

STEP = timedelta(seconds=30)
# Under the 2 MiB payload limit each; the server takes requests up to 4 payloads at the limit + 1 MiB.
SIZES = {
    # A result too large to fold with anything: the instance is not even run.
    "large result": (1_900_000, 4, 1_900_000),
    # A result that may fold, with commands that make the report too large together.
    "large commands": (1_000_000, 5, 1_800_000),
}
calls: collections.Counter[str] = collections.Counter()
# Where a refused fold and a broken stream are logged (a warning each).
_FOLD_AND_STREAM_LOGGERS = ("flowforge.worker._fold", "flowforge.worker._stream")


@activity.defn
async def produce(size: int) -> str:
    calls[f"produce/{activity.info().workflow_id}"] += 1
    return "r" * size


@activity.defn
async def consume(text: str) -> int:
    return len(text)


@workflow.defn
class FanOutLarge:
    """One activity's result, then activities each handed a large input."""

    @workflow.run
    async def run(self, result_size: int, fan_out: int, input_size: int) -> int:
        first = await workflow.execute_activity(produce, result_size, start_to_close_timeout=STEP)
        sizes = await asyncio.gather(
            *(workflow.execute_activity(consume, "i" * input_size, start_to_close_timeout=STEP) for _ in range(fan_out))
        )
        return len(first) + sum(sizes)


@pytest.mark.parametrize("case", sorted(SIZES))
async def test_a_fold_too_large_for_one_request_goes_unfolded(
    sdk_client: Client, task_transport: str, case: str, caplog: pytest.LogCaptureFixture
) -> None:
    result_size, fan_out, input_size = SIZES[case]
    queue = f"fold-size-{uuid.uuid4().hex[:8]}"
    caplog.set_level(logging.WARNING, logger="flowforge.worker")
    async with fast_worker(
        sdk_client, queue, workflows=[FanOutLarge], activities=[produce, consume], task_transport=task_transport
    ):
        handle = await sdk_client.start_workflow(
            FanOutLarge.run, args=[result_size, fan_out, input_size], id=queue, task_queue=queue
        )
        assert await asyncio.wait_for(handle.result(), DEADLINE_S) == result_size + fan_out * input_size
    # No fold was refused, no stream broke, and the first activity ran once.
    refused_or_broken = [r.getMessage()[:120] for r in caplog.records if r.name in _FOLD_AND_STREAM_LOGGERS]
    assert refused_or_broken == []
    assert calls[f"produce/{queue}"] == 1
    await Replayer(workflows=[FanOutLarge]).replay_workflow(await handle.fetch_history())
