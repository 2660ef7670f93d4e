"""Throughput and latency of the onboarding DAG through a real server.

    python -m benchmarks.onboarding [--address HOST:PORT | --store sqlite|postgresql|URL] [-n 500]
                                    [--concurrency 100] [--replicas 1] [--cooling-off 0] [--tracing]
                                    [--sample-locks]

Without --address it starts the server process(es) itself (`flowforge server
start`): ``sqlite`` is a fresh file in a temporary directory, ``postgresql`` a
fresh database on the server :func:`testsupport.postgres.start_postgres` finds or
starts (``FLOWFORGE_TEST_POSTGRES_DSN``, else a throwaway cluster from the local
binaries with fsync on), and a URL is used as given. The worker(s) and the
starter run in this process: one client and one worker per replica. Prints one
JSON line:

- ``workflows_per_s`` / ``activities_per_s``: N onboarding workflows (6 activities,
  no work, no cooling-off timer unless ``--cooling-off``), ``--concurrency`` in
  flight at once;
- ``workflow_latency_*``: start call to result, per workflow;
- ``start_latency_*``: the StartWorkflowExecution call alone;
- ``single_activity_latency_*``: 50 one-activity workflows run one after another
  (the end-to-end latency of a quiet system);
- ``rpcs_per_workflow``: calls this process made during the N workflows, by RPC
  (polls counted only when they returned a task, ``*Poll*_empty`` otherwise);
- ``server_cpu_ms_per_activity``: CPU time (user + system) the server process(es)
  used during the N workflows, divided by the activities completed: the cost of
  an activity on the server, steadier on a shared machine than any rate;
- ``cores_used_by_benchmark`` / ``cores_used_by_others``: CPU during the N
  workflows of this benchmark's processes (this one, the servers, a throwaway
  PostgreSQL) and of everything else on the machine — a figure taken while
  others used the CPU is not this machine's figure;
- ``pg_write_transactions_per_workflow`` (PostgreSQL only): transactions that
  were assigned a transaction id (wrote something, so COMMIT waits for a WAL
  flush), from ``txid_current()`` before and after the N workflows;
- ``timer_late_*`` (with ``--cooling-off``): how much later than asked the
  durable timers fired, from the histories;
- ``pg_lock_waits`` (with ``--sample-locks``, PostgreSQL only): ``pg_locks`` sampled
  every ~5 ms during the N workflows: the samples, those in which a session of the
  database waited for a lock, and the waits by lock type and the statement's first
  words (a report's ``SELECT ... FOR UPDATE`` waiting on another transaction shows
  as ``transactionid``).

``--tracing`` turns tracing on everywhere: the clients and workers carry
``TracingInterceptor`` (spans batched to OTLP/HTTP), and the servers export their own
spans (``--otlp-endpoint``), all to a sink in this process that discards them.
The server's metrics are always recorded (there is no switch), so both runs pay for them.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import concurrent.futures
import contextlib
import dataclasses
import http.server
import json
import os
import platform
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from flowforge import Client
from flowforge.contrib.opentelemetry import TracingInterceptor
from flowforge.worker import Worker
from samples._dev_server import start_server
from samples.onboarding.workflows import ACTIVITIES, Onboarding
from testsupport.counting import count_rpcs
from testsupport.workloads import SingleActivity, noop

ACTIVITIES_PER_WORKFLOW = 6
SINGLE_RUNS = 50


def positive_int(text: str) -> int:
    """An argparse type for counts: a whole number of at least 1, else a usage error
    (0 or a negative count would end a benchmark in a traceback over no samples)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not at least 1")
    return value


def benchmark_worker(client: Client, task_queue: str, **options: Any) -> Worker:
    """A worker (default settings but ``options``) for the benchmarks' workflows: the
    onboarding DAG and the one-activity ("hello") workflow."""
    return Worker(
        client, task_queue=task_queue, workflows=[Onboarding, SingleActivity], activities=[*ACTIVITIES, noop], **options
    )


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def machine() -> str:
    """One line naming the hardware the figures come from."""
    memory = ""
    with contextlib.suppress(OSError, ValueError, IndexError):
        with open("/proc/meminfo") as f:
            kib = int(f.readline().split()[1])
        memory = f", {kib / 1024 / 1024:.0f} GiB"
    return (
        f"{platform.machine()} {os.cpu_count()} cpu{memory}, {platform.system()} {platform.release()}, "
        f"Python {platform.python_version()}"
    )


