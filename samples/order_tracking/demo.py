"""The whole sample in one command: starts the embedded dev server, registers the
search attributes, starts five orders of three customers, finds the large one waiting
for review by a query, approves it, and lists orders by customer, stage and total.

    python -m samples.order_tracking.demo
"""

from __future__ import annotations

import asyncio

from flowforge import Client
from flowforge.worker import Worker
from samples._dev_server import run_with_dev_server
from samples.order_tracking.workflows import ACTIVITIES, SEARCH_ATTRIBUTES, TASK_QUEUE, OrderFulfillment

ORDERS = [  # (order id, customer, total in cents)
    ("o-1001", "c-1", 2_500),
    ("o-1002", "c-2", 72_000),
    ("o-1003", "c-1", 14_900),
    ("o-1004", "c-3", 4_990),
    ("o-1005", "c-2", 9_900),
]
QUERIES = [
    "CustomerId = 'c-1'",
    "OrderTotal >= 10000 AND ExecutionStatus = 'Completed'",
    "CustomerId IN ('c-2', 'c-3') AND OrderStage = 'shipped'",
    "OrderTotal BETWEEN 5000 AND 20000 OR CustomerId = 'c-3'",
]


async def _ids(client: Client, query: str) -> list[str]:
    return sorted([e.workflow_id async for e in client.list_workflows(query)])


async def run(address: str) -> dict[str, list[str]]:
    """Runs the demo against a server; returns query -> the order ids it found."""
    client = await Client.connect(address)
    await client.add_search_attributes(SEARCH_ATTRIBUTES)
    found: dict[str, list[str]] = {}
    async with Worker(client, task_queue=TASK_QUEUE, workflows=[OrderFulfillment], activities=ACTIVITIES):
        handles = [
            await client.start_workflow(
                OrderFulfillment.run,
                {"order_id": order_id, "lines": ["sku-1", "sku-2"]},
                id=order_id,
                task_queue=TASK_QUEUE,
                search_attributes={"CustomerId": customer, "OrderTotal": total},
                memo={"ship_to": f"{customer}, 1 Main Street"},
            )
            for order_id, customer, total in ORDERS
        ]
        waiting = "OrderStage = 'review' AND ExecutionStatus = 'Running'"
        while not (in_review := await _ids(client, waiting)):
            await asyncio.sleep(0.1)
        found[waiting] = in_review
        print(f"Waiting for review: {', '.join(in_review)}")
        for order_id in in_review:
            await client.get_workflow_handle(order_id).signal(OrderFulfillment.approve, "ops@example.com")
        results = {h.id: await h.result() for h in handles}
    shipped = ", ".join(f"{order_id} ({result['tracking']})" for order_id, result in results.items())
    print(f"Shipped: {shipped}\n")
    for query in QUERIES:
        found[query] = await _ids(client, query)
        print(f"{query}\n  -> {', '.join(found[query]) or 'none'}")
    count = await client.count_workflows("OrderStage = 'shipped' AND ShippedAt > '2000-01-01T00:00:00Z'")
    print(f"\n{count.count} orders shipped")
    [big] = [e async for e in client.list_workflows("WorkflowId = 'o-1002'")]
    print(f"o-1002: {big.search_attributes['OrderStage']}, ship to {big.memo['ship_to']}")
    await client.close()
    return found


def main() -> None:
    run_with_dev_server(run)


if __name__ == "__main__":
    main()
