"""ServiceBusEventSource against the fake at the azure-servicebus client boundary
(testsupport/servicebus.py): each CloudEvent starts its workflows exactly once under
redelivery, malformed and rejected messages are dead-lettered with a reason, locks are
renewed through a slow publish, and stopping leaves nothing waiting for a lock."""

from __future__ import annotations

import asyncio
import json
import os
from datetime import timedelta
from typing import Any

import grpc
import pytest
from azure.servicebus import ServiceBusMessage

from flowforge import Client, workflow
from flowforge.contrib.azure import ServiceBusEventSource
from flowforge.contrib.azure._event_source import MALFORMED_REASON, REJECTED_REASON
from flowforge.exceptions import RPCError
from testsupport.servicebus import FakeServiceBus
from testsupport.waiting import wait_until

QUEUE = "events"
SHOP = "https://shop.example.com"
DEADLINE_S = 30


@workflow.defn
class OrderPaid:
    @workflow.run
    async def run(self, order_id: str) -> str:
        return order_id


def cloudevent(event_id: str, **overrides: Any) -> ServiceBusMessage:
    event = {"specversion": "1.0", "id": event_id, "source": SHOP, "type": "order.paid", "data": {"order_id": event_id}}
    return ServiceBusMessage(json.dumps({**event, **overrides}), content_type="application/cloudevents+json")


@pytest.fixture
async def sdk_client(sdk_client: Client) -> Client:
    """The SDK client of the in-process ``server`` (conftest.py), with this module's trigger."""
    await sdk_client.create_trigger(
        "orders",
        event_type="order.paid",
        workflow=OrderPaid.run,
        task_queue="orders",
        input_paths=["data.order_id"],
    )
    return sdk_client


@pytest.fixture
def bus() -> FakeServiceBus:
    fake = FakeServiceBus(lock_duration=timedelta(seconds=30))
    fake.create_queue(QUEUE)
    return fake


async def started_workflows(sdk_client: Client) -> list[str]:
    return sorted([execution.workflow_id async for execution in sdk_client.list_workflows()])


def source_for(sdk_client: Client, bus: FakeServiceBus, **options: Any) -> ServiceBusEventSource:
    options.setdefault("max_wait_time", timedelta(milliseconds=100))
    return ServiceBusEventSource(sdk_client, bus, queue_name=QUEUE, **options)  # type: ignore[arg-type]


async def settled(bus: FakeServiceBus, count: int) -> bool:
    queue = bus.queue(QUEUE)
    return len(queue.completed) + len(queue.dead_letters) >= count


async def test_each_event_starts_its_workflow_once_and_the_message_is_completed(
    sdk_client: Client, bus: FakeServiceBus
) -> None:
    for event_id in ("o-1", "o-2", "o-3"):
        bus.send(QUEUE, cloudevent(event_id))
    bus.fail_receives = 2  # the namespace is unreachable at first: the source keeps trying
    async with source_for(sdk_client, bus):
        await wait_until(lambda: settled(bus, 3), timeout=DEADLINE_S, what="three completed messages")
    assert len(await started_workflows(sdk_client)) == 3
    assert not bus.queue(QUEUE).active and not bus.queue(QUEUE).dead_letters


async def test_a_redelivered_message_publishes_nothing_twice(sdk_client: Client, bus: FakeServiceBus) -> None:
    """The lock is lost after the publish committed: complete fails, the message comes again."""
    bus.send(QUEUE, cloudevent("o-1"))
    source = source_for(sdk_client, bus)
    real_publish = source._publish
    publishes = 0

    async def publish_then_lose_the_lock(event: Any) -> None:
        nonlocal publishes
        publishes += 1
        await real_publish(event)
        if publishes == 1:
            bus.advance(31)  # the lock expires before the message is completed

    source._publish = publish_then_lose_the_lock  # type: ignore[method-assign]
    async with source:
        await wait_until(lambda: settled(bus, 1), timeout=DEADLINE_S, what="the message completed")
    (completed,) = bus.queue(QUEUE).completed
    assert publishes == 2 and completed.delivery_count == 2
    assert len(await started_workflows(sdk_client)) == 1  # the second publish was a duplicate


