"""The whole sample in one command: starts the embedded dev server, creates the
nightly schedule (02:30 Europe/Stockholm), shows its next fire times, triggers it
once now and backfills two nights of March 2026 (one of them the night the clocks
spring forward), runs the worker and prints the reports.

    python -m samples.nightly_report.demo
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from flowforge import Client
from flowforge.client import ScheduleOverlapPolicy
from flowforge.worker import Worker
from samples._dev_server import run_with_dev_server
from samples.nightly_report import schedule
from samples.nightly_report.workflows import ACTIVITIES, TASK_QUEUE, TIME_ZONE, WORKFLOW_ID_PREFIX, NightlyReport

BACKFILL = (datetime(2026, 3, 28, tzinfo=UTC), datetime(2026, 3, 29, 12, tzinfo=UTC))


async def _reports(client: Client, count: int) -> dict[str, str]:
    """Waits for ``count`` report executions and returns workflow id -> report."""
    while True:
        ids = sorted({e.workflow_id async for e in client.list_workflows(workflow_type="NightlyReport")})
        if len(ids) >= count:
            return {i: await client.get_workflow_handle(i).result() for i in ids}
        await asyncio.sleep(0.2)


async def run(address: str) -> dict[str, str]:
    client = await Client.connect(address)
    handle = await schedule.create(client)
    description = await handle.describe()
    print(
        f"Schedule {handle.id}: {description.schedule.spec.cron_expressions[0]}"
        f" in {description.schedule.spec.time_zone_name}"
    )
    for moment in description.info.next_action_times[:3]:
        print(f"  next fire {moment.isoformat()}  ({moment.astimezone(ZoneInfo(TIME_ZONE))})")
    await handle.trigger()
    # Two past nights, the second one the spring-forward night (02:30 does not exist
    # that night in Stockholm: the fire comes at 03:00). Backfilled nights may run
    # side by side (the schedule's own policy is BUFFER_ONE).
    await handle.backfill(*BACKFILL, overlap=ScheduleOverlapPolicy.ALLOW_ALL)
    async with Worker(client, task_queue=TASK_QUEUE, workflows=[NightlyReport], activities=ACTIVITIES):
        reports = await asyncio.wait_for(_reports(client, 3), 60)
    print("\nReports:")
    for workflow_id, report in reports.items():
        print(f"  {workflow_id.removeprefix(WORKFLOW_ID_PREFIX + '-'):<30} {report}")
    info = (await handle.describe()).info
    print(
        f"\n{info.num_actions} executions started by the schedule:",
        ", ".join(f"{a.trigger}" for a in info.recent_actions),
    )
    await client.close()
    return reports


def main() -> None:
    run_with_dev_server(run)


if __name__ == "__main__":
    main()
