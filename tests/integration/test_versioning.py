"""Versioning end to end: a workflow changed with workflow.patched() is deployed while
an execution of the old code is running; the old execution replays its old branch, new
executions take the new one, and each records the build id of the worker that ran it.
"""

from __future__ import annotations

import asyncio

from flowforge import Client, activity
from flowforge.client import WorkflowHandle
from flowforge.testing import Replayer
from flowforge.worker import Worker
from tests.integration._reliability import DEADLINE_S, events, of_type
from tests.replay import shipping
from testsupport.waiting import wait_until

pickup = asyncio.Event()


@activity.defn(name="await_pickup")
async def await_pickup_until_released(order: shipping.Order, booking: shipping.Booking) -> None:
    await pickup.wait()


async def _waiting_for_pickup(handle: WorkflowHandle) -> bool:
    description = await handle.describe()
    return any(a.activity_type == "await_pickup" for a in description.pending_activities)


async def test_patched_keeps_running_executions_on_the_old_branch_and_new_ones_on_the_new(sdk_client: Client) -> None:
    pickup.clear()
    client = sdk_client
    order_a, order_b = shipping.Order("order-a", 2.0), shipping.Order("order-b", 3.0)
    activities = Worker(
        client,
        task_queue=shipping.TASK_QUEUE,
        activities=[shipping.book_standard, shipping.book_express, await_pickup_until_released],
    )
    async with activities:
        # Version 1 runs order A up to the pickup, then is replaced by version 2.
        async with Worker(client, task_queue=shipping.TASK_QUEUE, workflows=[shipping.ShippingBeforePatch]) as v1:
            a = await client.start_workflow(
                shipping.Shipping.run, order_a, id="order-a", task_queue=shipping.TASK_QUEUE
            )
            await wait_until(lambda: _waiting_for_pickup(a), timeout=DEADLINE_S, what="order A waiting for pickup")
        async with Worker(client, task_queue=shipping.TASK_QUEUE, workflows=[shipping.Shipping]) as v2:
            b = await client.start_workflow(
                shipping.Shipping.run, order_b, id="order-b", task_queue=shipping.TASK_QUEUE
            )
            await wait_until(lambda: _waiting_for_pickup(b), timeout=DEADLINE_S, what="order B waiting for pickup")
            pickup.set()
            shipment_a, shipment_b = await asyncio.gather(a.result(), b.result())

    # Dataclasses in, dataclasses out, through the workflow and its activities.
    assert isinstance(shipment_a, shipping.Shipment) and isinstance(shipment_a.booking, shipping.Booking)
    assert shipment_a.booking == shipping.Booking("standard-post", 6.0)  # the old branch, replayed by v2
    assert shipment_b.booking == shipping.Booking("express-air", 18.0)  # the new branch

    history_a, history_b = await events(a), await events(b)
    assert [e.attributes["activity_type"] for e in of_type(history_a, "ActivityTaskScheduled")] == [
        "book_standard",
        "await_pickup",
    ]
    assert of_type(history_a, "MarkerRecorded") == []
    (marker,) = of_type(history_b, "MarkerRecorded")
    assert marker.attributes["marker_name"] == "patch"
    assert marker.event_id < of_type(history_b, "ActivityTaskScheduled")[0].event_id

    # The build ids: A began on v1 and was finished by v2; B ran on v2 only.
    assert v1.build_id != v2.build_id
    completed_a = [e.attributes["worker_build_id"] for e in of_type(history_a, "WorkflowTaskCompleted")]
    assert completed_a[0] == v1.build_id and completed_a[-1] == v2.build_id
    assert {e.attributes["worker_build_id"] for e in of_type(history_b, "WorkflowTaskCompleted")} == {v2.build_id}
    assert (await a.describe()).first_worker_build_id == v1.build_id
    assert (await b.describe()).first_worker_build_id == v2.build_id

    # Both histories replay against today's code.
    replayer = Replayer(workflows=[shipping.Shipping])
    for handle in (a, b):
        await replayer.replay_workflow(await handle.fetch_history())


async def test_an_explicit_build_id_is_recorded(sdk_client: Client) -> None:
    client = sdk_client
    async with Worker(
        client,
        task_queue="shipping-explicit",
        workflows=[shipping.Shipping],
        activities=shipping.ACTIVITIES,
        build_id="2024.05.1-rc2",
    ) as worker:
        handle = await client.start_workflow(
            shipping.Shipping.run, shipping.Order("order-c", 1.0), id="order-c", task_queue="shipping-explicit"
        )
        await handle.result()
    assert worker.build_id == "2024.05.1-rc2"
    assert (await handle.describe()).first_worker_build_id == "2024.05.1-rc2"
