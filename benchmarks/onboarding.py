"""Throughput and latency of the onboarding DAG through a real server.

    python -m benchmarks.onboarding [--address HOST:PORT | --store sqlite|postgresql|URL] [-n 500]

Without --address it starts a server process itself (`flowforge server start`
on the given store; for ``postgresql`` a throwaway cluster from the local
binaries). The worker runs in this process. Prints one JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import timedelta
from typing import Iterator

from flowforge import Client, activity, workflow
from flowforge.worker import Worker
from samples.onboarding.workflows import ACTIVITIES, Onboarding

ACTIVITIES_PER_WORKFLOW = 6


@activity.defn
async def noop(value: int) -> int:
    return value


@workflow.defn
class SingleActivity:
    @workflow.run
    async def run(self, value: int) -> int:
        return await workflow.execute_activity(noop, value, start_to_close_timeout=timedelta(seconds=30))


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


@contextlib.contextmanager
def _server_process(store: str) -> Iterator[str]:
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        if store == "sqlite":
            store = os.path.join(tmp, "bench.db")
        elif store == "postgresql":
            from tests._postgres import throwaway_cluster

            store = stack.enter_context(throwaway_cluster())
        ready = os.path.join(tmp, "ready")
        process = subprocess.Popen(
            [sys.executable, "-m", "flowforge.cli", "server", "start", "--store", store, "--port", "0",
             "--ready-file", ready, "--log-level", "WARNING"]
        )
        try:
            deadline = time.monotonic() + 60
            while not os.path.exists(ready):
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the benchmark server did not start")
                time.sleep(0.05)
            with open(ready) as f:
                yield f"127.0.0.1:{f.read().strip()}"
        finally:
            process.terminate()
            process.wait(timeout=30)


async def _measure(address: str, count: int, concurrency: int) -> dict:
    client = await Client.connect(address)
    task_queue = f"bench-{uuid.uuid4().hex[:8]}"
    worker = Worker(client, task_queue=task_queue, workflows=[Onboarding, SingleActivity],
                    activities=[*ACTIVITIES, noop])
    async with worker:
        # Sequential single-activity latency: one workflow at a time, end to end.
        single = []
        for i in range(50):
            began = time.perf_counter()
            handle = await client.start_workflow(SingleActivity.run, i, id=f"single-{task_queue}-{i}", task_queue=task_queue)
            assert await handle.result() == i
            single.append(time.perf_counter() - began)

        request = {"name": "Bench", "email": "bench@example.com", "work_seconds": 0, "cooling_off_seconds": 0}
        starts: list[float] = []
        latencies: list[float] = []
        gate = asyncio.Semaphore(concurrency)

        async def one(i: int) -> None:
            async with gate:
                began = time.perf_counter()
                handle = await client.start_workflow(
                    Onboarding.run, {**request, "email": f"bench{i}@example.com"},
                    id=f"onb-{task_queue}-{i}", task_queue=task_queue,
                )
                starts.append(time.perf_counter() - began)
                await handle.result()
                latencies.append(time.perf_counter() - began)

        began = time.perf_counter()
        await asyncio.gather(*(one(i) for i in range(count)))
        elapsed = time.perf_counter() - began
    await client.close()
    return {
        "workflows": count,
        "concurrency": concurrency,
        "seconds": round(elapsed, 3),
        "workflows_per_s": round(count / elapsed, 1),
        "activities_per_s": round(count * ACTIVITIES_PER_WORKFLOW / elapsed, 1),
        "workflow_latency_p50_ms": round(_percentile(latencies, 0.5) * 1000, 1),
        "workflow_latency_p95_ms": round(_percentile(latencies, 0.95) * 1000, 1),
        "start_latency_p50_ms": round(_percentile(starts, 0.5) * 1000, 1),
        "start_latency_p95_ms": round(_percentile(starts, 0.95) * 1000, 1),
        "single_activity_latency_p50_ms": round(_percentile(single, 0.5) * 1000, 1),
        "single_activity_latency_p95_ms": round(_percentile(single, 0.95) * 1000, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--address", help="a running server")
    where.add_argument("--store", default="sqlite", help="sqlite, postgresql, or a store URL (default sqlite)")
    parser.add_argument("-n", "--workflows", type=int, default=500)
    parser.add_argument("--concurrency", type=int, default=100, help="workflows in flight at once")
    args = parser.parse_args()
    with contextlib.ExitStack() as stack:
        address = args.address or stack.enter_context(_server_process(args.store))
        result = asyncio.run(_measure(address, args.workflows, args.concurrency))
    result["store"] = "external" if args.address else args.store.split("://")[0]
    result["machine"] = f"{platform.machine()} {os.cpu_count()} cpu, Python {platform.python_version()}"
    print(json.dumps(result))


if __name__ == "__main__":
    main()
