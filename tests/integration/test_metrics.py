"""``GET /metrics``: scraped before and after a known workload, the counters move by
exactly what the workload did (closed runs by status, activity attempts by outcome,
RPCs by method and code), and the backlog gauge rises and falls with a queue that
has no worker until the test starts one; a transaction run again after a conflict,
or rolled back, counts its change once or not at all. Runs against SQLite and
PostgreSQL."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import timedelta

import aiohttp
import grpc
import pytest
from prometheus_client.parser import text_string_to_metric_families

from flowforge import Client, RetryPolicy, activity, workflow
from flowforge.client import (
    Schedule,
    ScheduleActionStartWorkflow,
    ScheduleIntervalSpec,
    ScheduleOverlapPolicy,
    SchedulePolicy,
    ScheduleSpec,
)
from flowforge.exceptions import ApplicationError, RPCError, WorkflowFailureError
from flowforge.server import FlowForgeServer, ServerConfig
from flowforge.server.errors import NotFound
from flowforge.server.history import HistoryEngine
from flowforge.server.observations import WorkflowClosed, observe
from flowforge.server.stores.base import ConcurrencyConflict, Store, Transaction
from tests.integration._reliability import DEADLINE_S, fast_worker
from testsupport.waiting import wait_until

QUEUE = "metrics"
IDLE_QUEUE = "metrics-idle"

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


@pytest.fixture
async def server(store_url: str) -> AsyncIterator[FlowForgeServer]:
    instance = FlowForgeServer(ServerConfig(store=store_url, port=0, http_port=0, poll_recheck_interval_s=0.2))
    await instance.start()
    yield instance
    await instance.stop()


async def scrape(server: FlowForgeServer) -> Samples:
    async with aiohttp.ClientSession() as http, http.get(f"http://127.0.0.1:{server.http_port}/metrics") as answer:
        assert answer.status == 200
        assert answer.headers["Content-Type"].startswith("text/plain")
        text = await answer.text()
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


@activity.defn
async def succeed(text: str) -> str:
    return text


@activity.defn
async def fail_once(text: str) -> str:
    if activity.info().attempt == 1:
        raise ApplicationError("first attempt fails", type="Flaky")
    return text


@workflow.defn
class Metered:
    @workflow.run
    async def run(self, mode: str) -> str:
        if mode == "fail":
            raise ApplicationError("asked to fail", non_retryable=True)
        options = {
            "start_to_close_timeout": timedelta(seconds=10),
            "retry_policy": RetryPolicy(initial_interval=timedelta(milliseconds=50), maximum_attempts=3),
        }
        first, second = await asyncio.gather(
            workflow.execute_activity(succeed, "a", **options),
            workflow.execute_activity(fail_once if mode == "flaky" else succeed, "b", **options),
        )
        return first + second


async def test_counters_move_by_exactly_what_a_known_workload_did(server: FlowForgeServer, sdk_client: Client) -> None:
    before = await scrape(server)
    async with fast_worker(sdk_client, QUEUE, workflows=[Metered], activities=[succeed, fail_once]):
        handles = [
            await sdk_client.start_workflow(Metered.run, mode, id=f"metered-{n}", task_queue=QUEUE)
            for n, mode in enumerate(["plain", "plain", "flaky", "fail"])
        ]
        for handle in handles[:3]:
            assert await asyncio.wait_for(handle.result(), DEADLINE_S) == "ab"
        with pytest.raises(WorkflowFailureError):
            await asyncio.wait_for(handles[3].result(), DEADLINE_S)
    with pytest.raises(RPCError):
        await sdk_client.get_workflow_handle("no-such-workflow").describe()
    after = await scrape(server)

    def delta(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    closed = "flowforge_workflow_closed_total"
    assert delta(closed, namespace="default", workflow_type="Metered", status="COMPLETED") == 3
    assert delta(closed, namespace="default", workflow_type="Metered", status="FAILED") == 1
    attempts = "flowforge_activity_attempts_total"
    assert delta(attempts, namespace="default", activity_type="succeed", outcome="completed") == 5
    assert delta(attempts, namespace="default", activity_type="fail_once", outcome="completed") == 1
    assert delta(attempts, namespace="default", activity_type="fail_once", outcome="failed") == 1
    assert delta(attempts, namespace="default", activity_type="succeed", outcome="failed") == 0
    rpcs = "flowforge_rpc_requests_total"
    assert delta(rpcs, method="StartWorkflowExecution", code="OK") == 4
    assert delta(rpcs, method="DescribeWorkflowExecution", code="NOT_FOUND") == 1
    assert delta("flowforge_rpc_latency_seconds_count", method="StartWorkflowExecution") == 4
    # Each attempt was started once (polled or handed out eagerly): six activities, one retry.
    started = "flowforge_task_schedule_to_start_seconds_count"
    assert delta(started, namespace="default", task_queue=QUEUE, kind="activity") == 7
    assert delta("flowforge_store_transaction_seconds_count", outcome="committed") > 0


async def test_the_backlog_gauge_rises_and_falls_with_a_queue_without_a_worker(
    server: FlowForgeServer, sdk_client: Client
) -> None:
    labels = {"namespace": "default", "task_queue": IDLE_QUEUE, "kind": "workflow"}
    for n in range(1, 4):
        await sdk_client.start_workflow(Metered.run, "plain", id=f"idle-{n}", task_queue=IDLE_QUEUE)
        samples = await scrape(server)
        assert value(samples, "flowforge_task_queue_backlog", **labels) == n
    assert value(samples, "flowforge_task_queue_oldest_task_age_seconds", **labels) > 0

    async with fast_worker(sdk_client, IDLE_QUEUE, workflows=[Metered], activities=[succeed, fail_once]):
        for n in range(1, 4):
            assert await asyncio.wait_for(sdk_client.get_workflow_handle(f"idle-{n}").result(), DEADLINE_S) == "ab"

    async def drained() -> bool:
        samples = await scrape(server)
        return value(samples, "flowforge_task_queue_backlog", **labels) == 0 and (
            ("flowforge_task_queue_backlog", frozenset(labels.items())) in samples
        )

    await wait_until(drained, timeout=DEADLINE_S, what="the backlog gauge to fall to 0")


async def test_a_transaction_run_again_after_a_conflict_counts_its_change_once(store: Store) -> None:
    engine = HistoryEngine(store)
    attempts = 0

    async def body(tx: Transaction) -> None:
        nonlocal attempts
        attempts += 1
        observe(WorkflowClosed("default", "Conflicted", "COMPLETED"))
        if attempts < 3:
            raise ConcurrencyConflict("a concurrent writer")

    await engine.transaction(body)

    async def refused(tx: Transaction) -> None:
        observe(WorkflowClosed("default", "Conflicted", "FAILED"))
        raise NotFound("rolled back: counts nothing")

    with pytest.raises(NotFound):
        await engine.transaction(refused)
    samples = {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(engine.metrics.render().decode())
        for s in family.samples
    }
    closed = "flowforge_workflow_closed_total"
    assert attempts == 3
    assert value(samples, closed, namespace="default", workflow_type="Conflicted", status="COMPLETED") == 1
    assert value(samples, closed, namespace="default", workflow_type="Conflicted", status="FAILED") == 0
    assert value(samples, "flowforge_store_conflicts_total") == 2
    assert value(samples, "flowforge_store_transaction_seconds_count", outcome="conflict") == 2
    assert value(samples, "flowforge_store_transaction_seconds_count", outcome="rolled_back") == 1


async def test_quota_refusals_and_schedule_lateness_are_counted(server: FlowForgeServer, sdk_client: Client) -> None:
    await sdk_client.register_namespace("metered-quota", max_running_executions=1)
    quota_client = await Client.connect(f"127.0.0.1:{server.port}", namespace="metered-quota")
    before = await scrape(server)
    try:
        await quota_client.start_workflow(Metered.run, "plain", id="quota-1", task_queue=IDLE_QUEUE)
        with pytest.raises(RPCError) as refused:
            await quota_client.start_workflow(Metered.run, "plain", id="quota-2", task_queue=IDLE_QUEUE)
        assert refused.value.status == grpc.StatusCode.RESOURCE_EXHAUSTED
    finally:
        await quota_client.close()
    after = await scrape(server)
    refusals = "flowforge_quota_refusals_total"
    labels = {"namespace": "metered-quota", "quota": "max_running_executions"}
    assert value(after, refusals, **labels) - value(before, refusals, **labels) == 1
    rpcs = {"method": "StartWorkflowExecution", "code": "RESOURCE_EXHAUSTED"}
    assert (
        value(after, "flowforge_rpc_requests_total", **rpcs) - value(before, "flowforge_rpc_requests_total", **rpcs)
        == 1
    )

    await sdk_client.create_schedule(
        "metered-schedule",
        Schedule(
            action=ScheduleActionStartWorkflow("Metered", "plain", id="metered-scheduled", task_queue=IDLE_QUEUE),
            spec=ScheduleSpec(intervals=[ScheduleIntervalSpec(every=timedelta(seconds=1))]),
            policy=SchedulePolicy(overlap=ScheduleOverlapPolicy.ALLOW_ALL),
        ),
    )

    async def fired() -> bool:
        samples = await scrape(server)
        return value(samples, "flowforge_schedule_fire_lateness_seconds_count", namespace="default") >= 1

    await wait_until(fired, timeout=DEADLINE_S, what="a scheduled run to be counted")
    samples = await scrape(server)
    # Fired on time (the scheduler sleeps until the nominal time): well under a second late.
    assert value(samples, "flowforge_schedule_fire_lateness_seconds_bucket", namespace="default", le="1.0") >= 1
