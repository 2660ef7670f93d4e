"""The store conformance suite: one behaviour, two stores.

Every test taking ``store`` runs against SQLite and PostgreSQL (see tests/conftest.py).
The tests at the end are PostgreSQL-only: real concurrency (SKIP LOCKED, two writers
on one execution row), wake-ups across replicas, and outages.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import json
import sqlite3
import threading
import time
import urllib.parse
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import asyncpg
import pytest

from flowforge.server.stores.base import (
    ChildExecutionRow,
    ConcurrencyConflict,
    DuplicateRunningExecution,
    ExecutionRow,
    HistoryEventRow,
    NamespaceRow,
    Notifier,
    QueryRow,
    Store,
    StoreUnavailable,
    TaskRow,
    TimerRow,
)
from flowforge.server.stores.postgres import PostgresStore, _numbered, _PostgresTransaction
from flowforge.server.stores.sqlite import SQLiteStore
from testsupport.postgres import free_port, with_address
from testsupport.store_rows import NOW, execution
from testsupport.tcp_proxy import TcpProxy
from testsupport.waiting import wait_until

# What each database raises for a violated constraint.
INTEGRITY_ERRORS = (sqlite3.IntegrityError, asyncpg.IntegrityConstraintViolationError)
# Generous: two busy cores, fsync on every commit.
DEADLINE_S = 10.0


def task(run: ExecutionRow, activity_id: str | None = "a1", **changes: object) -> TaskRow:
    row = TaskRow(
        task_id=None,
        namespace=run.namespace,
        run_id=run.run_id,
        workflow_id=run.workflow_id,
        workflow_type=run.workflow_type,
        kind="ACTIVITY",
        task_queue="q",
        state="PENDING",
        visible_us=NOW,
        lease_expires_us=None,
        fencing_token=0,
        attempt=1,
        scheduled_event_id=5,
        activity_id=activity_id,
        activity_type="charge",
        input=b"\x00\x01payload\xff",
        options='{"start_to_close_timeout": 10}',
        scheduled_us=NOW,
        started_us=None,
        pending_deadline_us=None,
        schedule_to_close_deadline_us=None,
        last_heartbeat_us=None,
        heartbeat_details=None,
        last_failure=None,
        retry_delays="[]",
        identity="",
        cancel_requested=0,
    )
    return dataclasses.replace(row, **changes)


def event(event_id: int, event_type: str = "ActivityTaskScheduled") -> HistoryEventRow:
    return HistoryEventRow(event_id, event_type, NOW + event_id, f'{{"n": {event_id}}}')


def pending_query(run: ExecutionRow, visible_us: int) -> QueryRow:
    """A query of ``run`` on queue "q" waiting for a worker from ``visible_us`` on."""
    return QueryRow(
        query_id=None,
        namespace="default",
        run_id=run.run_id,
        workflow_id=run.workflow_id,
        workflow_type=run.workflow_type,
        task_queue="q",
        query_type="status",
        args=b"",
        state="PENDING",
        visible_us=visible_us,
        fencing_token=0,
        answer=None,
        error=None,
        create_us=NOW,
        expires_us=NOW + 99,
    )


async def insert_run(store: Store, **changes: object) -> ExecutionRow:
    row = execution(**changes)
    async with store.transaction() as tx:
        await tx.insert_execution(row)
        await tx.append_events(row.namespace, row.run_id, [event(1, "WorkflowExecutionStarted")])
    return row


async def insert_tasks(store: Store, *rows: TaskRow) -> list[int]:
    async with store.transaction() as tx:
        for row in rows:
            await tx.insert_task(row)
    return [row.task_id or 0 for row in rows]


async def lease(store: Store, queue: str = "q", now: int = NOW) -> TaskRow | None:
    """What a poll does: lease the next task and mark it LEASED, in one transaction."""
    async with store.transaction() as tx:
        row = await tx.lease_next_task("default", "ACTIVITY", queue, now)
        if row is not None:
            row.state, row.lease_expires_us, row.fencing_token = "LEASED", now + 10_000_000, row.fencing_token + 1
            await tx.update_task(row)
        return row


async def visible_run(store: Store, row: ExecutionRow) -> ExecutionRow | None:
    async with store.read() as tx:
        return await tx.get_execution(row.namespace, row.run_id)


# ---------------------------------------------------------------- transactions


async def test_rows_round_trip_unchanged(store: Store) -> None:
    run = execution(wft_timeout_s=7, deadline_us=NOW + 5, deadline_kind="RUN", last_wft_failure='{"x": 1}')
    written = task(run, heartbeat_details=b"\x00", pending_deadline_us=NOW + 9, last_failure='{"m": "x"}')
    async with store.transaction() as tx:
        await tx.insert_execution(run)
        await tx.insert_task(written)
    async with store.read() as tx:
        assert await tx.get_execution("default", run.run_id) == run
        stored = await tx.get_task(written.task_id or 0)
    assert stored == written
    assert isinstance(stored.input, bytes) and isinstance(stored.task_id, int)


async def test_transaction_commits_state_events_and_tasks_together(store: Store) -> None:
    run = execution()
    async with store.transaction() as tx:
        await tx.insert_execution(run)
        await tx.append_events("default", run.run_id, [event(1), event(2)])
        inserted = task(run)
        await tx.insert_task(inserted)
        await tx.insert_timer(TimerRow("default", run.run_id, "t1", 2, NOW + 1))
        assert await visible_run(store, run) is None, "uncommitted writes are visible to readers"
    async with store.read() as tx:
        assert await tx.get_execution("default", run.run_id) == run
        assert [e.event_id for e in await tx.read_events("default", run.run_id)] == [1, 2]
        assert [t.task_id for t in await tx.list_run_tasks("default", run.run_id)] == [inserted.task_id]
        assert isinstance(inserted.task_id, int)
        assert await tx.due_timers(NOW + 1, 10) == [TimerRow("default", run.run_id, "t1", 2, NOW + 1)]


async def test_exception_rolls_back_everything(store: Store) -> None:
    run = execution()
    with pytest.raises(RuntimeError, match="boom"):
        async with store.transaction() as tx:
            await tx.insert_execution(run)
            await tx.append_events("default", run.run_id, [event(1)])
            await tx.insert_task(task(run))
            await tx.insert_timer(TimerRow("default", run.run_id, "t1", 1, NOW))
            raise RuntimeError("boom")
    async with store.read() as tx:
        assert await tx.get_execution("default", run.run_id) is None
        assert await tx.read_events("default", run.run_id) == []
        assert await tx.list_run_tasks("default", run.run_id) == []
        assert await tx.due_timers(NOW, 10) == []
    # The store is usable afterwards.
    assert await visible_run(store, await insert_run(store)) is not None


async def test_read_sees_one_snapshot(store: Store) -> None:
    run = await insert_run(store)
    async with store.read() as reader:
        before = await reader.get_execution("default", run.run_id)
        async with store.transaction() as tx:
            await tx.update_execution(dataclasses.replace(run, task_queue="other"), expected_version=1)
        assert await reader.get_execution("default", run.run_id) == before
    assert (await visible_run(store, run)).task_queue == "other"


async def test_a_one_statement_read_runs_its_select_alone(store: Store) -> None:
    run = await insert_run(store)
    async with store.read(one_statement=True) as tx:
        assert await tx.get_execution("default", run.run_id) == run
    if isinstance(store, PostgresStore):
        # No transaction around it: the SELECT is the one round trip, and a second
        # statement (another snapshot) or a write (committed at once) is refused.
        assert tx.round_trips == 1  # type: ignore[attr-defined]
        with pytest.raises(RuntimeError, match="one SELECT"):
            async with store.read(one_statement=True) as tx:
                await tx.get_execution("default", run.run_id)
                await tx.read_events("default", run.run_id)
        with pytest.raises(RuntimeError, match="one SELECT"):
            async with store.read(one_statement=True) as tx:
                await tx.delete_run_tasks(run.run_id)
    assert await visible_run(store, run) == run


async def test_a_runs_workflow_task_replaced_in_one_transaction(store: Store) -> None:
    # One workflow task per run (a unique index): the ended task's row is deleted and the
    # next one inserted in the same transaction, as a workflow task completion does.
    run = await insert_run(store)
    (ended,) = await insert_tasks(store, task(run, activity_id=None, kind="WORKFLOW"))
    following = task(run, activity_id=None, kind="WORKFLOW")
    async with store.transaction() as tx:
        await tx.delete_task(ended)
        await tx.update_execution(dataclasses.replace(run, next_event_id=3), expected_version=1)
        await tx.insert_task(following)
    async with store.read() as tx:
        assert [t.task_id for t in await tx.list_run_tasks("default", run.run_id)] == [following.task_id]
    assert following.task_id != ended


async def test_a_polls_look_counts_visible_workflow_tasks_and_sees_a_waiting_query(store: Store) -> None:
    run = await insert_run(store)
    await insert_tasks(store, task(run, activity_id=None, kind="WORKFLOW"), task(run, visible_us=NOW + 5))
    async with store.read(one_statement=True) as tx:
        assert await tx.visible_workflow_work("default", "q", NOW, 10) == (False, 1)
    async with store.transaction() as tx:
        await tx.insert_query(pending_query(run, visible_us=NOW))
    async with store.read(one_statement=True) as tx:
        assert await tx.visible_workflow_work("default", "q", NOW, 10) == (True, 1)
    # Another queue's look sees neither.
    async with store.read(one_statement=True) as tx:
        assert await tx.visible_workflow_work("default", "other", NOW, 10) == (False, 0)


async def test_stale_version_conflicts_and_changes_nothing(store: Store) -> None:
    run = await insert_run(store)
    async with store.transaction() as tx:
        await tx.update_execution(dataclasses.replace(run, next_event_id=3), expected_version=1)
    with pytest.raises(ConcurrencyConflict):
        async with store.transaction() as tx:
            await tx.append_events("default", run.run_id, [event(2)])
            await tx.update_execution(dataclasses.replace(run, next_event_id=9), expected_version=1)
    stored = await visible_run(store, run)
    assert (stored.version, stored.next_event_id) == (2, 3)
    async with store.read() as tx:
        assert [e.event_id for e in await tx.read_events("default", run.run_id)] == [1]


async def test_an_update_naming_its_changed_columns_writes_them_and_checks_the_version(store: Store) -> None:
    run = await insert_run(store, workflow_id="named-columns")
    closed = dataclasses.replace(run, status="COMPLETED", close_us=NOW + 1, next_event_id=3)
    async with store.transaction() as tx:
        await tx.update_execution(closed, expected_version=1, changed=("status", "close_us", "next_event_id"))
    assert await visible_run(store, run) == dataclasses.replace(closed, version=2)
    # The indexes follow the written columns: the workflow id has no running run now.
    async with store.transaction() as tx:
        await tx.insert_execution(execution(workflow_id="named-columns"))
    with pytest.raises(ConcurrencyConflict):
        async with store.transaction() as tx:
            stale = dataclasses.replace(closed, next_event_id=9)
            await tx.update_execution(stale, expected_version=1, changed=("next_event_id",))
    stored = await visible_run(store, run)
    assert stored is not None and (stored.version, stored.next_event_id) == (2, 3)


async def test_a_stale_update_conflicts_before_its_events_collide_with_the_winners(store: Store) -> None:
    # A poll's lease reads its run without a lock: another writer may append the same
    # event ids first. The loser must see a conflict (and be retried), not a key error.
    run = await insert_run(store)
    async with store.transaction() as tx:
        await tx.update_execution(dataclasses.replace(run, next_event_id=3), expected_version=1)
        await tx.append_events("default", run.run_id, [event(2)])
    with pytest.raises(ConcurrencyConflict):
        async with store.transaction() as tx:
            await tx.update_execution(dataclasses.replace(run, next_event_id=3), expected_version=1)
            await tx.append_events("default", run.run_id, [event(2, "ActivityTaskCompleted")])
    async with store.read() as tx:
        assert [e.event_type for e in await tx.read_events("default", run.run_id)][1] == "ActivityTaskScheduled"


async def test_one_running_execution_per_workflow_id(store: Store) -> None:
    first = await insert_run(store, workflow_id="onb-1")
    second = execution(workflow_id="onb-1")
    async with store.transaction() as tx:
        with pytest.raises(DuplicateRunningExecution):
            await tx.insert_execution(second)
        # The transaction stays usable: the engine names the running run in the error.
        assert (await tx.get_latest_execution("default", "onb-1")).run_id == first.run_id
    assert await visible_run(store, second) is None

    async with store.transaction() as tx:
        await tx.insert_namespace(NamespaceRow("other", "", 86400, NOW))
        await tx.insert_execution(execution(workflow_id="onb-1", namespace="other"))
        closed = dataclasses.replace(first, status="COMPLETED", close_us=NOW + 1)
        await tx.update_execution(closed, expected_version=1)
        await tx.insert_execution(second)
    async with store.read() as tx:
        assert (await tx.get_latest_execution("default", "onb-1")).run_id == second.run_id


async def test_duplicate_event_id_fails_the_transaction(store: Store) -> None:
    run = await insert_run(store)
    with pytest.raises(INTEGRITY_ERRORS):
        async with store.transaction() as tx:
            await tx.append_events("default", run.run_id, [event(2), event(1)])
    async with store.read() as tx:
        assert [e.event_id for e in await tx.read_events("default", run.run_id)] == [1]


CHECKS = {
    "leased-without-expiry": ("ck_tasks_lease_iff_leased", {"state": "LEASED"}),
    "pending-with-expiry": ("ck_tasks_lease_iff_leased", {"lease_expires_us": NOW}),
    "negative-fencing-token": ("ck_tasks_fencing_token_nonnegative", {"fencing_token": -1}),
    "attempt-zero": ("ck_tasks_attempt_positive", {"attempt": 0}),
    "unknown-state": ("ck_tasks_state", {"state": "DONE", "lease_expires_us": None}),
}


@pytest.mark.parametrize("case", list(CHECKS))
async def test_task_check_constraints(store: Store, case: str) -> None:
    constraint, changes = CHECKS[case]
    run = await insert_run(store)
    with pytest.raises(INTEGRITY_ERRORS, match=constraint):
        await insert_tasks(store, task(run, **changes))
    # The same invariant holds for updates.
    (task_id,) = await insert_tasks(store, task(run))
    with pytest.raises(INTEGRITY_ERRORS, match=constraint):
        async with store.transaction() as tx:
            await tx.update_task(task(run, task_id=task_id, **changes))
    async with store.read() as tx:
        assert [(t.task_id, t.state) for t in await tx.list_run_tasks("default", run.run_id)] == [(task_id, "PENDING")]


@pytest.mark.parametrize(
    "changes",
    [{"status": "COMPLETED"}, {"close_us": NOW}],
    ids=["closed-without-close-time", "running-with-close-time"],
)
async def test_execution_close_time_check(store: Store, changes: dict[str, object]) -> None:
    row = execution(**changes)
    with pytest.raises(INTEGRITY_ERRORS, match="ck_executions_close_time"):
        async with store.transaction() as tx:
            await tx.insert_execution(row)
    assert await visible_run(store, row) is None


# ---------------------------------------------------------------- task leasing


async def test_lease_returns_oldest_visible_task_first(store: Store) -> None:
    run = await insert_run(store)
    future, late, early, tie, _other_queue, _leased = await insert_tasks(
        store,
        task(run, "future", visible_us=NOW + 1),
        task(run, "late", visible_us=NOW - 1_000),
        task(run, "early", visible_us=NOW - 5_000),
        task(run, "tie", visible_us=NOW - 1_000),
        task(run, "elsewhere", task_queue="other", visible_us=NOW - 9_000),
        task(run, "taken", visible_us=NOW - 9_000, state="LEASED", lease_expires_us=NOW + 1),
    )
    async with store.transaction() as tx:
        await tx.insert_task(task(run, None, kind="WORKFLOW", activity_type=None, visible_us=NOW - 9_000))
    assert [(await lease(store)).task_id for _ in range(3)] == [early, late, tie]
    assert await lease(store) is None, "a task was handed out before it became visible"
    assert (await lease(store, now=NOW + 1)).task_id == future


async def test_has_visible_task_sees_only_pending_visible_tasks_of_its_queue(store: Store) -> None:
    run = await insert_run(store)
    await insert_tasks(
        store,
        task(run, "future", visible_us=NOW + 1),
        task(run, "elsewhere", task_queue="other", visible_us=NOW - 1),
        task(run, "taken", visible_us=NOW - 1, state="LEASED", lease_expires_us=NOW + 1),
    )
    async with store.read() as tx:
        assert not await tx.has_visible_task("default", "ACTIVITY", "q", NOW)
        assert await tx.has_visible_task("default", "ACTIVITY", "q", NOW + 1)
        assert await tx.has_visible_task("default", "ACTIVITY", "other", NOW)
        assert not await tx.has_visible_task("default", "WORKFLOW", "other", NOW)


async def test_count_visible_tasks_counts_up_to_the_limit(store: Store) -> None:
    run = await insert_run(store)
    await insert_tasks(
        store,
        *(task(run, f"ready-{i}", visible_us=NOW - 1) for i in range(3)),
        task(run, "future", visible_us=NOW + 1),
        task(run, "taken", visible_us=NOW - 1, state="LEASED", lease_expires_us=NOW + 1),
    )
    async with store.read() as tx:
        assert await tx.count_visible_tasks("default", "ACTIVITY", "q", NOW, 16) == 3
        assert await tx.count_visible_tasks("default", "ACTIVITY", "q", NOW, 2) == 2
        assert await tx.count_visible_tasks("default", "ACTIVITY", "q", NOW + 1, 16) == 4
        assert await tx.count_visible_tasks("default", "WORKFLOW", "q", NOW, 16) == 0


async def test_concurrent_leases_never_share_a_task(store: Store) -> None:
    run = await insert_run(store)
    task_ids = await insert_tasks(store, *(task(run, f"a{i}", visible_us=NOW - i) for i in range(40)))
    leased: list[int] = []

    async def poller() -> None:
        while (row := await lease(store)) is not None:
            leased.append(row.task_id or 0)

    await asyncio.gather(*(poller() for _ in range(8)))
    assert sorted(leased) == sorted(task_ids)


async def test_delete_timer_claims_once(store: Store) -> None:
    run = await insert_run(store)
    timer = TimerRow("default", run.run_id, "t1", 1, NOW)
    async with store.transaction() as tx:
        await tx.insert_timer(timer)
    async with store.transaction() as tx:
        assert await tx.delete_timer(run.run_id, "t1") == timer
    async with store.transaction() as tx:
        assert await tx.delete_timer(run.run_id, "t1") is None


async def test_a_runs_activity_tasks_and_timers_are_read_by_id_in_one_statement(store: Store) -> None:
    """What a workflow task's commands need of their run: only the ids asked for, of that run."""
    run, other = await insert_run(store), await insert_run(store, workflow_id="wf-other")
    await insert_tasks(store, task(run, "a1"), task(run, "a2"), task(other, "a3"))
    timers = [TimerRow("default", run.run_id, "t1", 1, NOW), TimerRow("default", other.run_id, "t2", 2, NOW)]
    async with store.transaction() as tx:
        for timer in timers:
            await tx.insert_timer(timer)
    async with store.transaction() as tx:
        found = await tx.get_activity_tasks(run.run_id, ["a1", "a3", "missing"])
        assert [t.activity_id for t in found] == ["a1"]
        assert await tx.get_activity_tasks(run.run_id, []) == []
        assert await tx.get_timers(run.run_id, ["t1", "t2"]) == [timers[0]]
        assert await tx.get_timers(run.run_id, []) == []


