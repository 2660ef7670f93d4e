"""The scale curve: onboarding throughput and latency against executions in flight.

    python -m benchmarks.scale [--store sqlite|postgresql|URL] [--levels 1,10,100,1000]
                               [--workers 1,2] [--png docs/scale-curve.png]

One server (``flowforge server start``) on a fresh store; for each worker count,
that many worker processes (``python -m benchmarks.scale --worker ...``) poll one
task queue, and this process starts onboarding executions (6 activities, no work,
no timer) keeping ``level`` of them in flight, for each level. Each level runs
``max(30, 3 × level)`` executions (``--per-level`` scales that). Prints a markdown
table (workflows/s, activities/s, latency p50/p95 per level and worker count) and,
when matplotlib is installed (``pip install -e '.[bench]'``), draws both curves
into ``--png``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import subprocess
import sys
import time
import uuid
from typing import Any

from benchmarks.onboarding import code_version, load_average, machine, percentile, target
from flowforge import Client
from flowforge.worker import Worker
from samples.onboarding.workflows import ACTIVITIES, Onboarding


async def run_worker(address: str, task_queue: str) -> None:
    """A worker process: runs until SIGTERM."""
    client = await Client.connect(address)
    worker = Worker(client, task_queue=task_queue, workflows=[Onboarding], activities=ACTIVITIES)
    await worker.run()
    await client.close()


def start_workers(address: str, task_queue: str, count: int) -> list[subprocess.Popen[bytes]]:
    return [
        subprocess.Popen([sys.executable, "-m", "benchmarks.scale", "--worker", address, task_queue])
        for _ in range(count)
    ]


def stop_workers(workers: list[subprocess.Popen[bytes]]) -> None:
    for process in workers:
        process.send_signal(signal.SIGTERM)
    for process in workers:
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


async def level(client: Client, task_queue: str, in_flight: int, count: int) -> dict[str, Any]:
    request = {"name": "Scale", "email": "scale@example.com", "work_seconds": 0, "cooling_off_seconds": 0}
    latencies: list[float] = []
    gate = asyncio.Semaphore(in_flight)
    tag = uuid.uuid4().hex[:6]

    async def one(i: int) -> None:
        async with gate:
            began = time.perf_counter()
            handle = await client.start_workflow(Onboarding.run, request, id=f"scale-{tag}-{i}", task_queue=task_queue)
            await handle.result()
            latencies.append(time.perf_counter() - began)

    began = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(count)))
    elapsed = time.perf_counter() - began
    return {
        "in_flight": in_flight,
        "workflows": count,
        "workflows_per_s": round(count / elapsed, 1),
        "activities_per_s": round(count * 6 / elapsed, 1),
        "latency_p50_ms": round(percentile(latencies, 0.5) * 1000, 1),
        "latency_p95_ms": round(percentile(latencies, 0.95) * 1000, 1),
    }


async def measure(address: str, levels: list[int], worker_counts: list[int], per_level: float) -> list[dict[str, Any]]:
    client = await Client.connect(address)
    results = []
    try:
        for workers in worker_counts:
            task_queue = f"scale-{uuid.uuid4().hex[:8]}"
            processes = start_workers(address, task_queue, workers)
            try:
                # Warm up: every worker polling, the server's caches filled.
                await level(client, task_queue, 4 * workers, 8 * workers)
                for in_flight in levels:
                    count = max(30, int(3 * in_flight * per_level))
                    results.append({"workers": workers, **await level(client, task_queue, in_flight, count)})
                    print(f"  {results[-1]}", file=sys.stderr)
            finally:
                stop_workers(processes)
    finally:
        await client.close()
    return results


def table(results: list[dict[str, Any]]) -> str:
    lines = [
        "| workers | in flight | executions | workflows/s | activities/s | latency p50 (ms) | latency p95 (ms) |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in results:
        lines.append(
            f"| {r['workers']} | {r['in_flight']} | {r['workflows']} | {r['workflows_per_s']} | "
            f"{r['activities_per_s']} | {r['latency_p50_ms']} | {r['latency_p95_ms']} |"
        )
    return "\n".join(lines)


def plot(results: list[dict[str, Any]], path: str, title: str) -> bool:
    """Draws throughput and p95 latency against executions in flight; False without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    for workers in sorted({r["workers"] for r in results}):
        rows = [r for r in results if r["workers"] == workers]
        label = f"{workers} worker process{'es' if workers > 1 else ''}"
        left.plot([r["in_flight"] for r in rows], [r["workflows_per_s"] for r in rows], marker="o", label=label)
        right.plot([r["in_flight"] for r in rows], [r["latency_p95_ms"] for r in rows], marker="o", label=label)
    left.set_ylim(bottom=0)
    left.set(
        xscale="log",
        xlabel="executions in flight",
        ylabel="onboarding workflows/s (6 activities each)",
        title="Throughput",
    )
    right.set(
        xscale="log",
        yscale="log",
        xlabel="executions in flight",
        ylabel="latency p95, start to result (ms)",
        title="Latency",
    )
    levels = sorted({r["in_flight"] for r in results})
    for axes in (left, right):
        axes.set_xticks(levels, [str(v) for v in levels])
        axes.minorticks_off()
        axes.grid(True, which="both", alpha=0.3)
        axes.legend()
    figure.suptitle(title, fontsize=9)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--worker", nargs=2, metavar=("ADDRESS", "TASK_QUEUE"), help=argparse.SUPPRESS)
    parser.add_argument("--store", default="sqlite", help="sqlite, postgresql, or a store URL (default sqlite)")
    parser.add_argument("--levels", default="1,10,100,1000", help="executions in flight, comma-separated")
    parser.add_argument("--workers", default="1,2", help="worker process counts, comma-separated")
    parser.add_argument("--per-level", type=float, default=1.0, help="scales the executions run per level")
    parser.add_argument("--png", default=os.path.join("docs", "scale-curve.png"), help="where to draw the curves")
    args = parser.parse_args()
    if args.worker:
        asyncio.run(run_worker(*args.worker))
        return
    levels = [int(v) for v in args.levels.split(",")]
    worker_counts = [int(v) for v in args.workers.split(",")]
    load_before, code = load_average(), code_version()
    with target(args.store) as where:
        results = asyncio.run(measure(where.address, levels, worker_counts, args.per_level))
        store = "postgresql" if where.pg_dsn else "sqlite"
    heading = f"FlowForge `{code}`, {store}; {machine()}; load average {load_before} / {load_average()}"
    print(heading + "\n")
    print(table(results))
    if plot(results, args.png, heading):
        print(f"\nPlot: {args.png}")
    else:
        print("\n(no plot: matplotlib is not installed; pip install -e '.[bench]')")


if __name__ == "__main__":
    main()
