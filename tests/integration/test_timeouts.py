"""Timeouts, as a workflow sees them.

- Each activity timeout (schedule-to-start, start-to-close, schedule-to-close,
  heartbeat) reaches the workflow as an ``ActivityError`` whose cause is a
  ``flowforge.exceptions.TimeoutError`` naming that ``TimeoutType``; schedule-to-start
  limits every attempt's wait for a worker, retries included.
- A workflow execution timeout or run timeout closes the run TIMED_OUT, and
  ``handle.result()`` raises ``WorkflowFailureError`` with a ``TimeoutError`` cause.
- A workflow task whose worker took it and went silent is handed out again after
  the workflow task timeout (``WorkflowTaskTimedOut`` in history), and a live worker
  completes the workflow.

Every test runs against SQLite and PostgreSQL.
"""

from __future__ import annotations

import asyncio
import json
import time
from datetime import timedelta

import pytest

from flowforge import Client, RetryPolicy, WorkflowExecutionStatus, activity, workflow
from flowforge.api.v1 import common_pb2
from flowforge.api.v1 import workflow_service_pb2 as pb
from flowforge.exceptions import ActivityError, TimeoutError, WorkflowFailureError
from flowforge.server import FlowForgeServer
from tests.integration._protocol import Wire, schedule_activity, seconds
from tests.integration._reliability import DEADLINE_S, assert_gapless, events, fast_worker, of_type
from testsupport.waiting import wait_until

QUEUE = "timeouts"


@activity.defn
async def sleeps(seconds: float) -> str:
    await asyncio.sleep(seconds)
    return "finished"


@activity.defn
async def heartbeats_once_then_stalls(seconds: float) -> str:
    activity.heartbeat("alive")
    await asyncio.sleep(seconds)
    return "finished"


# Each case: the activity, and the options that make exactly one timeout expire.
# The activities run far longer (30 s) than any timeout, so only the timeout ends them.
ACTIVITY_CASES = {
    "SCHEDULE_TO_START": dict(
        activity=sleeps,
        task_queue="nobody-polls-this-queue",
        schedule_to_start_timeout=timedelta(seconds=0.5),
        start_to_close_timeout=timedelta(seconds=10),
    ),
    "START_TO_CLOSE": dict(
        activity=sleeps,
        start_to_close_timeout=timedelta(seconds=0.5),
        retry_policy=RetryPolicy(initial_interval=timedelta(milliseconds=50), maximum_attempts=2),
    ),
    "SCHEDULE_TO_CLOSE": dict(
        activity=sleeps,
        start_to_close_timeout=timedelta(seconds=10),
        schedule_to_close_timeout=timedelta(seconds=0.6),
    ),
    "HEARTBEAT": dict(
        activity=heartbeats_once_then_stalls,
        start_to_close_timeout=timedelta(seconds=10),
        heartbeat_timeout=timedelta(seconds=0.5),
        retry_policy=RetryPolicy(maximum_attempts=1),
    ),
}
# The timeout that must have passed before the workflow hears of it, per case.
LOWER_BOUND_S = {"SCHEDULE_TO_START": 0.5, "START_TO_CLOSE": 1.0, "SCHEDULE_TO_CLOSE": 0.6, "HEARTBEAT": 0.5}


@workflow.defn
class ReportsActivityTimeout:
    """Runs one case and returns what the ActivityError said."""

    @workflow.run
    async def run(self, case: str) -> dict:
        options = dict(ACTIVITY_CASES[case])
        fn = options.pop("activity")
        try:
            await workflow.execute_activity(fn, 30.0, **options)
        except ActivityError as error:
            cause = error.cause
            return {
                "cause": type(cause).__name__,
                "timeout_type": cause.type.name if isinstance(cause, TimeoutError) and cause.type else None,
                "retry_state": error.retry_state.name,
            }
        return {"cause": None}