async def test_a_runs_lineage_is_read_in_one_statement(store: Store) -> None:
    """What closing a run needs: its own link to its parent and its pending children."""
    parent, child = await insert_run(store, workflow_id="parent"), await insert_run(store, workflow_id="child")
    grandchildren = [await insert_run(store, workflow_id=f"grandchild-{i}") for i in range(2)]

    def link(of: ExecutionRow, to: ExecutionRow, initiated_event_id: int) -> ChildExecutionRow:
        return ChildExecutionRow(
            "default", of.run_id, initiated_event_id, to.workflow_id, to.run_id, "Child", "TERMINATE"
        )

    links = [link(parent, child, 5), link(child, grandchildren[1], 9), link(child, grandchildren[0], 7)]
    async with store.transaction() as tx:
        for row in links:
            await tx.insert_child_execution(row)
    async with store.transaction() as tx:
        assert await tx.get_lineage("default", child.run_id) == (links[0], [links[2], links[1]])
        assert await tx.get_lineage("default", parent.run_id) == (None, [links[0]])
        assert await tx.get_lineage("default", grandchildren[0].run_id) == (links[2], [])


async def test_batch_writes_of_several_executions_round_trip_and_check_versions(store: Store) -> None:
    """The timekeeper's batch statements: executions locked and read in (namespace,
    run id) order, rows, events and tasks written together; one stale version fails
    the whole transaction."""
    runs = [await insert_run(store, workflow_id=f"wf-{i}") for i in range(3)]
    async with store.transaction() as tx:
        locked = await tx.lock_executions([(r.namespace, r.run_id) for r in reversed(runs)] + [("default", "gone")])
        assert [r.run_id for r in locked] == sorted(r.run_id for r in runs)
        # Only the listed columns are written.
        await tx.update_executions(
            ("next_event_id",),
            [(dataclasses.replace(r, next_event_id=4, task_queue="unwritten"), r.version) for r in locked],
        )
        await tx.append_run_events([(r.namespace, r.run_id, [event(2), event(3)]) for r in locked])
        await tx.insert_tasks([task(r, activity_id=None, kind="WORKFLOW") for r in locked])
    async with store.read() as tx:
        for run in runs:
            stored = await tx.get_execution(run.namespace, run.run_id)
            assert stored is not None and (stored.version, stored.next_event_id, stored.task_queue) == (2, 4, "q")
            assert [e.event_id for e in await tx.read_events(run.namespace, run.run_id)] == [1, 2, 3]
            [stored_task] = await tx.list_run_tasks(run.namespace, run.run_id)
            assert (stored_task.kind, stored_task.input) == ("WORKFLOW", task(run).input)
    with pytest.raises(ConcurrencyConflict):
        async with store.transaction() as tx:
            fresh = [await tx.get_execution(r.namespace, r.run_id) for r in runs]
            await tx.append_run_events([(r.namespace, r.run_id, [event(4)]) for r in runs])
            # The last one's expected version is stale (it is 2 now).
            await tx.update_executions(
                ("next_event_id",),
                [(dataclasses.replace(r, next_event_id=5), r.version) for r in fresh[:2]]  # type: ignore[union-attr]
                + [(dataclasses.replace(runs[2], next_event_id=5), 1)],
            )
    async with store.read() as tx:
        for run in runs:
            stored = await tx.get_execution(run.namespace, run.run_id)
            assert stored is not None and (stored.version, stored.next_event_id) == (2, 4)
            assert [e.event_id for e in await tx.read_events(run.namespace, run.run_id)] == [1, 2, 3]


