"""The onboarding DAG declarative vs. as workflow code, on the same server and machine.

    python -m benchmarks.dag_onboarding [--store sqlite|postgresql|URL] [-n 200] [--concurrency 50]

Runs a server in this process on a fresh store, with counting wrappers around its store
(write transactions) and around the one client the worker and the starter share (RPCs by
name), and one worker holding the six activities of samples/dag_onboarding plus
``OnboardingAsCode`` (the same DAG written as a workflow). Then, for each mode in turn,
N runs with ``--concurrency`` in flight (no work in the activities: what is measured is
the platform's cost):

- ``dag``: ``client.start_dag("onboarding", ...)``: the server schedules each task
  when its dependencies completed, in the completion's transaction;
- ``code``: ``client.start_workflow(OnboardingAsCode.run, ...)``: a workflow task,
  poll and replay between the activities.

Prints one JSON line with, per mode: ``runs_per_s``, ``activities_per_s``,
``latency_p50_s``/``latency_p95_s`` (start call to result), ``rpcs_per_activity`` (by
RPC; polls that returned nothing are ``*_empty``), ``round_trips_per_activity`` (the
RPCs that returned work or reported it: starts, non-empty polls, completions, result
reads) and ``write_transactions_per_activity``; and the 1-minute load average before and
after (the machine may be shared: a figure taken while others used the CPU is not this
machine's figure).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import time
import uuid
from typing import Any

from benchmarks.onboarding import code_version, load_average, machine, percentile, store_url
from flowforge import Client
from flowforge.server import FlowForgeServer, ServerConfig
from flowforge.worker import Worker
from samples.dag_onboarding.activities import ACTIVITIES, DEFINITION, OnboardingAsCode
from testsupport.counting import StoreCounters, count_rpcs

TASK_QUEUE = "dag-bench"
ACTIVITIES_PER_RUN = 6
REQUEST = {"name": "Ada Lovelace", "email": "ada@example.com", "work_seconds": 0}


async def _run_mode(
    client: Client, mode: str, runs: int, concurrency: int, store: StoreCounters, rpcs: collections.Counter[str]
) -> dict[str, Any]:
    gate = asyncio.Semaphore(concurrency)
    latencies: list[float] = []

    async def one(index: int) -> None:
        async with gate:
            began = time.perf_counter()
            workflow_id = f"{mode}-{index}-{uuid.uuid4().hex[:8]}"
            if mode == "dag":
                handle = await client.start_dag("onboarding", REQUEST, id=workflow_id, task_queue=TASK_QUEUE)
            else:
                handle = await client.start_workflow(
                    OnboardingAsCode.run, REQUEST, id=workflow_id, task_queue=TASK_QUEUE
                )
            await handle.result()
            latencies.append(time.perf_counter() - began)

    rpcs.clear()
    writes_before = store.counts["write_transactions"]
    began = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(runs)))
    elapsed = time.perf_counter() - began
    activities = runs * ACTIVITIES_PER_RUN
    round_trips = sum(count for rpc, count in rpcs.items() if not rpc.endswith("_empty"))
    return {
        "runs_per_s": round(runs / elapsed, 1),
        "activities_per_s": round(activities / elapsed, 1),
        "latency_p50_s": round(percentile(latencies, 0.5), 4),
        "latency_p95_s": round(percentile(latencies, 0.95), 4),
        "rpcs_per_activity": {rpc: round(count / activities, 2) for rpc, count in sorted(rpcs.items())},
        "round_trips_per_activity": round(round_trips / activities, 2),
        "write_transactions_per_activity": round((store.counts["write_transactions"] - writes_before) / activities, 2),
    }


async def measure(url: str, runs: int, concurrency: int) -> dict[str, Any]:
    """Both modes on one in-process server over ``url``; the figures of each."""
    server = FlowForgeServer(ServerConfig(store=url, port=0))
    await server.start()
    store = StoreCounters(server.store)
    client = await Client.connect(f"127.0.0.1:{server.port}")
    rpcs = count_rpcs(client)
    try:
        await client.publish_dag(DEFINITION, alias="latest")
        async with Worker(
            client,
            task_queue=TASK_QUEUE,
            workflows=[OnboardingAsCode],
            activities=ACTIVITIES,
            max_concurrent_activities=concurrency * 3,
            max_concurrent_workflow_tasks=concurrency,
        ):
            await _run_mode(client, "dag", min(runs, 10), concurrency, store, rpcs)  # warm-up, not reported
            await _run_mode(client, "code", min(runs, 10), concurrency, store, rpcs)
            return {mode: await _run_mode(client, mode, runs, concurrency, store, rpcs) for mode in ("dag", "code")}
    finally:
        await client.close()
        await server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", default="sqlite", help="sqlite, postgresql or a store URL")
    parser.add_argument("-n", type=int, default=200, help="runs per mode")
    parser.add_argument("--concurrency", type=int, default=50, help="runs in flight at once")
    arguments = parser.parse_args()
    load_before = load_average()
    with store_url(arguments.store) as (url, _postmaster):
        figures = asyncio.run(measure(url, arguments.n, arguments.concurrency))
    report = {
        "benchmark": "dag_onboarding",
        "store": arguments.store,
        "runs_per_mode": arguments.n,
        "concurrency": arguments.concurrency,
        **figures,
        "load_average_before": load_before,
        "load_average_after": load_average(),
        "machine": machine(),
        "code_version": code_version(),
    }
    print(json.dumps(report))


if __name__ == "__main__":
    main()