def code_version() -> str:
    """The commit measured, "+modified" if the engine's sources differ from it."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "server", "sdk", "worker"],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+modified" if dirty else "")


def load_average() -> float:
    """The 1-minute load average: other work on the machine skews every figure."""
    return round(os.getloadavg()[0], 2)


@dataclasses.dataclass
class Target:
    """What a benchmark runs against: one or more server replicas."""

    addresses: list[str]
    pg_dsn: str | None = None
    """The database, when it is PostgreSQL (to read transaction ids)."""
    server_pids: list[int] = dataclasses.field(default_factory=list)
    postmaster_pid: int | None = None
    """The PostgreSQL server, when it is a throwaway cluster of this run."""
    store_url: str | None = None
    """The store the servers share (a SQLite file path or a PostgreSQL URL)."""

    @property
    def address(self) -> str:
        return self.addresses[0]

    @property
    def server_pid(self) -> int | None:
        return self.server_pids[0] if self.server_pids else None

    def server_process_pids(self) -> list[int]:
        """The FlowForge server processes, now."""
        # With --processes the server pid is a supervisor; its children serve.
        return [*self.server_pids, *(child for pid in self.server_pids for child in _children(pid))]

    def pids(self) -> list[int]:
        """The processes working for the benchmark besides this one, now."""
        pids = self.server_process_pids()
        if self.postmaster_pid is not None:
            pids += [self.postmaster_pid, *_children(self.postmaster_pid)]
        return pids


def _children(parent: int) -> list[int]:
    children = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                with open(f"/proc/{entry}/stat") as f:
                    if int(f.read().rpartition(")")[2].split()[1]) == parent:
                        children.append(int(entry))
    return children


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU time the processes ``pids`` have used so far."""
    ticks = 0
    for pid in pids:
        with contextlib.suppress(OSError, IndexError, ValueError):
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rpartition(")")[2].split()
            ticks += int(fields[11]) + int(fields[12])  # utime, stime
    return ticks / os.sysconf("SC_CLK_TCK")


def per_activity_ms(cpu_s: float, workflows: int) -> float:
    """CPU milliseconds per onboarding activity, from CPU seconds over ``workflows``."""
    return round(1000 * cpu_s / (workflows * ACTIVITIES_PER_WORKFLOW), 2)


def machine_busy_seconds() -> float:
    """CPU time all processes of the machine have used so far (all cores)."""
    with open("/proc/stat") as f:
        user, nice, system, _idle, _iowait, irq, softirq, steal = (int(v) for v in f.readline().split()[1:9])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


@contextlib.contextmanager
def store_url(store: str) -> Iterator[tuple[str, int | None]]:
    """The store URL ``--store`` names, created for the run (and removed after),
    and the pid of the PostgreSQL server when this run started it."""
    if store == "sqlite":
        with tempfile.TemporaryDirectory(prefix="flowforge-bench-") as tmp:
            yield os.path.join(tmp, "bench.db"), None
    elif store == "postgresql":
        from testsupport.postgres import start_postgres

        server = start_postgres()
        try:
            postmaster = None
            if server.description.startswith("local cluster in "):
                directory = server.description.removeprefix("local cluster in ")
                with contextlib.suppress(OSError, ValueError):
                    with open(os.path.join(directory, "data", "postmaster.pid")) as f:
                        postmaster = int(f.readline())
            # On a thread of its own, so this works inside a running event loop too.
            with concurrent.futures.ThreadPoolExecutor(1) as thread:
                dsn = thread.submit(asyncio.run, server.create_database()).result()
            yield dsn, postmaster
        finally:
            server.stop()
    else:
        yield store, None


