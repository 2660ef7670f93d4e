"""flowforge.testing.WorkflowEnvironment: a real in-process server for tests, on real
time or on a clock that skips ahead when nothing else can progress."""

from __future__ import annotations

import asyncio
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from flowforge import RetryPolicy, WorkflowExecutionStatus, WorkflowHandle, activity, workflow
from flowforge.exceptions import TimeoutError as WorkflowTimeoutError
from flowforge.exceptions import WorkflowFailureError
from flowforge.testing import WorkflowEnvironment
from flowforge.worker import Worker
from testsupport.waiting import wait_until

QUEUE = "testing-env"


@activity.defn
async def greet(name: str) -> str:
    return f"Hello, {name}!"


@activity.defn
async def slow_heartbeating_step(seconds: float) -> float:
    """Runs ``seconds`` of real time, heartbeating every 0.2 s."""
    started = time.monotonic()
    while time.monotonic() - started < seconds:
        activity.heartbeat()
        await asyncio.sleep(0.2)
    return seconds


@workflow.defn
class Greeting:
    @workflow.run
    async def run(self, name: str) -> str:
        greeting = await workflow.execute_activity(greet, name, start_to_close_timeout=timedelta(seconds=10))
        await workflow.sleep(timedelta(milliseconds=50))
        return greeting


@workflow.defn
class Sleeper:
    """Sleeps as long as asked; returns the workflow times before and after."""

    @workflow.run
    async def run(self, seconds: float) -> list[str]:
        before = workflow.now()
        await workflow.sleep(timedelta(seconds=seconds))
        return [before.isoformat(), workflow.now().isoformat()]


@workflow.defn
class ActivityBesideATimer:
    """An activity of ~1.2 s, with a 1 s heartbeat and 3 s start-to-close
    timeout, runs while a one-day timer is pending."""

    @workflow.run
    async def run(self) -> float:
        step = workflow.execute_activity(
            slow_heartbeating_step,
            1.2,
            start_to_close_timeout=timedelta(seconds=3),
            heartbeat_timeout=timedelta(seconds=1),
        )
        ran, _ = await asyncio.gather(step, workflow.sleep(timedelta(days=1)))
        return ran


@activity.defn
async def fails_on_first_attempt() -> int:
    attempt = activity.info().attempt
    if attempt == 1:
        raise RuntimeError("the service is down for an hour")
    return attempt


@workflow.defn
class RetriesAfterAnHour:
    @workflow.run
    async def run(self) -> list:
        started = workflow.now()
        attempt = await workflow.execute_activity(
            fails_on_first_attempt,
            start_to_close_timeout=timedelta(seconds=10),
            retry_policy=RetryPolicy(initial_interval=timedelta(hours=1), maximum_attempts=2),
        )
        return [attempt, (workflow.now() - started).total_seconds()]


@workflow.defn
class Approval:
    """Waits up to a week for an approval signal."""

    def __init__(self) -> None:
        self.approver = ""

    @workflow.run
    async def run(self) -> str:
        try:
            await workflow.wait_condition(lambda: bool(self.approver), timeout=timedelta(days=7))
        except TimeoutError:
            return "expired"
        return f"approved by {self.approver}"

    @workflow.signal
    async def approve(self, approver: str) -> None:
        self.approver = approver


@workflow.defn
class MonthlyRounds:
    """Runs a 30-day Sleeper child per round, continuing as new between rounds."""

    @workflow.run
    async def run(self, rounds: int) -> list[str]:
        times = await workflow.execute_child_workflow(
            Sleeper.run, timedelta(days=30).total_seconds(), id=f"{workflow.info().workflow_id}-round-{rounds}"
        )
        if rounds > 1:
            workflow.continue_as_new(rounds - 1)
        return times


async def start_sleeper(
    env: WorkflowEnvironment, duration: timedelta, workflow_id: str = "sleeper", **options: Any
) -> WorkflowHandle:
    return await env.client.start_workflow(
        Sleeper.run, duration.total_seconds(), id=workflow_id, task_queue=QUEUE, **options
    )


