"""The declarative onboarding DAG in one command: starts a dev server (in memory), runs a
worker with the activities only (no workflow code), publishes onboarding.dag.yaml, runs
it, and prints the result, the history and the DAG.

    python -m samples.dag_onboarding.demo
"""

from __future__ import annotations

from flowforge import Client
from flowforge.worker import Worker
from samples._dev_server import run_with_dev_server
from samples.dag_onboarding.activities import ACTIVITIES, DEFINITION, TASK_QUEUE
from samples.onboarding.demo import print_run


async def run(address: str) -> None:
    client = await Client.connect(address)
    version = await client.publish_dag(DEFINITION, alias="prod")
    print(f"Published onboarding version {version} as 'prod'")
    async with Worker(client, task_queue=TASK_QUEUE, activities=ACTIVITIES):
        handle = await client.start_dag(
            "onboarding",
            {"name": "Ada Lovelace", "email": "ada@example.com", "work_seconds": 0.2},
            id="dag-onboarding-demo",
            task_queue=TASK_QUEUE,
            alias="prod",
        )
        result = await handle.result()
    await print_run(handle, result)  # a history without workflow tasks: the server ran the DAG
    await client.close()


def main() -> None:
    run_with_dev_server(run)


if __name__ == "__main__":
    main()