async def test_reaper_queries(store: Store) -> None:
    run = await insert_run(store, deadline_us=NOW + 40, deadline_kind="RUN")
    await insert_run(store, workflow_id="closed", status="COMPLETED", close_us=NOW, deadline_us=NOW)
    expired, _, waiting = await insert_tasks(
        store,
        task(run, "expired", state="LEASED", lease_expires_us=NOW + 10),
        task(run, "leased", state="LEASED", lease_expires_us=NOW + 99),
        task(run, "waiting", pending_deadline_us=NOW + 20),
    )
    async with store.transaction() as tx:
        await tx.insert_timer(TimerRow("default", run.run_id, "t", 1, NOW + 30))
    async with store.read() as tx:
        assert await tx.next_deadline_us() == NOW + 10
        assert await tx.expired_task_ids(NOW + 9, 10) == []
        assert await tx.expired_task_ids(NOW + 20, 10) == [expired, waiting]
        assert [t.timer_id for t in await tx.due_timers(NOW + 30, 10)] == ["t"]
        assert await tx.expired_run_ids(NOW + 40, 10) == [("default", run.run_id)]


async def test_earliest_work_due_is_zero_while_work_runs_else_the_next_visible_time(store: Store) -> None:
    async with store.read() as tx:
        assert await tx.earliest_work_due_us() is None
    run = await insert_run(store)
    await insert_tasks(store, task(run, "backoff", visible_us=NOW + 50), task(run, "later", visible_us=NOW + 70))
    async with store.read() as tx:
        assert await tx.earliest_work_due_us() == NOW + 50
    [leased] = await insert_tasks(store, task(run, "running", state="LEASED", lease_expires_us=NOW + 99))
    async with store.read() as tx:
        assert await tx.earliest_work_due_us() == 0
    async with store.transaction() as tx:
        await tx.delete_task(leased)
        query_id = await tx.insert_query(pending_query(run, visible_us=NOW + 60))
    async with store.read() as tx:
        assert await tx.earliest_work_due_us() == 0  # a query waits for a worker's answer
    async with store.transaction() as tx:
        await tx.delete_query("default", query_id)
    async with store.read() as tx:
        assert await tx.earliest_work_due_us() == NOW + 50