@contextlib.contextmanager
def span_sink() -> Iterator[str]:
    """An OTLP/HTTP endpoint that accepts spans and drops them; yields its URL."""

    class Sink(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    sink = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Sink)
    thread = threading.Thread(target=sink.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{sink.server_address[1]}"
    finally:
        sink.shutdown()


def trace_to(endpoint: str) -> TracingInterceptor:
    """A tracing interceptor whose spans are batched to ``endpoint`` over OTLP/HTTP."""
    provider = TracerProvider(shutdown_on_exit=False)  # the sink is gone at exit
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=f"{endpoint}/v1/traces")))
    return TracingInterceptor(provider.get_tracer("benchmark"))


@contextlib.contextmanager
def server_process(
    store: str, otlp_endpoint: str | None = None, processes: int = 1, uvloop: bool = False
) -> Iterator[tuple[str, int]]:
    """``flowforge server start [--processes N] [--uvloop]`` on ``store``; yields its address and pid."""
    tracing = ["--otlp-endpoint", otlp_endpoint] if otlp_endpoint else []
    tracing += ["--processes", str(processes)] if processes > 1 else []
    tracing += ["--uvloop"] if uvloop else []
    with tempfile.TemporaryDirectory() as tmp:
        process, address = start_server(
            ["start", "--store", store, "--insecure-no-auth", *tracing], os.path.join(tmp, "ready"), timeout_s=60
        )
        try:
            yield address, process.pid
        finally:
            process.terminate()
            process.wait(timeout=30)


@contextlib.contextmanager
def target(
    store: str, replicas: int = 1, otlp_endpoint: str | None = None, processes: int = 1, uvloop: bool = False
) -> Iterator[Target]:
    """``replicas`` servers of ``processes`` processes each on one fresh store of kind
    ``store`` (or a given URL); each process is an address (one client and worker each)."""
    with store_url(store) as (url, postmaster), contextlib.ExitStack() as stack:
        pg_dsn = url if url.startswith(("postgresql://", "postgres://")) else None
        if (replicas > 1 or processes > 1) and pg_dsn is None:
            raise SystemExit("several replicas need PostgreSQL: a SQLite file admits one server")
        servers = [stack.enter_context(server_process(url, otlp_endpoint, processes, uvloop)) for _ in range(replicas)]
        addresses = [address for address, _ in servers for _ in range(processes)]
        yield Target(addresses, pg_dsn, [pid for _, pid in servers], postmaster, url)


async def pg_txid(dsn: str | None) -> int | None:
    """The cluster's next transaction id (each write transaction takes one)."""
    if dsn is None:
        return None
    import asyncpg

    connection = await asyncpg.connect(dsn)
    try:
        return int(await connection.fetchval("SELECT txid_current()"))
    finally:
        await connection.close()


LOCK_SAMPLE_INTERVAL_S = 0.005


async def sample_lock_waits(dsn: str, stop: asyncio.Event) -> dict[str, Any]:
    """Samples the lock waits of ``dsn``'s database until ``stop`` is set."""
    import asyncpg

    connection = await asyncpg.connect(dsn)
    samples = with_a_wait = 0
    kinds: collections.Counter[str] = collections.Counter()
    try:
        while not stop.is_set():
            waits = await connection.fetch(
                "SELECT l.locktype, left(a.query, 40) AS statement FROM pg_locks l"
                " JOIN pg_stat_activity a ON a.pid = l.pid WHERE NOT l.granted AND a.datname = current_database()"
            )
            samples += 1
            with_a_wait += bool(waits)
            kinds.update(f"{wait['locktype']}: {wait['statement']}" for wait in waits)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), LOCK_SAMPLE_INTERVAL_S)
    finally:
        await connection.close()
    return {"samples": samples, "samples_with_a_wait": with_a_wait, "waits": dict(kinds.most_common())}


