"""The chaos driver: a mix of workflows while workers and the server are kill -9'd.

It starts a ``flowforge server start`` process on a store, two worker processes of
:mod:`tests.chaos._chaos_app`, and then, all at once:

- starts N workflows of a seeded mix (onboarding DAG, timer chains, activities that
  fail deterministically and are retried until they succeed, run out of attempts,
  fail non-retryably, are compensated; workflows that the driver cancels);
- cancels the workflows the plan says to cancel, at planned moments;
- kill -9s a worker (and starts a new one) or the server (and restarts it on the
  same store and port) after random pauses, as many times as asked.

Then it lets every execution finish and checks (:func:`check`):

- every execution reached the terminal status its input implies;
- every history is gapless (event ids 1..n), starts once, closes once with its
  last event, schedules each activity id once and records at most one start and
  one outcome per activity (and likewise for timers and workflow tasks);
- per activity, the idempotency key is the same on every attempt and unique to it;
  every completed activity's effect is in the ledger exactly once and is the one
  its recorded result names, completed by an attempt that was allowed to succeed;
  failed activities left no effect; balances add up;
- exactly one run per workflow id (starts retried across server kills stayed idempotent).

Everything random is drawn from one seeded RNG (the seed is printed), except when
the kills land relative to the work, which is the point. Run it by hand::

    python -m tests.chaos.driver --store sqlite --workflows 300 --kills 40 --seed 7
    python -m tests.chaos.driver --store postgresql --workflows 300 --kills 40 --seed 7

(``postgresql`` starts a throwaway cluster with :mod:`testsupport.postgres`, or uses
``FLOWFORGE_TEST_POSTGRES_DSN``; ``--store`` also takes a SQLite path or a DSN.)
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import dataclasses
import json
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import grpc

from flowforge import Client, WorkflowExecutionStatus
from flowforge.api.v1 import common_pb2
from flowforge.client import WorkflowHandle, WorkflowHistory
from flowforge.converter import default_converter, json_dict_to_message
from flowforge.exceptions import RPCError
from tests.chaos._chaos_app import (
    EXPECTED_FAILURE_RETRY_STATE,
    EXPECTED_STATUS,
    KINDS,
    LEDGER_ENV,
    TASK_QUEUE,
    Ledger,
    attempt_fails,
    step_amount,
)
from tests.integration._processes import ServerProcess, _env

# How many of each kind in every 24 workflows (the default test runs exactly this mix).
MIX = {
    "ChaosOnboarding": 5,
    "TimerChain": 3,
    "RetryUntilSuccess": 3,
    "ExhaustRetries": 2,
    "NonRetryable": 2,
    "Compensate": 2,
    "CancelLong": 4,
    "CancelRace": 3,
}
CLOSE_EVENTS = {
    "WorkflowExecutionCompleted": "COMPLETED",
    "WorkflowExecutionFailed": "FAILED",
    "WorkflowExecutionCanceled": "CANCELED",
    "WorkflowExecutionTerminated": "TERMINATED",
    "WorkflowExecutionTimedOut": "TIMED_OUT",
    "WorkflowExecutionContinuedAsNew": "CONTINUED_AS_NEW",
}
ACTIVITY_OUTCOMES = ("ActivityTaskCompleted", "ActivityTaskFailed", "ActivityTaskTimedOut", "ActivityTaskCanceled")
WORKFLOW_TASK_CLOSES = ("WorkflowTaskCompleted", "WorkflowTaskFailed", "WorkflowTaskTimedOut")


# --------------------------------------------------------------------------- the plan


@dataclasses.dataclass
class Execution:
    workflow_id: str
    kind: str
    spec: dict[str, Any]
    start_at: float  # seconds after the chaos began
    cancel_after: float | None  # seconds after its start, for the kinds the driver cancels
    handle: WorkflowHandle | None = None
    cancel_outcome: str = ""  # "requested", "refused: ..." (already closed)


@dataclasses.dataclass
class Kill:
    pause: float  # seconds after the previous kill
    target: str  # "server", "worker" (one) or "workers" (both)
    worker: int  # which worker, for "worker"
    down_for: float  # seconds before the restart


def _step(rng: random.Random, workflow_id: str, name: str, **fields: Any) -> dict[str, Any]:
    step: dict[str, Any] = {"key": f"{workflow_id}/{name}", "work": round(rng.uniform(0.2, 1.2), 3)}
    roll = rng.random()
    if roll < 0.25:
        step["fail_until"] = rng.randint(2, 3)
    elif roll < 0.5:
        step.update(flaky_pct=rng.choice([30, 50, 70]), flaky_cap=rng.randint(2, 5))
    step.update(fields)
    return step


def _spec(rng: random.Random, kind: str, workflow_id: str) -> tuple[dict[str, Any], float | None]:
    """The input of one execution, and when (after its start) the driver cancels it."""
    spec, cancel_after = _kind_spec(rng, kind, workflow_id)
    # A tight start-to-close (steps work up to 1.2 s) makes some attempts time out under
    # load, so late reports race the retry; it never changes the expected outcome.
    spec["start_to_close"] = rng.choice([2, 5, 5])
    return spec, cancel_after


def _kind_spec(rng: random.Random, kind: str, workflow_id: str) -> tuple[dict[str, Any], float | None]:
    def step(name: str, **fields: Any) -> dict[str, Any]:
        return _step(rng, workflow_id, name, **fields)

    if kind == "ChaosOnboarding":
        names = ("create", "verify", "risk", "credit", "enrich", "notify")
        return {"steps": {n: step(n) for n in names}, "cooling_off": round(rng.uniform(0.5, 3.0), 3)}, None
    if kind == "TimerChain":
        timers = [round(rng.uniform(0.3, 3.0), 3) for _ in range(3)]
        return {"steps": [step(f"s{i}") for i in range(4)], "timers": timers}, None
    if kind == "RetryUntilSuccess":
        return {"steps": [step("flaky", fail_until=rng.randint(2, 5))]}, None
    if kind == "ExhaustRetries":
        return {"steps": [step("doomed", always_fail=True)], "maximum_attempts": rng.randint(2, 4)}, None
    if kind == "NonRetryable":
        return {"steps": [step("ok"), step("declined", non_retryable=True)]}, None
    if kind == "Compensate":
        return {"steps": [step("charge", non_retryable=True), step("refund")]}, None
    if kind == "CancelLong":
        wait = rng.choice(["timer", "activity"])
        return {"steps": [step("first"), {"key": f"{workflow_id}/wait"}], "wait": wait}, round(rng.uniform(0.5, 4.0), 3)
    if kind == "CancelRace":
        spec = {"steps": [step("first"), step("second")], "timers": [round(rng.uniform(0.2, 1.5), 3)]}
        return spec, round(rng.uniform(0.0, 5.0), 3)
    raise ValueError(kind)


def make_plan(seed: int, workflows: int, kills: int, pause: tuple[float, float]) -> tuple[list[Execution], list[Kill]]:
    """The executions (kind, input, start time, cancel time) and the kills, from the seed."""
    rng = random.Random(seed)
    pattern = [kind for kind, count in MIX.items() for _ in range(count)]
    kinds = [pattern[i % len(pattern)] for i in range(workflows)]
    rng.shuffle(kinds)
    # At least one kill of the server and one of a worker; now and then both workers at once.
    server_kills = min(kills, max(1, round(kills * 0.3))) if kills else 0
    targets = ["server"] * server_kills + [
        "workers" if i and rng.random() < 0.2 else "worker" for i in range(kills - server_kills)
    ]
    rng.shuffle(targets)
    plan_kills = [
        Kill(
            pause=round(rng.uniform(*pause), 3),
            target=target,
            worker=rng.randrange(2),
            down_for=round(rng.uniform(0.0, 1.0 if target == "server" else 0.5), 3),
        )
        for target in targets
    ]
    # Starts are spread over the first 60 % of the chaos, so that the kills hit every phase.
    window = 0.6 * sum(k.pause + k.down_for for k in plan_kills) or 1.0
    start_times = sorted(round(rng.uniform(0.0, window), 3) for _ in range(workflows))
    executions = []
    for index, (kind, start_at) in enumerate(zip(kinds, start_times, strict=False)):
        workflow_id = f"{kind}-{index:04d}"
        spec, cancel_after = _spec(rng, kind, workflow_id)
        executions.append(Execution(workflow_id, kind, spec, start_at, cancel_after))
    return executions, plan_kills


# --------------------------------------------------------------------------- processes


class ChaosWorker:
    """A worker process of tests/chaos/_chaos_app.py; kill -9 and start again at will."""

    def __init__(self, address: str, ledger: Path, workdir: Path, name: str) -> None:
        self.address, self.ledger, self.name = address, ledger, name
        self._log = open(workdir / f"{name}.log", "ab")
        self.process: subprocess.Popen[bytes] | None = None
        self.starts = 0

    def start(self) -> None:
        self.starts += 1
        self._log.write(f"---- start #{self.starts} at {time.strftime('%H:%M:%S')}\n".encode())
        self._log.flush()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.chaos._chaos_app", self.address, TASK_QUEUE],
            env=_env(**{LEDGER_ENV: str(self.ledger)}),
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def kill9(self) -> None:
        if self.process is not None:
            if self.process.poll() is None:
                self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=30)

    def close(self) -> None:
        self.kill9()
        self._log.close()


def _tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


# --------------------------------------------------------------------------- the run


@dataclasses.dataclass
class ChaosReport:
    store_kind: str
    seed: int
    workdir: Path
    counts: dict[str, Any]
    problems: list[str]
    seconds: float

    @property
    def summary(self) -> str:
        c = self.counts
        statuses = ", ".join(f"{status} {n}" for status, n in sorted(c["statuses"].items()))
        outcomes = ", ".join(f"{name} {n}" for name, n in sorted(c["activity_outcomes"].items()))
        attempts = ", ".join(f"{name} {n}" for name, n in sorted(c["attempt_outcomes"].items()))
        return (
            f"chaos[{self.store_kind}] seed={self.seed}: {c['executions']} executions ({statuses}); "
            f"{c['activities']} activities ({outcomes}); {c['attempts']} attempts ({attempts}); "
            f"{c['effects']} effects ({c['orphan_effects']} of canceled runs without a recorded completion); "
            f"{c['timers']} timers; cancels requested {c['cancels_requested']}, refused as closed {c['cancels_refused']}; "
            f"kills: {c['worker_kills']} worker / {c['server_kills']} server; "
            f"duplicates found = {c['duplicates']}; server log errors {c.get('server_log_errors', 0)}; "
            f"problems = {len(self.problems)}; {self.seconds:.1f}s"
        )


class _Chaos:
    def __init__(
        self,
        store: str,
        store_kind: str,
        workdir: Path,
        seed: int,
        workflows: int,
        kills: int,
        pause: tuple[float, float],
        finish_timeout: float,
        log: Any,
    ) -> None:
        self.store, self.store_kind, self.workdir, self.seed = store, store_kind, workdir, seed
        self.finish_timeout = finish_timeout
        self.log = log
        self.executions, self.kills = make_plan(seed, workflows, kills, pause)
        self.ledger_path = workdir / "ledger.db"
        self.ledger = Ledger(self.ledger_path)
        self.server = ServerProcess(store, workdir)
        self.workers: list[ChaosWorker] = []
        self.problems: list[str] = []
        self.worker_kills = 0
        self.server_kills = 0
        self.killing: set[str] = set()  # processes the driver is killing right now (not crashes)
        self.started = asyncio.Event()

    def problem(self, text: str) -> None:
        self.problems.append(text)
        self.log(f"PROBLEM: {text}")

    # -- the chaos

    def _check_processes(self) -> None:
        """A process that died without being killed is a crash of the product: report it and restart it."""
        if "server" not in self.killing and self.server.process is not None and self.server.process.poll() is not None:
            self.problem(
                f"the server exited by itself with {self.server.process.returncode}:\n"
                f"{_tail(self.workdir / 'server.log')}"
            )
            self.server.start()
        for worker in self.workers:
            if worker.name not in self.killing and not worker.alive():
                code = worker.process.returncode if worker.process else None
                self.problem(
                    f"{worker.name} exited by itself with {code}:\n{_tail(self.workdir / f'{worker.name}.log')}"
                )
                worker.start()

    async def _kill_loop(self, t0: float) -> None:
        loop = asyncio.get_running_loop()
        for number, kill in enumerate(self.kills, 1):
            await asyncio.sleep(kill.pause)
            self._check_processes()
            at = loop.time() - t0
            if kill.target == "server":
                self.killing.add("server")
                self.server.kill9()
                self.server_kills += 1
                self.log(f"[{at:6.1f}s] kill {number}/{len(self.kills)}: kill -9 server (down {kill.down_for}s)")
                await asyncio.sleep(kill.down_for)
                await asyncio.to_thread(self.server.start)
                self.killing.discard("server")
            else:
                victims = self.workers if kill.target == "workers" else [self.workers[kill.worker]]
                for worker in victims:
                    self.killing.add(worker.name)
                    worker.kill9()
                    self.worker_kills += 1
                names = " and ".join(w.name for w in victims)
                self.log(f"[{at:6.1f}s] kill {number}/{len(self.kills)}: kill -9 {names} (down {kill.down_for}s)")
                await asyncio.sleep(kill.down_for)
                for worker in victims:
                    worker.start()
                    self.killing.discard(worker.name)

    async def _start_all(self, client: Client, t0: float) -> None:
        loop = asyncio.get_running_loop()
        cancels = []
        for execution in self.executions:
            await asyncio.sleep(max(0.0, t0 + execution.start_at - loop.time()))
            execution.handle = await client.start_workflow(
                KINDS[execution.kind].run,
                execution.spec,
                id=execution.workflow_id,
                task_queue=TASK_QUEUE,
                task_timeout=timedelta(seconds=5),
            )
            if execution.cancel_after is not None:
                cancels.append(asyncio.create_task(self._cancel(execution)))
        await asyncio.gather(*cancels)

    async def _cancel(self, execution: Execution) -> None:
        assert execution.handle is not None and execution.cancel_after is not None
        await asyncio.sleep(execution.cancel_after)
        try:
            await execution.handle.cancel(reason="chaos driver")
            execution.cancel_outcome = "requested"
        except RPCError as error:
            if error.status != grpc.StatusCode.FAILED_PRECONDITION:
                raise
            execution.cancel_outcome = f"refused: {error.message}"

    async def _wait_all_closed(self, client: Client) -> dict[str, Any]:
        """Waits (with a deadline) until no execution runs; returns the listing by workflow id."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.finish_timeout
        while True:
            self._check_processes()
            listing = [e async for e in client.list_workflows()]
            running = [e for e in listing if e.status == WorkflowExecutionStatus.RUNNING]
            if len(listing) >= len(self.executions) and not running:
                break
            if loop.time() > deadline:
                for execution in running:
                    description = await client.get_workflow_handle(execution.workflow_id).describe()
                    self.problem(
                        f"{execution.workflow_id} still RUNNING {self.finish_timeout:.0f}s after the chaos ended: "
                        f"pending workflow task {description.pending_workflow_task}, "
                        f"pending activities {description.pending_activities}"
                    )
                break
            await asyncio.sleep(0.5)
        by_id: dict[str, Any] = collections.defaultdict(list)
        for entry in listing:
            by_id[entry.workflow_id].append(entry)
        return by_id

    async def run(self) -> ChaosReport:
        began = time.monotonic()
        self.ledger.create()
        self.log(
            f"chaos[{self.store_kind}] seed={self.seed}: {len(self.executions)} workflows, "
            f"{len(self.kills)} kills; logs and ledger in {self.workdir}"
        )
        await asyncio.to_thread(self.server.start)
        self.workers = [
            ChaosWorker(self.server.address, self.ledger_path, self.workdir, f"worker-{i}") for i in range(2)
        ]
        for worker in self.workers:
            worker.start()
        client = await Client.connect(self.server.address)
        try:
            loop = asyncio.get_running_loop()
            t0 = loop.time()
            starting = asyncio.create_task(self._start_all(client, t0))
            killing = asyncio.create_task(self._kill_loop(t0))
            # A failure of either ends the run (gather would leave the other running).
            done, _ = await asyncio.wait({starting, killing}, return_when=asyncio.FIRST_EXCEPTION)
            for task in done:
                if task.exception() is not None:
                    starting.cancel()
                    killing.cancel()
                    raise task.exception()  # type: ignore[misc]
            await asyncio.gather(starting, killing)
            self.log(f"[{loop.time() - t0:6.1f}s] chaos over; waiting for every execution to close")
            listing = await self._wait_all_closed(client)
            self.log(f"[{loop.time() - t0:6.1f}s] all closed; checking")
            for worker in self.workers:  # nothing writes to the ledger while it is read
                self.killing.add(worker.name)
                worker.kill9()
            histories: dict[str, WorkflowHistory] = {}
            statuses: dict[str, str] = {}
            for execution in self.executions:
                handle = client.get_workflow_handle(execution.workflow_id)
                histories[execution.workflow_id] = await handle.fetch_history()
                statuses[execution.workflow_id] = (await handle.describe()).status.name
        finally:
            await client.close()
            for worker in self.workers:
                worker.close()
            self.server.stop()
        counts = check(self.executions, histories, statuses, listing, self.ledger, self.problem)
        errors = server_log_errors(self.workdir / "server.log")
        for message, n in errors.most_common(5):
            self.log(f"server.log: {n} x {message}")
        counts.update(
            worker_kills=self.worker_kills, server_kills=self.server_kills, server_log_errors=sum(errors.values())
        )
        return ChaosReport(self.store_kind, self.seed, self.workdir, counts, self.problems, time.monotonic() - began)


