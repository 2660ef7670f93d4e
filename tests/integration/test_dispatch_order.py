"""Dispatch order on both stores (docs/flow-control.md), through the engine's lease path:
priority 1 before a backlog of priority 5, fairness keys in proportion to their
weights, a key that was idle served within a few dispatches, and a concurrency
limit that holds tasks out of the order (visibly) until a slot frees.

Backlogs are inserted through the store (as the engine's save does: passes first),
which is what thousands of scheduled activities leave behind, in seconds.
"""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import AsyncIterator

import pytest

from flowforge.api.schema import TaskKind
from flowforge.server.history import HistoryEngine
from flowforge.server.stores.base import Store, TaskRow
from flowforge.server.stores.rows import ExecutionRow
from tests.integration.test_stores import insert_run, task

_OPTIONS = '{"start_to_close_timeout": 60, "heartbeat_timeout": 0, "schedule_to_start_timeout": 0}'


@pytest.fixture
async def engine(store: Store) -> AsyncIterator[HistoryEngine]:
    engine = HistoryEngine(store)
    await engine.start()
    yield engine


def _task(run: ExecutionRow, activity_id: str, **changes: object) -> TaskRow:
    return task(run, activity_id, options=_OPTIONS, **changes)


async def _insert(store: Store, rows: list[TaskRow]) -> None:
    async with store.transaction() as tx:
        await tx.assign_fair_passes(rows)
        await tx.insert_tasks(rows)


async def _dispatch(engine: HistoryEngine, count: int) -> list[TaskRow]:
    leased = []
    for _ in range(count):
        lease = await engine.try_lease_activity_task("default", "q", "w")
        assert lease is not None
        leased.append(lease.task)
    return leased


async def test_priority_1_starts_within_the_next_dispatches_behind_thousands_of_priority_5(
    store: Store, engine: HistoryEngine
) -> None:
    run = await insert_run(store)
    await _insert(store, [_task(run, f"bulk-{i}", priority_key=5) for i in range(3000)])
    await _dispatch(engine, 5)
    await _insert(store, [_task(run, f"urgent-{i}", priority_key=1) for i in range(3)])
    await _insert(store, [_task(run, "normal", priority_key=3)])
    leased = [t.activity_id for t in await _dispatch(engine, 5)]
    assert leased[:4] == ["urgent-0", "urgent-1", "urgent-2", "normal"], leased
    assert leased[4] is not None and leased[4].startswith("bulk-")


async def test_fairness_keys_share_dispatches_in_proportion_to_their_weights(
    store: Store, engine: HistoryEngine
) -> None:
    run = await insert_run(store)
    await _insert(store, [_task(run, f"big-{i}", fairness_key="big") for i in range(10_000)])
    await _insert(store, [_task(run, f"small-{i}", fairness_key="small") for i in range(10)])
    first = collections.Counter(t.fairness_key for t in await _dispatch(engine, 20))
    assert first == {"big": 10, "small": 10}, "equal weights: round robin while both have tasks"

    # After 100 dispatches of the big key alone, a key that was idle is served at once
    # (it starts at the queue's virtual time, not behind the big key's backlog) ...
    await _dispatch(engine, 100)
    await _insert(store, [_task(run, "late-0", fairness_key="late")])
    assert "late-0" in [t.activity_id for t in await _dispatch(engine, 2)]

    # ... and a weight of 3 takes three dispatches for each of weight 1.
    await _insert(store, [_task(run, f"heavy-{i}", fairness_key="heavy", fairness_weight=3.0) for i in range(100)])
    shares = collections.Counter(t.fairness_key for t in await _dispatch(engine, 40))
    assert 28 <= shares["heavy"] <= 32 and shares["heavy"] + shares["big"] == 40, shares


