"""Two server replicas on one PostgreSQL database, real worker processes, and a
kill -9 of one replica in the middle of the run.

Setup: replicas A and B are ``flowforge server start`` processes on the same
database. Worker process "a" reaches A through a re-pointable TCP forwarder (the
load balancer in front of A); worker process "b" talks to B directly. Both poll
one task queue and run the onboarding sample (6 activities and a short durable
timer per workflow) with every activity wrapped to append what it was handed —
attempt, idempotency key and the fencing token decoded from its task token — to
a ledger file. Half the workflows are started through A, half through B.

When 100 of them have completed, the forwarder is pointed at B (the load
balancer takes A out) and A is killed with SIGKILL; 60 more workflows are
started through B (so work is left for both workers however fast the first ones
finished). Both workers must keep going, through B alone, and executions must
keep completing while A is down.
Then A is started again on the same port and put back behind the forwarder, the
last 60 workflows are started (so work is left however fast the first ones
finished), and worker "a" must work through A again. In the end every workflow id has exactly
one run, completed once, with a gapless history without duplicate outcomes that
both replicas serve identically, and no activity task was handed out twice
under one fencing token. It runs with the workers on their streams and on unary RPCs
(``task_transport``): on the stream, worker "a" loses its stream with A and reconnects
through the forwarder to B, then back to A.

Run as a module, this file is the worker:
``python -m tests.integration.test_replicas ADDRESS TASK_QUEUE`` (ledger in
``FLOWFORGE_TEST_LEDGER``).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import functools
import inspect
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from flowforge import Client, WorkflowExecutionStatus, activity
from flowforge.worker import Worker
from samples.onboarding.workflows import ACTIVITIES, Onboarding
from tests.integration._processes import ROOT, ServerProcess, read_ledger, record
from testsupport.task_transport import task_transport
from testsupport.tcp_proxy import TcpProxy
from testsupport.waiting import wait_until

pytestmark = pytest.mark.postgres

WORKFLOWS = 300
TASK_QUEUE = "replicas"
KILL_AT_COMPLETED = WORKFLOWS // 3
# Executions that must complete while A is down, with only B serving.
COMPLETED_WHILE_DOWN = 30
# Executions started through B once A is down, so work is left for both workers
# through B alone however fast the first ones finished.
STARTED_WHILE_DOWN = 60
# Executions started only once A is back, so work is left for worker a through the
# restarted A however fast the first ones finished.
STARTED_AFTER_RESTART = 60
DEADLINE_S = 90.0
REQUEST = {"name": "Replica", "work_seconds": 0, "cooling_off_seconds": 0.3}


# ----------------------------------------------------------------- the worker side


def decode_task_token(token: bytes) -> dict[str, Any]:
    """The fields of a task token: b"ff2." + key id + "." + base64url(JSON list) + "." + mac."""
    assert token.startswith(b"ff2."), token[:8]
    body = token[4:].split(b".")[1]
    fields = json.loads(base64.urlsafe_b64decode(body + b"=" * (-len(body) % 4)))
    namespace, task_id, fencing_token, kind, run_id = fields
    return {
        "namespace": namespace,
        "task_id": task_id,
        "fencing_token": fencing_token,
        "kind": kind,
        "token_run_id": run_id,
    }


def _record_attempt(event: str) -> None:
    info = activity.info()
    record(
        event=event,
        activity_type=info.activity_type,
        workflow_id=info.workflow_id,
        run_id=info.run_id,
        attempt=info.attempt,
        idempotency_key=info.idempotency_key,
        **decode_task_token(info.task_token),
    )


def recorded(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` under its activity name, recording each attempt's start and end."""
    name = fn.__flowforge_activity_definition__.name
    if inspect.iscoroutinefunction(fn):

        async def wrapper(*args: Any) -> Any:
            _record_attempt("start")
            result = await fn(*args)
            _record_attempt("done")
            return result
    else:

        def wrapper(*args: Any) -> Any:  # type: ignore[misc]
            _record_attempt("start")
            result = fn(*args)
            _record_attempt("done")
            return result

    functools.update_wrapper(wrapper, fn, updated=())
    return activity.defn(name=name)(wrapper)


RECORDED_ACTIVITIES = [recorded(fn) for fn in ACTIVITIES]