@pytest.mark.parametrize(
    "case, retry_state",
    [
        ("SCHEDULE_TO_START", "TIMEOUT"),
        ("START_TO_CLOSE", "MAXIMUM_ATTEMPTS_REACHED"),
        ("SCHEDULE_TO_CLOSE", "TIMEOUT"),
        ("HEARTBEAT", "MAXIMUM_ATTEMPTS_REACHED"),
    ],
)
async def test_an_activity_timeout_reaches_the_workflow_as_activity_error_caused_by_timeout_error_of_its_type(
    sdk_client: Client, case: str, retry_state: str
) -> None:
    async with fast_worker(
        sdk_client, QUEUE, workflows=[ReportsActivityTimeout], activities=[sleeps, heartbeats_once_then_stalls]
    ):
        handle = await sdk_client.start_workflow(
            ReportsActivityTimeout.run, case, id=f"timeout-{case}", task_queue=QUEUE
        )
        result = await asyncio.wait_for(handle.result(), DEADLINE_S)

    assert result == {"cause": "TimeoutError", "timeout_type": case, "retry_state": retry_state}
    history = await events(handle)
    assert_gapless(history)
    scheduled = of_type(history, "ActivityTaskScheduled")[0]
    timed_out = of_type(history, "ActivityTaskTimedOut")
    assert len(timed_out) == 1 and not of_type(history, "ActivityTaskCompleted", "ActivityTaskFailed")
    failure = timed_out[0].attributes["failure"]
    assert failure["type"] == "TimeoutError" and failure["timeout_type"] == f"TIMEOUT_TYPE_{case}"
    waited = (timed_out[0].event_time - scheduled.event_time).total_seconds()
    assert LOWER_BOUND_S[case] <= waited < DEADLINE_S
    started = of_type(history, "ActivityTaskStarted")
    if case == "SCHEDULE_TO_START":
        assert started == [] and timed_out[0].attributes["started_event_id"] == 0  # never picked up
    elif case == "START_TO_CLOSE":
        # The first attempt timed out and was retried; the second one's timeout is final.
        assert [e.attributes["attempt"] for e in started] == [2]
        assert started[0].attributes["last_failure"]["timeout_type"] == "TIMEOUT_TYPE_START_TO_CLOSE"
    else:
        assert [e.attributes["attempt"] for e in started] == [1]
    if case == "HEARTBEAT":
        # The failure carries the last heartbeat's details.
        assert failure["details"]["payloads"]


async def test_schedule_to_start_applies_to_every_attempt_not_only_the_first(wire: Wire) -> None:
    """Attempt 1 is picked up and fails; its retry then waits in the queue with no
    worker: it times out SCHEDULE_TO_START, its wait counted from when it became due."""
    await wire.start("s2s-retry", task_queue="s2s")
    task = await wire.poll_workflow_task("s2s")
    retry = common_pb2.RetryPolicy(initial_interval=seconds(0.2), maximum_attempts=5)
    await wire.complete_workflow_task(
        task.task_token, schedule_activity("1", start_to_close=10, retry=retry, schedule_to_start_timeout=seconds(0.5))
    )
    attempt_1 = await wire.poll_activity_task("s2s")
    assert attempt_1.attempt == 1
    failed_at = time.time()
    await wire.fail_activity(attempt_1.task_token, "worker fell over")  # retried after 0.2 s ...
    # ... and nobody polls again.

    async def timed_out() -> list:
        response = await wire.stub.GetWorkflowExecutionHistory(
            pb.GetWorkflowExecutionHistoryRequest(
                namespace="default", execution=common_pb2.WorkflowExecution(workflow_id="s2s-retry")
            )
        )
        return [e for e in response.events if e.event_type == "ActivityTaskTimedOut"]

    (event,) = await wait_until(timed_out, timeout=DEADLINE_S, what="ActivityTaskTimedOut")
    attributes = json.loads(event.attributes_json)
    assert attributes["failure"]["timeout_type"] == "TIMEOUT_TYPE_SCHEDULE_TO_START"
    assert attributes["retry_state"] == "TIMEOUT" and attributes["started_event_id"] == 0
    # Not before the retry's backoff (0.2 s) plus its schedule-to-start timeout (0.5 s).
    assert event.event_time.ToMicroseconds() / 1e6 >= failed_at + 0.7 - 0.01
    types = [event_type for _, event_type, _ in await wire.history("s2s-retry")]
    assert types[-2:] == ["ActivityTaskTimedOut", "WorkflowTaskScheduled"]
    assert "ActivityTaskStarted" not in types  # attempt 2 never started


