"""SIGTERM drains a worker: it stops polling, finishes what it holds, then exits.
What outlives the graceful shutdown timeout is cancelled through its context and
reported, so the server retries it elsewhere at once."""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta
from pathlib import Path

from flowforge import Client, RetryPolicy, activity, workflow
from flowforge.worker import Worker
from tests.integration._processes import ServerProcess, WorkerProcess, read_ledger
from tests.integration._worker_app import OneStep
from testsupport.waiting import wait_until


async def test_sigterm_lets_the_running_activity_finish_and_report_before_exit(
    client: Client, server_process: ServerProcess, ledger: Path, tmp_path: Path
) -> None:
    worker = WorkerProcess(server_process.address, "drain", ledger, tmp_path)
    try:
        handle = await client.start_workflow(
            OneStep.run, {"key": "drain", "seconds": 1.5, "start_to_close": 30}, id="drain", task_queue="drain"
        )
        await wait_until(
            lambda: any(e["event"] == "start" for e in read_ledger(ledger)), timeout=30, what="the activity to start"
        )
        worker.terminate()
        began = time.monotonic()
        await wait_until(lambda: worker.process.poll() is not None, timeout=30, what="the worker to exit")
        assert worker.process.returncode == 0
        assert time.monotonic() - began < 25
    finally:
        worker.stop()
    assert [(e["event"], e["attempt"]) for e in read_ledger(ledger)] == [("start", 1), ("done", 1)]
    history = await handle.fetch_history()
    completed = [e for e in history.events if e.event_type == "ActivityTaskCompleted"]
    assert len(completed) == 1
    started = next(e for e in history.events if e.event_type == "ActivityTaskStarted")
    assert started.attributes["attempt"] == 1
    # Nothing is left leased to the departed worker: its next workflow task waits for a poller.
    description = await handle.describe()
    assert description.pending_activities == []
    assert description.pending_workflow_task is not None and description.pending_workflow_task.state == "SCHEDULED"


# --------------------------------------------------------------------------- past the grace period

attempts_seen: list[dict] = []


@activity.defn
async def outlives_the_grace_period(key: str) -> dict:
    """Takes far longer than a worker's graceful shutdown timeout on attempt 1."""
    info = activity.info()
    attempts_seen.append({"key": key, "attempt": info.attempt, "cancelled": None})
    if info.attempt == 1:
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            attempts_seen[-1].update(cancelled=activity.is_cancelled(), at=time.monotonic())
            raise
    return {"key": key, "attempt": info.attempt}


@workflow.defn
class RunsOutlivingActivity:
    @workflow.run
    async def run(self, key: str) -> dict:
        return await workflow.execute_activity(
            outlives_the_grace_period,
            key,
            start_to_close_timeout=timedelta(seconds=60),
            retry_policy=RetryPolicy(initial_interval=timedelta(milliseconds=50)),
        )


async def test_an_activity_outliving_the_grace_period_is_cancelled_reported_and_retried_on_another_worker(
    sdk_client: Client, store_kind: str
) -> None:
    key = f"outlives-{store_kind}"
    grace = timedelta(seconds=0.3)
    leaving = Worker(
        sdk_client,
        task_queue=key,
        workflows=[RunsOutlivingActivity],
        activities=[outlives_the_grace_period],
        graceful_shutdown_timeout=grace,
        identity="leaving",
    )
    async with leaving:
        handle = await sdk_client.start_workflow(RunsOutlivingActivity.run, key, id=key, task_queue=key)
        await wait_until(lambda: any(a["key"] == key for a in attempts_seen), timeout=20, what="attempt 1 to start")
        shutdown_began = time.monotonic()
    # The activity was cancelled through its context once the grace period was over...
    first = next(a for a in attempts_seen if a["key"] == key)
    assert first["attempt"] == 1 and first["cancelled"] is True
    assert grace.total_seconds() <= first["at"] - shutdown_began < grace.total_seconds() + 5
    # ... and reported before the worker stopped: nothing is left leased to the departed
    # worker (no waiting for the 60 s start-to-close timeout); the retry waits for a poller.
    pending = (await handle.describe()).pending_activities
    assert [(p.state, p.attempt) for p in pending] == [("SCHEDULED", 2)]
    assert pending[0].last_failure is not None and "shutting down" in pending[0].last_failure

    async with Worker(
        sdk_client,
        task_queue=key,
        workflows=[RunsOutlivingActivity],
        activities=[outlives_the_grace_period],
        identity="arriving",
    ):
        assert await asyncio.wait_for(handle.result(), 20) == {"key": key, "attempt": 2}

    history = await handle.fetch_history()
    started = [e for e in history.events if e.event_type == "ActivityTaskStarted"]
    assert [(e.attributes["attempt"], e.attributes["identity"]) for e in started] == [(2, "arriving")]
    assert started[0].attributes["last_failure"]["type"] == "CancelledError"
    assert [e.event_id for e in history.events] == list(range(1, len(history.events) + 1))
