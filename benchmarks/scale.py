"""The scale curve: onboarding throughput and latency against offered load, for 1
and 2 server processes (``flowforge server start --processes N``) on PostgreSQL,
and for the one process SQLite admits.

    pip install -e '.[bench]'       # matplotlib draws the curves
    python -m benchmarks.scale [--store postgresql,sqlite] [--processes 1,2]
                               [--step-seconds 10] [--start-rate 5] [--growth 1.5]
                               [--json PATH] [--png docs/scale-curve.png] [--quick]
    python -m benchmarks.scale --from-json PATH [--png PATH]   # table and plot again, no run

For each store and process count (SQLite: one process only): a fresh store
(``postgresql``: a fresh database on the server :func:`testsupport.postgres.start_postgres`
finds or starts, fsync on; ``sqlite``: a fresh file, synchronous=FULL), the server
with that many processes, one worker process (``python -m benchmarks.scale
--worker``, default settings) and one starting client per server process. The
kernel spreads connections over the processes at random (``SO_REUSEPORT``), so
each worker and client is checked (``/proc``) to have reached a server process no
other one reached, and replaced if not: otherwise a second process could serve
nothing but the starts.

Open loop: a step starts onboarding executions (6 activities, no work, no timer)
at a fixed rate, the offered load, for ``--step-seconds`` and waits for all of
them. Achieved throughput is the completion rate (results after the first over
first to last result); latency is start call to result. Steps grow by
``--growth`` until the achieved rate falls below 85 % of the offered one
(saturated) twice at the same rate (a saturated step is run once more); the
maximum throughput is the highest achieved rate. Then a run at half that rate
gives the figure issue 20 asks for: workflow-task schedule-to-start p95 < 50 ms.
Schedule-to-start comes from the event times of up to ``--histories`` executions
per step (``WorkflowTaskScheduled`` to ``WorkflowTaskStarted``; activities
likewise), read after the step.

Each step also says why it may be slow: CPU used by the server processes (each one
too), the workers, PostgreSQL, the starter and everything else; the time the
benchmark's threads spent runnable but waiting for a CPU (other work on the
machine); tasks that failed or timed out in the histories read; and how often a
worker's stream broke (counted in the workers' logs, whose last lines are printed
after each curve). Each curve records the connections each server process holds
and how many workers reached it. Worker processes end with the benchmark even when
it is killed (their stdin is the benchmark's).

Prints a markdown table per step, a summary per curve, the machine, the commit
and the load average; draws ``--png`` when matplotlib is installed; ``--json PATH``
also writes the raw figures. ``--quick`` is a smoke test (PostgreSQL, 1 and 2
processes, two short steps each, the plot in a temporary file unless ``--png`` is
given).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import importlib.util
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from typing import Any

from benchmarks.compare_temporal import flowforge_events, schedule_to_start
from benchmarks.onboarding import (
    Target,
    _children,
    benchmark_worker,
    code_version,
    cpu_seconds,
    load_average,
    machine,
    machine_busy_seconds,
    percentile,
    target,
)
from flowforge import Client
from samples.onboarding.workflows import Onboarding
from testsupport.waiting import wait_until

ACTIVITIES_PER_WORKFLOW = 6
#: Achieved below this share of the offered rate: the step saturated the system.
SATURATED = 0.85
#: The figure issue 20 asks for at half the maximum throughput.
WORKFLOW_TASK_S2S_P95_GOAL_MS = 50.0
_PLACEMENT_ATTEMPTS = 20
# The workers' last log lines shown after a curve (all are counted in the report).
_LOG_LINES_SHOWN = 20
# Events of a task that failed or timed out: a lease stranded, say by a stream that
# broke, shows as a timeout (an activity's retried attempts as its Started's attempt).
_FAILED_OR_TIMED_OUT = {"WorkflowTaskFailed", "WorkflowTaskTimedOut", "ActivityTaskFailed", "ActivityTaskTimedOut"}


async def run_worker(address: str, task_queue: str, transport: str) -> None:
    """A worker process: runs until SIGTERM or until its stdin ends.

    The benchmark holds the other end of stdin, so the worker also stops when the
    benchmark dies without stopping it (killed): an orphan would go on reconnecting to
    a server that is gone, and load the machine the next run measures."""
    client = await Client.connect(address)
    worker = benchmark_worker(client, task_queue, task_transport="unary" if transport == "unary" else "stream")
    loop = asyncio.get_running_loop()
    orphaned = asyncio.Event()

    def read_stdin() -> None:
        if not os.read(0, 4096):  # end of file: the benchmark has gone
            loop.remove_reader(0)
            orphaned.set()

    loop.add_reader(0, read_stdin)
    running = asyncio.create_task(worker.run())
    watching = asyncio.create_task(orphaned.wait())
    await asyncio.wait({running, watching}, return_when=asyncio.FIRST_COMPLETED)
    watching.cancel()
    await worker.shutdown()
    await running
    await client.close()


# ------------------------------------------------------------------ placement


def _tcp_sockets(state: str) -> list[tuple[int, int, str]]:
    """(local port, remote port, socket inode) of every TCP socket in ``state``
    (``01`` established, ``0A`` listening)."""
    rows = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            with open(table) as f:
                for line in f.readlines()[1:]:
                    fields = line.split()
                    if fields[3] == state:
                        local, remote = (int(a.rsplit(":", 1)[1], 16) for a in fields[1:3])
                        rows.append((local, remote, fields[9]))
    return rows


def _socket_inodes(pid: int) -> set[str]:
    inodes = set()
    with contextlib.suppress(OSError):
        for fd in os.listdir(f"/proc/{pid}/fd"):
            with contextlib.suppress(OSError):
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
                if link.startswith("socket:["):
                    inodes.add(link[8:-1])
    return inodes


def reached(pid: int, port: int, servers: list[int]) -> collections.Counter[int]:
    """How many of ``pid``'s connections to ``port`` each of the ``servers`` processes holds."""
    rows = _tcp_sockets("01")
    mine = _socket_inodes(pid)
    client_ports = {local for local, remote, inode in rows if remote == port and inode in mine}
    server_inodes = {inode for local, remote, inode in rows if local == port and remote in client_ports}
    counts = {server: len(_socket_inodes(server) & server_inodes) for server in servers}
    return collections.Counter({server: n for server, n in counts.items() if n})


