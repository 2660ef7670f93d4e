"""Every event a real server writes matches the typed history schema (``flowforge.api.schema``).

Workflows exercise activities (completed, failed, timed out, cancelled, parked in the
dead-letter store, retried from it and discarded; its run paused and unpaused), timers (fired,
cancelled), signals, markers, search-attribute upserts, a failed workflow task, children
(completed, failed, cancelled, terminated, timed out, retried, a duplicate id, signalled
before and after they closed), continue-as-new, cancel and terminate, on SQLite and
PostgreSQL. Then every event of every run is checked: its type is an ``EventType`` and its
attribute keys are exactly what that event's ``TypedDict`` allows (all required keys, no
undeclared key). The static half is tests/unit/test_history_schema.py.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import ClassVar

import grpc

from flowforge import Client, RetryPolicy, activity, workflow
from flowforge.api.schema import EVENT_ATTRIBUTES, EventType
from flowforge.client import DeadLetter, HistoryEvent, SearchAttributeIndexedValueType, WorkflowHandle
from flowforge.exceptions import ActivityError, ApplicationError, ChildWorkflowError, RPCError
from tests.integration._reliability import DEADLINE_S, events, fast_worker
from testsupport.waiting import wait_until

QUEUE = "history-schema"
# Nobody polls this queue: an activity scheduled there stays pending until cancelled.
IDLE_QUEUE = "history-schema-nobody"
# A workflow task must outlive its timeout with a worker holding it; the unit test's
# static check covers this one event type instead.
NOT_EXERCISED = {EventType.WORKFLOW_TASK_TIMED_OUT}


@activity.defn
async def echo(value: str) -> str:
    return value


@activity.defn
async def declines() -> None:
    raise ApplicationError("declined", type="Declined", non_retryable=True)


@activity.defn
async def stalls() -> None:
    await asyncio.sleep(30)


@workflow.defn
class Parks:
    """Its activity is parked in the dead-letter store, retried (parked again), then discarded."""

    @workflow.run
    async def run(self) -> str:
        try:
            await workflow.execute_activity(declines, start_to_close_timeout=timedelta(seconds=5), dead_letter=True)
        except ActivityError as error:
            return str(error.cause)
        return "completed"


@workflow.defn
class Greeter:
    @workflow.run
    async def run(self, name: str) -> str:
        return f"hello {name}"


@workflow.defn
class Refuses:
    @workflow.run
    async def run(self) -> None:
        raise ApplicationError("refused", type="Refused")


@workflow.defn
class Idles:
    """Waits on an activity nobody runs until it is cancelled or terminated."""

    @workflow.run
    async def run(self) -> None:
        await workflow.execute_activity(
            echo,
            "never",
            task_queue=IDLE_QUEUE,
            start_to_close_timeout=timedelta(hours=1),
            # so that its cancellation is recorded (ActivityTaskCanceled) before the run closes
            cancellation_type=workflow.ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
        )


@workflow.defn
class AwaitsSignal:
    def __init__(self) -> None:
        self.values: list[str] = []

    @workflow.signal
    def go(self, value: str) -> None:
        self.values.append(value)

    @workflow.run
    async def run(self) -> list[str]:
        await workflow.wait_condition(lambda: bool(self.values))
        return self.values


@workflow.defn
class SucceedsOnSecondAttempt:
    @workflow.run
    async def run(self) -> int:
        if workflow.info().attempt < 2:
            raise ApplicationError("first attempt fails", type="Flaky")
        return workflow.info().attempt


@workflow.defn
class Everything:
    # The first workflow task of the first run fails once (a bug "fixed" by the retry).
    crashed: ClassVar[set[str]] = set()

    def __init__(self) -> None:
        self.approved = False

    @workflow.signal
    def approve(self) -> None:
        self.approved = True

    @workflow.run
    async def run(self, continued: bool) -> dict[str, object]:
        info = workflow.info()
        if continued:
            return {"continued_from": info.continued_run_id}
        if info.run_id not in Everything.crashed:
            Everything.crashed.add(info.run_id)
            raise RuntimeError("a bug in the workflow code: fails the workflow task, which is retried")
        outcomes: dict[str, object] = {
            "echo": await workflow.execute_activity(echo, "hi", start_to_close_timeout=timedelta(seconds=10))
        }
        for fn, timeout in ((declines, timedelta(seconds=10)), (stalls, timedelta(seconds=0.3))):
            try:
                await workflow.execute_activity(
                    fn, start_to_close_timeout=timeout, retry_policy=RetryPolicy(maximum_attempts=1)
                )
            except ActivityError as error:
                outcomes[fn.__name__] = type(error.cause).__name__
        await workflow.sleep(timedelta(milliseconds=10))
        await workflow.wait_condition(lambda: self.approved, timeout=timedelta(minutes=10))  # its timer is cancelled
        outcomes["patched"] = workflow.patched("schema-check")
        workflow.upsert_search_attributes({"SchemaStage": "children"})
        outcomes["child"] = await workflow.execute_child_workflow(Greeter.run, "ada", id=f"{info.workflow_id}-greeter")
        outcomes["retried"] = await workflow.execute_child_workflow(
            SucceedsOnSecondAttempt.run,
            id=f"{info.workflow_id}-flaky",
            retry_policy=RetryPolicy(initial_interval=timedelta(seconds=0.05), maximum_attempts=3),
        )
        children = [
            workflow.execute_child_workflow(Refuses.run, id=f"{info.workflow_id}-refuses"),
            workflow.execute_child_workflow(
                Idles.run, id=f"{info.workflow_id}-times-out", execution_timeout=timedelta(seconds=0.3)
            ),
            workflow.execute_child_workflow(Idles.run, id=f"{info.workflow_id}-terminated"),
            workflow.execute_child_workflow(Greeter.run, "twin", id=info.workflow_id),  # the id is taken
        ]
        for child in children:
            try:
                await child
            except ChildWorkflowError as error:
                outcomes.setdefault("child_errors", []).append(type(error.cause).__name__)  # type: ignore[union-attr]
        cancelled = await workflow.start_child_workflow(Idles.run, id=f"{info.workflow_id}-cancelled")
        cancelled.cancel()
        try:
            await cancelled
        except asyncio.CancelledError:
            outcomes["cancelled_child"] = True
        signalled = await workflow.start_child_workflow(AwaitsSignal.run, id=f"{info.workflow_id}-signalled")
        await signalled.signal(AwaitsSignal.go, "go")
        await signalled
        try:
            await signalled.signal(AwaitsSignal.go, "too late")
        except ApplicationError:
            outcomes["late_signal"] = "refused"
        workflow.continue_as_new(True)


def check_event(event: HistoryEvent) -> list[str]:
    """What is wrong with an event by the schema (nothing: an empty list)."""
    if event.event_type not in EventType._value2member_map_:
        return [f"event {event.event_id}: undeclared type {event.event_type!r}"]
    attributes = EVENT_ATTRIBUTES[EventType(event.event_type)]
    keys = set(event.attributes)
    problems = []
    if missing := set(attributes.__required_keys__) - keys:
        problems.append(f"event {event.event_id} ({event.event_type}) lacks {sorted(missing)}")
    if extra := keys - set(attributes.__required_keys__) - set(attributes.__optional_keys__):
        problems.append(f"event {event.event_id} ({event.event_type}) has undeclared {sorted(extra)}")
    return problems


async def test_every_event_the_server_writes_is_declared_with_its_attributes(sdk_client: Client) -> None:
    await sdk_client.add_search_attributes({"SchemaStage": SearchAttributeIndexedValueType.KEYWORD})
    workflows = [Everything, Greeter, Refuses, Idles, AwaitsSignal, SucceedsOnSecondAttempt, Parks]
    async with fast_worker(sdk_client, QUEUE, workflows=workflows, activities=[echo, declines, stalls]):
        handle = await sdk_client.start_workflow(Everything.run, False, id="schema", task_queue=QUEUE)
        cancelled = await sdk_client.start_workflow(Idles.run, id="idle-cancelled", task_queue=QUEUE)
        terminated = await sdk_client.start_workflow(Idles.run, id="idle-terminated", task_queue=QUEUE)
        for idle in (cancelled, terminated):
            await _wait_for(idle, "ActivityTaskScheduled", "the idle workflow to wait on its activity")
        await cancelled.cancel()
        await terminated.terminate(reason="schema check")
        # The signal must find the wait_condition's timer started, so that it is cancelled.
        await _wait_for(handle, "TimerStarted", "the approval wait", count=2)
        await handle.signal(Everything.approve)
        child = sdk_client.get_workflow_handle("schema-terminated")
        await _wait_for(child, "ActivityTaskScheduled", "the child to terminate to wait on its activity")
        await child.terminate(reason="schema check")
        assert await handle.result() == {"continued_from": handle.run_id}
        parks = await sdk_client.start_workflow(Parks.run, id="parks", task_queue=QUEUE)
        first = await _parked(sdk_client, "parks", attempt=1)
        await sdk_client.pause_workflow("parks", reason="schema check")
        await sdk_client.unpause_workflow("parks", reason="schema check")
        await sdk_client.retry_dead_letters(first.id, reason="schema check")
        second = await _parked(sdk_client, "parks", attempt=2)
        await sdk_client.discard_dead_letters(second.id, reason="schema check")
        assert "schema check" in await parks.result()

    seen: set[str] = set()
    problems: list[str] = []
    runs = [run async for run in sdk_client.list_workflows()]
    for run in runs:
        for event in await events(sdk_client.get_workflow_handle(run.workflow_id, run_id=run.run_id)):
            seen.add(event.event_type)
            problems += [f"{run.workflow_id}/{run.run_id}: {problem}" for problem in check_event(event)]
    assert problems == []
    assert set(EventType) - NOT_EXERCISED - seen == set(), "the workflows no longer exercise these event types"


async def _parked(client: Client, workflow_id: str, attempt: int) -> DeadLetter:
    async def check() -> DeadLetter | None:
        listed = await client.list_dead_letters(workflow_id=workflow_id)
        return next((d for d in listed.dead_letters if d.attempt == attempt), None)

    return await wait_until(check, timeout=DEADLINE_S, what=f"{workflow_id} parked after attempt {attempt}")


async def _wait_for(handle: WorkflowHandle, event_type: str, what: str, count: int = 1) -> None:
    async def enough() -> bool:
        try:
            history = await events(handle)
        except RPCError as error:
            if error.status != grpc.StatusCode.NOT_FOUND:  # not started yet
                raise
            return False
        return sum(e.event_type == event_type for e in history) >= count

    await wait_until(enough, timeout=DEADLINE_S, what=what)
