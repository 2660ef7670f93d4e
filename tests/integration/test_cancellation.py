"""Cancelling and terminating executions.

- ``handle.cancel()`` delivers ``asyncio.CancelledError`` to the workflow at the
  point where it awaits; the workflow may clean up, even run a compensating
  activity, and then ends CANCELED (or COMPLETED, if it swallows the error).
- A running activity learns of the cancellation through its next heartbeat:
  ``activity.is_cancelled()`` turns true and an async activity's task is cancelled,
  within about one heartbeat interval.
- The activity's cancellation type decides what the workflow's await does:
  TRY_CANCEL raises at once, WAIT_CANCELLATION_COMPLETED raises once the activity
  acknowledged (``ActivityTaskCanceled`` in history first), ABANDON raises at once
  and sends no cancel request (the activity runs on).
- ``handle.terminate(reason)`` ends the execution at once, the reason in history;
  ``result()`` raises ``WorkflowFailureError`` caused by ``TerminatedError``.

Activities here run in this process (the worker is in-process), so they report to
the test through the ``Probe`` objects below. Every test runs against SQLite and
PostgreSQL.
"""

from __future__ import annotations

import asyncio
import dataclasses
import threading
import time
from datetime import datetime, timedelta

import pytest

from flowforge import Client, WorkflowExecutionStatus, activity, workflow
from flowforge.exceptions import CancelledError, TerminatedError, WorkflowFailureError
from flowforge.workflow import ActivityCancellationType
from tests.integration._reliability import DEADLINE_S, assert_gapless, events, fast_worker, of_type
from testsupport.waiting import wait_until

QUEUE = "cancellation"
HEARTBEAT_TIMEOUT = timedelta(seconds=1)
# The worker sends heartbeats at most once per 0.8 x the heartbeat timeout.
HEARTBEAT_INTERVAL_S = 0.8 * HEARTBEAT_TIMEOUT.total_seconds()
# "About one heartbeat interval", generously: an interval plus scheduling slack.
CANCEL_NOTICE_BOUND_S = HEARTBEAT_INTERVAL_S + 1.5


@dataclasses.dataclass
class Probe:
    """What one activity did, seen from the test (thread-safe: sync activities too)."""

    started: threading.Event = dataclasses.field(default_factory=threading.Event)
    release: threading.Event = dataclasses.field(default_factory=threading.Event)
    ended: threading.Event = dataclasses.field(default_factory=threading.Event)
    outcome: str | None = None
    cancelled_at: float | None = None  # time.time() when the activity saw the cancellation
    is_cancelled_then: bool | None = None


probes: dict[str, Probe] = {}


def probe(key: str) -> Probe:
    return probes.setdefault(key, Probe())


@activity.defn
async def heartbeats_until_released(key: str) -> str:
    """Heartbeats every 50 ms until the test releases it or it is cancelled."""
    p = probe(key)
    p.started.set()
    try:
        while not p.release.is_set():
            activity.heartbeat(key)
            await asyncio.sleep(0.05)
        p.outcome = "released"
        return "released"
    except asyncio.CancelledError:
        p.cancelled_at, p.is_cancelled_then, p.outcome = time.time(), activity.is_cancelled(), "task cancelled"
        raise
    finally:
        p.ended.set()


@activity.defn
def heartbeats_until_cancelled_sync(key: str) -> str:
    """A synchronous activity: it cannot be interrupted, so it polls is_cancelled()."""
    p = probe(key)
    p.started.set()
    try:
        while not activity.is_cancelled():
            activity.heartbeat(key)
            time.sleep(0.05)
        p.cancelled_at, p.is_cancelled_then, p.outcome = time.time(), True, "saw is_cancelled()"
        raise CancelledError("stopping as asked")
    finally:
        p.ended.set()


@activity.defn
async def compensate(key: str) -> str:
    probe(key).outcome = "compensated"
    return f"undid {key}"


@activity.defn
async def gate(key: str) -> str:
    """Holds the workflow open until the test releases it."""
    p = probe(key)
    p.started.set()
    while not p.release.is_set():
        await asyncio.sleep(0.02)
    return "gate passed"