async def run_chaos(
    store: str,
    workdir: Path,
    *,
    seed: int,
    workflows: int = 24,
    kills: int = 5,
    pause: tuple[float, float] = (1.0, 3.0),
    finish_timeout: float | None = None,
    store_kind: str | None = None,
    log: Any = None,
) -> ChaosReport:
    """Runs the chaos once against ``store`` (a SQLite path or a PostgreSQL DSN); see the module docstring."""
    kind = store_kind or ("postgresql" if store.startswith("postgres") else "sqlite")
    timeout = finish_timeout if finish_timeout is not None else 90.0 + 0.5 * workflows
    chaos = _Chaos(
        store,
        kind,
        Path(workdir),
        seed,
        workflows,
        kills,
        pause,
        timeout,
        log or (lambda line: print(line, flush=True)),
    )
    return await chaos.run()


# --------------------------------------------------------------------------- the checks


def server_log_errors(path: Path) -> collections.Counter[str]:
    """ERROR lines of the server's log, by message (addresses and numbers blanked).

    Not a verdict by themselves (asyncpg logs a pooled connection reset after a
    cancelled request at ERROR), but the summary shows the count and the run prints the
    commonest: the chaos found a wedged SQLite store this way.
    """
    found: collections.Counter[str] = collections.Counter()
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return found
    for line in lines:
        match = re.match(r"^\S+ \S+ ERROR (.*)$", line)
        if match:
            found[re.sub(r"0x[0-9a-f]+|\d+", "N", match.group(1))[:200]] += 1
    return found


