"""Latency of signals and queries through a real in-process server.

    python -m benchmarks.signals_queries [--store sqlite|postgresql] [-n 200]

Prints one JSON line:

- ``signal_latency_*``: one ``handle.signal`` call (one transaction: the event and a
  workflow task), N signals one after another to one running workflow;
- ``signal_to_handler_*``: from sending a signal to the workflow's state showing it
  (a worker runs the workflow task; measured by polling the cached query);
- ``query_cached_latency_*``: ``handle.query`` on a running workflow whose worker
  holds its instance (row insert, poll wake-up, answer, caller wake-up, delete);
- ``query_replay_latency_*``: the same on the closed run, answered by a replay of
  its N+~4N event history.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from flowforge import Client, workflow
from flowforge.server import FlowForgeServer, ServerConfig
from flowforge.worker import Worker

QUEUE = "bench-signals"


@workflow.defn
class Counter:
    def __init__(self) -> None:
        self.count = 0

    @workflow.run
    async def run(self, expected: int) -> int:
        await workflow.wait_condition(lambda: self.count >= expected)
        return self.count

    @workflow.signal
    def bump(self) -> None:
        self.count += 1

    @workflow.query
    def value(self) -> int:
        return self.count


def _percentiles(name: str, samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        f"{name}_p50_ms": round(statistics.median(ordered) * 1000, 2),
        f"{name}_p95_ms": round(ordered[int(len(ordered) * 0.95) - 1] * 1000, 2),
    }


async def _timed(count: int, call: Callable[[], Awaitable[object]]) -> list[float]:
    samples = []
    for _ in range(count):
        started = time.perf_counter()
        await call()
        samples.append(time.perf_counter() - started)
    return samples


async def run(store: str, count: int) -> dict[str, float]:
    server = FlowForgeServer(ServerConfig(store=store, port=0))
    await server.start()
    client = await Client.connect(f"127.0.0.1:{server.port}")
    try:
        async with Worker(client, task_queue=QUEUE, workflows=[Counter]):
            handle = await client.start_workflow(Counter.run, count + 20, id="bench-counter", task_queue=QUEUE)
            figures = _percentiles("signal_latency", await _timed(count, lambda: handle.signal(Counter.bump)))
            while await handle.query(Counter.value) < count:
                await asyncio.sleep(0.01)
            handler_samples = []
            for index in range(count + 1, count + 21):
                started = time.perf_counter()
                await handle.signal(Counter.bump)
                while await handle.query(Counter.value) < index:
                    pass
                handler_samples.append(time.perf_counter() - started)
            figures |= _percentiles("signal_to_handler", handler_samples)
            await handle.result()  # closed now: no cached instance, queries replay
            running = await client.start_workflow(Counter.run, 1_000_000, id="bench-cached", task_queue=QUEUE)
            await running.query(Counter.value)
            figures |= _percentiles("query_cached_latency", await _timed(count, lambda: running.query(Counter.value)))
            figures |= _percentiles(
                "query_replay_latency", await _timed(count // 4, lambda: handle.query(Counter.value))
            )
            figures["replayed_history_events"] = len((await handle.fetch_history()).events)
            await running.terminate("done")
        return figures
    finally:
        await client.close()
        await server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", default="sqlite", help="sqlite (a temporary file) or a PostgreSQL URL")
    parser.add_argument("-n", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        store = str(Path(tmp) / "bench.db") if args.store == "sqlite" else args.store
        print(
            json.dumps(
                {
                    "store": "sqlite" if args.store == "sqlite" else "postgresql",
                    "n": args.n,
                    **asyncio.run(run(store, args.n)),
                }
            )
        )


if __name__ == "__main__":
    main()
