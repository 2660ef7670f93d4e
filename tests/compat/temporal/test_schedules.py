"""Schedules changed the Temporal way: ScheduleHandle.update and ScheduleBackfill."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from temporalio import workflow
from temporalio.client import (
    Client,
    Schedule,
    ScheduleActionStartWorkflow,
    ScheduleBackfill,
    ScheduleIntervalSpec,
    ScheduleSpec,
    ScheduleState,
    ScheduleUpdate,
    ScheduleUpdateInput,
)


@workflow.defn
class Tick:
    @workflow.run
    async def run(self) -> None:
        return None


async def test_schedule_update_and_backfill(client: Client) -> None:
    schedule_id = f"ticks-{uuid.uuid4()}"
    handle = await client.create_schedule(
        schedule_id,
        Schedule(
            action=ScheduleActionStartWorkflow(Tick.run, id=f"tick-{uuid.uuid4()}", task_queue="nowhere"),
            spec=ScheduleSpec(intervals=[ScheduleIntervalSpec(every=timedelta(hours=1))]),
            state=ScheduleState(paused=True, note="created"),
        ),
    )

    def every_day(input: ScheduleUpdateInput) -> ScheduleUpdate:
        schedule = input.description.schedule
        spec = ScheduleSpec(intervals=[ScheduleIntervalSpec(every=timedelta(days=1))])
        return ScheduleUpdate(
            schedule=Schedule(action=schedule.action, spec=spec, state=ScheduleState(paused=True, note="daily"))
        )

    await handle.update(every_day)
    described = await handle.describe()
    assert described.schedule.spec.intervals[0].every == timedelta(days=1)
    assert described.schedule.state.note == "daily"

    async def unchanged(input: ScheduleUpdateInput) -> None:
        return None

    await handle.update(unchanged)
    assert (await handle.describe()).schedule.state.note == "daily"

    now = datetime.now(UTC)
    await handle.backfill(ScheduleBackfill(start_at=now - timedelta(days=3), end_at=now - timedelta(days=1)))
    await handle.delete()
