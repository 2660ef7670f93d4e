"""FlowForge against DBOS Transact on the same PostgreSQL: the same workloads, side by side.

    pip install -e '.[bench]'       # includes dbos
    python -m benchmarks.compare_dbos [-n 500] [--concurrency 50] [--engines flowforge,dbos]
                                      [--server-processes 1] [--worker-processes]

One PostgreSQL server for both (:func:`testsupport.postgres.start_postgres`: a
throwaway local cluster with fsync on, or ``FLOWFORGE_TEST_POSTGRES_DSN``), a fresh
database each. Each engine runs alone, one after the other:

- FlowForge: ``flowforge server start`` on its database in a process of its own;
  the worker (default settings) and the starter in this process, over gRPC. With
  ``--server-processes N`` the server runs N processes on the one port
  (``--processes N``) and this process holds a client per server process (each
  reaching a different one), the starts spread over them, a worker beside each; with
  ``--worker-processes`` the workers run in processes of their own instead, one per
  server process (``benchmarks.scale``'s worker), and this process only starts and
  awaits. The default is the same shape as DBOS's: one engine process;
- DBOS Transact: a library, so the workflows run in this process (its system
  database on the same server), started with ``DBOS.start_workflow_async`` and
  awaited with ``get_result``: no network hop, which is DBOS's design.

The workloads are twins (``samples.onboarding`` / :mod:`benchmarks._dbos_workflows`):
``--single`` one-step ("hello") workflows one after another, then ``-n`` onboarding
executions (6 steps, three in parallel, no work) with ``--concurrency`` in flight.
DBOS keeps no event history with times of schedule and start, so schedule-to-start
is FlowForge's only. Prints a markdown table with the ratios, the machine and the
load average; ``--json PATH`` also writes the raw figures.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
from typing import Any

from benchmarks.compare_temporal import (
    Engine,
    Event,
    comparison_table,
    drive,
    machine_line,
    measure_flowforge,
    write_json,
)
from benchmarks.onboarding import code_version, load_average, positive_int

ROWS = [
    ("onboarding workflows/s", "workflows_per_s"),
    ("onboarding activities (steps)/s", "activities_per_s"),
    ("onboarding latency p50 (ms, under load)", "workflow_latency_p50_ms"),
    ("onboarding latency p95 (ms, under load)", "workflow_latency_p95_ms"),
    ("hello (one-step) workflow p50 (ms, sequential)", "single_activity_latency_p50_ms"),
    ("hello (one-step) workflow p95 (ms, sequential)", "single_activity_latency_p95_ms"),
    ("workflow task schedule-to-start p95 (ms, under load)", "workflow_task_schedule_to_start_p95_ms"),
    ("CPU used by engine + worker + PostgreSQL (cores)", "cores_used_by_engine"),
    ("CPU used by other processes (cores)", "cores_used_by_others"),
    ("server CPU per onboarding activity (CPU-ms, FlowForge's server process)", "server_cpu_ms_per_activity"),
    ("engine + worker + PostgreSQL CPU per onboarding activity (CPU-ms)", "engine_cpu_ms_per_activity"),
    (
        "benchmark process CPU per onboarding activity (CPU-ms: DBOS whole; FlowForge's starter, and worker "
        "unless --worker-processes)",
        "benchmark_process_cpu_ms_per_activity",
    ),
    ("cores used by the benchmark process", "cores_used_by_benchmark_process"),
]


async def measure_dbos(
    dsn: str, postgres_pids: list[int], count: int, concurrency: int, singles: int
) -> dict[str, Any]:
    """DBOS's figures: the library in this process, its system database at ``dsn``."""
    from dbos import DBOS

    from benchmarks import _dbos_workflows as dw

    DBOS(config={"name": "flowforge-compare", "system_database_url": dsn, "log_level": "WARNING"})
    DBOS.launch()
    try:

        async def run_single(i: int) -> int:
            handle = await DBOS.start_workflow_async(dw.single_activity, i)
            return int(await handle.get_result())

        async def start_onboarding(i: int, request: dict[str, Any]) -> Any:
            return await DBOS.start_workflow_async(dw.onboarding, request)

        async def wait(handle: Any) -> dict[str, Any]:
            result: dict[str, Any] = await handle.get_result()
            return result

        async def history(i: int) -> list[Event]:
            return []

        return await drive(
            Engine("DBOS", run_single, start_onboarding, wait, history, lambda: postgres_pids),
            count,
            concurrency,
            singles,
            0,
        )
    finally:
        DBOS.destroy()