def _decode(payloads: Any) -> list[Any]:
    return default_converter.from_payloads(json_dict_to_message(payloads, common_pb2.Payloads))


@dataclasses.dataclass
class _Activity:
    scheduled_event_id: int
    activity_id: str
    activity_type: str
    params: dict[str, Any]
    started: list[Any] = dataclasses.field(default_factory=list)
    outcomes: list[Any] = dataclasses.field(default_factory=list)


def _check_history(
    execution: Execution, history: WorkflowHistory, problem: Any
) -> tuple[dict[int, _Activity], int, int]:
    """The structural invariants of one history; returns its activities, timers and duplicates found."""
    wid = execution.workflow_id
    events = history.events
    duplicates = 0
    ids = [e.event_id for e in events]
    if ids != list(range(1, len(events) + 1)):
        gaps = sorted(set(range(1, max(ids, default=0) + 1)) - set(ids))
        repeated = [i for i, n in collections.Counter(ids).items() if n > 1]
        duplicates += len(repeated)
        problem(f"{wid}: event ids are not 1..{len(events)} (missing {gaps[:10]}, repeated {repeated[:10]})")
    types = collections.Counter(e.event_type for e in events)
    if not events or events[0].event_type != "WorkflowExecutionStarted" or types["WorkflowExecutionStarted"] != 1:
        problem(
            f"{wid}: history must start with exactly one WorkflowExecutionStarted ({types['WorkflowExecutionStarted']})"
        )
    closes = [e for e in events if e.event_type in CLOSE_EVENTS]
    if len(closes) != 1 or closes[0] is not events[-1]:
        duplicates += max(0, len(closes) - 1)
        problem(
            f"{wid}: expected one close event, the last; found {[(e.event_id, e.event_type) for e in closes]}"
            f" of {len(events)} events"
        )
    if types["WorkflowExecutionCancelRequested"] > 1:
        duplicates += types["WorkflowExecutionCancelRequested"] - 1
        problem(f"{wid}: {types['WorkflowExecutionCancelRequested']} WorkflowExecutionCancelRequested events")

    activities: dict[int, _Activity] = {}
    activity_ids: collections.Counter[str] = collections.Counter()
    timers: dict[str, list[str]] = {}
    wft_scheduled: dict[int, list[int]] = {}
    wft_started: dict[int, list[str]] = {}
    for event in events:
        a = event.attributes
        if event.event_type == "ActivityTaskScheduled":
            activity_ids[a["activity_id"]] += 1
            params = _decode(a.get("input"))
            activities[event.event_id] = _Activity(
                event.event_id, a["activity_id"], a["activity_type"], params[0] if params else {}
            )
        elif event.event_type == "ActivityTaskStarted" or event.event_type in ACTIVITY_OUTCOMES:
            activity = activities.get(int(a.get("scheduled_event_id", 0)))
            if activity is None:
                problem(f"{wid}: event {event.event_id} {event.event_type} refers to no earlier ActivityTaskScheduled")
                continue
            if event.event_type == "ActivityTaskStarted":
                activity.started.append(event)
            else:
                if activity.started and int(a.get("started_event_id", 0)) not in (0, activity.started[-1].event_id):
                    problem(
                        f"{wid}: event {event.event_id} names started event {a.get('started_event_id')}, "
                        f"not {activity.started[-1].event_id}"
                    )
                activity.outcomes.append(event)
        elif event.event_type == "TimerStarted":
            timers.setdefault(str(a["timer_id"]), []).append("started")
        elif event.event_type in ("TimerFired", "TimerCanceled"):
            timers.setdefault(str(a["timer_id"]), []).append(event.event_type)
        elif event.event_type == "WorkflowTaskScheduled":
            wft_scheduled[event.event_id] = []
        elif event.event_type == "WorkflowTaskStarted":
            scheduled = wft_scheduled.get(int(a.get("scheduled_event_id", 0)))
            if scheduled is None:
                problem(f"{wid}: WorkflowTaskStarted {event.event_id} refers to no WorkflowTaskScheduled")
            else:
                scheduled.append(event.event_id)
            wft_started[event.event_id] = []
        elif event.event_type in WORKFLOW_TASK_CLOSES:
            started = wft_started.get(int(a.get("started_event_id", 0)))
            if started is None:
                problem(f"{wid}: {event.event_type} {event.event_id} refers to no WorkflowTaskStarted")
            else:
                started.append(event.event_type)
    for activity_id, n in activity_ids.items():
        if n > 1:
            duplicates += n - 1
            problem(f"{wid}: activity id {activity_id} scheduled {n} times")
    for activity in activities.values():
        if len(activity.started) > 1 or len(activity.outcomes) > 1:
            duplicates += max(len(activity.started), len(activity.outcomes)) - 1
            problem(
                f"{wid}: activity {activity.activity_id} has {len(activity.started)} started and "
                f"{len(activity.outcomes)} outcome events: {[e.event_type for e in activity.outcomes]}"
            )
        if activity.outcomes and activity.outcomes[0].event_type != "ActivityTaskCanceled" and not activity.started:
            problem(f"{wid}: activity {activity.activity_id} has an outcome but no ActivityTaskStarted")
    for timer_id, marks in timers.items():
        if marks[:1] != ["started"] or len(marks) > 2 or marks.count("started") != 1:
            duplicates += max(0, len(marks) - 2)
            problem(f"{wid}: timer {timer_id} has events {marks}")
    for scheduled_id, starts in wft_scheduled.items():
        if len(starts) > 1:
            duplicates += len(starts) - 1
            problem(f"{wid}: workflow task {scheduled_id} started {len(starts)} times")
    for started_id, closes_of_task in wft_started.items():
        if len(closes_of_task) > 1:
            duplicates += len(closes_of_task) - 1
            problem(
                f"{wid}: workflow task started at {started_id} closed {len(closes_of_task)} times: {closes_of_task}"
            )
    return activities, len(timers), duplicates


