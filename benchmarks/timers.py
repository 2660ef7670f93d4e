"""10,000 open executions waiting on durable timers that fall due together.

    python -m benchmarks.timers [--store sqlite|postgresql|URL] [-n 10000] [--due-in 90]

Starts the server (``flowforge server start``) and one worker in this process,
then ``-n`` executions of a workflow that sleeps until one shared instant, about
``--due-in`` seconds after the first start (every execution computes its own
timer so that all fall due at that instant). Reports, as a markdown table:

- the server's resident memory (VmRSS) idle, with all executions open and
  waiting, and after they all completed: an idle open execution costs the server
  no memory (its state is rows in the store), so the middle figure stays flat;
- how late each timer fired: its ``TimerFired`` event's time minus its due time
  (the ``TimerStarted`` event's time plus the timer's duration, which is the
  timer row's ``fire_us``), read from the store: p50, p95, max. This is the bound
  of issue 7 (every timer within one second of its due time), and it measures the
  firing only: the server stamps ``TimerFired`` while it builds the timer's batch,
  a few milliseconds before that batch commits;
- how far apart the due times ended up: each timer is due at the shared instant as
  its workflow computed it, but the server counts the duration from when it records
  ``TimerStarted`` (when the workflow task completed), so on a loaded machine,
  where workflow tasks queue, the due times spread over seconds;
- when the last timer's batch had committed (the ``timers`` table empty, polled
  every 50 ms), which bounds the commit as well;
- when every execution had completed: after the firing, the 10,000 workflow tasks
  the timers scheduled still go through the worker, which is not part of the bound.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sqlite3
import sys
import time
import uuid
from datetime import timedelta
from typing import Any

from benchmarks.onboarding import code_version, load_average, machine, percentile, target
from flowforge import Client, workflow
from flowforge.worker import Worker


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
    """Reads timer events and run states straight from the benchmark's store."""

    def __init__(self, url: str, pg_dsn: str | None) -> None:
        self._url, self._pg_dsn = url, pg_dsn

    async def rows(self, sql: str) -> list[tuple[Any, ...]]:
        if self._pg_dsn is not None:
            import asyncpg

            connection = await asyncpg.connect(self._pg_dsn)
            try:
                return [tuple(r) for r in await connection.fetch(sql)]
            finally:
                await connection.close()
        with contextlib.closing(sqlite3.connect(f"file:{self._url}?mode=ro", uri=True)) as connection:
            return connection.execute(sql).fetchall()

    async def count(self, sql: str) -> int:
        return int((await self.rows(sql))[0][0])

    async def due_and_lateness_s(self) -> tuple[list[float], list[float]]:
        """Every fired timer's due time (epoch seconds) and how late it fired (seconds)."""
        started: dict[str, float] = {}
        fired: dict[str, int] = {}
        for run_id, event_type, event_us, attributes in await self.rows(
            "SELECT run_id, event_type, event_us, attributes FROM history_events"
            " WHERE event_type IN ('TimerStarted', 'TimerFired')"
        ):
            if event_type == "TimerStarted":
                started[run_id] = event_us + json.loads(attributes)["start_to_fire_timeout"] * 1e6
            else:
                fired[run_id] = event_us
        due = [(run, due_us) for run, due_us in started.items() if run in fired]
        return [due_us / 1e6 for _, due_us in due], [(fired[run] - due_us) / 1e6 for run, due_us in due]


async def measure(
    address: str, server_pid: int, reader: StoreReader, count: int, due_in_s: float, in_flight: int
) -> dict[str, Any]:
    client = await Client.connect(address)
    queue = f"timers-{uuid.uuid4().hex[:8]}"
    result: dict[str, Any] = {"executions": count, "rss_idle_mib": rss_mib(server_pid)}
    try:
        async with Worker(client, task_queue=queue, workflows=[SleepUntil]):
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
                if time.monotonic() > deadline:
                    raise RuntimeError("the executions never all reached their timer")
                await asyncio.sleep(0.5)
            waiting_s = due - time.time()
            if waiting_s < 2:
                raise SystemExit(f"setup ended {-waiting_s:.1f} s after the due time: raise --due-in")
            result["rss_open_waiting_mib"] = rss_mib(server_pid)
            result["seconds_to_spare_before_due"] = round(waiting_s, 1)
            while await reader.count("SELECT COUNT(*) FROM timers") > 0:
                if time.monotonic() > deadline:
                    raise RuntimeError("the timers did not all fire")
                await asyncio.sleep(0.05)
            result["all_fired_after_due_s"] = round(time.time() - due, 2)
            while await reader.count("SELECT COUNT(*) FROM executions WHERE status = 'RUNNING'") > 0:
                if time.monotonic() > deadline:
                    raise RuntimeError("the executions did not all complete")
                await asyncio.sleep(0.5)
            result["all_completed_after_due_s"] = round(time.time() - due, 2)
            result["rss_after_mib"] = rss_mib(server_pid)
            due_s, late = await reader.due_and_lateness_s()
            assert len(late) == count, f"{len(late)} of {count} timers fired"
            result.update(
                due_spread_s=round(max(due_s) - min(due_s), 2),
                timer_late_p50_ms=round(percentile(late, 0.5) * 1000, 1),
                timer_late_p95_ms=round(percentile(late, 0.95) * 1000, 1),
                timer_late_max_ms=round(max(late) * 1000, 1),
                timers_within_1s=f"{sum(1 for x in late if x <= 1.0)}/{count}",
            )
            # Out before the worker's shutdown, which is not part of the measurement.
            print(json.dumps(result), file=sys.stderr, flush=True)
    finally:
        await client.close()
    return result


def table(result: dict[str, Any]) -> str:
    rows = [
        ("executions waiting on a timer that falls due at one instant", result["executions"]),
        ("server RSS idle (MiB)", result["rss_idle_mib"]),
        ("server RSS with all executions open and waiting (MiB)", result["rss_open_waiting_mib"]),
        ("server RSS after all completed (MiB)", result["rss_after_mib"]),
        (
            "timer lateness p50 / p95 / max (ms)",
            f"{result['timer_late_p50_ms']} / {result['timer_late_p95_ms']} / {result['timer_late_max_ms']}",
        ),
        ("timers fired within 1 s of due", result["timers_within_1s"]),
        ("due times spread over (s)", result["due_spread_s"]),
        ("last timer's batch committed, after due (s)", result["all_fired_after_due_s"]),
        ("last execution completed, after due (s)", result["all_completed_after_due_s"]),
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
        assert where.server_pid is not None
        url = where.pg_dsn or where.store_url
        reader = StoreReader(url, where.pg_dsn)
        result = asyncio.run(
            measure(where.address, where.server_pid, reader, args.executions, args.due_in, args.in_flight)
        )
    print(
        f"Machine: {machine()}. Code `{code}`, store {'postgresql' if where.pg_dsn else 'sqlite'}. "
        f"Load average before/after: {load_before} / {load_average()}.\n"
    )
    print(table(result))


if __name__ == "__main__":
    main()
