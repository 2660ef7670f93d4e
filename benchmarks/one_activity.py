"""One-activity latency: one-activity workflows run one after another through a real
server process, start call to result, on a fresh store (docs/performance.md).

    python -m benchmarks.one_activity [--store sqlite|URL] [-n 300] [--task-transport stream|unary] [--no-fold]

Prints one JSON line: the p50 and p95 in ms, the CPU milliseconds per workflow of the
server process and of this one (worker + starter), the commit measured and the 1-minute load
average (other work on the machine moves these figures more than most changes do: run
the builds you compare alternately, several times). ``--no-fold`` runs the worker with
``fold_workflow_tasks=False``: the activity's completion and the closing workflow task
reported apart, as before folds (docs/worker-stream.md, "Folded workflow tasks").
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
import time
import uuid
from typing import Literal

from benchmarks.onboarding import code_version, cpu_seconds, load_average, percentile, positive_int, server_process
from flowforge import Client
from flowforge.worker import Worker
from testsupport.workloads import SingleActivity, noop

# Runs before the measured ones: the worker's polls (or stream) settle first.
_WARM_UP = 5


async def measure(
    store: str, count: int, task_transport: Literal["stream", "unary"], fold: bool = True
) -> dict[str, object]:
    """The latencies of ``count`` one-activity workflows run one at a time."""
    with tempfile.TemporaryDirectory() as tmp, server_process(store or os.path.join(tmp, "ff.db")) as (address, pid):
        client = await Client.connect(address)
        queue = f"one-{uuid.uuid4().hex[:8]}"
        latencies: list[float] = []
        try:
            async with Worker(
                client,
                task_queue=queue,
                workflows=[SingleActivity],
                activities=[noop],
                task_transport=task_transport,
                fold_workflow_tasks=fold,
            ):
                server_cpu, own_cpu = 0.0, 0.0
                for i in range(_WARM_UP + count):
                    if i == _WARM_UP:
                        server_cpu, own_cpu = cpu_seconds([pid]), time.process_time()
                    began = time.perf_counter()
                    handle = await client.start_workflow(SingleActivity.run, i, id=f"{queue}-{i}", task_queue=queue)
                    assert await handle.result() == i
                    if i >= _WARM_UP:
                        latencies.append(time.perf_counter() - began)
                server_cpu, own_cpu = cpu_seconds([pid]) - server_cpu, time.process_time() - own_cpu
        finally:
            await client.close()
    return {
        "commit": code_version(),
        "task_transport": task_transport,
        "folded": fold,
        "workflows": count,
        "p50_ms": round(percentile(latencies, 0.5) * 1000, 1),
        "p95_ms": round(percentile(latencies, 0.95) * 1000, 1),
        "server_cpu_ms_per_workflow": round(1000 * server_cpu / count, 2),
        "worker_and_starter_cpu_ms_per_workflow": round(1000 * own_cpu / count, 2),
        "load_average": load_average(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", default="", help="a store URL (default: SQLite in a temporary directory)")
    parser.add_argument("-n", "--workflows", type=positive_int, default=300)
    parser.add_argument("--task-transport", choices=("stream", "unary"), default="stream")
    parser.add_argument("--no-fold", action="store_true", help="report each activity's workflow task apart")
    args = parser.parse_args()
    transport: Literal["stream", "unary"] = "unary" if args.task_transport == "unary" else "stream"
    print(json.dumps(asyncio.run(measure(args.store, args.workflows, transport, fold=not args.no_fold))))


if __name__ == "__main__":
    main()