# ---------------------------------------------------------------- notifications


async def test_commit_wakes_listeners_and_rollback_does_not(store: Store) -> None:
    rolled_back = store.notifier.listen("q:rolled-back")
    committed = store.notifier.listen("q:committed")
    with pytest.raises(RuntimeError):
        async with store.transaction() as tx:
            tx.notify_after_commit("q:rolled-back")
            raise RuntimeError("abort")
    async with store.transaction() as tx:
        tx.notify_after_commit("q:committed")
    assert await store.wait_for_notification(committed, DEADLINE_S)
    # Notifications arrive in commit order, so the rolled-back one would be here by now.
    assert not rolled_back.is_set()


# ---------------------------------------------------------------- unavailability


async def test_closed_store_is_unavailable(store: Store) -> None:
    await store.close()
    with pytest.raises(StoreUnavailable):
        async with store.transaction():
            pass
    with pytest.raises(StoreUnavailable):
        async with store.read():
            pass
    with pytest.raises(StoreUnavailable):
        await store.ping()


# inline_commit_below_s: 0 runs every COMMIT on the commit thread, 60 every one inline.
@pytest.mark.parametrize("inline_commit_below_s", [0.0, 60.0], ids=["commit-thread", "inline-commit"])
async def test_sqlite_transaction_cancelled_during_commit_commits_and_frees_the_writer(
    tmp_path: Path, inline_commit_below_s: float
) -> None:
    """A caller that goes away while its COMMIT runs (on the commit thread, or inline
    after the transaction's turn of the loop) is told so only once the COMMIT is over:
    the change is committed, and the next transaction gets the writer (not one still
    inside the old transaction)."""
    store = SQLiteStore(tmp_path / "x.db", inline_commit_below_s=inline_commit_below_s, idle_turn_s=60.0)
    await store.open()
    try:
        run = execution()

        async def write() -> None:
            async with store.transaction() as tx:
                await tx.insert_execution(run)
                # Runs when the transaction first yields to the loop: waiting for its COMMIT.
                asyncio.get_running_loop().call_soon(writing.cancel)

        writing = asyncio.create_task(write())
        with pytest.raises(asyncio.CancelledError):
            await writing
        # At once: a writer released before its COMMIT ended would still be inside it.
        second = await insert_run(store, workflow_id="wf-2")
        assert await visible_run(store, run) == run
        assert await visible_run(store, second) == second
    finally:
        await store.close()


