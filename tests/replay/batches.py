"""A workflow that keeps its history small with continue-as-new, for the replay tests.

``DrainQueue`` takes a batch of items per run (one activity per item), then continues
as new with the rest, so each run's history holds one batch. ``python -m
tests.replay.record batches`` records every run of one chain; each history replays on
its own, the first ones ending in ``WorkflowExecutionContinuedAsNew``.
"""

from __future__ import annotations

from datetime import timedelta

from flowforge import activity, workflow

TASK_QUEUE = "batches"
BATCH = 2


@activity.defn
async def process(item: str) -> str:
    return item.upper()


ACTIVITIES = [process]


@workflow.defn
class DrainQueue:
    """Processes ``items`` ``BATCH`` at a time, one run per batch; returns the processed total."""

    @workflow.run
    async def run(self, items: list, done: int = 0) -> int:
        for item in items[:BATCH]:
            await workflow.execute_activity(process, item, start_to_close_timeout=timedelta(seconds=30))
        if len(items) > BATCH:
            workflow.continue_as_new(args=[items[BATCH:], done + BATCH])
        return done + len(items)


@workflow.defn(name="DrainQueue")
class DrainQueueInOneRun:
    """A refactor that drops continue-as-new: replaying a continued run names the mismatch."""

    @workflow.run
    async def run(self, items: list, done: int = 0) -> int:
        for item in items:
            await workflow.execute_activity(process, item, start_to_close_timeout=timedelta(seconds=30))
        return done + len(items)
