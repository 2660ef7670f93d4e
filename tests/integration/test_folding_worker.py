"""Folded workflow tasks, end to end with the SDK worker (both stores, both transports).

A worker that completes an activity of a run it holds cached runs the workflow task the
completion schedules and sends both in one report (worker/_fold.py). Shown here: every
activity of the onboarding DAG folds (its three parallel ones too), a signal that lands
while a fold is on its way makes the server ignore it and the run still ends right,
``workflow.now()`` in a folded task is what a replay of the history gives, and a server
killed with -9 while folds are in flight loses nothing and does nothing twice.
"""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from flowforge import Client, WorkflowHandle, workflow
from flowforge.client import WorkflowHistory
from flowforge.testing import Replayer
from samples.onboarding.workflows import ACTIVITIES, Onboarding
from tests.integration._processes import ServerProcess, read_ledger
from tests.integration._reliability import DEADLINE_S, assert_gapless, fast_worker
from tests.integration._worker_app import ManySteps, ledger_step
from testsupport.waiting import wait_until
from testsupport.workloads import noop

FOLDS = "flowforge_worker_workflow_task_folds"
STEP = timedelta(seconds=10)


class Folds:
    """The worker's fold counter (or another of its counters), read from an in-memory meter."""

    def __init__(self) -> None:
        self.reader = InMemoryMetricReader()
        self.meter = MeterProvider(metric_readers=[self.reader]).get_meter("test")

    def count(self, result: str, metric: str = FOLDS) -> int:
        data = self.reader.get_metrics_data()
        if data is None:
            return 0
        return sum(
            int(point.value)
            for resource in data.resource_metrics
            for scope in resource.scope_metrics
            for counter in scope.metrics
            if counter.name == metric
            for point in counter.data.data_points
            if dict(point.attributes).get("result") == result
        )


@workflow.defn
class Clocked:
    """Three activities one after another; what ``workflow.now()`` said after each."""

    @workflow.run
    async def run(self) -> list[str]:
        seen = []
        for i in range(3):
            await workflow.execute_activity(noop, i, start_to_close_timeout=STEP)
            seen.append(workflow.now().isoformat())
        return seen


@workflow.defn
class SignalledStep:
    """One activity, then the signal's value with the activity's result."""

    def __init__(self) -> None:
        self.note = ""

    @workflow.signal
    def annotate(self, note: str) -> None:
        self.note = note

    @workflow.run
    async def run(self) -> str:
        result = await workflow.execute_activity(noop, 7, start_to_close_timeout=STEP)
        await workflow.wait_condition(lambda: bool(self.note))
        return f"{result}+{self.note}"


