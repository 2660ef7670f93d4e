"""Order fulfilment whose progress is searchable: search attributes and memo.

Every order starts with ``CustomerId`` and ``OrderTotal`` as search attributes and its
shipping address in the memo. As it moves on, the workflow upserts ``OrderStage``
(``review`` for large orders waiting for a person's approval, ``packing``,
``shipped``) and ``ShippedAt``, so operations can ask "which large orders are
waiting for review?" or "what did customer c-2 order this week?" with
``client.list_workflows(query)`` — see docs/visibility.md.
"""

from __future__ import annotations

from datetime import timedelta

from flowforge import activity, workflow
from flowforge.common import SearchAttributeIndexedValueType

TASK_QUEUE = "order-tracking"
#: Orders of at least this many cents wait for an approval signal.
REVIEW_THRESHOLD_CENTS = 50_000
SEARCH_ATTRIBUTES = {
    "CustomerId": SearchAttributeIndexedValueType.KEYWORD,
    "OrderTotal": SearchAttributeIndexedValueType.INT,
    "OrderStage": SearchAttributeIndexedValueType.KEYWORD,
    "ShippedAt": SearchAttributeIndexedValueType.DATETIME,
}
TIMEOUT = timedelta(seconds=30)


@activity.defn
async def reserve_stock(order: dict) -> str:
    return f"reserved {len(order['lines'])} line(s) of {order['order_id']}"


@activity.defn
async def ship(order: dict) -> str:
    return f"TRACK-{order['order_id'].upper()}"


@workflow.defn
class OrderFulfillment:
    """Reserves stock, waits for approval when the order is large, ships."""

    def __init__(self) -> None:
        self.approved_by = ""

    @workflow.signal
    async def approve(self, who: str) -> None:
        self.approved_by = who

    @workflow.run
    async def run(self, order: dict) -> dict:
        if workflow.info().search_attributes.get("OrderTotal", 0) >= REVIEW_THRESHOLD_CENTS:
            workflow.upsert_search_attributes({"OrderStage": "review"})
            await workflow.wait_condition(lambda: bool(self.approved_by))
        workflow.upsert_search_attributes({"OrderStage": "packing"})
        reserved = await workflow.execute_activity(reserve_stock, order, start_to_close_timeout=TIMEOUT)
        tracking = await workflow.execute_activity(ship, order, start_to_close_timeout=TIMEOUT)
        workflow.upsert_search_attributes({"OrderStage": "shipped", "ShippedAt": workflow.now()})
        return {
            "reserved": reserved,
            "tracking": tracking,
            "approved_by": self.approved_by or None,
            "ship_to": workflow.memo_value("ship_to", ""),
        }


ACTIVITIES = [reserve_stock, ship]