async def test_tasks_over_a_concurrency_limit_are_held_visibly_and_released_in_order(
    store: Store, engine: HistoryEngine
) -> None:
    run = await insert_run(store)
    await engine.set_concurrency_limit("default", "partner", 2)
    limited = [_task(run, f"p-{i}", concurrency_key="partner", priority_key=3) for i in range(5)]
    urgent = _task(run, "p-urgent", concurrency_key="partner", priority_key=1)
    free = _task(run, "free")
    await _insert(store, [*limited, free])
    leased = await _dispatch(engine, 3)
    assert [t.activity_id for t in leased] == ["p-0", "p-1", "free"], "held tasks do not block the ones behind"
    assert await engine.try_lease_activity_task("default", "q", "w") is None
    await _insert(store, [urgent])
    assert await engine.try_lease_activity_task("default", "q", "w") is None

    async with store.read() as tx:
        held = {t.activity_id: t for t in await tx.list_run_tasks("default", run.run_id) if t.held}
    assert set(held) == {"p-2", "p-3", "p-4", "p-urgent"}
    from flowforge.server.history.flow_control import waiting_reason

    assert waiting_reason(held["p-2"]) == "waiting for a slot of concurrency key partner"
    (limit,) = await engine.list_concurrency_limits("default")
    assert (limit.concurrency_key, limit.max_running, limit.running, limit.waiting) == ("partner", 2, 2, 4)

    # A slot frees (the task ends): the best held task, by priority, takes it.
    async with store.transaction() as tx:
        await tx.delete_task(leased[0].task_id or 0)
        await engine.release_slots(tx, "default", "partner")
    (next_one,) = await _dispatch(engine, 1)
    assert next_one.activity_id == "p-urgent"
    assert await engine.try_lease_activity_task("default", "q", "w") is None

    # Removing the limit releases every held task.
    await engine.set_concurrency_limit("default", "partner", 0)
    assert sorted(t.activity_id or "" for t in await _dispatch(engine, 3)) == ["p-2", "p-3", "p-4"]
    assert await engine.list_concurrency_limits("default") == []


async def test_workflow_tasks_follow_their_runs_priority(store: Store, engine: HistoryEngine) -> None:
    low = await insert_run(store, run_id="low-run", workflow_id="low", priority_key=5)
    high = await insert_run(store, run_id="high-run", workflow_id="high", priority_key=1)
    rows = [
        dataclasses.replace(_task(r, None), kind=TaskKind.WORKFLOW, activity_type=None, priority_key=r.priority_key)
        for r in (low, high)
    ]
    await _insert(store, rows)
    async with store.transaction() as tx:
        first = await tx.lease_next_task("default", TaskKind.WORKFLOW, "q", engine.clock.now_us())
    assert first is not None and first.run_id == "high-run"


async def test_a_rate_limit_on_a_key_delays_its_tasks_without_blocking_others(
    store: Store, engine: HistoryEngine
) -> None:
    run = await insert_run(store)
    # One token per 20 s: the test's leases all fall inside one interval even on a
    # loaded machine (at 0.5 a second token could come due between two of them).
    await engine.set_rate_limit("default", "concurrency_key", "slow-api", 0.05)
    await _insert(store, [*(_task(run, f"s-{i}", concurrency_key="slow-api") for i in range(3)), _task(run, "free")])
    leased = [t.activity_id for t in await _dispatch(engine, 2)]
    assert leased == ["s-0", "free"], "one token for the key; its other tasks wait, the free one goes"
    assert await engine.try_lease_activity_task("default", "q", "w") is None
    async with store.read() as tx:
        waiting = [t for t in await tx.list_run_tasks("default", run.run_id) if t.state == "PENDING"]
    assert {t.activity_id for t in waiting} == {"s-1", "s-2"}
    assert all(t.visible_us > engine.clock.now_us() for t in waiting), "they wait for the next token"
    (rate,) = await engine.list_rate_limits("default")
    assert (rate.scope, rate.name, rate.per_second) == ("concurrency_key", "slow-api", 0.05)


async def test_waiting_for_a_slot_does_not_count_against_schedule_to_start(store: Store, engine: HistoryEngine) -> None:
    run = await insert_run(store)
    await engine.set_concurrency_limit("default", "one-at-a-time", 1)
    options = '{"start_to_close_timeout": 60, "heartbeat_timeout": 0, "schedule_to_start_timeout": 1}'
    soon = engine.clock.now_us() + 1_000_000
    rows = [
        task(run, f"k-{i}", options=options, concurrency_key="one-at-a-time", pending_deadline_us=soon)
        for i in range(2)
    ]
    await _insert(store, rows)
    (first,) = await _dispatch(engine, 1)
    assert await engine.try_lease_activity_task("default", "q", "w") is None
    async with store.read() as tx:
        (held,) = [t for t in await tx.list_run_tasks("default", run.run_id) if t.held]
    assert held.pending_deadline_us is None, "no schedule-to-start deadline while it waits for a slot"
    releasing = engine.clock.now_us()
    async with store.transaction() as tx:
        await tx.delete_task(first.task_id or 0)
        await engine.release_slots(tx, "default", "one-at-a-time")
    async with store.read() as tx:
        released = await tx.get_task(held.task_id or 0)
    assert released is not None and released.held is None
    assert released.pending_deadline_us is not None
    # Measured from just before the release, not from now: on a loaded machine the
    # release and the read can take longer than the slack a later "now" would leave.
    assert released.pending_deadline_us >= releasing + 1_000_000, "schedule-to-start counts from the release"
