"""Due timers fire in batches, exactly once, however many replicas claim them.

- Two transactions claiming due timers at the same time take disjoint batches
  (``FOR UPDATE SKIP LOCKED`` on PostgreSQL): replicas split a backlog instead of
  walking the same list.
- Many timers falling due together on two replicas (PostgreSQL; one server on
  SQLite) each produce exactly one ``TimerFired``, and the timekeepers together
  claim each timer once.
- Two server processes (PostgreSQL), each firing ahead of time on the wall clock,
  fire a burst of their executions' timers exactly once each.
- On PostgreSQL, timers claimed ahead of their due time are written at once and
  committed at due: before it nothing shows, at it they all fire, once each, in
  ``ceil(count / batch)`` transactions. SQLite (one writer) never holds its write
  lock waiting for a due time. A claim ahead of time takes one window of due times
  from the earliest unclaimed timer, and every timer already due. While a batch waits,
  its writes are at the database, and a signal or terminate of its runs waits for its
  commit (no deadlock) and lands after the TimerFired.

The servers run on a :class:`ManualClock`, so "due together" is one clock jump.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from flowforge import Client, workflow
from flowforge.api.v1 import command_pb2, common_pb2
from flowforge.server import FlowForgeServer, ServerConfig
from flowforge.server.clock import ManualClock
from flowforge.server.history import HistoryEngine, StartSignal
from flowforge.server.stores.base import HistoryEventRow, Store, TimerRow
from flowforge.worker import Worker
from tests.integration._processes import ServerProcess
from tests.integration._protocol import NS, start_timer
from testsupport.store_rows import execution
from testsupport.waiting import wait_until

TIMERS = 120
TIMER_S = 60.0
BATCH = 10
DEADLINE_S = 30.0
PROCESS_TIMERS = 150


@pytest.mark.postgres
async def test_concurrent_claims_take_disjoint_batches(postgres_dsn: str) -> None:
    from flowforge.server.app import open_store

    stores: list[Store] = [open_store(postgres_dsn), open_store(postgres_dsn)]
    for store in stores:
        await store.open()
    try:
        async with stores[0].transaction() as tx:
            for index in range(10):
                await tx.insert_execution(
                    execution(f"run-{index}", namespace=NS, run_id=f"run-{index}", workflow_type="wf", start_us=0)
                )
                await tx.insert_timer(TimerRow(NS, f"run-{index}", "t", 1, 100 + index))
        async with stores[0].transaction() as first:
            first_batch = await first.claim_due_timers(1_000, 4)
            # The first batch is still uncommitted: the second claimer skips its rows
            # instead of waiting for them or taking them too.
            async with stores[1].transaction() as second:
                second_batch = await asyncio.wait_for(second.claim_due_timers(1_000, 4), 5.0)
        assert [t.run_id for t in sorted(first_batch, key=lambda t: t.fire_us)] == [f"run-{i}" for i in range(4)]
        assert [t.run_id for t in sorted(second_batch, key=lambda t: t.fire_us)] == [f"run-{i}" for i in range(4, 8)]
        async with stores[1].read() as tx:
            assert [t.run_id for t in await tx.due_timers(1_000, 10)] == ["run-8", "run-9"]
    finally:
        for store in stores:
            await store.close()


@pytest.fixture
async def replicas(store_kind: str, store_url: str) -> AsyncIterator[tuple[ManualClock, list[FlowForgeServer]]]:
    """Two replicas on PostgreSQL, one server on SQLite; one manual clock for all."""
    clock = ManualClock()
    servers: list[FlowForgeServer] = []
    try:
        for _ in range(2 if store_kind == "postgresql" else 1):
            server = FlowForgeServer(ServerConfig(store=store_url, port=0, clock=clock, shutdown_grace_s=1.0))
            server.timekeeper._timer_batch = BATCH
            await server.start()
            servers.append(server)
        yield clock, servers
    finally:
        for server in servers:
            await server.stop()


async def _waiting_on_a_timer(engine: HistoryEngine, workflow_id: str) -> str:
    """Starts an execution whose first workflow task starts a TIMER_S timer; its run id."""
    return await _start_with_timers(engine, workflow_id, [start_timer("sleep", TIMER_S)])


async def _start_with_timers(
    engine: HistoryEngine, workflow_id: str, commands: list[command_pb2.Command], task_timeout_s: int = 0
) -> str:
    """Starts an execution whose first workflow task completes with ``commands``; its run id."""
    run_id, _ = await engine.start_workflow(
        namespace=NS,
        workflow_id=workflow_id,
        workflow_type="wf",
        task_queue="q",
        input=common_pb2.Payloads(),
        request_id=workflow_id,
        identity="test",
        execution_timeout_s=0,
        run_timeout_s=0,
        task_timeout_s=task_timeout_s,
    )
    leased = await engine.try_lease_workflow_task(NS, "q", "test")
    assert leased is not None and leased.execution.run_id == run_id
    await engine.complete_workflow_task(leased.token, NS, commands, "test", 0)
    return run_id


def _count_claims(
    server: FlowForgeServer, claims: collections.Counter[int], index: int, batches: list[int] | None = None
) -> None:
    """Adds up the timers each server's batches fired (and, given ``batches``, each
    non-empty batch's size: one batch is one transaction)."""
    fire = server.engine.fire_due_timers

    async def counted(limit: int, **ahead: Any) -> int:
        fired = await fire(limit, **ahead)
        claims[index] += fired
        if batches is not None and fired:
            batches.append(fired)
        return fired

    server.engine.fire_due_timers = counted  # type: ignore[method-assign]


