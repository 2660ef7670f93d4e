"""10,000 open executions waiting on durable timers that fall due together.

    python -m benchmarks.timers [--store sqlite|postgresql|URL] [-n 10000] [--due-in 90]

Starts the server (``flowforge server start``) and one worker in this process,
then ``-n`` executions of a workflow that sleeps until one shared instant, about
``--due-in`` seconds after the first start (every execution computes its own
timer so that all fall due at that instant). Target (issues 7 and 20): every
timer's firing durable within 1 s of its due time, on both stores. Reports, as a
markdown table, for each timer (its due time is the ``TimerStarted`` event's time
plus the timer's duration, i.e. the timer row's ``fire_us``):

- **committed - due**: when its firing was durable. A process of its own
  polls the ``timers`` table on one connection (every 20 ms from just
  before the due instant) and takes the first poll not to see a timer's row: the
  row goes in the transaction that appends ``TimerFired``, so that is when it
  committed, to within the poll interval (reported);
- **TimerFired stamp - due**: the event's time, which the server stamps while it
  builds the timer's batch, before that batch commits;
- **workflow task scheduled - due**: the ``WorkflowTaskScheduled`` that follows the
  ``TimerFired`` (written in the same transaction when the workflow is idle, so
  durable when the firing is);
- **workflow task started - due**: when a worker held that workflow task
  (``WorkflowTaskStarted``): the worker's queue is part of it, not of the bound;
- how far apart the due times ended up: each timer is due at the shared instant as
  its workflow computed it, but the server counts the duration from when it records
  ``TimerStarted`` (when the workflow task completed), so on a loaded machine,
  where workflow tasks queue, the due times spread over seconds;
- the server's resident memory (VmRSS) idle, with all executions open and
  waiting, and after they all completed: an idle open execution costs the server
  no memory (its state is rows in the store), so the middle figure stays flat;
- when every execution had completed (the 10,000 workflow tasks go through the
  one worker).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import sqlite3
import sys
import time
import uuid
from datetime import timedelta
from multiprocessing.connection import Connection
from types import TracebackType
from typing import Any, Self

from benchmarks.onboarding import code_version, load_average, machine, percentile, target
from flowforge import Client, workflow
from flowforge.worker import Worker

TARGET_S = 1.0
# How often the commit watcher polls the timers table during the burst.
POLL_INTERVAL_S = 0.02


@workflow.defn
class SleepUntil:
    """Sleeps until an absolute instant (epoch seconds), then completes."""

    @workflow.run
    async def run(self, due_epoch_s: float) -> None:
        await workflow.sleep(timedelta(seconds=max(0.001, due_epoch_s - workflow.now().timestamp())))


def rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
    raise RuntimeError(f"no VmRSS for pid {pid}")


class StoreReader:
    """Reads the benchmark's store directly, on one connection kept open (use it on
    the event loop, and so the thread, that opened it)."""

    def __init__(self, url: str, pg_dsn: str | None) -> None:
        self._url, self._pg_dsn = url, pg_dsn
        self._pg: Any = None
        self._sqlite: sqlite3.Connection | None = None

    async def __aenter__(self) -> Self:
        if self._pg_dsn is not None:
            import asyncpg

            self._pg = await asyncpg.connect(self._pg_dsn)
        else:
            self._sqlite = sqlite3.connect(f"file:{self._url}?mode=ro", uri=True)
        return self

    async def __aexit__(
        self, _type: type[BaseException] | None, _error: BaseException | None, _tb: TracebackType | None
    ) -> None:
        if self._pg is not None:
            await self._pg.close()
        if self._sqlite is not None:
            self._sqlite.close()

    async def rows(self, sql: str) -> list[tuple[Any, ...]]:
        if self._pg is not None:
            return [tuple(r) for r in await self._pg.fetch(sql)]
        assert self._sqlite is not None
        return self._sqlite.execute(sql).fetchall()

    async def count(self, sql: str) -> int:
        return int((await self.rows(sql))[0][0])

    async def timings(self) -> dict[str, dict[str, float]]:
        """Per run (epoch seconds): ``due``, ``fired`` (the TimerFired stamp), and the
        ``scheduled`` and ``started`` stamps of the workflow task after it."""
        runs: dict[str, dict[str, float]] = {}
        fired_id: dict[str, int] = {}
        for run_id, event_id, event_type, event_us, attributes in await self.rows(
            "SELECT run_id, event_id, event_type, event_us, attributes FROM history_events"
            " WHERE event_type IN ('TimerStarted', 'TimerFired', 'WorkflowTaskScheduled', 'WorkflowTaskStarted')"
            " ORDER BY run_id, event_id"
        ):
            run = runs.setdefault(run_id, {})
            if event_type == "TimerStarted":
                run["due"] = (event_us + json.loads(attributes)["start_to_fire_timeout"] * 1e6) / 1e6
            elif event_type == "TimerFired":
                run["fired"], fired_id[run_id] = event_us / 1e6, event_id
            elif run_id in fired_id and event_id > fired_id[run_id]:
                run.setdefault("scheduled" if event_type == "WorkflowTaskScheduled" else "started", event_us / 1e6)
        return runs


class CommitWatcher:
    """In a process of its own (its own connection, and no share of the worker's
    interpreter lock, which held polls up by ~0.9 s in one thread beside it), notes
    when each timer row disappears from the store: from ``fast_from`` (epoch
    seconds) it polls every ``POLL_INTERVAL_S``, until no timer is left."""

    def __init__(self, url: str, pg_dsn: str | None, fast_from: float, deadline: float) -> None:
        context = multiprocessing.get_context("spawn")
        self._results, sender = context.Pipe(duplex=False)
        self._process = context.Process(
            target=_watch_commits, args=(url, pg_dsn, fast_from, deadline, sender), name="commit-watcher"
        )
        #: run id -> the time of the first poll that did not see its timer.
        self.gone: dict[str, float] = {}
        #: The longest gap between two polls (start to end) during the burst: the resolution.
        self.resolution_s = 0.0

    def start(self) -> None:
        self._process.start()

    def join(self) -> None:
        outcome = self._results.recv()
        self._process.join()
        if isinstance(outcome, str):
            raise RuntimeError(f"the commit watcher failed: {outcome}")
        self.gone, self.resolution_s = outcome


def _watch_commits(url: str, pg_dsn: str | None, fast_from: float, deadline: float, results: Connection) -> None:
    async def watch() -> tuple[dict[str, float], float]:
        gone: dict[str, float] = {}
        resolution_s = 0.0
        async with StoreReader(url, pg_dsn) as reader:
            left = {run for (run,) in await reader.rows("SELECT run_id FROM timers")}
            await asyncio.sleep(max(0.0, fast_from - time.time()))
            previous = time.time()
            while left:
                if time.time() > deadline:
                    raise RuntimeError("the timers did not all fire")
                now_left = {run for (run,) in await reader.rows("SELECT run_id FROM timers")}
                now = time.time()
                for run in left - now_left:
                    gone[run] = now
                left &= now_left
                resolution_s = max(resolution_s, now - previous)
                previous = now
                await asyncio.sleep(max(0.0, POLL_INTERVAL_S - (time.time() - now)))
        return gone, resolution_s

    try:
        results.send(asyncio.run(watch()))
    except Exception as error:
        results.send(repr(error))


def _summary(values: list[float]) -> dict[str, float]:
    return {
        "p50_ms": round(percentile(values, 0.5) * 1000, 1),
        "p95_ms": round(percentile(values, 0.95) * 1000, 1),
        "max_ms": round(max(values) * 1000, 1),
    }


async def measure(
    address: str, server_pid: int, where: tuple[str, str | None], count: int, due_in_s: float, in_flight: int
) -> dict[str, Any]:
    """Runs the executions up to their timers, watches the firing, and returns the figures."""
    client = await Client.connect(address)
    queue = f"timers-{uuid.uuid4().hex[:8]}"
    result: dict[str, Any] = {"executions": count, "rss_idle_mib": rss_mib(server_pid)}
    try:
        async with StoreReader(*where) as reader, Worker(client, task_queue=queue, workflows=[SleepUntil]):
            due = time.time() + due_in_s
            gate = asyncio.Semaphore(in_flight)

            async def start(i: int) -> None:
                async with gate:
                    await client.start_workflow(SleepUntil.run, due, id=f"sleep-{queue}-{i}", task_queue=queue)

            began = time.perf_counter()
            await asyncio.gather(*(start(i) for i in range(count)))
            result["start_seconds"] = round(time.perf_counter() - began, 1)
            deadline = time.monotonic() + due_in_s + 600
            while await reader.count("SELECT COUNT(*) FROM timers") < count:
                # The first timers fire at due whether or not the last have started.
                if time.time() > due - 2:
                    raise SystemExit("the executions had not all reached their timer 2 s before due: raise --due-in")
                await asyncio.sleep(0.5)
            waiting_s = due - time.time()
            result["rss_open_waiting_mib"] = rss_mib(server_pid)
            result["seconds_to_spare_before_due"] = round(waiting_s, 1)
            # Due times are never before the shared instant (they count from later).
            watcher = CommitWatcher(*where, fast_from=due - 0.2, deadline=time.time() + waiting_s + 600)
            watcher.start()
            await asyncio.to_thread(watcher.join)
            result["all_fired_after_due_s"] = round(max(watcher.gone.values()) - due, 2)
            while await reader.count("SELECT COUNT(*) FROM executions WHERE status = 'RUNNING'") > 0:
                if time.monotonic() > deadline:
                    raise RuntimeError("the executions did not all complete")
                await asyncio.sleep(0.5)
            result["all_completed_after_due_s"] = round(time.time() - due, 2)
            result["rss_after_mib"] = rss_mib(server_pid)
            runs = await reader.timings()
            complete = [r for r in runs.values() if {"due", "fired", "scheduled", "started"} <= r.keys()]
            assert len(complete) == count == len(watcher.gone), f"{len(complete)} of {count} timers fired"
            committed = [watcher.gone[run] - r["due"] for run, r in runs.items()]
            due_s = [r["due"] for r in complete]
            result.update(
                due_spread_s=round(max(due_s) - min(due_s), 2),
                commit_poll_resolution_ms=round(watcher.resolution_s * 1000, 1),
                committed_late=_summary(committed),
                fired_stamp_late=_summary([r["fired"] - r["due"] for r in complete]),
                task_scheduled_late=_summary([r["scheduled"] - r["due"] for r in complete]),
                task_started_late=_summary([r["started"] - r["due"] for r in complete]),
                committed_within_target=f"{sum(1 for x in committed if x <= TARGET_S)}/{count}",
            )
            # Out before the worker's shutdown, which is not part of the measurement.
            print(json.dumps(result), file=sys.stderr, flush=True)
    finally:
        await client.close()
    return result


def table(result: dict[str, Any]) -> str:
    def late(key: str) -> str:
        figures = result[key]
        return f"{figures['p50_ms']} / {figures['p95_ms']} / {figures['max_ms']}"

    resolution = result["commit_poll_resolution_ms"]
    rows = [
        ("executions waiting on a timer that falls due at one instant", result["executions"]),
        (f"**TimerFired committed - due**, p50 / p95 / max (ms; polled, to {resolution} ms)", late("committed_late")),
        (f"firings committed within {TARGET_S:g} s of due (target: all)", result["committed_within_target"]),
        ("TimerFired stamp - due, p50 / p95 / max (ms)", late("fired_stamp_late")),
        ("workflow task scheduled - due, p50 / p95 / max (ms)", late("task_scheduled_late")),
        ("workflow task started (a worker holds it) - due, p50 / p95 / max (ms)", late("task_started_late")),
        ("due times spread over (s)", result["due_spread_s"]),
        ("last timer's firing committed, after the shared instant (s)", result["all_fired_after_due_s"]),
        ("last execution completed, after the shared instant (s)", result["all_completed_after_due_s"]),
        (
            "server RSS idle / all executions open and waiting / after all completed (MiB)",
            f"{result['rss_idle_mib']} / {result['rss_open_waiting_mib']} / {result['rss_after_mib']}",
        ),
        ("time to start all executions (s)", result["start_seconds"]),
    ]
    return "\n".join(["| | value |", "|---|---|", *(f"| {label} | {value} |" for label, value in rows)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", default="sqlite", help="sqlite, postgresql, or a store URL (default sqlite)")
    parser.add_argument("-n", "--executions", type=int, default=10_000)
    parser.add_argument(
        "--due-in", type=float, default=90.0, help="seconds from the first start to the shared due instant (default 90)"
    )
    parser.add_argument("--in-flight", type=int, default=200, help="start calls in flight at once")
    args = parser.parse_args()
    load_before, code = load_average(), code_version()
    with target(args.store) as where:
        url = where.pg_dsn or where.store_url
        assert where.server_pid is not None and url is not None
        store = (url, where.pg_dsn)
        result = asyncio.run(
            measure(where.address, where.server_pid, store, args.executions, args.due_in, args.in_flight)
        )
    print(
        f"Machine: {machine()}. Code `{code}`, store {'postgresql' if where.pg_dsn else 'sqlite'}. "
        f"Load average before/after: {load_before} / {load_average()}. Target: every timer's firing"
        f" committed within {TARGET_S:g} s of its due time.\n"
    )
    print(table(result))


if __name__ == "__main__":
    main()