async def worker_main(address: str, task_queue: str) -> None:
    client = await Client.connect(address)
    await Worker(
        client,
        task_queue=task_queue,
        workflows=[Onboarding],
        activities=RECORDED_ACTIVITIES,
        task_transport=task_transport(),
    ).run()


# ------------------------------------------------------------------- the test side


class RecordingWorker:
    """This module as a worker in a child process."""

    def __init__(self, address: str, ledger: Path, workdir: Path, name: str) -> None:
        self.name = name
        self._log = open(workdir / f"worker-{name}.log", "ab")
        env = {
            **os.environ,
            "FLOWFORGE_TEST_LEDGER": str(ledger),
            "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        }
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.integration.test_replicas", address, TASK_QUEUE],
            env=env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )

    @property
    def pid(self) -> int:
        return self.process.pid

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=30)
        self._log.close()


async def count_completed(client: Client) -> int:
    return sum([1 async for _ in client.list_workflows(status=WorkflowExecutionStatus.COMPLETED, page_size=1000)])


async def at_least(client: Client, count: int) -> bool:
    return await count_completed(client) >= count


def starts_by(ledger: Path, pid: int, after: float) -> int:
    """Activity attempts worker process ``pid`` started after time ``after``."""
    return sum(1 for e in read_ledger(ledger) if e["event"] == "start" and e["pid"] == pid and e["at"] > after)


def check_history(workflow_id: str, events: list[tuple[int, str, dict[str, Any], float]]) -> None:
    """Gapless, one start and one completion (the last event), every activity and
    the timer scheduled once and finished once, every workflow task closed once."""
    assert [event[0] for event in events] == list(range(1, len(events) + 1)), f"{workflow_id}: gap or duplicate"
    types = Counter(event[1] for event in events)
    assert types["WorkflowExecutionStarted"] == types["WorkflowExecutionCompleted"] == 1, (workflow_id, types)
    assert events[0][1] == "WorkflowExecutionStarted" and events[-1][1] == "WorkflowExecutionCompleted", workflow_id
    assert types["ActivityTaskScheduled"] == 6, (workflow_id, types)
    assert types["TimerStarted"] == types["TimerFired"] == 1, (workflow_id, types)
    # Killed leases may time out and be retried, but each activity has exactly one outcome: a completion.
    assert not {"ActivityTaskFailed", "ActivityTaskTimedOut", "WorkflowExecutionFailed"} & set(types), workflow_id
    scheduled = [event_id for event_id, event_type, _, _ in events if event_type == "ActivityTaskScheduled"]
    completed = [a["scheduled_event_id"] for _, event_type, a, _ in events if event_type == "ActivityTaskCompleted"]
    assert sorted(completed) == scheduled, f"{workflow_id}: an activity completed twice or not at all"
    closed = [
        a["scheduled_event_id"]
        for _, event_type, a, _ in events
        if event_type in ("WorkflowTaskCompleted", "WorkflowTaskFailed", "WorkflowTaskTimedOut")
    ]
    assert len(closed) == len(set(closed)), f"{workflow_id}: a workflow task was closed twice"


async def history_of(client: Client, workflow_id: str) -> list[tuple[int, str, dict[str, Any], float]]:
    history = await client.get_workflow_handle(workflow_id).fetch_history()
    return [(e.event_id, e.event_type, e.attributes, e.event_time.timestamp()) for e in history.events]