async def test_sqlite_commits_inline_while_quick_and_on_its_thread_after_a_slow_commit(tmp_path: Path) -> None:
    """With the loop idle, a quick COMMIT runs on the event loop's thread (no hand-off);
    one slow enough to lift the recent average over ``inline_commit_below_s`` sends the
    COMMITs after it to the commit thread until quick ones bring the average down, so a
    slow disk stalls the loop once. Each COMMIT's thread is seen by the writer's trace
    callback (which runs inside the timed COMMIT). Every turn of the loop counts as
    idle here: this test is about the COMMITs' durations, not the machine's load."""
    store = SQLiteStore(tmp_path / "x.db", inline_commit_below_s=0.05, idle_turn_s=60.0)
    await store.open()
    loop_thread = threading.get_ident()
    commits: list[int] = []
    slow = False

    def traced(statement: str) -> None:
        if statement == "COMMIT":
            commits.append(threading.get_ident())
            if slow:
                time.sleep(0.4)  # a slow fsync

    try:
        assert store._writer is not None
        store._writer.set_trace_callback(traced)
        await insert_run(store, workflow_id="quick-1")
        await insert_run(store, workflow_id="quick-2")
        assert commits == [loop_thread] * 2, "quick COMMITs run inline"
        slow = True
        await insert_run(store, workflow_id="slow")
        slow = False
        assert commits[2] == loop_thread, "the slow one still ran inline: it was not known to be slow"
        after = await insert_run(store, workflow_id="after-the-slow-one")
        assert len(commits) == 4 and commits[3] != loop_thread, "after a slow COMMIT: the commit thread"
        assert await visible_run(store, after) == after
        for i in range(20):  # quick COMMITs bring the average down again
            await insert_run(store, workflow_id=f"quick-again-{i}")
        assert commits[-1] == loop_thread, "back inline once COMMITs are quick again"
    finally:
        await store.close()


async def test_sqlite_update_of_named_columns_sets_only_those(tmp_path: Path) -> None:
    """SQLite updates the index of every column an UPDATE sets, changed or not: an
    update that names its changed columns sets those and the version, nothing else."""
    store = SQLiteStore(tmp_path / "x.db")
    await store.open()
    updates: list[str] = []
    try:
        run = await insert_run(store)
        assert store._writer is not None
        store._writer.set_trace_callback(lambda sql: updates.append(sql) if sql.startswith("UPDATE") else None)
        async with store.transaction() as tx:
            await tx.update_execution(
                dataclasses.replace(run, next_event_id=3, wft_state="SCHEDULED"),
                expected_version=1,
                changed=("next_event_id", "wft_state"),
            )
        assert len(updates) == 1
        set_clause = updates[0].partition(" WHERE ")[0]  # the trace shows the bound values
        assert set_clause == "UPDATE executions SET next_event_id = 3, wft_state = 'SCHEDULED', version = 2"
        stored = await visible_run(store, run)
        assert stored == dataclasses.replace(run, next_event_id=3, wft_state="SCHEDULED", version=2)
    finally:
        await store.close()


async def test_a_task_update_writes_its_state_and_not_what_it_is_for(store: Store) -> None:
    """update_task leaves out the columns that say what the task is for (they never
    change): SQLite would rewrite the row's entries in the per-run indexes otherwise."""
    run = await insert_run(store)
    (task_id,) = await insert_tasks(store, task(run))
    leased = task(run, task_id=task_id, state="LEASED", lease_expires_us=NOW + 1, fencing_token=1, identity="w")
    async with store.transaction() as tx:
        await tx.update_task(dataclasses.replace(leased, run_id="elsewhere", activity_id="other", task_queue="other"))
    async with store.read() as tx:
        assert await tx.get_task(task_id) == leased


async def test_sqlite_file_in_use_is_unavailable(tmp_path: Path) -> None:
    first = SQLiteStore(tmp_path / "x.db")
    await first.open()
    try:
        with pytest.raises(StoreUnavailable, match="in use"):
            await SQLiteStore(tmp_path / "x.db").open()
    finally:
        await first.close()


# ---------------------------------------------------------------- PostgreSQL only

pg = pytest.mark.postgres


OpenReplica = Callable[..., Awaitable[PostgresStore]]


@pytest.fixture
async def pg_stores(postgres_dsn: str) -> AsyncIterator[OpenReplica]:
    """Opens PostgresStores (replicas) on one fresh database; closes them afterwards."""
    opened: list[PostgresStore] = []

    async def open_replica(dsn: str = postgres_dsn, **options: float) -> PostgresStore:
        store = PostgresStore(dsn, **options)
        await store.open()
        opened.append(store)
        return store

    yield open_replica
    for store in opened:
        await store.close()


@pytest.fixture
async def monitor(postgres_dsn: str) -> AsyncIterator[asyncpg.Connection]:
    """A separate connection for watching the test database's sessions."""
    connection = await asyncpg.connect(postgres_dsn)
    yield connection
    await connection.close()


