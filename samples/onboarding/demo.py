"""The whole sample in one command: starts the embedded dev server (a real
`flowforge server start-dev` process on a free port, in memory), runs a worker,
onboards one customer, and prints the result, the history and the DAG.

    python -m samples.onboarding.demo
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time

from flowforge import Client
from flowforge.worker import Worker
from samples.onboarding.workflows import ACTIVITIES, TASK_QUEUE, Onboarding


def _start_dev_server(ready_file: str) -> tuple[subprocess.Popen, str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "flowforge.cli", "server", "start-dev", "--in-memory", "--port", "0",
         "--ready-file", ready_file, "--log-level", "WARNING"]
    )
    deadline = time.monotonic() + 30
    while not os.path.exists(ready_file):
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise RuntimeError("the dev server did not start")
        time.sleep(0.05)
    with open(ready_file) as f:
        return process, f"127.0.0.1:{f.read().strip()}"


async def run(address: str) -> None:
    client = await Client.connect(address)
    async with Worker(client, task_queue=TASK_QUEUE, workflows=[Onboarding], activities=ACTIVITIES):
        handle = await client.start_workflow(
            Onboarding.run, {"name": "Ada Lovelace", "email": "ada@example.com", "cooling_off_seconds": 1},
            id="onboarding-demo", task_queue=TASK_QUEUE,
        )
        result = await handle.result()
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
    await client.close()


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        server, address = _start_dev_server(os.path.join(tmp, "ready"))
        try:
            asyncio.run(run(address))
        finally:
            server.terminate()
            server.wait(timeout=30)


if __name__ == "__main__":
    main()