def table(results: dict[str, dict[str, Any]]) -> str:
    header = "| | FlowForge (PostgreSQL) | DBOS Transact (same PostgreSQL) | FlowForge ÷ DBOS |"
    return comparison_table(results, "DBOS", header, ROWS)


def flowforge_processes(args: argparse.Namespace) -> str:
    """Where FlowForge's parts ran, in words."""
    servers = args.server_processes
    server = "one server process" if servers == 1 else f"{servers} server processes (--processes {servers})"
    clients = "its starter" if servers == 1 else f"its starter ({servers} clients, one per server process)"
    if args.worker_processes:
        workers = (
            "its worker in a process of its own"
            if servers == 1
            else f"{servers} worker processes, one per server process"
        )
        return f"FlowForge {server}, {workers}, {clients} in the benchmark process"
    worker = "its worker" if servers == 1 else f"{servers} workers"
    return f"FlowForge {server}, {worker} and {clients} in the benchmark process"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", "--workflows", type=positive_int, default=500, help="onboarding executions (default 500)")
    parser.add_argument(
        "--concurrency", type=positive_int, default=50, help="onboarding executions in flight (default 50)"
    )
    parser.add_argument("--single", type=positive_int, default=50, help="sequential one-step workflows (default 50)")
    parser.add_argument("--histories", type=int, default=100, help="FlowForge histories read for schedule-to-start")
    parser.add_argument(
        "--server-processes",
        type=positive_int,
        default=1,
        help="FlowForge server processes (flowforge server start --processes N), a client and worker each (default 1)",
    )
    parser.add_argument(
        "--worker-processes",
        action="store_true",
        help="FlowForge's workers in processes of their own, one per server process (default: in this process)",
    )
    parser.add_argument("--engines", default="flowforge,dbos", help="which to run, in order")
    parser.add_argument("--json", help="also write the raw figures to this file")
    args = parser.parse_args()
    engines = [name.strip().lower() for name in args.engines.split(",") if name.strip()]
    if "dbos" in engines:
        try:
            import dbos  # noqa: F401
        except ImportError:
            raise SystemExit("DBOS Transact is not installed: pip install -e '.[bench]'") from None
    from benchmarks.onboarding import _children
    from testsupport.postgres import start_postgres

    load_before, code = load_average(), code_version()
    server = start_postgres()
    results: dict[str, dict[str, Any]] = {}
    try:
        postmaster = None
        if server.description.startswith("local cluster in "):
            with open(server.description.removeprefix("local cluster in ") + "/data/postmaster.pid") as f:
                postmaster = int(f.readline())

        def pg_pids() -> list[int]:
            return [postmaster, *_children(postmaster)] if postmaster else []

        with concurrent.futures.ThreadPoolExecutor(1) as thread:
            flowforge_dsn = thread.submit(asyncio.run, server.create_database()).result()
            dbos_dsn = thread.submit(asyncio.run, server.create_database(migrated=False)).result()
        for name in engines:
            if name == "flowforge":
                results["FlowForge"] = asyncio.run(
                    measure_flowforge(
                        args.workflows,
                        args.concurrency,
                        args.single,
                        args.histories,
                        flowforge_dsn,
                        pg_pids,
                        server_processes=args.server_processes,
                        worker_processes=args.worker_processes,
                    )
                )
            elif name == "dbos":
                results["DBOS"] = asyncio.run(
                    measure_dbos(dbos_dsn, pg_pids(), args.workflows, args.concurrency, args.single)
                )
            else:
                raise SystemExit(f"unknown engine {name!r}: flowforge or dbos")
    finally:
        server.stop()
    dbos_version = ""
    if "dbos" in engines:
        from importlib.metadata import version

        dbos_version = f"DBOS Transact {version('dbos')}"
    print(
        f"Machine: {machine_line()}. FlowForge `{code}` and {dbos_version or 'DBOS not run'} on one PostgreSQL "
        f"({server.description}). Onboarding: {args.workflows} executions, {args.concurrency} in flight; "
        f"hello: {args.single} in sequence. Processes: {flowforge_processes(args)}; DBOS in the benchmark process. "
        f"Load average before/after: {load_before} / {load_average()}.\n"
    )
    print(table(results))
    if args.json:
        write_json(
            args.json,
            {
                "machine": machine_line(),
                "code": code,
                "dbos": dbos_version,
                "arguments": vars(args),
                "results": results,
            },
        )


if __name__ == "__main__":
    main()