async def measure(
    where: Target,
    count: int,
    concurrency: int,
    cooling_off_s: float = 0.0,
    otlp_endpoint: str | None = None,
    sample_locks: bool = False,
) -> dict[str, Any]:
    """Runs the benchmark against ``where``: one client and one worker per replica,
    workflow ``i`` started (and awaited) through replica ``i % replicas``; traced to
    ``otlp_endpoint`` when given."""
    interceptors = [trace_to(otlp_endpoint)] if otlp_endpoint else []
    clients = [await Client.connect(address, interceptors=interceptors) for address in where.addresses]
    rpcs = [count_rpcs(client) for client in clients]
    task_queue = f"bench-{uuid.uuid4().hex[:8]}"
    async with contextlib.AsyncExitStack() as stack:
        for client in clients:
            await stack.enter_async_context(benchmark_worker(client, task_queue))
        # Sequential single-activity latency: one workflow at a time, end to end.
        single = []
        for i in range(SINGLE_RUNS):
            began = time.perf_counter()
            handle = await clients[0].start_workflow(
                SingleActivity.run, i, id=f"single-{task_queue}-{i}", task_queue=task_queue
            )
            assert await handle.result() == i
            single.append(time.perf_counter() - began)

        request = {
            "name": "Bench",
            "email": "bench@example.com",
            "work_seconds": 0,
            "cooling_off_seconds": cooling_off_s,
        }
        starts: list[float] = []
        latencies: list[float] = []
        gate = asyncio.Semaphore(concurrency)

        async def one(i: int) -> None:
            async with gate:
                began = time.perf_counter()
                handle = await clients[i % len(clients)].start_workflow(
                    Onboarding.run,
                    {**request, "email": f"bench{i}@example.com"},
                    id=f"onb-{task_queue}-{i}",
                    task_queue=task_queue,
                )
                starts.append(time.perf_counter() - began)
                result = await handle.result()
                assert result["notification"]["sent_to"] == f"bench{i}@example.com"
                latencies.append(time.perf_counter() - began)

        txid_before = await pg_txid(where.pg_dsn)
        for counter in rpcs:
            counter.clear()
        pids = [os.getpid(), *where.pids()]
        server_pids = where.server_process_pids()
        cpu_before, busy_before = cpu_seconds(pids), machine_busy_seconds()
        server_cpu_before = cpu_seconds(server_pids)
        stop_sampling = asyncio.Event()
        sampling = (
            asyncio.create_task(sample_lock_waits(where.pg_dsn, stop_sampling))
            if sample_locks and where.pg_dsn
            else None
        )
        began = time.perf_counter()
        await asyncio.gather(*(one(i) for i in range(count)))
        elapsed = time.perf_counter() - began
        server_cpu = cpu_seconds(server_pids) - server_cpu_before
        stop_sampling.set()
        lock_waits = await sampling if sampling is not None else None
        # Backends the server's pool opened meanwhile count in full (they are new).
        pids = sorted({*pids, *where.pids()})
        cpu_ours, busy = cpu_seconds(pids) - cpu_before, machine_busy_seconds() - busy_before
        calls = sum(rpcs, collections.Counter())
        txid_after = await pg_txid(where.pg_dsn)
        timers_late = (
            await timer_lateness(clients[0], [f"onb-{task_queue}-{i}" for i in range(count)], cooling_off_s)
            if cooling_off_s > 0
            else []
        )
    for client in clients:
        await client.close()
    result: dict[str, Any] = {
        "replicas": len(where.server_pids) or 1,
        "clients": len(where.addresses),
        "workflows": count,
        "concurrency": concurrency,
        "seconds": round(elapsed, 3),
        "workflows_per_s": round(count / elapsed, 1),
        "activities_per_s": round(count * ACTIVITIES_PER_WORKFLOW / elapsed, 1),
        "workflow_latency_p50_ms": round(percentile(latencies, 0.5) * 1000, 1),
        "workflow_latency_p95_ms": round(percentile(latencies, 0.95) * 1000, 1),
        "start_latency_p50_ms": round(percentile(starts, 0.5) * 1000, 1),
        "start_latency_p95_ms": round(percentile(starts, 0.95) * 1000, 1),
        "single_activity_latency_p50_ms": round(percentile(single, 0.5) * 1000, 1),
        "single_activity_latency_p95_ms": round(percentile(single, 0.95) * 1000, 1),
        "rpcs_per_workflow": {name: round(n / count, 2) for name, n in sorted(calls.items())},
        # Cores busy during the N workflows: this benchmark's processes (this one,
        # the server, a throwaway PostgreSQL) and everything else on the machine.
        "cores_used_by_benchmark": round(cpu_ours / elapsed, 2),
        "cores_used_by_others": round(max(0.0, busy - cpu_ours) / elapsed, 2),
    }
    if server_pids:
        result["server_cpu_ms_per_activity"] = per_activity_ms(server_cpu, count)
    if timers_late:
        result["cooling_off_s"] = cooling_off_s
        result["timer_late_p50_ms"] = round(percentile(timers_late, 0.5) * 1000, 1)
        result["timer_late_p95_ms"] = round(percentile(timers_late, 0.95) * 1000, 1)
        result["timer_late_max_ms"] = round(max(timers_late) * 1000, 1)
    if lock_waits is not None:
        result["pg_lock_waits"] = lock_waits
    if txid_before is not None and txid_after is not None:
        # Minus the txid_current() call of the "after" probe itself.
        result["pg_write_transactions_per_workflow"] = round((txid_after - txid_before - 1) / count, 2)
    return result