def _check_status(
    execution: Execution, history: WorkflowHistory, activities: dict[int, _Activity], status: str, problem: Any
) -> None:
    """The terminal status the input implies, and the failure that caused it."""
    wid, kind = execution.workflow_id, execution.kind
    events = history.events
    cancel_requested = [e.event_id for e in events if e.event_type == "WorkflowExecutionCancelRequested"]
    expected = EXPECTED_STATUS[kind]
    if kind == "CancelRace" and status == "COMPLETED" and not cancel_requested:
        expected = "COMPLETED"  # it closed before the cancellation landed (the server refused it)
    if status != expected:
        problem(
            f"{wid}: {status}, expected {expected} (cancel: {execution.cancel_outcome or 'not requested'}; "
            f"cancel requested at events {cancel_requested}; last events "
            f"{[(e.event_id, e.event_type) for e in events[-6:]]})"
        )
        return
    if status == "CANCELED" and not cancel_requested:
        problem(f"{wid}: CANCELED without a WorkflowExecutionCancelRequested event")
    if status == "COMPLETED":
        unfinished = [a.activity_id for a in activities.values() if not a.outcomes]
        if unfinished:
            problem(f"{wid}: COMPLETED with activities that never finished: {unfinished}")
    if kind in EXPECTED_FAILURE_RETRY_STATE:
        failed = [a for a in activities.values() if a.outcomes and a.outcomes[0].event_type != "ActivityTaskCompleted"]
        if len(failed) != 1:
            problem(f"{wid}: expected exactly one failed activity, found {[a.activity_id for a in failed]}")
            return
        outcome = failed[0].outcomes[0]
        retry_state = outcome.attributes.get("retry_state")
        if retry_state != EXPECTED_FAILURE_RETRY_STATE[kind]:
            problem(
                f"{wid}: the activity ended with {outcome.event_type} retry_state {retry_state}, "
                f"expected {EXPECTED_FAILURE_RETRY_STATE[kind]}"
            )
        if kind == "ExhaustRetries":
            attempt = failed[0].started[0].attributes.get("attempt") if failed[0].started else None
            if attempt != execution.spec["maximum_attempts"]:
                problem(
                    f"{wid}: the last attempt was {attempt}, maximum_attempts is {execution.spec['maximum_attempts']}"
                )


