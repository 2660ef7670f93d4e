"""The saga sample in one command: starts the embedded dev server, runs a worker,
books a trip that succeeds, one whose flight is sold out (the hotel and car are
cancelled, in that order), and a group trip with one child workflow per traveller.

    python -m samples.saga.demo
"""

from __future__ import annotations

import json

from flowforge import Client
from flowforge.exceptions import WorkflowFailureError
from flowforge.worker import Worker
from samples._dev_server import run_with_dev_server
from samples.saga.workflows import ACTIVITIES, LEDGER, TASK_QUEUE, WORKFLOWS, BookGroupTrip, BookTrip


async def run(address: str) -> None:
    client = await Client.connect(address)
    async with Worker(client, task_queue=TASK_QUEUE, workflows=WORKFLOWS, activities=ACTIVITIES):
        ok = await client.start_workflow(BookTrip.run, {"traveller": "ada"}, id="trip-ada", task_queue=TASK_QUEUE)
        print("Booked:", json.dumps(await ok.result()))

        doomed = await client.start_workflow(
            BookTrip.run, {"traveller": "grace", "fail_at": "flight"}, id="trip-grace", task_queue=TASK_QUEUE
        )
        try:
            await doomed.result()
        except WorkflowFailureError as error:
            print("Failed, compensated:", error.cause)

        group = await client.start_workflow(
            BookGroupTrip.run,
            [{"traveller": "alan"}, {"traveller": "edsger", "fail_at": "hotel"}],
            id="group-trip",
            task_queue=TASK_QUEUE,
        )
        print("Group trip:", json.dumps(await group.result()))
    print("\nReservation service calls, in order:")
    for operation, step, traveller in LEDGER:
        print(f"  {operation:<8} {step:<7} {traveller}")
    history = await doomed.fetch_history()
    print(f"\nHistory of trip-grace ({len(history.events)} events):")
    for event in history.events:
        detail = event.attributes.get("activity_type", "")
        print(f"  {event.event_id:>3}  {event.event_type} {detail}")
    await client.close()


def main() -> None:
    run_with_dev_server(run)


if __name__ == "__main__":
    main()