async def waiting_on_lock(monitor: asyncpg.Connection, statement_prefix: str) -> bool:
    """Whether a session of the database waits for a lock in a statement starting so."""
    return bool(
        await monitor.fetchval(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
            " AND wait_event_type = 'Lock' AND starts_with(query, $1)",
            statement_prefix,
        )
    )


def test_placeholder_rewrite_is_cached() -> None:
    sql = "SELECT a FROM t WHERE b = ? AND c IN (?, ?) LIMIT ?"
    assert _numbered(sql) == "SELECT a FROM t WHERE b = $1 AND c IN ($2, $3) LIMIT $4"
    hits = _numbered.cache_info().hits
    # An equal string built anew, as the f-strings of _sql/ are on every call.
    assert _numbered("".join(sql)) == "SELECT a FROM t WHERE b = $1 AND c IN ($2, $3) LIMIT $4"
    assert _numbered.cache_info().hits == hits + 1


@pg
async def test_two_open_transactions_lease_different_tasks(pg_stores: OpenReplica) -> None:
    store = await pg_stores()
    run = await insert_run(store)
    first_id, second_id = await insert_tasks(
        store, task(run, "a", visible_us=NOW - 2), task(run, "b", visible_us=NOW - 1)
    )
    async with store.transaction() as tx_a:
        row_a = await tx_a.lease_next_task("default", "ACTIVITY", "q", NOW)
        # tx_a holds its row lock; SKIP LOCKED hands a concurrent transaction the next row.
        async with store.transaction() as tx_b:
            row_b = await tx_b.lease_next_task("default", "ACTIVITY", "q", NOW)
            assert row_b is not None
            row_b.state, row_b.lease_expires_us = "LEASED", NOW + 1
            await tx_b.update_task(row_b)
        assert row_a is not None
        row_a.state, row_a.lease_expires_us = "LEASED", NOW + 1
        await tx_a.update_task(row_a)
    assert (row_a.task_id, row_b.task_id) == (first_id, second_id)
    assert await lease(store) is None


@pg
async def test_writes_wait_for_the_next_statement_and_go_together(pg_stores: OpenReplica) -> None:
    store = await pg_stores()
    run = await insert_run(store)
    inserted = task(run)
    async with store.transaction() as tx:
        await tx.get_execution("default", run.run_id, for_update=True)  # locked: its version check can wait
        await tx.update_execution(dataclasses.replace(run, next_event_id=3), expected_version=1)
        await tx.append_events("default", run.run_id, [event(2)])
        await tx.insert_task(inserted)
        await tx.insert_timer(TimerRow("default", run.run_id, "t1", 2, NOW + 1))
        assert inserted.task_id is None  # not sent yet
        # A read sends them first, and sees them.
        assert [e.event_id for e in await tx.read_events("default", run.run_id)] == [1, 2]
        assert isinstance(inserted.task_id, int)
        await tx.delete_run_timers(run.run_id)
        await tx.append_events("default", run.run_id, [event(3)])
    # BEGIN, the lock, the four writes in one statement, the read, the last two in one, COMMIT.
    assert tx.round_trips == 6, tx.round_trips  # type: ignore[attr-defined]
    async with store.read() as tx:
        assert [e.event_id for e in await tx.read_events("default", run.run_id)] == [1, 2, 3]
        assert [t.task_id for t in await tx.list_run_tasks("default", run.run_id)] == [inserted.task_id]
        assert await tx.due_timers(NOW + 1, 10) == []
        assert (await tx.get_execution("default", run.run_id)).version == 2
    # The version check of a row the transaction does not hold locked goes out at once:
    # another writer may have appended the events this one's would collide with.
    with pytest.raises(ConcurrencyConflict):
        async with store.transaction() as tx:
            await tx.update_execution(dataclasses.replace(run, next_event_id=4), expected_version=1)
    assert tx.round_trips == 2, tx.round_trips  # type: ignore[attr-defined]


@pg
async def test_deletes_of_one_table_go_together_and_delete_what_each_would(pg_stores: OpenReplica) -> None:
    # A closing run's report deletes its task, then all of the run's tasks: one statement.
    store = await pg_stores()
    run, other = await insert_run(store), await insert_run(store, run_id="r2", workflow_id="w2")
    first, second, kept, others = await insert_tasks(
        store, task(run, "a"), task(run, "b"), task(other, "c"), task(other, "d")
    )
    async with store.transaction() as tx:
        await tx.delete_task(first)  # also among the run's tasks
        await tx.delete_task(others)  # not
        await tx.delete_run_tasks(run.run_id)
        await tx.delete_run_timers(run.run_id)
    # BEGIN, the four deletes in one statement, COMMIT.
    assert tx.round_trips == 3, tx.round_trips  # type: ignore[attr-defined]
    async with store.read() as tx:
        assert await tx.list_run_tasks("default", run.run_id) == []
        assert [t.task_id for t in await tx.list_run_tasks("default", other.run_id)] == [kept]
    assert second not in (kept, others)
    # A write that is not a delete still waits for the deletes of its table to be sent.
    async with store.transaction() as tx:
        await tx.delete_task(kept)
        await tx.insert_task(task(other, "e"))
    assert tx.round_trips == 4, tx.round_trips  # type: ignore[attr-defined]


@pg
async def test_a_read_of_tables_the_writes_waiting_leave_alone_rides_in_their_statement(pg_stores: OpenReplica) -> None:
    store = await pg_stores()
    run = await insert_run(store)
    async with store.transaction() as tx:
        await tx.append_events("default", run.run_id, [event(2), event(3)])
    inserted = task(run)
    async with store.transaction() as tx:
        await tx.get_execution("default", run.run_id, for_update=True)
        await tx.insert_task(inserted)
        await tx.delete_run_timers(run.run_id)
        # Events are no table of those writes: the read goes with them, its rows in order.
        assert [e.event_id for e in await tx.read_events("default", run.run_id)] == [1, 2, 3]
        assert isinstance(inserted.task_id, int)  # the writes were sent, their values received
        await tx.insert_timer(TimerRow("default", run.run_id, "t1", 2, NOW + 1))
        assert await tx.read_events("default", run.run_id, after_event_id=3) == []  # none: an empty list
        await tx.insert_timer(TimerRow("default", run.run_id, "t2", 2, NOW + 1))
        assert await tx.get_request_run_id("default", "no-such-request") is None  # one row or none
        await tx.delete_run_timers(run.run_id)
        # A read of a table a write waiting changes still goes after it, and sees it.
        assert await tx.due_timers(NOW + 1, 10) == []
    # BEGIN, the lock, three statements of writes and a read, the delete, the read, COMMIT.
    assert tx.round_trips == 8, tx.round_trips  # type: ignore[attr-defined]
    async with store.read() as tx:
        assert [t.task_id for t in await tx.list_run_tasks("default", run.run_id)] == [inserted.task_id]
    # A version check that fails in the read's statement fails the transaction as before.
    with pytest.raises(ConcurrencyConflict):
        async with store.transaction() as tx:
            await tx.get_execution("default", run.run_id, for_update=True)
            await tx.update_execution(dataclasses.replace(run, next_event_id=4), expected_version=0)
            await tx.read_events("default", run.run_id)
    async with store.read() as tx:
        assert (await tx.get_execution("default", run.run_id)).version == 1