async def test_a_malformed_or_rejected_message_is_dead_lettered_with_a_reason(
    sdk_client: Client, bus: FakeServiceBus
) -> None:
    bus.send(QUEUE, ServiceBusMessage(b"this is not json"))
    bus.send(QUEUE, cloudevent("o-2", specversion="0.3"))
    bus.send(QUEUE, cloudevent(""))  # no id: the server refuses it
    bus.send(QUEUE, cloudevent("o-4"))
    async with source_for(sdk_client, bus):
        await wait_until(lambda: settled(bus, 4), timeout=DEADLINE_S, what="four settled messages")
    dead = {stored.body: stored for stored in bus.queue(QUEUE).dead_letters}
    assert dead[b"this is not json"].dead_letter_reason == MALFORMED_REASON
    assert "not JSON" in (dead[b"this is not json"].dead_letter_error_description or "")
    (old_version,) = [s for s in dead.values() if b"0.3" in s.body]
    assert old_version.dead_letter_reason == MALFORMED_REASON
    assert "specversion" in (old_version.dead_letter_error_description or "")
    (no_id,) = [s for s in dead.values() if b'"id": ""' in s.body]
    assert no_id.dead_letter_reason == REJECTED_REASON and "id" in (no_id.dead_letter_error_description or "")
    assert len(bus.queue(QUEUE).completed) == 1 and len(await started_workflows(sdk_client)) == 1


async def test_an_unavailable_flowforge_abandons_the_message_for_redelivery(
    sdk_client: Client, bus: FakeServiceBus
) -> None:
    bus.send(QUEUE, cloudevent("o-1"))
    source = source_for(sdk_client, bus)
    real_publish = source._publish
    attempts = 0

    async def unavailable_once(event: Any) -> None:
        nonlocal attempts
        attempts += 1
        if attempts == 1:
            raise RPCError("the store is unavailable", grpc.StatusCode.UNAVAILABLE)
        await real_publish(event)

    source._publish = unavailable_once  # type: ignore[method-assign]
    async with source:
        await wait_until(lambda: settled(bus, 1), timeout=DEADLINE_S, what="the message completed")
    (completed,) = bus.queue(QUEUE).completed
    assert completed.delivery_count == 2 and len(await started_workflows(sdk_client)) == 1


async def test_the_lock_is_renewed_while_a_publish_is_slow(sdk_client: Client) -> None:
    bus = FakeServiceBus(lock_duration=timedelta(milliseconds=300))
    bus.create_queue(QUEUE)
    bus.send(QUEUE, cloudevent("o-1"))
    source = source_for(sdk_client, bus, lock_renewal_interval=timedelta(milliseconds=100))
    real_publish = source._publish

    async def slow_publish(event: Any) -> None:
        await asyncio.sleep(1.0)  # over three lock durations
        await real_publish(event)

    source._publish = slow_publish  # type: ignore[method-assign]
    async with source:
        await wait_until(lambda: settled(bus, 1), timeout=DEADLINE_S, what="the message completed")
    (completed,) = bus.queue(QUEUE).completed
    assert completed.delivery_count == 1  # never redelivered: the lock held


async def test_stopping_settles_the_messages_in_hand(sdk_client: Client, bus: FakeServiceBus) -> None:
    bus.send(QUEUE, cloudevent("o-1"))
    bus.send(QUEUE, cloudevent("o-2"))
    source = source_for(sdk_client, bus, max_message_count=2)
    real_publish = source._publish
    publishing = asyncio.Event()

    async def stop_while_publishing(event: Any) -> None:
        publishing.set()
        source.stop()
        await real_publish(event)

    source._publish = stop_while_publishing  # type: ignore[method-assign]
    await asyncio.wait_for(source.run(), DEADLINE_S)
    queue = bus.queue(QUEUE)
    # The one being published was completed; the other one was abandoned: available
    # now, not after its lock expires.
    assert len(queue.completed) == 1 and len(queue.active) == 1
    assert queue.active[0].lock_token is None and queue.active[0].delivery_count == 1


@pytest.mark.skipif(
    not os.environ.get("FLOWFORGE_TEST_SERVICEBUS_CONNECTION_STRING"),
    reason="set FLOWFORGE_TEST_SERVICEBUS_CONNECTION_STRING (and FLOWFORGE_TEST_SERVICEBUS_QUEUE) to run",
)
async def test_against_a_real_service_bus_namespace(sdk_client: Client) -> None:
    from azure.servicebus.aio import ServiceBusClient

    queue = os.environ.get("FLOWFORGE_TEST_SERVICEBUS_QUEUE", "flowforge-events")
    event_id = f"live-{os.getpid()}"
    async with ServiceBusClient.from_connection_string(os.environ["FLOWFORGE_TEST_SERVICEBUS_CONNECTION_STRING"]) as sb:
        async with sb.get_queue_sender(queue) as sender:
            await sender.send_messages(cloudevent(event_id))
        async with ServiceBusEventSource(sdk_client, sb, queue_name=queue, max_wait_time=timedelta(seconds=1)):

            async def started() -> bool:
                return any(event_id in workflow_id for workflow_id in await started_workflows(sdk_client))

            await wait_until(started, timeout=60, what="the live event's workflow")
