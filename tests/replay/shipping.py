"""A workflow that changed while executions were running, in each of its versions.

``Shipping`` is today's code: it added express shipping behind
``workflow.patched(EXPRESS_SHIPPING)``. The other classes (all registered as
"Shipping") are its past and future versions, kept so that
``python -m tests.replay.record`` can record a history with each and the replay
tests can check every step of the patch's life:

1. ``ShippingBeforePatch`` — the code before the change;
2. ``Shipping`` — ``if workflow.patched(...)``: new executions take the new branch,
   executions that ran the old code replay the old one;
3. ``ShippingPatchDeprecated`` — ``workflow.deprecate_patch(...)`` once no execution
   of version 1 is left;
4. ``ShippingPatchRemoved`` — the call removed once no execution of version 2 is left.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta

from flowforge import activity, workflow

TASK_QUEUE = "shipping"
EXPRESS_SHIPPING = "express-shipping"
TIMEOUT = timedelta(seconds=30)


@dataclasses.dataclass
class Order:
    order_id: str
    weight_kg: float


@dataclasses.dataclass
class Booking:
    carrier: str
    price_eur: float


@dataclasses.dataclass
class Shipment:
    order_id: str
    booking: Booking
    tracking_id: str
    shipped_at: datetime


@activity.defn
async def book_standard(order: Order) -> Booking:
    return Booking(carrier="standard-post", price_eur=round(4.0 + order.weight_kg, 2))


@activity.defn
async def book_express(order: Order) -> Booking:
    return Booking(carrier="express-air", price_eur=round(12.0 + 2 * order.weight_kg, 2))


@activity.defn
async def await_pickup(order: Order, booking: Booking) -> None:
    """Waits for the carrier to collect the parcel (at once, here)."""


ACTIVITIES = [book_standard, book_express, await_pickup]


async def _ship(order: Order, booking: Booking) -> Shipment:
    await workflow.execute_activity(await_pickup, args=[order, booking], start_to_close_timeout=TIMEOUT)
    return Shipment(order.order_id, booking, tracking_id=str(workflow.uuid4()), shipped_at=workflow.now())


@workflow.defn(name="Shipping")
class ShippingBeforePatch:
    @workflow.run
    async def run(self, order: Order) -> Shipment:
        booking = await workflow.execute_activity(book_standard, order, start_to_close_timeout=TIMEOUT)
        return await _ship(order, booking)


@workflow.defn(name="Shipping")
class Shipping:
    @workflow.run
    async def run(self, order: Order) -> Shipment:
        if workflow.patched(EXPRESS_SHIPPING):
            booking = await workflow.execute_activity(book_express, order, start_to_close_timeout=TIMEOUT)
        else:
            booking = await workflow.execute_activity(book_standard, order, start_to_close_timeout=TIMEOUT)
        assert workflow.patched(EXPRESS_SHIPPING) == (booking.carrier == "express-air")  # one answer per run
        return await _ship(order, booking)


@workflow.defn(name="Shipping")
class ShippingPatchDeprecated:
    @workflow.run
    async def run(self, order: Order) -> Shipment:
        workflow.deprecate_patch(EXPRESS_SHIPPING)
        booking = await workflow.execute_activity(book_express, order, start_to_close_timeout=TIMEOUT)
        return await _ship(order, booking)


@workflow.defn(name="Shipping")
class ShippingPatchRemoved:
    @workflow.run
    async def run(self, order: Order) -> Shipment:
        booking = await workflow.execute_activity(book_express, order, start_to_close_timeout=TIMEOUT)
        return await _ship(order, booking)