async def test_many_timers_due_together_fire_exactly_once(
    replicas: tuple[ManualClock, list[FlowForgeServer]],
) -> None:
    clock, servers = replicas
    run_ids = [
        await _waiting_on_a_timer(servers[index % len(servers)].engine, f"timer-{index}") for index in range(TIMERS)
    ]
    claims: collections.Counter[int] = collections.Counter()
    for index, server in enumerate(servers):
        _count_claims(server, claims, index)
    store = servers[0].store

    async def fired_count() -> int:
        count = 0
        async with store.read() as tx:
            for run_id in run_ids:
                count += sum(1 for e in await tx.read_events(NS, run_id) if e.event_type == "TimerFired")
        return count

    assert await fired_count() == 0
    clock.advance(int(TIMER_S * 1e6) + 1)
    for server in servers:  # as a new deadline would: the timekeepers look now
        server.timekeeper.deadline_added(0)
    # Both timekeepers also drain the backlog concurrently from here.
    await asyncio.gather(*(_drain(server) for server in servers))
    await wait_until(lambda: _equals(fired_count, TIMERS), timeout=DEADLINE_S, what=f"{TIMERS} timers fired")

    async with store.read() as tx:
        for run_id in run_ids:
            events = await tx.read_events(NS, run_id)
            fired = [e for e in events if e.event_type == "TimerFired"]
            assert len(fired) == 1, f"run {run_id}: {len(fired)} TimerFired events"
            assert json.loads(fired[0].attributes)["timer_id"] == "sleep"
            assert [e.event_id for e in events] == list(range(1, len(events) + 1))
            assert events[-1].event_type == "WorkflowTaskScheduled"
        assert await tx.due_timers(clock.now_us(), 10) == []
    # Each timer was claimed by exactly one timekeeper: no duplicated firing work. (A
    # timekeeper counts its batch just after the commit the store already shows.)
    await wait_until(
        lambda: _at_least(claims, TIMERS), timeout=DEADLINE_S, what=f"the timekeepers counted {TIMERS} claims"
    )
    assert sum(claims.values()) == TIMERS, claims


async def _drain(server: FlowForgeServer) -> None:
    while await server.timekeeper.tick():
        pass


async def _at_least(claims: collections.Counter[int], expected: int) -> bool:
    return sum(claims.values()) >= expected


async def _equals(count: Callable[[], Awaitable[int]], expected: int) -> bool:
    return await count() == expected


