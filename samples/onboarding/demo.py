"""The whole sample in one command: starts the embedded dev server (a real
`flowforge server start-dev` process on a free port, in memory), runs a worker,
onboards one customer, and prints the result, the history and the DAG.

    python -m samples.onboarding.demo
"""

from __future__ import annotations

import json
from typing import Any

from flowforge import Client
from flowforge.client import WorkflowHandle
from flowforge.worker import Worker
from samples._dev_server import run_with_dev_server
from samples.onboarding.workflows import ACTIVITIES, TASK_QUEUE, Onboarding


async def run(address: str) -> None:
    client = await Client.connect(address)
    async with Worker(client, task_queue=TASK_QUEUE, workflows=[Onboarding], activities=ACTIVITIES):
        handle = await client.start_workflow(
            Onboarding.run,
            {"name": "Ada Lovelace", "email": "ada@example.com", "cooling_off_seconds": 1},
            id="onboarding-demo",
            task_queue=TASK_QUEUE,
        )
        result = await handle.result()
    await print_run(handle, result)
    await client.close()


async def print_run(handle: WorkflowHandle[Any, Any], result: Any) -> None:
    """Prints a finished run: its result, its history's events and its DAG."""
    print("Result:")
    print(json.dumps(result, indent=2))
    history = await handle.fetch_history()
    print(f"\nHistory ({len(history.events)} events):")
    for event in history.events:
        print(f"  {event.event_id:>3}  {event.event_type}")
    description = await handle.describe()
    print(f"\nStatus: {description.status.name}\nDAG:")
    for node in description.dag:
        print(f"  [{node.activity_id}] {node.activity_type:<18} after {node.depends_on or '-'}  {node.state}")


def main() -> None:
    run_with_dev_server(run)


if __name__ == "__main__":
    main()
