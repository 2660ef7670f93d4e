"""Pause and unpause end to end, on SQLite and PostgreSQL: while paused no workflow task
and no new activity task of the run is dispatched (not even a retry) while the running
activity finishes, its timer fires and a signal arrives; describe says paused, by whom
and why; unpause delivers what waited and the run finishes exactly as it would have.
One activity can be paused too: its running attempt ends, no further one starts."""

from __future__ import annotations

import asyncio
import collections
import time
import uuid
from datetime import timedelta

import grpc
import pytest

from flowforge import Client, RetryPolicy, activity, workflow
from flowforge.client import WorkflowExecutionStatus, WorkflowHandle
from flowforge.exceptions import ApplicationError, RPCError
from tests.integration._reliability import DEADLINE_S, assert_gapless, events, fast_worker, of_type
from testsupport.waiting import wait_until

QUEUE = "pause"
#: How long the test watches a paused run to see that nothing of it is dispatched.
HOLD_S = 1.5
STARTED: collections.Counter[str] = collections.Counter()
#: Set by the test once the run is paused: a first attempt ends (fails) only then.
PAUSED: dict[str, asyncio.Event] = collections.defaultdict(asyncio.Event)


@activity.defn
async def flaky(key: str) -> str:
    """Its first attempt fails once the test paused the run; the retry succeeds."""
    STARTED[key] += 1
    if activity.info().attempt == 1:
        await asyncio.wait_for(PAUSED[key.rsplit("/", 1)[0]].wait(), DEADLINE_S)
        raise ApplicationError("first attempt fails")
    return f"{key} attempt {activity.info().attempt}"


@workflow.defn
class Paced:
    def __init__(self) -> None:
        self.signals: list[str] = []

    @workflow.run
    async def run(self, key: str) -> dict[str, object]:
        ticker = asyncio.ensure_future(asyncio.sleep(0.3))
        first = await workflow.execute_activity(
            flaky,
            f"{key}/1",
            start_to_close_timeout=timedelta(seconds=10),
            retry_policy=RetryPolicy(initial_interval=timedelta(milliseconds=50)),
        )
        await ticker
        second = await workflow.execute_activity(
            flaky,
            f"{key}/2",
            start_to_close_timeout=timedelta(seconds=10),
            retry_policy=RetryPolicy(initial_interval=timedelta(milliseconds=50)),
        )
        await workflow.wait_condition(lambda: "go" in self.signals)
        return {"steps": [first, second], "signals": self.signals}

    @workflow.signal
    def add(self, value: str) -> None:
        self.signals.append(value)


async def test_pause_holds_dispatch_while_timers_and_signals_arrive_and_unpause_finishes(
    sdk_client: Client, store_kind: str
) -> None:
    key = f"pause-{store_kind}-{uuid.uuid4().hex[:6]}"
    async with fast_worker(sdk_client, QUEUE, workflows=[Paced], activities=[flaky]):
        handle = await sdk_client.start_workflow(Paced.run, key, id=key, task_queue=QUEUE)
        await wait_until(lambda: STARTED[f"{key}/1"] == 1, timeout=DEADLINE_S, what="the first attempt to start")
        await sdk_client.pause_workflow(key, reason="downstream maintenance")
        PAUSED[key].set()
        described = await handle.describe()
        assert described.pause is not None and described.pause.reason == "downstream maintenance"
        assert described.pause.identity and described.pause.pause_time is not None
        await handle.signal(Paced.add, "go")

        # The running attempt finishes (and fails: its retry is held), the timer fires, the signal arrives...
        async def arrived() -> bool:
            history = await events(handle)
            attempts = (await handle.describe()).activity_attempts
            fired_and_signalled = of_type(history, "TimerFired") and of_type(history, "WorkflowExecutionSignaled")
            return bool(fired_and_signalled) and [a.outcome for a in attempts] == ["failed"]

        await wait_until(arrived, timeout=DEADLINE_S, what="the outcome, the timer and the signal to arrive")
        # ... and for a long while nothing of the run is dispatched: no workflow task, no retry.
        held_until = time.monotonic() + HOLD_S
        while time.monotonic() < held_until:
            history = await events(handle)
            paused_at = of_type(history, "WorkflowExecutionPaused")[0].event_id
            assert not [e for e in of_type(history, "WorkflowTaskStarted") if e.event_id > paused_at]
            assert STARTED[f"{key}/1"] == 1 and STARTED[f"{key}/2"] == 0
            await asyncio.sleep(0.1)
        assert (await handle.describe()).status == WorkflowExecutionStatus.RUNNING

        await sdk_client.unpause_workflow(key, reason="maintenance over")
        assert (await handle.describe()).pause is None
        result = await asyncio.wait_for(handle.result(), DEADLINE_S)

    assert result == {"steps": [f"{key}/1 attempt 2", f"{key}/2 attempt 2"], "signals": ["go"]}
    assert STARTED[f"{key}/1"] == 2 and STARTED[f"{key}/2"] == 2
    history = await events(handle)
    assert_gapless(history)
    (paused,) = of_type(history, "WorkflowExecutionPaused")
    (unpaused,) = of_type(history, "WorkflowExecutionUnpaused")
    assert paused.attributes["reason"] == "downstream maintenance"
    assert unpaused.attributes["reason"] == "maintenance over"
    # Every workflow task between the two was none: the first one after is the unpause's.
    between = [e for e in history if paused.event_id < e.event_id < unpaused.event_id]
    assert not of_type(between, "WorkflowTaskStarted")
    assert len(of_type(history, "TimerFired")) == 1


