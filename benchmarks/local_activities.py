"""What a local activity saves against a regular one, through a real in-process server.

    python -m benchmarks.local_activities [--store sqlite|postgresql] [-n 30] [-k 5]

Runs ``n`` workflows one after another, each calling ``k`` trivial activities in sequence,
once with ``workflow.execute_activity`` and once with ``workflow.execute_local_activity``
(same worker, same server), and prints one JSON line: the workflow latency (start to result)
p50/p95 of each, and the history events per workflow of each. A regular activity costs a
schedule, a dispatch, a completion and a new workflow task (one round trip each); a local
one costs a marker in the same workflow task.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time
from datetime import timedelta
from pathlib import Path

from flowforge import Client, activity, workflow
from flowforge.server import FlowForgeServer, ServerConfig
from flowforge.worker import Worker

QUEUE = "bench-local-activities"
TIMEOUT = timedelta(seconds=10)


@activity.defn
async def add_one(value: int) -> int:
    return value + 1


@workflow.defn
class Regular:
    @workflow.run
    async def run(self, steps: int) -> int:
        value = 0
        for _ in range(steps):
            value = await workflow.execute_activity(add_one, value, start_to_close_timeout=TIMEOUT)
        return value


@workflow.defn
class Local:
    @workflow.run
    async def run(self, steps: int) -> int:
        value = 0
        for _ in range(steps):
            value = await workflow.execute_local_activity(add_one, value, start_to_close_timeout=TIMEOUT)
        return value


async def _measure(client: Client, workflow_class: type, name: str, runs: int, steps: int) -> dict[str, float]:
    latencies = []
    events = []
    for number in range(runs):
        began = time.perf_counter()
        handle = await client.start_workflow(workflow_class, steps, id=f"{name}-{number}", task_queue=QUEUE)
        assert await handle.result() == steps
        latencies.append(time.perf_counter() - began)
        events.append(len((await handle.fetch_history()).events))
    ordered = sorted(latencies)
    return {
        f"{name}_p50_ms": round(statistics.median(ordered) * 1000, 2),
        f"{name}_p95_ms": round(ordered[max(int(len(ordered) * 0.95) - 1, 0)] * 1000, 2),
        f"{name}_events": statistics.median(events),
    }


async def main(store: str, runs: int, steps: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        url = str(Path(tmp) / "bench.db") if store == "sqlite" else os.environ["FLOWFORGE_TEST_POSTGRES_DSN"]
        server = FlowForgeServer(ServerConfig(store=url, port=0))
        await server.start()
        try:
            client = await Client.connect(f"127.0.0.1:{server.port}")
            async with Worker(client, task_queue=QUEUE, workflows=[Regular, Local], activities=[add_one]):
                await _measure(client, Local, "warmup", 3, steps)
                result = {"store": store, "runs": runs, "activities_per_workflow": steps}
                result |= await _measure(client, Regular, "regular", runs, steps)
                result |= await _measure(client, Local, "local", runs, steps)
            await client.close()
        finally:
            await server.stop()
    print(json.dumps(result))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", choices=["sqlite", "postgresql"], default="sqlite")
    parser.add_argument("-n", type=int, default=30, help="workflows per kind")
    parser.add_argument("-k", type=int, default=5, help="activities per workflow")
    options = parser.parse_args()
    asyncio.run(main(options.store, options.n, options.k))
