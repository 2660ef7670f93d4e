"""The one-activity workflows whose cost the benchmarks and the hot-path cost test measure."""

from __future__ import annotations

from datetime import timedelta

from flowforge import Priority, activity, workflow


@activity.defn
async def noop(value: int) -> int:
    return value


@workflow.defn
class SingleActivity:
    @workflow.run
    async def run(self, value: int) -> int:
        return await workflow.execute_activity(noop, value, start_to_close_timeout=timedelta(seconds=30))


@workflow.defn
class LimitedActivity:
    """SingleActivity through every flow control on the lease path: a fairness key
    and a concurrency key with a limit (docs/flow-control.md)."""

    @workflow.run
    async def run(self, value: int) -> int:
        return await workflow.execute_activity(
            noop,
            value,
            start_to_close_timeout=timedelta(seconds=30),
            concurrency_key=LIMITED_KEY,
            priority=Priority(priority_key=2, fairness_key="tenant-a"),
        )


#: The concurrency key of :class:`LimitedActivity`.
LIMITED_KEY = "cost-limited"