async def test_several_timers_of_one_execution_fire_in_one_batch_in_due_order(
    replicas: tuple[ManualClock, list[FlowForgeServer]],
) -> None:
    """One batch holding three timers of one execution (and two of an execution whose
    workflow task is started) fires each once, in due order, with gapless history:
    the workflow's next task sees them in that order, the started one's are buffered
    until its task completes."""
    clock, servers = replicas
    engine = servers[0].engine
    timers = [start_timer("late", 30.0), start_timer("early", 10.0), start_timer("middle", 20.0)]

    # A task lease that outlasts the clock jump: the busy run's stays started.
    idle_run = await _start_with_timers(engine, "idle", timers, task_timeout_s=120)
    busy_run = await _start_with_timers(engine, "busy", timers[:2], task_timeout_s=120)
    # The busy run's workflow task is started (leased) when its timers fire.
    await engine.signal_workflow(NS, "busy", busy_run, StartSignal("poke", common_pb2.Payloads()), "test", "poke")
    busy_task = await engine.try_lease_workflow_task(NS, "q", "test")
    assert busy_task is not None and busy_task.execution.run_id == busy_run
    claims: collections.Counter[int] = collections.Counter()
    for index, server in enumerate(servers):
        _count_claims(server, claims, index)

    # One pass of one timekeeper, so all five timers are in one batch.
    for server in servers:
        await server.timekeeper.stop()
    clock.advance(int(30.0 * 1e6) + 1)
    assert await servers[0].timekeeper.tick() is False
    assert sum(claims.values()) == 5, claims

    def fired(events: list[HistoryEventRow]) -> list[str]:
        return [json.loads(e.attributes)["timer_id"] for e in events if e.event_type == "TimerFired"]

    async with servers[0].store.read() as tx:
        idle_events = await tx.read_events(NS, idle_run)
        busy_events = await tx.read_events(NS, busy_run)
        assert await tx.due_timers(clock.now_us(), 10) == []
    assert [e.event_id for e in idle_events] == list(range(1, len(idle_events) + 1))
    assert [e.event_type for e in idle_events[-4:]] == ["TimerFired"] * 3 + ["WorkflowTaskScheduled"]
    assert fired(idle_events) == ["early", "middle", "late"]
    assert fired(busy_events) == [], "fired while the workflow task is started: buffered"

    # The workflow code's view: its next task carries the timers in due order.
    idle_task = await engine.try_lease_workflow_task(NS, "q", "test")
    assert idle_task is not None and idle_task.execution.run_id == idle_run
    assert fired(idle_task.history) == ["early", "middle", "late"]
    await engine.complete_workflow_task(busy_task.token, NS, [], "test", 0)
    async with servers[0].store.read() as tx:
        busy_events = await tx.read_events(NS, busy_run)
    assert [e.event_id for e in busy_events] == list(range(1, len(busy_events) + 1))
    assert fired(busy_events) == ["early", "late"]
    assert busy_events[-1].event_type == "WorkflowTaskScheduled"