async def timer_lateness(client: Client, workflow_ids: list[str], duration_s: float) -> list[float]:
    """How much later than asked each workflow's durable timer fired (from history)."""
    gate = asyncio.Semaphore(20)

    async def one(workflow_id: str) -> float:
        async with gate:
            history = await client.get_workflow_handle(workflow_id).fetch_history()
        times = {e.event_type: e.event_time for e in history.events if e.event_type in ("TimerStarted", "TimerFired")}
        return (times["TimerFired"] - times["TimerStarted"]).total_seconds() - duration_s

    return list(await asyncio.gather(*(one(workflow_id) for workflow_id in workflow_ids)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--address", help="a running server")
    where.add_argument("--store", default="sqlite", help="sqlite, postgresql, or a store URL (default sqlite)")
    parser.add_argument("-n", "--workflows", type=positive_int, default=500)
    parser.add_argument("--concurrency", type=positive_int, default=100, help="workflows in flight at once")
    parser.add_argument(
        "--replicas",
        type=int,
        default=1,
        help="server processes on the one store (PostgreSQL only), each with a worker",
    )
    parser.add_argument(
        "--processes",
        type=int,
        default=1,
        help="processes per server (flowforge server start --processes; PostgreSQL only), a worker each",
    )
    parser.add_argument("--uvloop", action="store_true", help="servers on uvloop (flowforge server start --uvloop)")
    parser.add_argument(
        "--cooling-off",
        type=float,
        default=0.0,
        help="the onboarding timer in seconds (default 0: no timer); >0 also reports its lateness",
    )
    parser.add_argument("--tracing", action="store_true", help="trace clients, workers and servers (see above)")
    parser.add_argument(
        "--sample-locks", action="store_true", help="sample PostgreSQL's lock waits during the run (see above)"
    )
    args = parser.parse_args()
    load_before, code_before = load_average(), code_version()
    with contextlib.ExitStack() as stack:
        sink = stack.enter_context(span_sink()) if args.tracing else None
        where = (
            Target([args.address])
            if args.address
            else stack.enter_context(target(args.store, args.replicas, sink, args.processes, args.uvloop))
        )
        result = asyncio.run(
            measure(where, args.workflows, args.concurrency, args.cooling_off, sink, args.sample_locks)
        )
    result["tracing"] = args.tracing
    result["uvloop"] = args.uvloop
    if args.address:
        result["store"] = "external"
    else:
        result["store"] = "postgresql" if where.pg_dsn else "sqlite"
    result["machine"] = machine()
    result["code"] = code_before if code_before == code_version() else f"{code_before} (changed during the run)"
    result["load_average_1m_before"] = load_before
    result["load_average_1m_after"] = load_average()
    print(json.dumps(result))


if __name__ == "__main__":
    main()