ACTIVITIES = [heartbeats_until_released, heartbeats_until_cancelled_sync, compensate, gate]


def worker(client: Client, *workflows: type):  # type: ignore[no-untyped-def]
    """Every activity of these tests has ended before its test leaves the worker, so
    shutdown waits for their reports instead of cutting them short."""
    return fast_worker(
        client, QUEUE, workflows=workflows, activities=ACTIVITIES, graceful_shutdown_timeout=timedelta(seconds=10)
    )


def cancel_requested_at(history) -> float:  # type: ignore[no-untyped-def]
    return of_type(history, "ActivityTaskCancelRequested")[0].event_time.timestamp()


# --------------------------------------------------------------------------- cancel


@workflow.defn
class BooksAndCompensates:
    """Books something; if cancelled meanwhile, undoes it and ends cancelled."""

    @workflow.run
    async def run(self, params: dict) -> str:
        activity_fn = heartbeats_until_cancelled_sync if params["sync"] else heartbeats_until_released
        try:
            return await workflow.execute_activity(
                activity_fn,
                params["key"],
                start_to_close_timeout=timedelta(seconds=30),
                heartbeat_timeout=HEARTBEAT_TIMEOUT,
            )
        except asyncio.CancelledError:
            await workflow.execute_activity(
                compensate, params["key"] + "/compensation", start_to_close_timeout=timedelta(seconds=10)
            )
            raise


@pytest.mark.parametrize("sync", [False, True], ids=["async-activity", "sync-activity"])
async def test_cancel_raises_cancelled_error_in_the_workflow_which_compensates_and_ends_canceled_and_the_activity_learns_by_heartbeat(
    sdk_client: Client, store_kind: str, sync: bool
) -> None:
    key = f"book-{store_kind}-{sync}"
    async with worker(sdk_client, BooksAndCompensates):
        handle = await sdk_client.start_workflow(
            BooksAndCompensates.run, {"key": key, "sync": sync}, id=key, task_queue=QUEUE
        )
        await wait_until(probe(key).started.is_set, timeout=DEADLINE_S, what="the activity to start")
        await handle.cancel(reason="customer changed their mind")
        with pytest.raises(WorkflowFailureError) as raised:
            await asyncio.wait_for(handle.result(), DEADLINE_S)
        await wait_until(probe(key).ended.is_set, timeout=DEADLINE_S, what="the activity to stop")

    assert isinstance(raised.value.cause, CancelledError)
    assert (await handle.describe()).status == WorkflowExecutionStatus.CANCELED
    assert probe(key + "/compensation").outcome == "compensated"
    history = await events(handle)
    assert_gapless(history)
    types = [e.event_type for e in history]
    assert types[-1] == "WorkflowExecutionCanceled"
    requested = types.index("WorkflowExecutionCancelRequested")
    assert history[requested].attributes["reason"] == "customer changed their mind"
    # The workflow asked to cancel the activity, then scheduled and completed the compensation.
    assert requested < types.index("ActivityTaskCancelRequested")
    compensation = [
        e for e in of_type(history, "ActivityTaskScheduled") if e.attributes["activity_type"] == "compensate"
    ]
    assert len(compensation) == 1 and compensation[0].event_id > types.index("ActivityTaskCancelRequested")
    assert "ActivityTaskCompleted" in types[compensation[0].event_id :]
    # The activity learned of it through a heartbeat, within about one heartbeat interval.
    p = probe(key)
    assert p.outcome == ("saw is_cancelled()" if sync else "task cancelled") and p.is_cancelled_then is True
    assert p.cancelled_at is not None
    assert 0 <= p.cancelled_at - cancel_requested_at(history) < CANCEL_NOTICE_BOUND_S


@workflow.defn
class SwallowsCancellation:
    @workflow.run
    async def run(self) -> str:
        try:
            await workflow.sleep(timedelta(seconds=60))
        except asyncio.CancelledError:
            return "cancelled, but finished my way"
        return "slept"