def elapsed(times: list[str]) -> timedelta:
    before, after = (datetime.fromisoformat(t) for t in times)
    return after - before


async def test_start_local_runs_a_workflow_end_to_end_and_removes_its_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))

    async with WorkflowEnvironment.start_local() as env:
        assert not env.supports_time_skipping
        assert next(p.name for p in tmp_path.iterdir()).startswith("flowforge-test-")
        async with Worker(env.client, task_queue=QUEUE, workflows=[Greeting], activities=[greet]):
            handle = await env.client.start_workflow(Greeting.run, "Ada", id="greeting", task_queue=QUEUE)
            assert await handle.result() == "Hello, Ada!"
        assert (await handle.describe()).status == WorkflowExecutionStatus.COMPLETED

    assert list(tmp_path.iterdir()) == []


async def test_temporal_spelling_await_then_async_with_works_in_a_namespace_of_its_own() -> None:
    async with await WorkflowEnvironment.start_local(namespace="tests") as env:
        assert env.client.namespace == "tests"
        async with Worker(env.client, task_queue=QUEUE, workflows=[Greeting], activities=[greet]):
            handle = await env.client.start_workflow(Greeting.run, "Grace", id="greeting", task_queue=QUEUE)
            assert await handle.result() == "Hello, Grace!"


async def test_from_client_wraps_the_client_of_another_server() -> None:
    async with WorkflowEnvironment.start_local() as server_env:
        env = WorkflowEnvironment.from_client(server_env.client)
        assert env.client is server_env.client and not env.supports_time_skipping
        async with Worker(env.client, task_queue=QUEUE, workflows=[Greeting], activities=[greet]):
            handle = await env.client.start_workflow(Greeting.run, "Edsger", id="greeting", task_queue=QUEUE)
            assert await handle.result() == "Hello, Edsger!"


async def test_a_30_day_sleep_completes_in_under_a_second_under_time_skipping() -> None:
    async with WorkflowEnvironment.start_time_skipping() as env:
        assert env.supports_time_skipping
        clock_before = await env.get_current_time()
        async with Worker(env.client, task_queue=QUEUE, workflows=[Sleeper]):
            for run in range(3):  # whatever the timekeeper was doing when each one started
                started = time.monotonic()
                handle = await start_sleeper(env, timedelta(days=30), f"sleeper-{run}")
                times = await asyncio.wait_for(handle.result(), 20)
                wall = time.monotonic() - started

                assert wall < 1.0, f"run {run} took {wall:.3f}s of wall time"
                assert elapsed(times) >= timedelta(days=30)
        assert await env.get_current_time() - clock_before >= timedelta(days=90)


async def test_time_skipping_never_skips_past_a_running_activity() -> None:
    async with WorkflowEnvironment.start_time_skipping() as env:
        async with Worker(
            env.client, task_queue=QUEUE, workflows=[ActivityBesideATimer], activities=[slow_heartbeating_step]
        ):
            handle = await env.client.start_workflow(ActivityBesideATimer.run, id="beside", task_queue=QUEUE)
            assert await asyncio.wait_for(handle.result(), 20) == 1.2
        history = await handle.fetch_history()

    types = [event.event_type for event in history.events]
    assert "ActivityTaskTimedOut" not in types and "ActivityTaskFailed" not in types
    started = next(e for e in history.events if e.event_type == "ActivityTaskStarted")
    assert started.attributes["attempt"] == 1
    completed = next(e for e in history.events if e.event_type == "ActivityTaskCompleted")
    fired = next(e for e in history.events if e.event_type == "TimerFired")
    # The activity ended in real time; only then was the day skipped.
    assert completed.event_time - history.events[0].event_time < timedelta(seconds=10)
    assert fired.event_time - completed.event_time >= timedelta(hours=23)


