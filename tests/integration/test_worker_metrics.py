"""A worker's own metrics through an OpenTelemetry meter (``Worker(meter=...)``): each
activity attempt timed with its outcome, each workflow task timed, cache hits and
misses, polls by result, and the slots used back at zero once the work is done."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from flowforge import Client, RetryPolicy, activity, workflow
from flowforge.exceptions import ApplicationError
from tests.integration._reliability import DEADLINE_S, fast_worker

QUEUE = "worker-metrics"


@activity.defn
async def fails_first(text: str) -> str:
    if activity.info().attempt == 1:
        raise ApplicationError("first attempt fails")
    return text


@workflow.defn
class TwoSteps:
    @workflow.run
    async def run(self, text: str) -> str:
        options: dict[str, Any] = {
            "start_to_close_timeout": timedelta(seconds=10),
            "retry_policy": RetryPolicy(initial_interval=timedelta(milliseconds=50)),
        }
        first = await workflow.execute_activity(fails_first, text, **options)
        return await workflow.execute_activity(fails_first, first + "!", **options)


def points(reader: InMemoryMetricReader) -> dict[str, list[Any]]:
    """Metric name -> its data points."""
    data = reader.get_metrics_data()
    assert data is not None
    return {
        metric.name: list(metric.data.data_points)
        for resource in data.resource_metrics
        for scope in resource.scope_metrics
        for metric in scope.metrics
    }


async def test_a_worker_records_its_activities_workflow_tasks_cache_polls_and_slots(sdk_client: Client) -> None:
    reader = InMemoryMetricReader()
    meter = MeterProvider(metric_readers=[reader]).get_meter("test")
    async with fast_worker(sdk_client, QUEUE, workflows=[TwoSteps], activities=[fails_first], meter=meter):
        handle = await sdk_client.start_workflow(TwoSteps.run, "x", id="worker-metrics-1", task_queue=QUEUE)
        assert await asyncio.wait_for(handle.result(), DEADLINE_S) == "x!"
    found = points(reader)

    def count(name: str, **attributes: str) -> int:
        return sum(
            p.count if hasattr(p, "count") else p.value
            for p in found.get(name, [])
            if attributes.items() <= dict(p.attributes).items()
        )

    attempts = "flowforge_activity_execution_latency"
    assert count(attempts, activity_type="fails_first", outcome="failed", task_queue=QUEUE) == 2
    assert count(attempts, activity_type="fails_first", outcome="completed", task_queue=QUEUE) == 2
    # Start, two activity results and the close: at least three workflow tasks, timed.
    assert count("flowforge_workflow_task_execution_latency", workflow_type="TwoSteps") >= 3
    lookups = "flowforge_worker_cache_lookups"
    assert count(lookups, result="miss") == 1  # the first task; the run stays cached after it
    assert count(lookups, result="hit") >= 2
    assert count("flowforge_worker_poll_latency", kind="workflow", result="task") >= 1
    # Every slot taken was given back.
    for kind in ("workflow", "activity"):
        assert count("flowforge_worker_task_slots_used", kind=kind) == 0
