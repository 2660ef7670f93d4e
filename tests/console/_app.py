"""The workflows the console tests look at: a small DAG (a, then b and c from a's
result, then d from both) that waits for a ``proceed`` signal before d, a checkout
whose charge is parked in the dead-letter store, two activities on one concurrency key
held by a gate the test opens, and a family run (a timer, a child,
then continue-as-new once) for the links between runs."""

from __future__ import annotations

import asyncio
import threading
from datetime import timedelta
from typing import Any

from flowforge import RetryPolicy, activity, workflow
from flowforge.client import WorkflowHandle
from flowforge.exceptions import ActivityError, ApplicationError

QUEUE = "console"
_TIMEOUT = timedelta(seconds=20)


@activity.defn
async def step(text: str) -> str:
    return text + "."


@workflow.defn
class Pipeline:
    def __init__(self) -> None:
        self.notes: list[str] = []

    @workflow.signal
    def proceed(self, note: str) -> None:
        self.notes.append(note)

    @workflow.run
    async def run(self, name: str) -> str:
        a = await workflow.execute_activity(step, name, start_to_close_timeout=_TIMEOUT)
        b, c = await asyncio.gather(
            workflow.execute_activity(step, a + "b", start_to_close_timeout=_TIMEOUT),
            workflow.execute_activity(step, a + "c", start_to_close_timeout=_TIMEOUT),
        )
        await workflow.wait_condition(lambda: bool(self.notes))
        return await workflow.execute_activity(step, b + c, start_to_close_timeout=_TIMEOUT)


@activity.defn
async def charge(order: str) -> str:
    """Fails its first two attempts (the cause is "fixed" by the third)."""
    if activity.info().attempt < 3:
        raise ApplicationError(f"card declined for {order}", type="Declined")
    return f"charged {order}"


@workflow.defn
class Checkout:
    """Charges with dead-lettering after two attempts; a discard fails into the workflow."""

    @workflow.run
    async def run(self, order: str) -> str:
        try:
            return await workflow.execute_activity(
                charge,
                order,
                start_to_close_timeout=_TIMEOUT,
                retry_policy=RetryPolicy(initial_interval=timedelta(milliseconds=10), maximum_attempts=2),
                dead_letter=True,
            )
        except ActivityError:
            return "discarded"


#: ``hold`` returns once a test sets it (a thread event: any test's event loop may wait on it).
HOLD_GATE = threading.Event()


@activity.defn
async def hold(name: str) -> str:
    """Keeps its concurrency slot until the test opens :data:`HOLD_GATE`."""
    await asyncio.to_thread(HOLD_GATE.wait, _TIMEOUT.total_seconds())
    return name


@workflow.defn
class Throttled:
    """Two ``hold`` activities at once on the concurrency key ``payments-api``."""

    @workflow.run
    async def run(self) -> list[str]:
        calls = (
            workflow.execute_activity(hold, name, start_to_close_timeout=_TIMEOUT, concurrency_key="payments-api")
            for name in ("first", "second")
        )
        return list(await asyncio.gather(*calls))


@workflow.defn
class Leaf:
    @workflow.run
    async def run(self, name: str) -> str:
        return name + "!"


@workflow.defn
class Family:
    """Sleeps, runs a ``Leaf`` child, then continues as new once (round 0 to round 1)."""

    @workflow.run
    async def run(self, round_: int) -> str:
        await workflow.sleep(timedelta(milliseconds=10))
        leaf = await workflow.execute_child_workflow(
            Leaf.run, f"leaf {round_}", id=f"{workflow.info().workflow_id}-leaf-{round_}"
        )
        if round_ == 0:
            workflow.continue_as_new(1)
        return leaf


async def waiting_for_signal(handle: WorkflowHandle[Any, Any]) -> bool:
    """Whether a ``Pipeline`` run has completed a, b and c and waits for its signal.

    Its history is then quiet too: the workflow task that c's completion scheduled has
    completed (a test that reads the last event counts on that).
    """
    description = await handle.describe()
    completed = sum(1 for node in description.dag if node.state == "COMPLETED")
    return completed == 3 and description.pending_workflow_task is None