def check(
    executions: list[Execution],
    histories: dict[str, WorkflowHistory],
    statuses: dict[str, str],
    listing: dict[str, list[Any]],
    ledger: Ledger,
    problem: Any,
) -> dict[str, Any]:
    """Checks the outcome of a run (see the module docstring); reports through ``problem``, returns counts."""
    attempts = ledger.rows("attempts")
    effects = {row["idempotency_key"]: row for row in ledger.rows("effects")}
    balances = {row["workflow_id"]: row for row in ledger.rows("balances")}
    duplicates = 0

    # Idempotency keys: one per activity, the same on every attempt; an attempt number runs once.
    keys_of: dict[tuple[str, str], set[str]] = collections.defaultdict(set)
    activity_of_key: dict[str, set[tuple[str, str]]] = collections.defaultdict(set)
    attempts_of_key: dict[str, list[dict[str, Any]]] = collections.defaultdict(list)
    for row in attempts:
        keys_of[(row["run_id"], row["activity_id"])].add(row["idempotency_key"])
        activity_of_key[row["idempotency_key"]].add((row["run_id"], row["activity_id"]))
        attempts_of_key[row["idempotency_key"]].append(row)
    for (run_id, activity_id), keys in keys_of.items():
        if len(keys) != 1:
            problem(f"activity {activity_id} of run {run_id} ran under {len(keys)} idempotency keys: {sorted(keys)}")
    for key, owners in activity_of_key.items():
        if len(owners) != 1:
            problem(f"idempotency key {key} was given to {len(owners)} activities: {sorted(owners)}")
        numbers = collections.Counter(row["attempt"] for row in attempts_of_key[key])
        repeated = {n: c for n, c in numbers.items() if c > 1}
        if repeated:
            duplicates += sum(c - 1 for c in repeated.values())
            problem(
                f"idempotency key {key}: attempt numbers run more than once {repeated} "
                f"(pids {[(r['attempt'], r['pid']) for r in attempts_of_key[key]]})"
            )

    statuses_count: collections.Counter[str] = collections.Counter()
    outcome_count: collections.Counter[str] = collections.Counter()
    activities_total = timers_total = cancels_requested = cancels_refused = orphan_effects = 0
    effects_seen: set[str] = set()
    for execution in executions:
        wid = execution.workflow_id
        history = histories[wid]
        status = statuses[wid]
        statuses_count[status] += 1
        cancels_requested += execution.cancel_outcome == "requested"
        cancels_refused += execution.cancel_outcome.startswith("refused")
        runs = listing.get(wid, [])
        if len(runs) != 1:
            duplicates += max(0, len(runs) - 1)
            problem(f"{wid}: {len(runs)} runs listed, expected exactly 1: {[(r.run_id, r.status.name) for r in runs]}")
        elif runs[0].status.name != status:
            problem(f"{wid}: listed as {runs[0].status.name} but described as {status}")
        close = history.events[-1] if history.events else None
        if close is None or CLOSE_EVENTS.get(close.event_type) != status:
            problem(
                f"{wid}: described as {status} but its history ends with {close.event_type if close else 'nothing'}"
            )
        activities, timers, found = _check_history(execution, history, problem)
        duplicates += found
        activities_total += len(activities)
        timers_total += timers
        _check_status(execution, history, activities, status, problem)

        run_id = history.events[0].attributes.get("run_id") if history.events else ""
        by_step: dict[str, dict[str, Any]] = {}
        for activity in activities.values():
            outcome = activity.outcomes[0].event_type if activity.outcomes else "unfinished"
            outcome_count[outcome] += 1
            keys = keys_of.get((run_id, activity.activity_id), set())
            key = next(iter(keys)) if len(keys) == 1 else None
            effect = effects.get(key) if key else None
            step_key = activity.params.get("key", "")
            if outcome == "ActivityTaskCompleted":
                started_attempt = activity.started[0].attributes.get("attempt") if activity.started else None
                if key is None:
                    problem(
                        f"{wid}: completed activity {activity.activity_id} has no single idempotency key in the "
                        f"ledger ({sorted(keys)})"
                    )
                    continue
                if effect is None:
                    problem(
                        f"{wid}: activity {activity.activity_id} completed (attempt {started_attempt}) but its "
                        f"effect is not in the ledger (key {key})"
                    )
                    continue
                effects_seen.add(key)
                result = _decode(activity.outcomes[0].attributes.get("result"))
                recorded = {"step": step_key, "effect_attempt": effect["attempt"], "effect_row": effect["attempt_row"]}
                if result != [recorded]:
                    problem(
                        f"{wid}: activity {activity.activity_id} completed with {result}, the ledger holds {recorded}"
                    )
                by_step[step_key] = recorded
                ledger_attempts = {r["attempt"]: r["outcome"] for r in attempts_of_key[key]}
                if ledger_attempts.get(started_attempt) not in ("applied", "deduplicated"):
                    problem(
                        f"{wid}: history says attempt {started_attempt} of {activity.activity_id} completed; the "
                        f"ledger's attempts are {ledger_attempts}"
                    )
                for attempt in (started_attempt, effect["attempt"]):
                    if attempt is None or attempt_fails(activity.params, attempt):
                        problem(
                            f"{wid}: activity {activity.activity_id} completed or applied its effect on attempt "
                            f"{attempt}, which its input says must fail"
                        )
                if started_attempt is not None and effect["attempt"] > started_attempt:
                    problem(
                        f"{wid}: effect of {activity.activity_id} applied by attempt {effect['attempt']}, after "
                        f"the completing attempt {started_attempt}"
                    )
            elif effect is not None:
                effects_seen.add(key or "")
                if status == "CANCELED":
                    orphan_effects += 1  # applied, then the run closed before the completion was recorded
                else:
                    problem(f"{wid}: activity {activity.activity_id} ended {outcome} but applied an effect {effect}")
            if activity.activity_type != "wait_for_cancel" and key is not None:
                for row in attempts_of_key[key]:
                    if row["step_key"] != step_key:
                        problem(
                            f"{wid}: ledger attempt {row['id']} of key {key} is for step {row['step_key']}, "
                            f"history says {step_key}"
                        )
        maximum = execution.spec.get("maximum_attempts")
        if maximum:
            for activity in activities.values():
                key_set = keys_of.get((run_id, activity.activity_id), set())
                over = [r["attempt"] for k in key_set for r in attempts_of_key[k] if r["attempt"] > maximum]
                if over:
                    problem(f"{wid}: attempts {over} ran past maximum_attempts {maximum}")
        if status == "COMPLETED":
            result = _decode(history.events[-1].attributes.get("result"))
            returned = result[0].get("effects") if result and isinstance(result[0], dict) else None
            canonical = lambda effects: sorted(json.dumps(e, sort_keys=True) for e in effects)  # noqa: E731
            if not isinstance(returned, list) or canonical(returned) != canonical(by_step.values()):
                problem(
                    f"{wid}: the workflow returned {returned}; completed activities recorded {list(by_step.values())}"
                )
        mine = [e for e in effects.values() if e["workflow_id"] == wid]
        balance = balances.get(wid, {"balance": 0, "applications": 0})
        expected_balance = sum(step_amount(e["step_key"]) for e in mine)
        if (balance["balance"], balance["applications"]) != (expected_balance, len(mine)):
            problem(
                f"{wid}: balance {balance['balance']} from {balance['applications']} applications; its "
                f"{len(mine)} effects add up to {expected_balance}"
            )
    for key, effect in effects.items():
        if key not in effects_seen:
            problem(f"effect {effect} belongs to no activity in any history")

    by_outcome = collections.Counter(row["outcome"] for row in attempts)
    attempt_outcomes = {
        "applied": by_outcome["applied"],
        "deduplicated": by_outcome["deduplicated"],
        "failed on purpose": by_outcome["raised"],
        "cancelled": by_outcome["cancelled"],
        "killed mid-attempt": by_outcome["running"],
    }
    return {
        "executions": len(executions),
        "statuses": dict(statuses_count),
        "activities": activities_total,
        "activity_outcomes": {k.removeprefix("ActivityTask").lower(): v for k, v in outcome_count.items()},
        "attempts": len(attempts),
        "attempt_outcomes": attempt_outcomes,
        "effects": len(effects),
        "orphan_effects": orphan_effects,
        "timers": timers_total,
        "cancels_requested": cancels_requested,
        "cancels_refused": cancels_refused,
        "duplicates": duplicates,
    }