@workflow.defn
class SleepsLong:
    @workflow.run
    async def run(self, seconds: float) -> str:
        await workflow.sleep(timedelta(seconds=seconds))
        return "woke up"


@pytest.mark.parametrize("option, timeout_type", [("execution_timeout", "EXECUTION"), ("run_timeout", "RUN")])
async def test_a_workflow_execution_or_run_timeout_closes_the_run_timed_out(
    sdk_client: Client, option: str, timeout_type: str
) -> None:
    async with fast_worker(sdk_client, QUEUE, workflows=[SleepsLong]):
        handle = await sdk_client.start_workflow(
            SleepsLong.run, 60.0, id=f"wf-{option}", task_queue=QUEUE, **{option: timedelta(seconds=0.8)}
        )
        with pytest.raises(WorkflowFailureError) as raised:
            await asyncio.wait_for(handle.result(), DEADLINE_S)

    assert isinstance(raised.value.cause, TimeoutError)
    assert timeout_type in raised.value.cause.message
    description = await handle.describe()
    assert description.status == WorkflowExecutionStatus.TIMED_OUT
    history = await events(handle)
    assert_gapless(history)
    assert history[-1].event_type == "WorkflowExecutionTimedOut"
    assert history[-1].attributes["timeout_type"] == timeout_type
    assert 0.8 <= (history[-1].event_time - history[0].event_time).total_seconds() < DEADLINE_S
    # The workflow's pending timer went with the run: it never fires.
    assert of_type(history, "TimerStarted") and not of_type(history, "TimerFired")
    assert description.pending_activities == [] and description.pending_workflow_task is None


@workflow.defn
class Greets:
    @workflow.run
    async def run(self, name: str) -> str:
        return f"hello {name}"


async def test_a_workflow_task_held_by_a_silent_worker_times_out_and_a_live_worker_completes_the_workflow(
    sdk_client: Client, server: FlowForgeServer
) -> None:
    handle = await sdk_client.start_workflow(
        Greets.run, "ada", id="wft-timeout", task_queue=QUEUE, task_timeout=timedelta(seconds=0.5)
    )
    # A worker takes the workflow task and then goes silent (crashed, or stuck).
    silent = Wire(f"127.0.0.1:{server.port}")
    try:
        taken = await silent.poll_workflow_task(QUEUE)
        assert taken.task_token and taken.workflow_execution.workflow_id == "wft-timeout"
        taken_at = time.monotonic()

        async def timed_out() -> bool:
            return bool(of_type(await events(handle), "WorkflowTaskTimedOut"))

        await wait_until(timed_out, timeout=DEADLINE_S, what="WorkflowTaskTimedOut")
        assert time.monotonic() - taken_at >= 0.5 - 0.05
    finally:
        await silent.close()

    async with fast_worker(sdk_client, QUEUE, workflows=[Greets]):
        assert await asyncio.wait_for(handle.result(), DEADLINE_S) == "hello ada"

    history = await events(handle)
    assert_gapless(history)
    assert [e.event_type for e in history] == [
        "WorkflowExecutionStarted",
        "WorkflowTaskScheduled",
        "WorkflowTaskStarted",
        "WorkflowTaskTimedOut",
        "WorkflowTaskScheduled",
        "WorkflowTaskStarted",
        "WorkflowTaskCompleted",
        "WorkflowExecutionCompleted",
    ]
    first_started, timed_out, second_started = history[2], history[3], history[5]
    assert first_started.attributes["identity"] == "test"
    assert timed_out.attributes == {
        "scheduled_event_id": 2,
        "started_event_id": 3,
        "timeout_type": "START_TO_CLOSE",
    }
    assert second_started.attributes["identity"] == sdk_client.identity