async def test_timers_fired_ahead_of_time_show_at_due_and_not_before(
    replicas: tuple[ManualClock, list[FlowForgeServer]], store_kind: str
) -> None:
    clock, servers = replicas
    if store_kind == "sqlite":
        # A single writer: a transaction held open until a due time would stall every report.
        assert servers[0].timekeeper._ahead_of_time is False
        return
    run_ids = [await _waiting_on_a_timer(servers[0].engine, f"ahead-{index}") for index in range(TIMERS)]
    async with servers[0].store.read() as tx:
        (due_us,) = {timer.fire_us for timer in await tx.due_timers(clock.now_us() + int(TIMER_S * 1e6), TIMERS)}
    claims: collections.Counter[int] = collections.Counter()
    batches: list[int] = []
    waiting: list[int] = []
    for index, server in enumerate(servers):
        # The passes are driven here; a manual clock is not fired ahead of by default
        # (it reaches a due time only when moved), so this test opts in.
        await server.timekeeper.stop()
        server.timekeeper._ahead_of_time = True
        server.timekeeper._lead_us = 2_000_000
        _count_claims(server, claims, index, batches)
        _count_waits(server, waiting)
    clock.set(due_us - 1_000_000)
    passes = [asyncio.create_task(server.timekeeper.tick()) for server in servers]
    firers = 2 * servers[0].timekeeper._timer_batches_at_once
    await wait_until(
        lambda: _at_least_waiting(waiting, firers), timeout=DEADLINE_S, what=f"{firers} batches written and waiting"
    )
    # Written, claimed, and not committed: nothing shows a second before due.
    async with servers[0].store.read() as tx:
        assert len(await tx.due_timers(due_us, TIMERS + 1)) == TIMERS
        for run_id in run_ids:
            assert [e.event_type for e in await tx.read_events(NS, run_id)][-1] == "TimerStarted"
    assert not any(task.done() for task in passes)
    clock.set(due_us)
    await asyncio.wait_for(asyncio.gather(*passes), DEADLINE_S)

    async with servers[0].store.read() as tx:
        for run_id in run_ids:
            events = await tx.read_events(NS, run_id)
            fired = [e for e in events if e.event_type == "TimerFired"]
            assert len(fired) == 1, f"run {run_id}: {len(fired)} TimerFired events"
            assert fired[0].event_us == due_us, "stamped with its due time: not before it"
            assert [e.event_id for e in events] == list(range(1, len(events) + 1))
            assert events[-1].event_type == "WorkflowTaskScheduled"
        assert await tx.due_timers(due_us, 10) == []
    assert sum(claims.values()) == TIMERS, claims
    # Full batches: one transaction per BATCH timers, however many firers claimed.
    assert batches == [BATCH] * (TIMERS // BATCH), batches


@pytest.mark.postgres
async def test_a_batch_written_ahead_of_time_has_sent_its_writes_while_it_waits(postgres_dsn: str) -> None:
    """What waits for the due time is the COMMIT alone: the batch's events, tasks and
    execution updates are at the database already (they are writes a PostgreSQL
    transaction may hold back to send together, and held back to the COMMIT they
    would be written at due, late by their size)."""
    clock = ManualClock()
    server = FlowForgeServer(ServerConfig(store=postgres_dsn, port=0, clock=clock, shutdown_grace_s=1.0))
    server.timekeeper._timer_batch = BATCH
    await server.start()
    try:
        for index in range(BATCH):
            await _waiting_on_a_timer(server.engine, f"sent-{index}")
        due_us, tick = await _hold_a_batch_until_due(server, clock, BATCH)
        # Another session sees the table locks a write takes (not its rows).
        outside = await asyncpg.connect(postgres_dsn)
        try:
            written = await outside.fetch(
                "SELECT DISTINCT c.relname FROM pg_locks AS l JOIN pg_class AS c ON c.oid = l.relation"
                " WHERE l.mode = 'RowExclusiveLock' AND l.pid <> pg_backend_pid()"
            )
        finally:
            await outside.close()
        assert {"history_events", "tasks", "executions"} <= {row["relname"] for row in written}
        assert not tick.done()
        clock.set(due_us)
        await asyncio.wait_for(tick, DEADLINE_S)
    finally:
        await server.stop()


@pytest.mark.postgres
async def test_a_signal_and_a_terminate_on_runs_of_a_held_batch_wait_for_its_commit(postgres_dsn: str) -> None:
    """A batch held open until its due time keeps its executions locked: a signal and a
    terminate of two of them wait on the lock (no deadlock, no error), then land after
    the TimerFired; the terminated run keeps no workflow task."""
    clock = ManualClock()
    server = FlowForgeServer(ServerConfig(store=postgres_dsn, port=0, clock=clock, shutdown_grace_s=1.0))
    await server.start()
    try:
        signalled, terminated = [await _waiting_on_a_timer(server.engine, f"held-{i}") for i in range(2)]
        due_us, tick = await _hold_a_batch_until_due(server, clock, 2)
        engine = server.engine
        reports = [
            asyncio.create_task(
                engine.signal_workflow(NS, "held-0", signalled, StartSignal("poke", common_pb2.Payloads()), "t", "r0")
            ),
            asyncio.create_task(engine.terminate(NS, "held-1", terminated, "stop", "t")),
        ]
        outside = await asyncpg.connect(postgres_dsn)
        try:

            async def both_wait_on_a_lock() -> bool:
                waits = await outside.fetchval(
                    "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()"
                )
                return bool(waits >= 2)

            await wait_until(both_wait_on_a_lock, timeout=DEADLINE_S, what="the signal and terminate on the lock")
        finally:
            await outside.close()
        assert not any(report.done() for report in reports)
        clock.set(due_us)
        await asyncio.wait_for(asyncio.gather(tick, *reports), DEADLINE_S)
        async with server.store.read() as tx:
            signalled_events = [e.event_type for e in await tx.read_events(NS, signalled)]
            terminated_events = [e.event_type for e in await tx.read_events(NS, terminated)]
            assert await tx.list_run_tasks(NS, terminated) == []
        assert signalled_events.index("TimerFired") < signalled_events.index("WorkflowExecutionSignaled")
        assert terminated_events[-3:] == ["TimerFired", "WorkflowTaskScheduled", "WorkflowExecutionTerminated"]
    finally:
        await server.stop()


async def _hold_a_batch_until_due(
    server: FlowForgeServer, clock: ManualClock, timers: int
) -> tuple[int, asyncio.Task[bool]]:
    """Has the timekeeper (fires ahead of time, 2 s lead) claim the ``timers`` waiting
    timers 1 s before their shared due time and hold their batch open; returns the due
    time and the tick, which ends once the clock reaches it."""
    async with server.store.read() as tx:
        (due_us,) = {timer.fire_us for timer in await tx.due_timers(clock.now_us() + int(TIMER_S * 1e6), timers)}
    await server.timekeeper.stop()
    server.timekeeper._ahead_of_time = True
    server.timekeeper._lead_us = 2_000_000
    waiting: list[int] = []
    _count_waits(server, waiting)
    clock.set(due_us - 1_000_000)
    tick = asyncio.create_task(server.timekeeper.tick())
    await wait_until(lambda: _at_least_waiting(waiting, 1), timeout=DEADLINE_S, what="a batch waiting for due")
    return due_us, tick


def _count_waits(server: FlowForgeServer, waiting: list[int]) -> None:
    """Notes each batch that waits for its due time (the time it waits for)."""
    wait = server.timekeeper._wait_until

    async def counted(when_us: int) -> None:
        waiting.append(when_us)
        await wait(when_us)

    server.timekeeper._wait_until = counted  # type: ignore[method-assign]


async def _at_least_waiting(waiting: list[int], expected: int) -> bool:
    return len(waiting) >= expected


@workflow.defn
class SleepsUntil:
    """Sleeps until an absolute instant (epoch seconds), so that many fall due together."""

    @workflow.run
    async def run(self, due_epoch_s: float) -> None:
        await workflow.sleep(timedelta(seconds=max(0.001, due_epoch_s - workflow.now().timestamp())))


@pytest.mark.postgres
async def test_a_burst_of_timers_fires_once_across_two_server_processes(postgres_dsn: str, tmp_path: Path) -> None:
    """Two ``flowforge server start`` processes on one database, each with its
    timekeeper on the wall clock (so firing ahead of time), a worker on each, and
    timers of many executions due at one instant: each fires exactly once, and every
    history is gapless and ends with the run completed."""
    servers = [ServerProcess(postgres_dsn, tmp_path, name=f"replica-{i}") for i in range(2)]
    for server in servers:
        server.start()
    clients: list[Client] = []
    try:
        clients = [await Client.connect(server.address) for server in servers]
        async with contextlib.AsyncExitStack() as stack:
            for client in clients:
                await stack.enter_async_context(Worker(client, task_queue="burst", workflows=[SleepsUntil]))
            # Far enough ahead for all starts to reach their timer on a loaded machine;
            # whether they do changes how the firing splits, not what is asserted.
            due = time.time() + 8.0
            handles = [
                await clients[i % 2].start_workflow(SleepsUntil.run, due, id=f"burst-{i}", task_queue="burst")
                for i in range(PROCESS_TIMERS)
            ]
            await asyncio.wait_for(asyncio.gather(*(handle.result() for handle in handles)), DEADLINE_S * 4)
    finally:
        for client in clients:
            await client.close()
        for server in servers:
            server.stop()
    from flowforge.server.app import open_store

    store = open_store(postgres_dsn)
    await store.open()
    try:
        async with store.read() as tx:
            for handle in handles:
                run = await tx.get_latest_execution(NS, handle.id)
                assert run is not None and run.status == "COMPLETED", handle.id
                events = await tx.read_events(NS, run.run_id)
                assert [e.event_type for e in events].count("TimerFired") == 1, handle.id
                assert [e.event_id for e in events] == list(range(1, len(events) + 1)), handle.id
    finally:
        await store.close()


async def test_a_claim_ahead_of_time_takes_one_window_and_every_overdue_timer(store: Store) -> None:
    """Ahead of time, a claim takes the earliest timer due by the horizon and those due
    within the window after it, and every timer already due (a backlog is one batch)."""
    async with store.transaction() as tx:
        for index, fire_us in enumerate((100, 200, 300, 1_050, 1_200, 1_260, 5_000)):
            await tx.insert_execution(
                execution(f"w-{index}", namespace=NS, run_id=f"run-{index}", workflow_type="wf", start_us=0)
            )
            await tx.insert_timer(TimerRow(NS, f"run-{index}", "t", 1, fire_us))

    async def claim() -> list[int]:
        async with store.transaction() as tx:
            claimed = await tx.claim_due_timers(2_000, 10, 100, 1_000)
        return sorted(t.fire_us for t in claimed)

    assert await claim() == [100, 200, 300]
    assert await claim() == [1_050]
    assert await claim() == [1_200, 1_260]
    assert await claim() == []
    async with store.read() as tx:
        assert [t.fire_us for t in await tx.due_timers(10_000, 10)] == [5_000]