# --------------------------------------------------------------------------- command line


async def _main(args: argparse.Namespace) -> int:
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1_000_000)
    workdir = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="flowforge-chaos-"))
    workdir.mkdir(parents=True, exist_ok=True)
    postgres = None
    dsn: str | None = None
    if args.store == "sqlite":
        store, kind = str(workdir / "flowforge.db"), "sqlite"
    elif args.store == "postgresql":
        from testsupport.postgres import start_postgres

        postgres = await asyncio.to_thread(start_postgres)
        dsn = await postgres.create_database()
        store, kind = dsn, "postgresql"
    else:
        store, kind = args.store, None
    try:
        report = await run_chaos(
            store,
            workdir,
            seed=seed,
            workflows=args.workflows,
            kills=args.kills,
            pause=(args.min_pause, args.max_pause),
            finish_timeout=args.finish_timeout,
            store_kind=kind,
        )
    finally:
        if postgres is not None:
            if dsn is not None:
                await postgres.drop_database(dsn)
            await asyncio.to_thread(postgres.stop)
    print(report.summary, flush=True)
    if not report.problems and not args.keep and not args.workdir:
        shutil.rmtree(workdir, ignore_errors=True)
    elif report.problems:
        print(f"logs and ledger kept in {workdir}")
    return 1 if report.problems else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.chaos.driver", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--store",
        default="sqlite",
        help="sqlite, postgresql (a throwaway cluster), a SQLite path or a postgresql:// DSN",
    )
    parser.add_argument("--workflows", type=int, default=24)
    parser.add_argument("--kills", type=int, default=5)
    parser.add_argument("--seed", type=int, default=None, help="default: a random seed (printed)")
    parser.add_argument("--min-pause", type=float, default=1.0, help="shortest pause between kills (s)")
    parser.add_argument("--max-pause", type=float, default=3.0, help="longest pause between kills (s)")
    parser.add_argument(
        "--finish-timeout",
        type=float,
        default=None,
        help="how long executions may take to close after the chaos (default 90 + 0.5 s per workflow)",
    )
    parser.add_argument("--workdir", default=None, help="keep logs and the ledger here")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    return asyncio.run(_main(parser.parse_args(argv)))


if __name__ == "__main__":
    sys.exit(main())