@pg
async def test_a_held_back_version_check_that_fails_at_commit_conflicts_and_changes_nothing(
    pg_stores: OpenReplica,
) -> None:
    # A version check held back to the COMMIT (the row is locked) raises there: a
    # conflict the engine retries, with none of the transaction's writes and no wake-up.
    store = await pg_stores()
    run = await insert_run(store)
    woken = store.notifier.listen("q:default:ACTIVITY:q")
    body_ended = False
    with pytest.raises(ConcurrencyConflict):
        async with store.transaction() as tx:
            await tx.get_execution("default", run.run_id, for_update=True)
            await tx.update_execution(dataclasses.replace(run, next_event_id=3), expected_version=0)
            await tx.append_events("default", run.run_id, [event(2)])
            await tx.insert_task(task(run))
            tx.notify_after_commit("q:default:ACTIVITY:q")
            body_ended = True
    assert body_ended, "the check was held back to the COMMIT"
    assert not woken.is_set()
    async with store.read() as tx:
        assert [e.event_id for e in await tx.read_events("default", run.run_id)] == [1]
        assert await tx.list_run_tasks("default", run.run_id) == []
        assert (await tx.get_execution("default", run.run_id)).version == 1


@pg
async def test_concurrent_execution_updates_conflict(pg_stores: OpenReplica, monitor: asyncpg.Connection) -> None:
    store = await pg_stores()
    run = await insert_run(store)

    async def second_writer() -> None:
        async with store.transaction() as tx_b:
            stale = await tx_b.get_execution("default", run.run_id)
            assert stale is not None and stale.version == 1  # READ COMMITTED: tx_a has not committed
            await tx_b.update_execution(dataclasses.replace(stale, task_queue="b"), expected_version=1)

    async with store.transaction() as tx_a:
        await tx_a.update_execution(dataclasses.replace(run, task_queue="a"), expected_version=1)
        # A read sends the writes waiting (the store may hold a write until then): tx_a holds the row.
        assert (await tx_a.get_execution("default", run.run_id)).task_queue == "a"
        writer = asyncio.create_task(second_writer())
        await wait_until(
            lambda: waiting_on_lock(monitor, "UPDATE executions"),
            timeout=DEADLINE_S,
            what="the second writer waits for the row lock",
            interval=0.01,
        )
    # tx_a committed: the blocked UPDATE re-reads the row, finds version 2 and changes nothing.
    with pytest.raises(ConcurrencyConflict):
        await writer
    stored = await visible_run(store, run)
    assert stored is not None and (stored.version, stored.task_queue) == (2, "a")


@pg
async def test_commit_wakes_a_listener_on_another_replica(pg_stores: OpenReplica) -> None:
    writer, replica = await pg_stores(), await pg_stores()
    woken = replica.notifier.listen("q:default:WORKFLOW:orders")
    started = time.monotonic()
    async with writer.transaction() as tx:
        tx.notify_after_commit("q:default:WORKFLOW:orders")
    assert await replica.wait_for_notification(woken, DEADLINE_S)
    assert time.monotonic() - started < DEADLINE_S


class CountingNotifier(Notifier):
    """A :class:`Notifier` that counts the wake-ups of each channel."""

    def __init__(self) -> None:
        super().__init__()
        self.wake_ups: collections.Counter[str] = collections.Counter()

    def notify(self, channel: str) -> None:
        self.wake_ups[channel] += 1
        super().notify(channel)


