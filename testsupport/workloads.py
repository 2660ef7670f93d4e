"""The one-activity workflow whose cost the benchmarks and the hot-path cost test measure."""

from __future__ import annotations

from datetime import timedelta

from flowforge import activity, workflow


@activity.defn
async def noop(value: int) -> int:
    return value


@workflow.defn
class SingleActivity:
    @workflow.run
    async def run(self, value: int) -> int:
        return await workflow.execute_activity(noop, value, start_to_close_timeout=timedelta(seconds=30))