async def test_a_workflow_that_swallows_the_cancellation_completes_normally(sdk_client: Client) -> None:
    async with worker(sdk_client, SwallowsCancellation):
        handle = await sdk_client.start_workflow(SwallowsCancellation.run, id="swallows", task_queue=QUEUE)

        async def timer_started() -> bool:
            return bool(of_type(await events(handle), "TimerStarted"))

        await wait_until(timer_started, timeout=DEADLINE_S, what="the workflow to wait on its timer")
        await handle.cancel()
        assert await asyncio.wait_for(handle.result(), DEADLINE_S) == "cancelled, but finished my way"

    assert (await handle.describe()).status == WorkflowExecutionStatus.COMPLETED
    history = await events(handle)
    assert_gapless(history)
    types = [e.event_type for e in history]
    # CancelledError arrived at the await of the timer: the timer was cancelled, never fired.
    assert types.index("WorkflowExecutionCancelRequested") < types.index("TimerCanceled")
    assert "TimerFired" not in types and types[-1] == "WorkflowExecutionCompleted"


# --------------------------------------------------------------------------- cancellation types


@workflow.defn
class CancelsWithType:
    """Awaits an activity with the given cancellation type; once that await ends it
    runs the test's gate activity (which holds the run open) and reports how the
    await ended."""

    @workflow.run
    async def run(self, params: dict) -> str:
        try:
            outcome = await workflow.execute_activity(
                heartbeats_until_released,
                params["key"],
                start_to_close_timeout=timedelta(seconds=30),
                heartbeat_timeout=HEARTBEAT_TIMEOUT,
                cancellation_type=ActivityCancellationType[params["cancellation_type"]],
            )
        except asyncio.CancelledError:
            outcome = "await raised CancelledError"
        await workflow.execute_activity(gate, params["key"] + "/gate", start_to_close_timeout=timedelta(seconds=30))
        return outcome


async def last_heartbeat_after(handle, moment: datetime) -> datetime | None:  # type: ignore[no-untyped-def]
    """The last heartbeat time of the run's heartbeating activity, if later than ``moment``."""
    for pending in (await handle.describe()).pending_activities:
        if pending.activity_type == "heartbeats_until_released" and pending.last_heartbeat_time:
            return pending.last_heartbeat_time if pending.last_heartbeat_time > moment else None
    return None


def scheduled_index(types_and_events, activity_type: str) -> int:  # type: ignore[no-untyped-def]
    return next(
        i
        for i, e in enumerate(types_and_events)
        if e.event_type == "ActivityTaskScheduled" and e.attributes["activity_type"] == activity_type
    )