def _serving(where: Target) -> list[int]:
    """The processes listening on the gRPC port: the server itself, or with --processes its
    children that serve (not, say, multiprocessing's resource tracker)."""
    listening = {inode for local, _, inode in _tcp_sockets("0A") if local == _port(where.address)}
    candidates = [*where.server_pids, *(child for pid in where.server_pids for child in _children(pid))]
    return [pid for pid in candidates if _socket_inodes(pid) & listening]


def _port(address: str) -> int:
    return int(address.rsplit(":", 1)[1])


def connections(where: Target) -> dict[int, int]:
    """Established connections on the gRPC port each serving process holds: with
    ``SO_REUSEPORT`` the kernel picks the process, so this shows that both work."""
    port = _port(where.address)
    accepted = {inode for local, _, inode in _tcp_sockets("01") if local == port}
    return {server: len(_socket_inodes(server) & accepted) for server in _serving(where)}


def runqueue_wait_seconds(pids: list[int]) -> float:
    """Time the threads of ``pids`` have spent runnable but waiting for a CPU
    (``/proc/PID/task/TID/schedstat``): high while other work takes the cores, so a
    slow step with a high wait is the machine's, one with a low wait is ours."""
    nanoseconds = 0
    for pid in pids:
        with contextlib.suppress(OSError):
            for thread in os.listdir(f"/proc/{pid}/task"):
                with contextlib.suppress(OSError, IndexError, ValueError):
                    with open(f"/proc/{pid}/task/{thread}/schedstat") as f:
                        nanoseconds += int(f.read().split()[1])
    return nanoseconds / 1e9


