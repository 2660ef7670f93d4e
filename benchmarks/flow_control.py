"""What flow control costs on the dispatch path, through a real in-process server.

    python -m benchmarks.flow_control [--store sqlite|postgresql] [-n 20] [-k 25] [--rounds 2]

Runs ``n`` workflows at once, each fanning out ``k`` trivial activities, on one worker
of 50 activity slots, and prints one JSON line with the activities dispatched and
completed per second: ``plain`` (no priority, no key), ``prioritized`` (each
workflow with a priority and one of four fairness keys, which its activities
inherit: the fair passes are written and advanced) and ``controlled`` (the same,
and every activity with a concurrency key whose limit, 1000, never binds: such
an activity is leased by a poll rather than eagerly, and its lease and release
lock the limit row and count the key's leased tasks). The kinds alternate for ``--rounds`` rounds, as
the machine is shared and noisy; the median of each is printed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
import uuid
from datetime import timedelta

from benchmarks.onboarding import store_url
from flowforge import Client, Priority, activity, workflow
from flowforge.server import FlowForgeServer, ServerConfig
from flowforge.worker import Worker

QUEUE = "bench-flow-control"
KEY = "bench-key"
TIMEOUT = timedelta(seconds=60)


@activity.defn
async def touch(value: int) -> int:
    return value


@workflow.defn
class Plain:
    @workflow.run
    async def run(self, count: int) -> int:
        results = await asyncio.gather(
            *(workflow.execute_activity(touch, n, start_to_close_timeout=TIMEOUT) for n in range(count))
        )
        return sum(results)


@workflow.defn
class Controlled:
    @workflow.run
    async def run(self, count: int) -> int:
        results = await asyncio.gather(
            *(
                workflow.execute_activity(touch, n, start_to_close_timeout=TIMEOUT, concurrency_key=KEY)
                for n in range(count)
            )
        )
        return sum(results)


async def _round(
    client: Client, workflow_class: type, workflows: int, activities: int, *, prioritized: bool = False
) -> float:
    """Activities per second for ``workflows`` fan-outs started at once."""
    began = time.perf_counter()
    handles = []
    for number in range(workflows):
        priority = Priority(priority_key=1 + number % 5, fairness_key=f"tenant-{number % 4}")
        handles.append(
            await client.start_workflow(
                workflow_class,
                activities,
                id=f"{workflow_class.__name__}-{uuid.uuid4().hex[:8]}",
                task_queue=QUEUE,
                priority=priority if prioritized else None,
            )
        )
    for handle in handles:
        assert await handle.result() == sum(range(activities))
    return workflows * activities / (time.perf_counter() - began)


async def main(store: str, workflows: int, activities: int, rounds: int) -> None:
    with store_url(store) as (url, _postmaster):
        server = FlowForgeServer(ServerConfig(store=url, port=0))
        await server.start()
        try:
            client = await Client.connect(f"127.0.0.1:{server.port}")
            await client.set_concurrency_limit(KEY, 1000, reason="benchmark: a limit that never binds")
            rates: dict[str, list[float]] = {"plain": [], "prioritized": [], "controlled": []}
            async with Worker(
                client,
                task_queue=QUEUE,
                workflows=[Plain, Controlled],
                activities=[touch],
                max_concurrent_activities=50,
            ):
                await _round(client, Plain, 2, 5)  # warm up
                for _ in range(rounds):
                    rates["plain"].append(await _round(client, Plain, workflows, activities))
                    rates["prioritized"].append(await _round(client, Plain, workflows, activities, prioritized=True))
                    rates["controlled"].append(
                        await _round(client, Controlled, workflows, activities, prioritized=True)
                    )
            await client.close()
        finally:
            await server.stop()
    plain, prioritized, controlled = (statistics.median(rates[kind]) for kind in rates)
    print(
        json.dumps(
            {
                "store": store,
                "workflows": workflows,
                "activities_per_workflow": activities,
                "rounds": rounds,
                "plain_activities_per_s": round(plain, 1),
                "prioritized_activities_per_s": round(prioritized, 1),
                "controlled_activities_per_s": round(controlled, 1),
                "prioritized_vs_plain": round(prioritized / plain, 3),
                "controlled_vs_plain": round(controlled / plain, 3),
                "all_rounds": {kind: [round(r, 1) for r in values] for kind, values in rates.items()},
            }
        )
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", choices=["sqlite", "postgresql"], default="sqlite")
    parser.add_argument("-n", type=int, default=20, help="workflows at once per round")
    parser.add_argument("-k", type=int, default=25, help="activities per workflow")
    parser.add_argument("--rounds", type=int, default=2, help="rounds of each kind, alternating")
    options = parser.parse_args()
    asyncio.run(main(options.store, options.n, options.k, options.rounds))
