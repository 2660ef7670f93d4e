"""Activity calling forms of Temporal's workflow API, local activities included."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import timedelta

import pytest
from temporalio import activity, workflow
from temporalio.client import Client, WorkflowFailureError
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError
from temporalio.worker import Replayer, Worker

calls: list[str] = []


@activity.defn
async def lookup_price(item: str) -> int:
    calls.append(f"lookup_price {item} local={activity.info().is_local}")
    return len(item) * 100


@activity.defn
async def flaky_quote(key: str) -> str:
    calls.append(f"flaky_quote attempt {activity.info().attempt}")
    if activity.info().attempt < 3:
        raise ApplicationError("quote service busy")
    return f"quote-{key}"


@activity.defn
def refuse(reason: str) -> None:
    raise ApplicationError(reason, type="Refused", non_retryable=True)


class Inventory:
    def __init__(self) -> None:
        self.reserved: list[str] = []

    @activity.defn
    async def reserve(self, item: str) -> str:
        self.reserved.append(item)
        return f"reservation-{len(self.reserved)}"

    @activity.defn
    def count(self) -> int:
        return len(self.reserved)


@dataclass
class Order:
    price: int
    local_reservation: str
    remote_reservation: str
    reserved: int
    quote: str


@workflow.defn
class Checkout:
    @workflow.run
    async def run(self, item: str) -> Order:
        price = await workflow.execute_local_activity(lookup_price, item, start_to_close_timeout=timedelta(seconds=5))
        local = await workflow.execute_local_activity_method(
            Inventory.reserve, item, start_to_close_timeout=timedelta(seconds=5)
        )
        handle = workflow.start_activity_method(Inventory.reserve, item, start_to_close_timeout=timedelta(seconds=5))
        remote = await handle
        reserved = await workflow.execute_activity_method(Inventory.count, start_to_close_timeout=timedelta(seconds=5))
        quote = await workflow.execute_local_activity(
            flaky_quote,
            item,
            schedule_to_close_timeout=timedelta(seconds=10),
            retry_policy=RetryPolicy(initial_interval=timedelta(milliseconds=10)),
        )
        return Order(price, local, remote, reserved, quote)


@workflow.defn
class Refusing:
    @workflow.run
    async def run(self) -> None:
        await workflow.execute_local_activity(refuse, "no stock", start_to_close_timeout=timedelta(seconds=5))


async def test_activity_methods_and_local_activities(client: Client) -> None:
    task_queue = f"activities-{uuid.uuid4()}"
    inventory = Inventory()
    calls.clear()
    async with Worker(
        client,
        task_queue=task_queue,
        workflows=[Checkout],
        activities=[lookup_price, flaky_quote, inventory.reserve, inventory.count],
    ):
        handle = await client.start_workflow(Checkout.run, "lamp", id=f"checkout-{uuid.uuid4()}", task_queue=task_queue)
        assert await handle.result() == Order(400, "reservation-1", "reservation-2", 2, "quote-lamp")
    assert calls == ["lookup_price lamp local=True", *(f"flaky_quote attempt {n}" for n in (1, 2, 3))]

    # Three local activities, three markers; only the two regular ones were scheduled on the server.
    history = await handle.fetch_history()
    markers = [e for e in history.events if e.event_type == "MarkerRecorded"]
    assert [m.attributes["marker_name"] for m in markers] == ["local_activity"] * 3
    scheduled = [e for e in history.events if e.event_type == "ActivityTaskScheduled"]
    assert [e.attributes["activity_type"] for e in scheduled] == ["reserve", "count"]

    # Replay returns the recorded outcomes: nothing runs again.
    calls.clear()
    await Replayer(workflows=[Checkout]).replay_workflow(history)
    assert calls == []


async def test_a_failed_local_activity_is_an_activity_error(client: Client) -> None:
    task_queue = f"activities-{uuid.uuid4()}"
    async with Worker(client, task_queue=task_queue, workflows=[Refusing], activities=[refuse]):
        with pytest.raises(WorkflowFailureError) as raised:
            await client.execute_workflow(Refusing.run, id=f"refusing-{uuid.uuid4()}", task_queue=task_queue)
    assert isinstance(raised.value.cause, ActivityError)
    cause = raised.value.cause.cause
    assert isinstance(cause, ApplicationError)
    assert (cause.message, cause.type, cause.non_retryable) == ("no stock", "Refused", True)
