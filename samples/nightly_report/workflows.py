"""The nightly report: gather the day's figures, then render them.

The schedule starts one execution per night with the workflow id
``nightly-report-<nominal fire time>``; the workflow reads its report date from
that id, so a backfilled night reports on its own date, not on the day it ran.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from flowforge import activity, workflow

TASK_QUEUE = "nightly-report"
SCHEDULE_ID = "nightly-report"
WORKFLOW_ID_PREFIX = "nightly-report"
TIME_ZONE = "Europe/Stockholm"
CRON = "30 2 * * *"  # 02:30 Stockholm time; on the spring-forward night it runs at 03:00


@activity.defn
async def gather_figures(request: dict) -> dict:
    """Stands in for the queries that sum up a day (deterministic, for the demo)."""
    seed = sum(ord(ch) for ch in request["date"] + request["report"])
    return {"date": request["date"], "orders": 100 + seed % 50, "revenue_sek": 10_000 + seed * 7}


@activity.defn
async def render_report(figures: dict) -> str:
    revenue = f"{figures['revenue_sek']:,}".replace(",", " ")  # 17 224: Swedish digit grouping
    return f"{figures['date']}: {figures['orders']} orders, {revenue} SEK"


@workflow.defn
class NightlyReport:
    """Reports on the day before the nominal fire time, in the schedule's time zone."""

    @workflow.run
    async def run(self, report: str) -> str:
        nominal_text = workflow.info().workflow_id.removeprefix(WORKFLOW_ID_PREFIX + "-")
        nominal = datetime.fromisoformat(nominal_text.replace("Z", "+00:00")).astimezone(ZoneInfo(TIME_ZONE))
        day = (nominal - timedelta(days=1)).date().isoformat()
        figures = await workflow.execute_activity(
            gather_figures, {"report": report, "date": day}, start_to_close_timeout=timedelta(seconds=30)
        )
        return await workflow.execute_activity(render_report, figures, start_to_close_timeout=timedelta(seconds=30))


ACTIVITIES = [gather_figures, render_report]