@pytest.mark.parametrize("cancellation_type", ["TRY_CANCEL", "WAIT_CANCELLATION_COMPLETED", "ABANDON"])
async def test_the_cancellation_type_decides_whether_the_workflow_waits_for_the_activity(
    sdk_client: Client, store_kind: str, cancellation_type: str
) -> None:
    key = f"{cancellation_type}-{store_kind}"
    activity_probe, gate_probe = probe(key), probe(key + "/gate")
    async with worker(sdk_client, CancelsWithType):
        handle = await sdk_client.start_workflow(
            CancelsWithType.run, {"key": key, "cancellation_type": cancellation_type}, id=key, task_queue=QUEUE
        )
        await wait_until(activity_probe.started.is_set, timeout=DEADLINE_S, what="the activity to start")
        await handle.cancel()
        # The workflow's await has ended once it scheduled the gate.
        await wait_until(gate_probe.started.is_set, timeout=DEADLINE_S, what="the workflow to go past its await")
        history = await events(handle)
        types = [e.event_type for e in history]
        gate_at = scheduled_index(history, "gate")

        if cancellation_type == "TRY_CANCEL":
            # Raised at once: the cancel request and the next step left in one workflow task.
            assert types[gate_at - 1] == "ActivityTaskCancelRequested"
            await wait_until(activity_probe.ended.is_set, timeout=DEADLINE_S, what="the activity to stop")
            assert activity_probe.outcome == "task cancelled" and activity_probe.is_cancelled_then

            async def acknowledged() -> bool:
                return bool(of_type(await events(handle), "ActivityTaskCanceled"))

            # The activity's acknowledgement still lands in history (nobody waits for it).
            await wait_until(acknowledged, timeout=DEADLINE_S, what="ActivityTaskCanceled")
        elif cancellation_type == "WAIT_CANCELLATION_COMPLETED":
            # The workflow went on only after the activity acknowledged.
            assert activity_probe.ended.is_set() and activity_probe.outcome == "task cancelled"
            assert types.index("ActivityTaskCancelRequested") < types.index("ActivityTaskCanceled") < gate_at
        else:
            # No cancel request: the activity runs on, unaware, until it finishes by itself.
            assert "ActivityTaskCancelRequested" not in types
            # Heartbeats go on after the workflow moved past its await, and none brings a
            # cancellation: two recorded heartbeats later (the worker sends the next only
            # after it handled the previous answer), the activity still runs.
            first = await wait_until(
                lambda: last_heartbeat_after(handle, history[gate_at].event_time),
                timeout=DEADLINE_S,
                what="a heartbeat after the workflow moved on",
            )
            await wait_until(lambda: last_heartbeat_after(handle, first), timeout=DEADLINE_S, what="the next heartbeat")
            assert not activity_probe.ended.is_set()
            activity_probe.release.set()
            await wait_until(activity_probe.ended.is_set, timeout=DEADLINE_S, what="the activity to finish")
            assert activity_probe.outcome == "released"

            async def completed() -> bool:
                return bool(of_type(await events(handle), "ActivityTaskCompleted"))

            await wait_until(completed, timeout=DEADLINE_S, what="the abandoned activity's completion")
        if cancellation_type != "ABANDON":
            assert 0 <= activity_probe.cancelled_at - cancel_requested_at(history) < CANCEL_NOTICE_BOUND_S  # type: ignore[operator]

        gate_probe.release.set()
        assert await asyncio.wait_for(handle.result(), DEADLINE_S) == "await raised CancelledError"

    history = await events(handle)
    assert_gapless(history)
    assert (await handle.describe()).status == WorkflowExecutionStatus.COMPLETED


# --------------------------------------------------------------------------- terminate


@workflow.defn
class RunsLong:
    @workflow.run
    async def run(self, key: str) -> str:
        return await workflow.execute_activity(
            heartbeats_until_released,
            key,
            start_to_close_timeout=timedelta(seconds=30),
            heartbeat_timeout=HEARTBEAT_TIMEOUT,
        )


async def test_terminate_ends_the_execution_at_once_with_the_reason_in_history(
    sdk_client: Client, store_kind: str
) -> None:
    key = f"terminate-{store_kind}"
    async with worker(sdk_client, RunsLong):
        handle = await sdk_client.start_workflow(RunsLong.run, key, id=key, task_queue=QUEUE)
        await wait_until(probe(key).started.is_set, timeout=DEADLINE_S, what="the activity to start")
        await handle.terminate(reason="ops: bad deploy")
        # At once: the run is closed when terminate() returns, no workflow code ran.
        assert (await handle.describe()).status == WorkflowExecutionStatus.TERMINATED
        with pytest.raises(WorkflowFailureError) as raised:
            await asyncio.wait_for(handle.result(), DEADLINE_S)
        # The orphaned activity learns at its next heartbeat that its lease is gone.
        await wait_until(probe(key).ended.is_set, timeout=DEADLINE_S, what="the activity to stop")

    assert isinstance(raised.value.cause, TerminatedError)
    assert raised.value.cause.message == "ops: bad deploy"
    history = await events(handle)
    assert_gapless(history)
    assert history[-1].event_type == "WorkflowExecutionTerminated"
    assert history[-1].attributes == {"reason": "ops: bad deploy", "identity": sdk_client.identity}
    # Nothing was appended after the termination (the activity's late reports were refused).
    assert not of_type(history, "ActivityTaskCanceled", "ActivityTaskCompleted", "ActivityTaskFailed")
    assert probe(key).outcome == "task cancelled"