def _queue(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


async def _checked_history(handle: WorkflowHandle[Any, Any], workflow_class: type) -> WorkflowHistory:
    """The run's history, checked: gapless, no failed workflow task, and it replays."""
    history = await handle.fetch_history()
    assert_gapless(history.events)
    assert "WorkflowTaskFailed" not in {e.event_type for e in history.events}
    await Replayer(workflows=[workflow_class]).replay_workflow(history)
    return history


async def test_every_activity_of_the_onboarding_dag_folds(sdk_client: Client, task_transport: str) -> None:
    folds = Folds()
    queue = _queue("fold-onboarding")
    request = {"name": "Ada", "email": "ada@example.com", "work_seconds": 0.0, "cooling_off_seconds": 0}
    async with fast_worker(
        sdk_client,
        queue,
        workflows=[Onboarding],
        activities=ACTIVITIES,
        meter=folds.meter,
        task_transport=task_transport,
    ):
        handles = [
            await sdk_client.start_workflow(Onboarding.run, request, id=f"{queue}-{i}", task_queue=queue)
            for i in range(3)
        ]
        for handle in handles:
            result = await asyncio.wait_for(handle.result(), DEADLINE_S)
            assert len(result["checks"]) == 3
    # Six activities per run, the three parallel ones included: each completion folded, none ignored.
    assert (folds.count("applied"), folds.count("ignored")) == (6 * len(handles), 0)
    for handle in handles:
        history = await _checked_history(handle, Onboarding)
        assert Counter(e.event_type for e in history.events)["ActivityTaskCompleted"] == 6


async def test_a_signal_that_lands_before_the_fold_makes_the_server_ignore_it_and_the_run_ends_right(
    sdk_client: Client, task_transport: str
) -> None:
    folds = Folds()
    queue = _queue("fold-signal")
    workflow_id = f"{queue}-1"
    service = sdk_client.workflow_service
    encode = service.encode_request
    signalled = False

    async def signal_first(rpc: str, request: Any) -> Any:
        nonlocal signalled
        if rpc == "RespondActivityTaskCompleted" and request.HasField("folded_workflow_task") and not signalled:
            # The run gets an event after the one the fold was run at: the fold no longer applies.
            signalled = True
            await sdk_client.get_workflow_handle(workflow_id).signal(SignalledStep.annotate, "signalled")
        return await encode(rpc, request)

    service.encode_request = signal_first  # type: ignore[method-assign]
    async with fast_worker(
        sdk_client,
        queue,
        workflows=[SignalledStep],
        activities=[noop],
        meter=folds.meter,
        task_transport=task_transport,
    ):
        handle = await sdk_client.start_workflow(SignalledStep.run, id=workflow_id, task_queue=queue)
        assert await asyncio.wait_for(handle.result(), DEADLINE_S) == "7+signalled"
    assert signalled
    assert folds.count("ignored") == 1
    history = await _checked_history(handle, SignalledStep)
    assert [e.event_type for e in history.events].count("WorkflowExecutionSignaled") == 1


async def test_workflow_now_in_a_folded_task_is_what_a_replay_of_the_history_gives(
    sdk_client: Client, task_transport: str
) -> None:
    folds = Folds()
    queue = _queue("fold-clock")
    async with fast_worker(
        sdk_client, queue, workflows=[Clocked], activities=[noop], meter=folds.meter, task_transport=task_transport
    ):
        handle = await sdk_client.start_workflow(Clocked.run, id=f"{queue}-1", task_queue=queue)
        seen = await asyncio.wait_for(handle.result(), DEADLINE_S)
    assert folds.count("applied") == 3
    history = await _checked_history(handle, Clocked)
    # The time of the task that ran after each activity: its WorkflowTaskStarted's.
    started = [e.event_time for e in history.events if e.event_type == "WorkflowTaskStarted"][1:]
    assert [datetime.fromisoformat(text) for text in seen] == started
    completed = [e.event_time for e in history.events if e.event_type == "ActivityTaskCompleted"]
    assert all(done <= at for done, at in zip(completed, started, strict=True))


async def test_a_server_killed_with_folds_in_flight_finishes_every_run_once_with_replayable_histories(
    server_process: ServerProcess, ledger: Path, task_transport: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FLOWFORGE_TEST_LEDGER", str(ledger))
    folds = Folds()
    queue = _queue("fold-crash")
    steps = 12
    client = await Client.connect(server_process.address)
    try:
        async with fast_worker(
            client,
            queue,
            workflows=[ManySteps],
            activities=[ledger_step],
            meter=folds.meter,
            task_transport=task_transport,
        ):
            handles = [
                await client.start_workflow(
                    ManySteps.run,
                    {"key": f"wf{i}", "steps": steps, "seconds": 0.01, "start_to_close": 3},
                    id=f"{queue}-{i}",
                    task_queue=queue,
                )
                for i in range(6)
            ]
            await wait_until(lambda: folds.count("applied") >= 12, timeout=60, what="folds to be applied")
            server_process.kill9()
            server_process.start()
            results = [await asyncio.wait_for(handle.result(), 90) for handle in handles]
        assert folds.count("applied") > 12  # folds went on after the restart
        for i, (handle, result) in enumerate(zip(handles, results, strict=True)):
            assert [r["key"] for r in result] == [f"wf{i}/{step}" for step in range(steps)]
            history = await _checked_history(handle, ManySteps)
            types = Counter(e.event_type for e in history.events)
            assert types["WorkflowExecutionStarted"] == types["WorkflowExecutionCompleted"] == 1
            assert types["ActivityTaskScheduled"] == types["ActivityTaskCompleted"] == steps
        # Each step's side effect finished, on one attempt unless the kill cut one short.
        done = Counter(e["key"] for e in read_ledger(ledger) if e["event"] == "done")
        assert set(done) == {f"wf{i}/{step}" for i in range(6) for step in range(steps)}
    finally:
        await client.close()