@pg
async def test_commits_do_not_notify_inside_their_transaction(
    pg_stores: OpenReplica, monitor: asyncpg.Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    # PostgreSQL serializes the commits of all transactions that NOTIFY (one
    # database-wide lock held through the WAL flush), so concurrent reports could not
    # share a flush: the wake-ups leave in a NOTIFY of their own after the commit, the
    # store's own waiters are woken at once, and its own NOTIFYs do not wake them again.
    store = await pg_stores()
    store.notifier = notifier = CountingNotifier()
    notified: list[str] = []
    await monitor.add_listener("flowforge", lambda _connection, _pid, _channel, payload: notified.append(payload))
    woken = notifier.listen("q:default:WORKFLOW:mine")
    scripts: list[str] = []
    async with store.transaction() as tx:
        assert isinstance(tx, _PostgresTransaction)
        script = tx._script

        async def recorded(sql: str) -> None:
            scripts.append(sql)
            await script(sql)

        monkeypatch.setattr(tx, "_script", recorded)
        tx.notify_after_commit("q:default:WORKFLOW:mine")
    assert scripts == ["COMMIT"]
    assert woken.is_set()  # at commit, not when the NOTIFY comes back
    await wait_until(lambda: bool(notified), timeout=DEADLINE_S, what="the other replicas are notified", interval=0.01)
    assert notified == ['["q:default:WORKFLOW:mine"]']
    # The store's LISTEN connection gets notifications in commit order: once the
    # monitor's own arrives there, the store's NOTIFY has been seen and skipped.
    sentinel = notifier.listen("q:default:WORKFLOW:sentinel")
    await monitor.execute("""SELECT pg_notify('flowforge', '["q:default:WORKFLOW:sentinel"]')""")
    assert await store.wait_for_notification(sentinel, DEADLINE_S)
    assert notifier.wake_ups["q:default:WORKFLOW:mine"] == 1


@pg
async def test_commits_of_the_moment_after_a_commit_go_in_its_notify(
    pg_stores: OpenReplica, monitor: asyncpg.Connection
) -> None:
    # The NOTIFY waits notify_delay_s after the commit that wakes its sender (the
    # committing report's answer leaves first): what commits meanwhile goes with it.
    store = await pg_stores(notify_delay_s=0.5)
    notified: list[str] = []
    await monitor.add_listener("flowforge", lambda _connection, _pid, _channel, payload: notified.append(payload))
    for channel in ("r:first", "r:second"):
        async with store.transaction() as tx:
            tx.notify_after_commit(channel)
    await wait_until(lambda: bool(notified), timeout=DEADLINE_S, what="the other replicas are notified", interval=0.01)
    assert notified == ['["r:first","r:second"]']


@pg
async def test_a_notify_that_fails_unexpectedly_is_retried_not_dropped(
    pg_stores: OpenReplica, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The NOTIFY leaves after the commit, on a task of its own: an error the store does
    # not translate (a connection closed under it, say) must not end that task with the
    # wake-ups it held, or another replica's history long-polls sleep to their deadline.
    writer, replica = await pg_stores(), await pg_stores()
    woken = replica.notifier.listen("r:after-a-failed-notify")
    send = writer._notify
    failures = 0

    async def fails_once(channels: set[str]) -> None:
        nonlocal failures
        if not failures:
            failures += 1
            raise RuntimeError("connection was closed in the middle of operation")
        await send(channels)

    monkeypatch.setattr(writer, "_notify", fails_once)
    async with writer.transaction() as tx:
        tx.notify_after_commit("r:after-a-failed-notify")
    assert await replica.wait_for_notification(woken, DEADLINE_S)
    assert failures == 1


@pg
async def test_a_commit_of_thousands_of_channels_wakes_each_with_a_few_notifications(
    pg_stores: OpenReplica, monitor: asyncpg.Connection
) -> None:
    # A batch of timers wakes each fired run's channel: they travel packed into a few
    # NOTIFY payloads, awkward names intact, and a bare channel as an older replica
    # sends it still wakes its waiter.
    writer, replica = await pg_stores(), await pg_stores()
    channels = [f"r:run-{i:05d}" for i in range(3000)] + ['q:it\'s:WORKFLOW:"odd",name', "q:nul\x00inside"]
    woken = {channel: replica.notifier.listen(channel) for channel in channels}
    payloads: list[str] = []
    await monitor.add_listener("flowforge", lambda _connection, _pid, _channel, payload: payloads.append(payload))
    async with writer.transaction() as tx:
        for channel in channels:
            tx.notify_after_commit(channel)
    for channel, event in woken.items():
        assert await replica.wait_for_notification(event, DEADLINE_S), channel
    await wait_until(
        lambda: sum(len(json.loads(p)) for p in payloads) == len(channels),
        timeout=DEADLINE_S,
        what="the monitor sees every channel",
        interval=0.01,
    )
    assert len(payloads) <= 3000 * 16 // 7999 + 1, len(payloads)  # ~16 bytes a channel
    bare = replica.notifier.listen("q:default:WORKFLOW:from-an-older-replica")
    await monitor.execute("SELECT pg_notify('flowforge', 'q:default:WORKFLOW:from-an-older-replica')")
    assert await replica.wait_for_notification(bare, DEADLINE_S)


@pg
async def test_unreachable_database_is_unavailable() -> None:
    store = PostgresStore(f"postgresql://postgres@127.0.0.1:{free_port()}/postgres", connect_timeout_s=2.0)
    started = time.monotonic()
    with pytest.raises(StoreUnavailable):
        await store.open()
    assert time.monotonic() - started < DEADLINE_S


async def pings(store: Store) -> bool:
    try:
        await store.ping()
        return True
    except StoreUnavailable:
        return False


async def wakes(writer: Store, listener: Store, channel: str) -> bool:
    """Whether a commit on ``writer`` wakes ``channel`` on ``listener`` promptly."""
    woken = listener.notifier.listen(channel)
    async with writer.transaction() as tx:
        tx.notify_after_commit(channel)
    return await listener.wait_for_notification(woken, 0.2)


@pg
async def test_outage_is_unavailable_then_recovers(pg_stores: OpenReplica, postgres_dsn: str) -> None:
    """A replica whose database connections are cut raises StoreUnavailable, then
    recovers by itself once the database is back, LISTEN connection included."""
    writer = await pg_stores()
    target = urllib.parse.urlsplit(postgres_dsn)
    proxy = TcpProxy(target.hostname or "127.0.0.1", target.port or 5432)
    await proxy.start()
    try:
        replica = await pg_stores(with_address(postgres_dsn, "127.0.0.1", proxy.port), connect_timeout_s=1.0)
        assert await wakes(writer, replica, "before")
        await proxy.cut()
        with pytest.raises(StoreUnavailable):
            await replica.ping()
        with pytest.raises(StoreUnavailable):
            async with replica.read() as tx:
                await tx.get_namespace("default")
        with pytest.raises(StoreUnavailable):
            async with replica.transaction() as tx:
                await tx.get_namespace("default")
        await proxy.start()
        await wait_until(lambda: pings(replica), timeout=DEADLINE_S, what="the replica reconnects", interval=0.01)
        await wait_until(
            lambda: wakes(writer, replica, "after"), timeout=DEADLINE_S, what="the replica listens again", interval=0.01
        )
    finally:
        await proxy.cut()


async def test_an_oversized_channel_does_not_fail_the_commit(store: Store) -> None:
    # PostgreSQL refuses NOTIFY payloads of 8000 bytes; such a wake-up is skipped
    # (the poll re-check covers it) rather than losing the transaction.
    run = execution()
    async with store.transaction() as tx:
        await tx.insert_execution(run)
        tx.notify_after_commit("q:" + "é" * 5000)
    assert await visible_run(store, run) == run


# How a locking task read starts on PostgreSQL (it reads the task's execution with it).
LOCKING_TASK_READ = "SELECT t.task_id"


@pg
async def test_a_cancelled_transaction_leaves_the_pool_usable(
    pg_stores: OpenReplica, monitor: asyncpg.Connection
) -> None:
    """A request cancelled while its transaction waits for a row lock (its client
    hung up) gives up the wait and leaves no broken connection in the pool."""
    store = await pg_stores(max_connections=2)
    run = await insert_run(store)
    (task_id,) = await insert_tasks(store, task(run))

    async def waiter() -> None:
        async with store.transaction() as tx:
            await tx.get_task(task_id, for_update=True)

    async with store.transaction() as holder:
        await holder.get_task(task_id, for_update=True)
        waiting = asyncio.create_task(waiter())
        await wait_until(
            lambda: waiting_on_lock(monitor, LOCKING_TASK_READ),
            timeout=DEADLINE_S,
            what="the waiter waits for the row lock",
            interval=0.01,
        )
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting

    async def nobody_waits() -> bool:
        return not await waiting_on_lock(monitor, LOCKING_TASK_READ)

    await wait_until(nobody_waits, timeout=DEADLINE_S, what="the lock wait is given up", interval=0.01)
    # Both pooled connections serve transactions again.
    first, second = await asyncio.gather(lease(store), lease(store))
    assert {first and first.task_id, second and second.task_id} == {task_id, None}