async def test_env_sleep_skips_time_and_fires_the_timers_on_the_way() -> None:
    async with WorkflowEnvironment.start_time_skipping() as env:
        async with Worker(env.client, task_queue=QUEUE, workflows=[Sleeper]):
            handle = await start_sleeper(env, timedelta(hours=1))
            before = await env.get_current_time()
            started = time.monotonic()
            await env.sleep(timedelta(hours=2))
            assert time.monotonic() - started < 5
            assert await env.get_current_time() - before >= timedelta(hours=2)

            async def completed() -> bool:  # the timer fired; its workflow task may still be running
                return (await handle.describe()).status == WorkflowExecutionStatus.COMPLETED

            await wait_until(
                completed, timeout=10, what="the workflow to complete after its timer was skipped to", interval=0.02
            )
            assert elapsed(await handle.result()) >= timedelta(hours=1)


async def test_awaiting_a_result_does_not_skip_time_while_auto_skipping_is_disabled() -> None:
    async with WorkflowEnvironment.start_time_skipping() as env:
        async with Worker(env.client, task_queue=QUEUE, workflows=[Sleeper]):
            handle = await start_sleeper(env, timedelta(hours=1))
            before = await env.get_current_time()
            with env.auto_time_skipping_disabled():
                with pytest.raises(asyncio.TimeoutError):
                    await asyncio.wait_for(handle.result(), 0.5)
                assert await env.get_current_time() - before < timedelta(minutes=1)
            assert elapsed(await asyncio.wait_for(handle.result(), 10)) >= timedelta(hours=1)


async def test_an_activity_retry_backoff_is_skipped() -> None:
    async with WorkflowEnvironment.start_time_skipping() as env:
        async with Worker(
            env.client, task_queue=QUEUE, workflows=[RetriesAfterAnHour], activities=[fails_on_first_attempt]
        ):
            handle = await env.client.start_workflow(RetriesAfterAnHour.run, id="retry", task_queue=QUEUE)
            attempt, waited_s = await asyncio.wait_for(handle.result(), 20)
    assert attempt == 2
    assert waited_s >= timedelta(hours=1).total_seconds()


async def test_a_run_timeout_is_reached_by_skipping() -> None:
    async with WorkflowEnvironment.start_time_skipping() as env:
        async with Worker(env.client, task_queue=QUEUE, workflows=[Sleeper]):
            handle = await start_sleeper(env, timedelta(days=30), run_timeout=timedelta(hours=2))
            with pytest.raises(WorkflowFailureError) as failure:
                await asyncio.wait_for(handle.result(), 20)
    assert isinstance(failure.value.cause, WorkflowTimeoutError)


async def test_a_week_long_wait_for_a_signal_expires_at_once_or_ends_with_the_signal() -> None:
    async with WorkflowEnvironment.start_time_skipping() as env:
        async with Worker(env.client, task_queue=QUEUE, workflows=[Approval]):
            unanswered = await env.client.start_workflow(Approval.run, id="unanswered", task_queue=QUEUE)
            assert await asyncio.wait_for(unanswered.result(), 20) == "expired"

            answered = await env.client.start_workflow(Approval.run, id="answered", task_queue=QUEUE)
            before = await env.get_current_time()
            await answered.signal(Approval.approve, "ops")
            assert await asyncio.wait_for(answered.result(), 20) == "approved by ops"
            assert await env.get_current_time() - before < timedelta(days=7)


async def test_children_and_continue_as_new_skip_time_together() -> None:
    async with WorkflowEnvironment.start_time_skipping() as env:
        async with Worker(env.client, task_queue=QUEUE, workflows=[MonthlyRounds, Sleeper]):
            before = await env.get_current_time()
            started = time.monotonic()
            handle = await env.client.start_workflow(MonthlyRounds.run, 3, id="rounds", task_queue=QUEUE)
            assert elapsed(await asyncio.wait_for(handle.result(), 20)) >= timedelta(days=30)
            assert time.monotonic() - started < 5
            assert await env.get_current_time() - before >= timedelta(days=90)