async def test_pause_and_unpause_refuse_what_they_cannot_do(sdk_client: Client, store_kind: str) -> None:
    key = f"pause-bad-{store_kind}-{uuid.uuid4().hex[:6]}"
    async with fast_worker(sdk_client, QUEUE, workflows=[Paced], activities=[flaky]):
        handle = await sdk_client.start_workflow(Paced.run, key, id=key, task_queue=QUEUE)
        with pytest.raises(RPCError) as error:
            await sdk_client.unpause_workflow(key, reason="not paused")
        assert error.value.status == grpc.StatusCode.FAILED_PRECONDITION
        with pytest.raises(RPCError) as error:
            await sdk_client.pause_workflow(key, reason="")
        assert error.value.status == grpc.StatusCode.INVALID_ARGUMENT
        await sdk_client.pause_workflow(key, reason="first")
        with pytest.raises(RPCError) as error:
            await sdk_client.pause_workflow(key, reason="twice")
        assert error.value.status == grpc.StatusCode.FAILED_PRECONDITION and "already paused" in error.value.message
        await handle.terminate(reason="test over")
        with pytest.raises(RPCError) as error:
            await sdk_client.pause_workflow(key, reason="closed")
        assert error.value.status == grpc.StatusCode.FAILED_PRECONDITION


async def test_a_paused_activity_starts_no_further_attempt_until_unpaused(sdk_client: Client, store_kind: str) -> None:
    key = f"pause-activity-{store_kind}-{uuid.uuid4().hex[:6]}"
    async with fast_worker(sdk_client, QUEUE, workflows=[Paced], activities=[flaky]):
        handle = await sdk_client.start_workflow(Paced.run, key, id=key, task_queue=QUEUE)
        await wait_until(lambda: STARTED[f"{key}/1"] == 1, timeout=DEADLINE_S, what="the first attempt to start")
        await sdk_client.pause_activity(key, "1", reason="the API is flapping")
        PAUSED[key].set()  # the running attempt now fails; its retry is held
        await wait_until(
            lambda: _attempt_outcomes(handle), timeout=DEADLINE_S, what="the first attempt to end", interval=0.1
        )
        (pending,) = (await handle.describe()).pending_activities
        assert pending.state == "PAUSED"
        held_until = time.monotonic() + HOLD_S / 2
        while time.monotonic() < held_until:
            assert STARTED[f"{key}/1"] == 1
            await asyncio.sleep(0.1)
        with pytest.raises(RPCError) as error:
            await sdk_client.pause_activity(key, "1", reason="twice")
        assert error.value.status == grpc.StatusCode.FAILED_PRECONDITION
        await sdk_client.unpause_activity(key, "1", reason="the API is stable")
        await wait_until(lambda: STARTED[f"{key}/1"] == 2, timeout=DEADLINE_S, what="the retry after the unpause")
        with pytest.raises(RPCError) as error:
            await sdk_client.pause_activity(key, "9", reason="no such activity")
        assert error.value.status == grpc.StatusCode.NOT_FOUND
        await handle.signal(Paced.add, "go")
        assert (await asyncio.wait_for(handle.result(), DEADLINE_S))["steps"] == [
            f"{key}/1 attempt 2",
            f"{key}/2 attempt 2",
        ]


async def _attempt_outcomes(handle: WorkflowHandle) -> bool:
    return [a.outcome for a in (await handle.describe()).activity_attempts] == ["failed"]