async def start_workers(where: Target, task_queue: str, transport: str, log_dir: str) -> list[subprocess.Popen[bytes]]:
    """One worker process per server process, each connected to a different one; each
    logs to ``worker-PID.log`` in ``log_dir`` (see :func:`worker_log_lines`)."""
    servers, port = _serving(where), _port(where.address)
    workers: list[subprocess.Popen[bytes]] = []
    try:
        for _ in range(_PLACEMENT_ATTEMPTS * len(servers)):
            if len(workers) == len(servers):
                break
            with tempfile.NamedTemporaryFile(dir=log_dir, suffix=".log", delete=False) as log:
                process = subprocess.Popen(
                    [sys.executable, "-m", "benchmarks.scale", "--worker", where.address, task_queue, transport],
                    stdin=subprocess.PIPE,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
            os.replace(log.name, os.path.join(log_dir, f"worker-{process.pid}.log"))
            workers.append(process)
            landed: collections.Counter[int] = collections.Counter()

            def connected(process: subprocess.Popen[bytes] = process) -> bool:
                nonlocal landed
                landed = reached(process.pid, port, servers)
                return bool(landed) or process.poll() is not None

            await wait_until(connected, timeout=60, what="a worker process to connect", interval=0.1)
            if process.poll() is not None:
                raise RuntimeError(f"a worker process exited with code {process.returncode}")
            if any(reached(other.pid, port, servers) & landed for other in workers[:-1]):
                # Killed, not drained: it has leased nothing yet, and a drain waits on its polls.
                workers.pop().kill()
                _reap(process)
    except BaseException:
        stop_workers(workers)
        raise
    if len(workers) < len(servers):
        print(f"  (only {len(workers)} of {len(servers)} server processes got a worker)", file=sys.stderr)
    return workers


def stop_workers(workers: list[subprocess.Popen[bytes]]) -> None:
    for process in workers:
        process.send_signal(signal.SIGTERM)
    for process in workers:
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
        _reap(process)


def _reap(process: subprocess.Popen[bytes]) -> None:
    process.wait()
    if process.stdin is not None:
        process.stdin.close()


def worker_log_lines(log_dir: str) -> list[str]:
    """What the worker processes have logged so far (warnings and errors: the default
    level), every line prefixed with its worker's pid."""
    lines = []
    for entry in sorted(os.listdir(log_dir)):
        if entry.startswith("worker-"):
            with open(os.path.join(log_dir, entry), errors="replace") as f:
                lines += [f"{entry[7:-4]}: {line.rstrip()}" for line in f if line.strip()]
    return lines


def count_stream_breaks(lines: list[str]) -> int:
    """How many times a worker's stream broke (and was opened again) in ``lines``."""
    return sum("worker stream broke" in line for line in lines)


async def connect_starters(where: Target) -> list[Client]:
    """One client per server process in this process, each connected to a different one."""
    servers, port = _serving(where), _port(where.address)
    clients: list[Client] = []
    taken = reached(os.getpid(), port, servers)
    for _ in range(_PLACEMENT_ATTEMPTS * len(servers)):
        if len(clients) == len(servers):
            break
        client = await Client.connect(where.address)
        now = reached(os.getpid(), port, servers)
        new = now - taken
        if not new or any(taken[server] for server in new):
            await client.close()
            continue
        taken = now
        clients.append(client)
    if not clients:
        clients.append(await Client.connect(where.address))
    return clients


# ------------------------------------------------------------------ one step


def _retried(event: Any) -> bool:
    """Whether a history event shows a task that ran again or will (see _FAILED_OR_TIMED_OUT)."""
    if event.event_type == "ActivityTaskStarted":
        return int(event.attributes.get("attempt", 1)) > 1
    return event.event_type in _FAILED_OR_TIMED_OUT


def _ms(values: list[float], fraction: float) -> float | None:
    return round(percentile(values, fraction) * 1000, 1) if values else None


async def step(
    where: Target,
    starters: list[Client],
    workers: list[subprocess.Popen[bytes]],
    task_queue: str,
    rate: float,
    seconds: float,
    histories: int,
    log_dir: str,
) -> dict[str, Any]:
    """Offers ``rate`` onboarding executions per second for ``seconds``; waits for them all."""
    request = {"name": "Scale", "email": "scale@example.com", "work_seconds": 0, "cooling_off_seconds": 0}
    count = max(2, round(rate * seconds))
    tag = uuid.uuid4().hex[:6]
    latencies: list[float] = []
    finished: list[float] = []

    async def one(i: int) -> None:
        began = time.perf_counter()
        handle = await starters[i % len(starters)].start_workflow(
            Onboarding.run, request, id=f"scale-{tag}-{i}", task_queue=task_queue
        )
        await handle.result()
        finished.append(time.perf_counter())
        latencies.append(finished[-1] - began)

    serving = sorted(_serving(where))
    servers = sorted({*where.server_pids, *serving})
    postgres = [pid for pid in where.pids() if pid not in servers]
    groups = {"server": servers, "worker": [w.pid for w in workers], "postgres": postgres, "starter": [os.getpid()]}
    cpu_before = {name: cpu_seconds(pids) for name, pids in groups.items()}
    each_before = [cpu_seconds([pid]) for pid in serving]
    waited_before = runqueue_wait_seconds([pid for pids in groups.values() for pid in pids])
    busy_before = machine_busy_seconds()
    load_before = load_average()
    breaks_before = count_stream_breaks(worker_log_lines(log_dir))
    began = time.perf_counter()
    runs = []
    for i in range(count):
        delay = began + i / rate - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        runs.append(asyncio.create_task(one(i)))
    await asyncio.gather(*runs)
    elapsed = max(finished) - began
    # The completion rate: the offered one below saturation, what the system manages above it.
    completion_rate = (count - 1) / max(1e-6, max(finished) - min(finished))
    # PostgreSQL backends opened meanwhile count in full (they are new).
    groups["postgres"] = sorted({*postgres, *(pid for pid in where.pids() if pid not in servers)})
    cores = {name: (cpu_seconds(pids) - cpu_before.get(name, 0.0)) / elapsed for name, pids in groups.items()}
    each = [(cpu_seconds([pid]) - before) / elapsed for pid, before in zip(serving, each_before, strict=True)]
    waited = (runqueue_wait_seconds([pid for pids in groups.values() for pid in pids]) - waited_before) / elapsed
    others = max(0.0, (machine_busy_seconds() - busy_before) / elapsed - sum(cores.values()))

    sample = [round(i * count / histories) for i in range(min(histories, count))]
    client = starters[0]
    fetched = [await client.get_workflow_handle(f"scale-{tag}-{i}").fetch_history() for i in sample]
    activity_s2s, workflow_s2s = schedule_to_start([flowforge_events(history) for history in fetched])
    return {
        "offered_per_s": round(rate, 1),
        "workflows": count,
        "workflows_per_s": round(completion_rate, 1),
        "activities_per_s": round(completion_rate * ACTIVITIES_PER_WORKFLOW, 1),
        "latency_p50_ms": _ms(latencies, 0.5),
        "latency_p95_ms": _ms(latencies, 0.95),
        "workflow_task_s2s_p50_ms": _ms(workflow_s2s, 0.5),
        "workflow_task_s2s_p95_ms": _ms(workflow_s2s, 0.95),
        "activity_s2s_p95_ms": _ms(activity_s2s, 0.95),
        **{f"cores_{name}": round(value, 2) for name, value in cores.items()},
        "cores_server_each": [round(value, 2) for value in each],
        "cores_others": round(others, 2),
        "cores_waiting": round(waited, 2),
        "server_cpu_ms_per_activity": round(1000 * cores["server"] * elapsed / (count * ACTIVITIES_PER_WORKFLOW), 2),
        "retried_tasks": sum(_retried(event) for history in fetched for event in history.events),
        "stream_breaks": count_stream_breaks(worker_log_lines(log_dir)) - breaks_before,
        "load_average": load_before,
    }


# ------------------------------------------------------------------ one curve


async def curve(where: Target, name: str, processes: int, settings: argparse.Namespace) -> dict[str, Any]:
    """On a fresh deployment: the steps up to saturation, then the run at half the maximum throughput.

    A step that saturates is run once more at the same rate before the curve ends there:
    one stall (a checkpoint, a burst of other work on the machine) must not end a curve
    far below its maximum."""
    task_queue = f"scale-{uuid.uuid4().hex[:8]}"
    with tempfile.TemporaryDirectory(prefix="flowforge-scale-") as log_dir:
        workers = await start_workers(where, task_queue, settings.task_transport, log_dir)
        starters = await connect_starters(where)
        port, serving = _port(where.address), _serving(where)
        placed = [reached(worker.pid, port, serving) for worker in workers]
        placement = {
            "connections_per_process": list(connections(where).values()),
            "workers_per_process": [sum(bool(landed[server]) for landed in placed) for server in serving],
        }
        try:
            # Warm up: every worker polling, the server's caches and PostgreSQL's pool filled.
            await step(where, starters, workers, task_queue, settings.start_rate, settings.warmup_seconds, 0, log_dir)
            steps: list[dict[str, Any]] = []
            rate, repeated = settings.start_rate, False
            for _ in range(settings.max_steps):
                steps.append(
                    await step(
                        where, starters, workers, task_queue, rate, settings.step_seconds, settings.histories, log_dir
                    )
                )
                print(f"  {name}: {steps[-1]}", file=sys.stderr)
                saturated = steps[-1]["workflows_per_s"] < SATURATED * rate
                if saturated and repeated:
                    break
                repeated = saturated
                if saturated:
                    steps[-1]["run_again"] = True  # drawn apart, not on the curve
                rate *= 1 if saturated else settings.growth
            maximum = max(s["workflows_per_s"] for s in steps)
            half = await step(
                where,
                starters,
                workers,
                task_queue,
                maximum / 2,
                settings.half_seconds,
                settings.half_histories,
                log_dir,
            )
            print(f"  {name}, half of the maximum: {half}", file=sys.stderr)
        finally:
            for client in starters:
                await client.close()
            stop_workers(workers)
            logged = worker_log_lines(log_dir)
            for line in logged[-_LOG_LINES_SHOWN:]:
                print(f"  {name}, worker {line}", file=sys.stderr)
    return {
        "name": name,
        "processes": processes,
        "workers": len(workers),
        "starters": len(starters),
        **placement,
        "worker_log_lines": len(logged),
        "max_workflows_per_s": maximum,
        "steps": steps,
        "half": half,
    }


# ------------------------------------------------------------------ report

_STEP_COLUMNS = [
    ("offered wf/s", "offered_per_s"),
    ("achieved wf/s", "workflows_per_s"),
    ("activities/s", "activities_per_s"),
    ("latency p50 (ms)", "latency_p50_ms"),
    ("latency p95 (ms)", "latency_p95_ms"),
    ("wf-task s2s p50 (ms)", "workflow_task_s2s_p50_ms"),
    ("wf-task s2s p95 (ms)", "workflow_task_s2s_p95_ms"),
    ("activity s2s p95 (ms)", "activity_s2s_p95_ms"),
    ("cores: server", "cores_server"),
    ("each server process", "cores_server_each"),
    ("worker", "cores_worker"),
    ("PostgreSQL", "cores_postgres"),
    ("starter", "cores_starter"),
    ("others", "cores_others"),
    ("waiting for a CPU", "cores_waiting"),
    ("retried tasks", "retried_tasks"),
    ("stream breaks", "stream_breaks"),
]


def table(report: dict[str, Any]) -> str:
    """The markdown the docs paste: every step, then the summary per process count."""
    lines = [
        "| store × server processes | " + " | ".join(title for title, _ in _STEP_COLUMNS) + " |",
        "|---" * (len(_STEP_COLUMNS) + 1) + "|",
    ]
    for c in report["curves"]:
        for s in [*c["steps"], c["half"]]:
            label = c["name"] + (
                " (half max)" if s is c["half"] else " (saturated, run again)" if s.get("run_again") else ""
            )
            lines.append(f"| {label} | " + " | ".join(str(s.get(key, "")) for _, key in _STEP_COLUMNS) + " |")
    lines += [
        "",
        "| store × server processes | max throughput (wf/s) | at half of it: offered / achieved wf/s "
        "| latency p50 / p95 (ms) | wf-task s2s p50 / p95 (ms) "
        f"| < {WORKFLOW_TASK_S2S_P95_GOAL_MS:g} ms | server cores (each process) | server CPU per activity (ms) "
        "| connections (workers) per server process |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for c in report["curves"]:
        half = c["half"]
        p95 = half["workflow_task_s2s_p95_ms"]
        met = "yes" if p95 is not None and p95 < WORKFLOW_TASK_S2S_P95_GOAL_MS else "no"
        placement = " / ".join(
            f"{n} ({w})"
            for n, w in zip(c.get("connections_per_process", []), c.get("workers_per_process", []), strict=False)
        )
        each = " / ".join(str(v) for v in half.get("cores_server_each", []))
        lines.append(
            f"| {c['name']} | {c['max_workflows_per_s']} | {half['offered_per_s']} / {half['workflows_per_s']} "
            f"| {half['latency_p50_ms']} / {half['latency_p95_ms']} "
            f"| {half['workflow_task_s2s_p50_ms']} / {p95} | {met} | {half['cores_server']} ({each}) "
            f"| {half.get('server_cpu_ms_per_activity', '')} | {placement} |"
        )
    return "\n".join(lines)


def plot(report: dict[str, Any], path: str) -> bool:
    """Draws achieved throughput and latency against offered load; False without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4.4))
    highest = max(s["offered_per_s"] for c in report["curves"] for s in c["steps"])
    left.plot([0, highest], [0, highest], linestyle=":", color="grey", label="achieved = offered")
    for c in report["curves"]:
        label = f"{c['name'].split(' ×')[0]}, {c['processes']} server process{'es' if c['processes'] > 1 else ''}"
        # A rate run twice (it saturated once): the better run on the curve, the other a hollow mark.
        best: dict[float, dict[str, Any]] = {}
        for s in c["steps"]:
            if s["workflows_per_s"] > best.get(s["offered_per_s"], {}).get("workflows_per_s", -1.0):
                best[s["offered_per_s"]] = s
        curve_steps = sorted(best.values(), key=lambda s: float(s["offered_per_s"]))
        again = [s for s in c["steps"] if s is not best[s["offered_per_s"]]]
        offered = [s["offered_per_s"] for s in curve_steps]
        (line,) = left.plot(offered, [s["workflows_per_s"] for s in curve_steps], marker="o", label=label)
        color = line.get_color()
        left.axhline(c["max_workflows_per_s"], color=color, alpha=0.3, linewidth=1)
        right.plot(
            offered, [s["latency_p95_ms"] for s in curve_steps], marker="o", color=color, label=f"{label}: latency p95"
        )
        right.plot(
            offered,
            [s["workflow_task_s2s_p95_ms"] for s in curve_steps],
            marker="s",
            linestyle="--",
            color=color,
            label=f"{label}: wf-task schedule-to-start p95",
        )
        for axes, key in ((left, "workflows_per_s"), (right, "latency_p95_ms")):
            axes.plot(
                [s["offered_per_s"] for s in again],
                [s[key] for s in again],
                marker="o",
                fillstyle="none",
                linestyle="none",
                color=color,
            )
        half = c["half"]
        right.plot([half["offered_per_s"]], [half["workflow_task_s2s_p95_ms"]], marker="*", markersize=14, color=color)
    if any(s.get("run_again") for c in report["curves"] for s in c["steps"]):
        left.plot([], [], marker="o", fillstyle="none", linestyle="none", color="grey", label="the other run of a rate")
    right.axhline(WORKFLOW_TASK_S2S_P95_GOAL_MS, color="red", alpha=0.4, linewidth=1, label="50 ms (★ at half max)")
    left.set_xlim(left=0)
    left.set_ylim(bottom=0)
    left.set(
        xlabel="offered onboarding workflows/s", ylabel="achieved workflows/s (6 activities each)", title="Throughput"
    )
    right.set(xlabel="offered onboarding workflows/s", ylabel="ms (linear below 1)", title="Latency")
    right.set_yscale("symlog", linthresh=1.0)  # schedule-to-start is often 0 (eager dispatch)
    right.set_ylim(bottom=-0.5)  # the marks at 0 whole
    for axes, columns in ((left, 1), (right, 2)):
        axes.grid(True, which="both", alpha=0.3)
        # Below the plot: inside, the legend hides the points.
        axes.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=columns)
    figure.suptitle(report["heading"], fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=110, bbox_inches="tight")
    return True


def heading(code: str, transport: str, load_before: float, load_after: float) -> str:
    return (
        f"FlowForge `{code}`, workers on the {transport} transport; {machine()}; "
        f"load average {load_before} / {load_after}"
    )


def report_out(report: dict[str, Any], png: str) -> None:
    print(report["heading"] + "\n")
    print(table(report))
    if plot(report, png):
        print(f"\nPlot: {png}")
    else:
        print("\n(no plot: matplotlib is not installed; pip install -e '.[bench]')")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--worker", nargs=3, metavar=("ADDRESS", "TASK_QUEUE", "TRANSPORT"), help=argparse.SUPPRESS)
    parser.add_argument(
        "--task-transport",
        choices=["stream", "unary"],
        default="stream",
        help="how the workers get tasks and report (Worker(task_transport=...); default stream)",
    )
    parser.add_argument(
        "--store",
        help="stores, comma-separated: postgresql, sqlite or URLs (default postgresql,sqlite; --quick: postgresql)",
    )
    parser.add_argument("--processes", help="server process counts, comma-separated (default 1,2)")
    parser.add_argument("--start-rate", type=float, default=5.0, help="the first step's offered workflows/s")
    parser.add_argument("--growth", type=float, default=1.5, help="each step offers this times the last")
    parser.add_argument("--max-steps", type=int, default=10, help="steps at most per process count")
    parser.add_argument("--step-seconds", type=float, default=10.0, help="how long each step offers load")
    parser.add_argument("--warmup-seconds", type=float, default=3.0)
    parser.add_argument("--half-seconds", type=float, default=20.0, help="the run at half the maximum")
    parser.add_argument("--histories", type=int, default=40, help="histories read per step for schedule-to-start")
    parser.add_argument("--half-histories", type=int, default=150, help="histories read at half the maximum")
    parser.add_argument("--png", help="where to draw the curves (default docs/scale-curve.png)")
    parser.add_argument("--json", help="also write the raw figures here")
    parser.add_argument("--from-json", help="print the table and draw the plot of an earlier --json; no run")
    parser.add_argument("--quick", action="store_true", help="smoke test: PostgreSQL, 1 and 2 processes, short steps")
    args = parser.parse_args()
    if args.worker:
        asyncio.run(run_worker(*args.worker))
        return
    if args.from_json:
        with open(args.from_json) as f:
            report_out(json.load(f), args.png or os.path.join("docs", "scale-curve.png"))
        return
    if args.quick:
        args.store, args.processes = args.store or "postgresql", args.processes or "1,2"
        args.max_steps, args.step_seconds = 2, 2.0
        args.warmup_seconds = 1.0
        args.half_seconds, args.histories, args.half_histories = 2.0, 5, 5
        args.png = args.png or os.path.join(tempfile.gettempdir(), "flowforge-scale-quick.png")
    if not args.quick and importlib.util.find_spec("matplotlib") is None:
        # Found out now, not after minutes of curves that are then not drawn.
        raise SystemExit("matplotlib draws the curves: pip install -e '.[bench]' first (--quick does without)")
    load_before, code = load_average(), code_version()
    curves = []
    for store in (args.store or "postgresql,sqlite").split(","):
        for processes in (int(v) for v in (args.processes or "1,2").split(",")):
            if processes > 1 and not store.startswith("postgres"):
                continue  # a SQLite file admits one server process (docs/performance.md)
            with target(store, processes=processes) as where:
                name = f"{'postgresql' if where.pg_dsn else 'sqlite'} ×{processes}"
                curves.append(asyncio.run(curve(where, name, processes, args)))
    if code != code_version():
        code += " (changed during the run)"
    report = {"heading": heading(code, args.task_transport, load_before, load_average()), "curves": curves}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
    report_out(report, args.png or os.path.join("docs", "scale-curve.png"))


if __name__ == "__main__":
    main()
