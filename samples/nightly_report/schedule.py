"""Creates the nightly schedule (run once): ``python -m samples.nightly_report.schedule``."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from flowforge import Client
from flowforge.client import (
    Schedule,
    ScheduleActionStartWorkflow,
    ScheduleHandle,
    ScheduleMisfirePolicy,
    ScheduleOverlapPolicy,
    SchedulePolicy,
    ScheduleSpec,
)
from samples import server_address
from samples.nightly_report.workflows import CRON, SCHEDULE_ID, TASK_QUEUE, TIME_ZONE, WORKFLOW_ID_PREFIX, NightlyReport


async def create(client: Client) -> ScheduleHandle:
    """The schedule: 02:30 every night in Stockholm; a night missed while the
    server was down is caught up within 6 hours; never two reports at once."""
    return await client.create_schedule(
        SCHEDULE_ID,
        Schedule(
            action=ScheduleActionStartWorkflow(
                NightlyReport.run, "sales", id=WORKFLOW_ID_PREFIX, task_queue=TASK_QUEUE
            ),
            spec=ScheduleSpec(cron_expressions=[CRON], time_zone_name=TIME_ZONE),
            policy=SchedulePolicy(
                overlap=ScheduleOverlapPolicy.BUFFER_ONE,
                misfire=ScheduleMisfirePolicy.CATCH_UP,
                catchup_window=timedelta(hours=6),
            ),
        ),
    )


async def main(address: str) -> None:
    async with await Client.connect(address) as client:
        handle = await create(client)
        for moment in (await handle.describe()).info.next_action_times:
            print("next fire:", moment.isoformat())


if __name__ == "__main__":
    asyncio.run(main(server_address()))