async def test_two_replicas_share_the_work_and_a_killed_replica_loses_nothing(
    postgres_dsn: str, tmp_path: Path, task_transport: str
) -> None:
    began = time.monotonic()
    phases: list[str] = []

    def phase(name: str) -> None:
        phases.append(f"{name} {time.monotonic() - began:.1f}s")

    ledger = tmp_path / "ledger.jsonl"
    async with contextlib.AsyncExitStack() as stack:
        replicas = []
        for name in ("a", "b"):
            (tmp_path / name).mkdir()
            replica = ServerProcess(postgres_dsn, tmp_path / name)
            stack.callback(replica.stop)
            replicas.append(replica)
        replica_a, replica_b = replicas
        await asyncio.gather(asyncio.to_thread(replica_a.start), asyncio.to_thread(replica_b.start))
        balancer = TcpProxy("127.0.0.1", replica_a.port)
        await balancer.start()
        stack.push_async_callback(balancer.cut)
        through_balancer = f"127.0.0.1:{balancer.port}"
        worker_a = RecordingWorker(through_balancer, ledger, tmp_path, "a")
        stack.callback(worker_a.stop)
        worker_b = RecordingWorker(replica_b.address, ledger, tmp_path, "b")
        stack.callback(worker_b.stop)
        client_a = await Client.connect(through_balancer)
        stack.push_async_callback(client_a.close)
        client_b = await Client.connect(replica_b.address)
        stack.push_async_callback(client_b.close)
        phase("up")

        ids = [f"replicas-{i}" for i in range(WORKFLOWS)]
        gate = asyncio.Semaphore(50)

        async def start(i: int, client: Client | None = None) -> None:
            async with gate:
                await (client or (client_a, client_b)[i % 2]).start_workflow(
                    Onboarding.run, {**REQUEST, "email": f"r{i}@example.com"}, id=ids[i], task_queue=TASK_QUEUE
                )

        started_while_up = WORKFLOWS - STARTED_AFTER_RESTART - STARTED_WHILE_DOWN
        await asyncio.gather(*(start(i) for i in range(started_while_up)))
        phase("started")

        # Both workers, each through its own replica, do the work.
        await wait_until(
            lambda: starts_by(ledger, worker_a.pid, 0) and starts_by(ledger, worker_b.pid, 0),
            timeout=DEADLINE_S,
            what="both workers to run activities",
        )
        await wait_until(
            lambda: at_least(client_b, KILL_AT_COMPLETED),
            timeout=DEADLINE_S,
            what=f"{KILL_AT_COMPLETED} completed executions",
            interval=0.1,
        )

        # The load balancer takes A out and A dies mid-run.
        balancer.point_to(replica_b.port, cut=False)
        replica_a.kill9()
        killed_at = time.time()
        phase("killed")
        completed_at_kill = await count_completed(client_b)
        assert completed_at_kill < WORKFLOWS - 2 * COMPLETED_WHILE_DOWN, "the kill came too late to be mid-run"
        await asyncio.gather(*(start(i, client_b) for i in range(started_while_up, WORKFLOWS - STARTED_AFTER_RESTART)))

        # Progress without A: executions complete, and both workers (worker a now
        # through B) keep running activities.
        await wait_until(
            lambda: at_least(client_b, completed_at_kill + COMPLETED_WHILE_DOWN),
            timeout=DEADLINE_S,
            what="executions to complete while A is down",
            interval=0.1,
        )
        await wait_until(
            lambda: min(starts_by(ledger, worker_a.pid, killed_at), starts_by(ledger, worker_b.pid, killed_at)) >= 10,
            timeout=DEADLINE_S,
            what="both workers to run activities while A is down",
        )
        completed_while_down = await count_completed(client_b) - completed_at_kill
        assert replica_a.process is not None and replica_a.process.poll() is not None

        # A restarts on its port and goes back behind the balancer, which drops its
        # connections to B: worker a reconnects, to A.
        await asyncio.to_thread(replica_a.start)
        restarted_at = time.time()
        phase("restarted")
        balancer.point_to(replica_a.port, cut=True)
        await asyncio.gather(*(start(i) for i in range(WORKFLOWS - STARTED_AFTER_RESTART, WORKFLOWS)))
        await wait_until(
            lambda: starts_by(ledger, worker_a.pid, restarted_at) >= 10,
            timeout=DEADLINE_S,
            what="worker a to run activities through the restarted A",
        )

        await wait_until(
            lambda: at_least(client_b, WORKFLOWS), timeout=DEADLINE_S, what="every execution to complete", interval=0.2
        )
        assert worker_a.process.poll() is None and worker_b.process.poll() is None, "a worker died"
        phase("all completed")

        # Exactly one run per workflow id, completed.
        runs = [e async for e in client_b.list_workflows(page_size=1000)]
        assert sorted(e.workflow_id for e in runs) == sorted(ids)
        assert {e.status for e in runs} == {WorkflowExecutionStatus.COMPLETED}

        # Every history is whole, and both replicas serve the same one.
        client_on_a = await Client.connect(replica_a.address)
        stack.push_async_callback(client_on_a.close)
        gate = asyncio.Semaphore(20)

        async def histories(workflow_id: str) -> tuple[list[Any], list[Any]]:
            async with gate:
                return await history_of(client_b, workflow_id), await history_of(client_on_a, workflow_id)

        lost_leases: Counter[str] = Counter()
        timer_lateness = []
        # Activity completions by worker and by phase (A up, A down: B alone, A back),
        # from history: what the servers accepted, timed by the server that did.
        reported: Counter[tuple[str, str]] = Counter()
        workers = {str(worker_a.pid): "a", str(worker_b.pid): "b"}
        for workflow_id, (on_b, on_a) in zip(ids, await asyncio.gather(*(histories(i) for i in ids)), strict=False):
            check_history(workflow_id, on_b)
            assert on_a == on_b, f"{workflow_id}: the replicas disagree"
            times = {event_type: at for _, event_type, _, at in on_b if event_type in ("TimerStarted", "TimerFired")}
            timer_lateness.append(times["TimerFired"] - times["TimerStarted"] - REQUEST["cooling_off_seconds"])
            for _, event_type, attributes, at in on_b:
                if event_type == "ActivityTaskCompleted":
                    when = "down" if killed_at < at < restarted_at else "back" if at > restarted_at else "up"
                    reported[workers[attributes["identity"].split("@")[0]], when] += 1
                retried = event_type == "ActivityTaskStarted" and attributes["attempt"] > 1
                if retried or event_type == "WorkflowTaskTimedOut":
                    lost_leases[event_type] += 1
        # While A was down, B accepted the reports of both workers; afterwards
        # worker a's reports arrived through the restarted A.
        assert min(reported["a", "down"], reported["b", "down"], reported["a", "back"]) >= 5, reported
        results = await asyncio.gather(*(client_b.get_workflow_handle(i).result() for i in ids))
        assert [r["notification"]["sent_to"] for r in results] == [f"r{i}@example.com" for i in range(WORKFLOWS)]

        # No activity task was handed out twice under one fencing token, and every
        # attempt's token names the run and kind the activity belongs to.
        entries = read_ledger(ledger)
        starts = [e for e in entries if e["event"] == "start"]
        leases = Counter((e["task_id"], e["fencing_token"]) for e in starts)
        assert [lease for lease, n in leases.items() if n > 1] == []
        assert all(
            e["kind"] == "ACTIVITY" and e["token_run_id"] == e["run_id"] and e["namespace"] == "default" for e in starts
        )
        # One task per activity: its attempts share the task id and idempotency key,
        # and each later attempt holds a newer fencing token.
        by_key: dict[str, list[dict[str, Any]]] = {}
        for e in starts:
            by_key.setdefault(e["idempotency_key"], []).append(e)
        assert len(by_key) == WORKFLOWS * 6
        for attempts in by_key.values():
            assert len({e["task_id"] for e in attempts}) == 1
            attempts.sort(key=lambda e: e["attempt"])
            tokens = [e["fencing_token"] for e in attempts]
            assert tokens == sorted(set(tokens)), attempts
        finished = Counter(e["idempotency_key"] for e in entries if e["event"] == "done")
        assert set(finished) == set(by_key)

        pids = Counter(e["pid"] for e in starts)
        assert set(pids) == {worker_a.pid, worker_b.pid}
        phase("checked")
        print(
            f"\n{WORKFLOWS} workflows; completed at kill {completed_at_kill}, while A was down "
            f"{completed_while_down} in {restarted_at - killed_at:.1f}s; activity attempts run {len(starts)} "
            f"(repeats {len(starts) - len(by_key)}), by worker a {pids[worker_a.pid]}, b {pids[worker_b.pid]}; "
            f"leases lost and retried after their timeout: {lost_leases['ActivityTaskStarted']} activity, "
            f"{lost_leases['WorkflowTaskTimedOut']} workflow task; completions accepted (worker, phase): "
            f"{dict(sorted(reported.items()))}; timers late by p50 "
            f"{statistics.median(timer_lateness):.2f}s, max {max(timer_lateness):.2f}s; " + ", ".join(phases)
        )


if __name__ == "__main__":
    import logging

    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    asyncio.run(worker_main(sys.argv[1], sys.argv[2]))
