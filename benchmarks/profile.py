"""Where the time goes per activity: store transactions, SQL statements and RPCs
counted exactly, and (optionally) a CPU profile of the server and worker processes.

    python -m benchmarks.profile counts --store sqlite|postgresql [-n 200]
    python -m benchmarks.profile cpu --store sqlite|postgresql [-n 500] [--py-spy PATH]

``counts`` runs the server in this process with counting wrappers around its
store (``transaction()`` = a write transaction, ``read()`` = a read-only
snapshot, statements = calls into the driver, i.e. round trips on PostgreSQL,
conflicts = optimistic-concurrency retries) and around the client the worker
and starter share (RPCs by name). It reports them per workflow and per activity
for 50 sequential single-activity workflows and for N onboarding workflows run
like ``benchmarks.onboarding`` (100 in flight, no work, no timer).

``cpu`` runs ``benchmarks.onboarding`` (server in its own process) with
``py-spy record`` attached to the server and to the benchmark process (worker +
starter), and prints the share of sampled CPU time by component. py-spy is not
a dependency: ``pip download py-spy`` and unpack it, or ``pip install py-spy``.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from typing import Any

from benchmarks.onboarding import (
    ACTIVITIES_PER_WORKFLOW,
    SINGLE_RUNS,
    code_version,
    cpu_seconds,
    machine,
    positive_int,
    store_url,
    target,
)
from flowforge import Client
from flowforge.server import FlowForgeServer, ServerConfig
from flowforge.worker import Worker
from samples.onboarding.workflows import ACTIVITIES, Onboarding
from testsupport.counting import StoreCounters, count_rpcs
from testsupport.workloads import SingleActivity, noop


def _per(counts: dict[str, int], workflows: int, activities: int) -> dict[str, Any]:
    return {
        "per_workflow": {k: round(v / workflows, 2) for k, v in sorted(counts.items())},
        "per_activity": {k: round(v / activities, 2) for k, v in sorted(counts.items())},
    }


def _callers(callers: dict[str, list[int]], workflows: int) -> dict[str, str]:
    """``all (changed rows)`` per workflow, by engine method."""
    return {
        name: f"{total / workflows:.2f} ({changed / workflows:.2f})"
        for name, (total, changed) in sorted(callers.items(), key=lambda item: -item[1][0])
    }


def _readers(readers: collections.Counter[str], workflows: int) -> dict[str, float]:
    return {name: round(n / workflows, 2) for name, n in readers.most_common()}


async def counts(url: str, workflows: int) -> dict[str, Any]:
    server = FlowForgeServer(ServerConfig(store=url, port=0))
    await server.start()
    store = StoreCounters(server.store)
    client = await Client.connect(f"127.0.0.1:{server.port}")
    rpcs = count_rpcs(client)
    queue = f"profile-{uuid.uuid4().hex[:8]}"
    result: dict[str, Any] = {}
    try:
        async with Worker(
            client, task_queue=queue, workflows=[Onboarding, SingleActivity], activities=[*ACTIVITIES, noop]
        ):
            # Let the worker's polls settle before counting.
            await (await client.start_workflow(SingleActivity.run, -1, id=f"warm-{queue}", task_queue=queue)).result()

            store.reset()
            rpcs.clear()
            for i in range(SINGLE_RUNS):
                handle = await client.start_workflow(SingleActivity.run, i, id=f"single-{queue}-{i}", task_queue=queue)
                await handle.result()
            result["single_activity"] = {
                "workflows": SINGLE_RUNS,
                "store": _per(dict(store.counts), SINGLE_RUNS, SINGLE_RUNS),
                "rpcs": _per(dict(rpcs), SINGLE_RUNS, SINGLE_RUNS),
                "write_transactions_by_caller_per_workflow": _callers(store.callers, SINGLE_RUNS),
                "read_transactions_by_caller_per_workflow": _readers(store.readers, SINGLE_RUNS),
            }

            request = {"name": "Bench", "email": "b@example.com", "work_seconds": 0, "cooling_off_seconds": 0}
            gate = asyncio.Semaphore(100)

            async def one(i: int) -> None:
                async with gate:
                    handle = await client.start_workflow(
                        Onboarding.run, request, id=f"onb-{queue}-{i}", task_queue=queue
                    )
                    await handle.result()

            store.reset()
            rpcs.clear()
            began = time.perf_counter()
            await asyncio.gather(*(one(i) for i in range(workflows)))
            elapsed = time.perf_counter() - began
            activities = workflows * ACTIVITIES_PER_WORKFLOW
            result["onboarding"] = {
                "workflows": workflows,
                "seconds_in_one_process": round(elapsed, 2),
                "store": _per(dict(store.counts), workflows, activities),
                "rpcs": _per(dict(rpcs), workflows, activities),
                "write_transactions_by_caller_per_workflow": _callers(store.callers, workflows),
                "read_transactions_by_caller_per_workflow": _readers(store.readers, workflows),
            }
    finally:
        await client.close()
        await server.stop()
    return result


# ------------------------------------------------------------------------ CPU

# The innermost frame that matches a rule names the component of a sample
# (py-spy sees Python frames only: time in C or Cython code counts for the
# Python frame that called it).
_COMPONENTS = [
    ("sqlite3 calls (statements; COMMIT runs on a thread)", re.compile(r"stores/sqlite\.py|sqlite3/")),
    ("asyncpg (Python part)", re.compile(r"asyncpg/")),
    # asyncio socket transports carry only the PostgreSQL connections in the server
    # (gRPC has its own I/O); their callbacks run asyncpg's Cython protocol.
    ("asyncio transports (asyncpg's Cython protocol)", re.compile(r"_SelectorSocketTransport|_SelectorTransport")),
    (
        "protobuf / JSON / payload conversion",
        re.compile(r"google/protobuf|[(/]json/|sdk/converter\.py|sdk/api/schema\.py"),
    ),
    ("grpc (Python part)", re.compile(r"[(/]grpc/")),
    ("store SQL layer", re.compile(r"stores/_sql\.py|stores/postgres\.py|stores/base\.py")),
    (
        "history engine / frontend",
        re.compile(r"server/(history|frontend|matching|timers|tokens|retries|errors)(\.py|/)"),
    ),
    ("worker / workflow replay", re.compile(r"worker/_|_workflow_instance\.py|sdk/workflow\.py|_determinism\.py")),
    ("SDK client / RPC", re.compile(r"sdk/(client|_rpc|activity)\.py")),
    ("benchmark / samples", re.compile(r"benchmarks/|samples/")),
    # Handle._run's own time is C/Cython run straight from the loop: gRPC's aio
    # core (Cython) and C task steps.
    ("event loop callbacks in C/Cython (gRPC aio core)", re.compile(r"Handle\._run")),
    ("asyncio event loop", re.compile(r"asyncio/|selectors\.py")),
    ("thread pool (sync activities, SQLite COMMIT)", re.compile(r"concurrent/futures|threading\.py")),
]


def summarize(collapsed: str, top: int = 12) -> dict[str, Any]:
    """Shares of samples by component (innermost matching frame) and the
    functions with the most samples on top of the stack (self time)."""
    by_component: collections.Counter[str] = collections.Counter()
    self_time: collections.Counter[str] = collections.Counter()
    total = 0
    for line in collapsed.splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        total += count
        frames = stack.split(";")
        self_time[frames[-1]] += count
        for frame in reversed(frames):
            name = next((label for label, pattern in _COMPONENTS if pattern.search(frame)), None)
            if name is not None:
                by_component[name] += count
                break
        else:
            by_component["other"] += count
    return {
        "samples": total,
        "components_pct": {k: round(100 * v / max(total, 1), 1) for k, v in by_component.most_common()},
        "top_self_pct": {k: round(100 * v / max(total, 1), 1) for k, v in self_time.most_common(top)},
    }


def cpu(store: str, workflows: int, py_spy: str) -> dict[str, Any]:
    from benchmarks.onboarding import measure

    result: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp, target(store) as where:
        assert where.server_pid is not None
        profiles = {
            "server": (where.server_pid, os.path.join(tmp, "server.txt")),
            "worker_and_starter": (os.getpid(), os.path.join(tmp, "worker.txt")),
        }
        # --gil: only samples of the thread holding the GIL, i.e. Python code
        # running; waits in epoll, fsync or a socket are left out.
        spies = [
            subprocess.Popen(
                [
                    py_spy,
                    "record",
                    "--pid",
                    str(pid),
                    "--format",
                    "raw",
                    "--rate",
                    "200",
                    "--gil",
                    "--nonblocking",
                    "--output",
                    path,
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            for pid, path in profiles.values()
        ]
        time.sleep(1.0)  # py-spy attaches
        processes = {
            "server": [where.server_pid],
            "worker_and_starter": [os.getpid()],
            "postgresql": [pid for pid in where.pids() if pid != where.server_pid],
        }
        before = {name: cpu_seconds(pids) for name, pids in processes.items()}
        began = time.perf_counter()
        result["benchmark"] = asyncio.run(measure(where, workflows, 100))
        wall = time.perf_counter() - began
        processes["postgresql"] = [pid for pid in where.pids() if pid != where.server_pid]  # the pool grew
        used = {name: cpu_seconds(pids) - before[name] for name, pids in processes.items()}
        result["wall_seconds"] = round(wall, 2)
        result["cores_used"] = {name: round(seconds / wall, 2) for name, seconds in used.items()}
        for spy in spies:
            spy.send_signal(2)  # SIGINT: py-spy writes its output and exits
            spy.wait(timeout=60)
        for name, (_, path) in profiles.items():
            with open(path) as f:
                result[name + "_python_profile"] = summarize(f.read())
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", choices=("counts", "cpu"))
    parser.add_argument("--store", default="sqlite", help="sqlite, postgresql, or a store URL")
    parser.add_argument("-n", "--workflows", type=positive_int, default=200)
    parser.add_argument("--py-spy", default=shutil.which("py-spy") or "py-spy", help="the py-spy binary")
    args = parser.parse_args()
    code_before = code_version()
    if args.mode == "counts":
        with store_url(args.store) as (url, _):
            result = asyncio.run(counts(url, args.workflows))
    else:
        result = cpu(args.store, args.workflows, args.py_spy)
    result["store"] = args.store.split("://")[0]
    result["machine"] = machine()
    result["code"] = code_before if code_before == code_version() else f"{code_before} (changed during the run)"
    print(json.dumps(result))


if __name__ == "__main__":
    sys.exit(main())
