"""ServiceBusLifecyclePublisher on both stores, against the fake Service Bus
(testsupport/servicebus.py): lifecycle events reach the topic once each, a publisher
that crashes between send and delete is resumed by the next without loss (the resend is
dropped by duplicate detection on MessageId = run id + event id), failed sends are
retried, and the outbox records nothing until a publisher turns it on."""

from __future__ import annotations

import json
import os
from datetime import timedelta
from typing import Any

import pytest

from flowforge import Client, workflow
from flowforge.contrib.azure import ServiceBusLifecyclePublisher
from flowforge.exceptions import ApplicationError, WorkflowFailureError
from flowforge.server import FlowForgeServer
from flowforge.worker import Worker
from testsupport.servicebus import FakeServiceBus
from testsupport.waiting import wait_until

TOPIC, SUBSCRIPTION, TASK_QUEUE = "lifecycle", "all", "lifecycle"
DEADLINE_S = 30


@workflow.defn
class Succeeds:
    @workflow.run
    async def run(self) -> str:
        return "done"


@workflow.defn
class Fails:
    @workflow.run
    async def run(self) -> str:
        raise ApplicationError("no", non_retryable=True)


@workflow.defn
class WaitsForever:
    @workflow.run
    async def run(self) -> None:
        await workflow.wait_condition(lambda: False)


@pytest.fixture
def bus() -> FakeServiceBus:
    fake = FakeServiceBus()
    fake.create_topic(TOPIC, [SUBSCRIPTION])
    return fake


def publisher(server: FlowForgeServer, bus: FakeServiceBus) -> ServiceBusLifecyclePublisher:
    return ServiceBusLifecyclePublisher(
        server.store,
        bus,  # type: ignore[arg-type]
        TOPIC,
        batch_size=2,
        poll_interval=timedelta(milliseconds=50),
    )


async def run_three_workflows(sdk_client: Client) -> dict[str, str]:
    """A completed, a failed and a terminated run; their run ids by workflow id."""
    async with Worker(sdk_client, task_queue=TASK_QUEUE, workflows=[Succeeds, Fails, WaitsForever]):
        succeeded = await sdk_client.start_workflow(Succeeds.run, id="ok", task_queue=TASK_QUEUE)
        failed = await sdk_client.start_workflow(Fails.run, id="bad", task_queue=TASK_QUEUE)
        stuck = await sdk_client.start_workflow(WaitsForever.run, id="stuck", task_queue=TASK_QUEUE)
        assert await succeeded.result() == "done"
        with pytest.raises(WorkflowFailureError):
            await failed.result()
        await stuck.terminate(reason="test")
    return {handle.id: str(handle.run_id) for handle in (succeeded, failed, stuck)}


def received(bus: FakeServiceBus) -> list[dict[str, Any]]:
    return [json.loads(stored.body) for stored in bus.subscription(TOPIC, SUBSCRIPTION).active]


async def expected_ids(sdk_client: Client, runs: dict[str, str]) -> set[str]:
    ids = set()
    for workflow_id, run_id in runs.items():
        history = await sdk_client.get_workflow_handle(workflow_id, run_id=run_id).fetch_history()
        ids |= {f"{run_id}:{e.event_id}" for e in history.events if e.event_type.startswith("WorkflowExecution")}
    return ids


async def test_lifecycle_events_reach_the_topic_once_each(
    server: FlowForgeServer, sdk_client: Client, bus: FakeServiceBus
) -> None:
    async with publisher(server, bus):
        runs = await run_three_workflows(sdk_client)
        wanted = await expected_ids(sdk_client, runs)
        assert len(wanted) == 6  # started + closed, three times
        await wait_until(lambda: len(received(bus)) >= 6, timeout=DEADLINE_S, what="six lifecycle messages")
    events = received(bus)
    assert sorted(event["id"] for event in events) == sorted(wanted)
    assert {event["type"] for event in events} == {
        "flowforge.workflow.started",
        "flowforge.workflow.completed",
        "flowforge.workflow.failed",
        "flowforge.workflow.terminated",
    }
    (completed,) = [e for e in events if e["type"] == "flowforge.workflow.completed"]
    assert completed["subject"] == "ok" and completed["data"]["workflow_type"] == "Succeeds"
    async with server.store.read() as tx:
        assert await tx.read_lifecycle_outbox(100) == []  # relayed rows are deleted


class Crash(BaseException):
    """Stands in for the process dying: not an Exception, so nothing catches it."""


async def test_a_publisher_crashing_after_sending_is_resumed_without_loss(
    server: FlowForgeServer, sdk_client: Client, bus: FakeServiceBus
) -> None:
    first = publisher(server, bus)
    await first.enable()
    runs = await run_three_workflows(sdk_client)
    wanted = await expected_ids(sdk_client, runs)

    class CrashAfterSend:
        async def send_messages(self, messages: Any) -> None:
            await bus.get_topic_sender(TOPIC).send_messages(messages)
            raise Crash  # sent, but the rows are not deleted

    with pytest.raises(Crash):
        await first.relay_once(CrashAfterSend())  # type: ignore[arg-type]
    assert len(received(bus)) == 2  # the first batch went out

    bus.fail_sends = 2  # and the next two sends fail outright: retried
    async with publisher(server, bus):

        async def drained() -> bool:
            async with server.store.read() as tx:
                return not await tx.read_lifecycle_outbox(1)

        await wait_until(drained, timeout=DEADLINE_S, what="the outbox drained")
    ids = [event["id"] for event in received(bus)]
    assert sorted(ids) == sorted(wanted)  # none lost, none twice (the resend was dropped as a duplicate)


async def test_nothing_is_recorded_until_a_publisher_turns_the_outbox_on(
    server: FlowForgeServer, sdk_client: Client
) -> None:
    await run_three_workflows(sdk_client)
    async with server.store.read() as tx:
        assert await tx.read_lifecycle_outbox(100) == []


@pytest.mark.skipif(
    not os.environ.get("FLOWFORGE_TEST_SERVICEBUS_CONNECTION_STRING"),
    reason="set FLOWFORGE_TEST_SERVICEBUS_CONNECTION_STRING (and FLOWFORGE_TEST_SERVICEBUS_TOPIC/_SUBSCRIPTION) to run",
)
async def test_against_a_real_service_bus_namespace(server: FlowForgeServer, sdk_client: Client) -> None:
    from azure.servicebus.aio import ServiceBusClient

    topic = os.environ.get("FLOWFORGE_TEST_SERVICEBUS_TOPIC", "flowforge-lifecycle")
    subscription = os.environ.get("FLOWFORGE_TEST_SERVICEBUS_SUBSCRIPTION", "all")
    async with ServiceBusClient.from_connection_string(os.environ["FLOWFORGE_TEST_SERVICEBUS_CONNECTION_STRING"]) as sb:
        async with ServiceBusLifecyclePublisher(server.store, sb, topic, poll_interval=timedelta(milliseconds=100)):
            runs = await run_three_workflows(sdk_client)
            wanted = await expected_ids(sdk_client, runs)
            seen: set[str] = set()
            async with sb.get_subscription_receiver(topic, subscription, max_wait_time=5) as receiver:

                async def all_received() -> bool:
                    for message in await receiver.receive_messages(max_message_count=50, max_wait_time=1):
                        seen.add(str(message.message_id))
                        await receiver.complete_message(message)
                    return wanted <= seen

                await wait_until(all_received, timeout=120, what="every lifecycle message from Service Bus")
