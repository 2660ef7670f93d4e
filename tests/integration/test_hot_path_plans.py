"""Every statement the engine runs on the tables each activity writes is served by an
index, on both stores.

A migrated database gets realistic contents written straight in (20 000 runs, 2 %
running, each with its history, request id and activity attempt; the running ones with a pending or a leased task on a
queue nobody polls and a timer far ahead) and is analysed; then a real server on it
runs onboardings (their cooling-off timers included), one-activity workflows on the
flow-control lease path, under the namespace quotas, and the console's reads (describe, list, count, a task
queue's backlog) through a real worker and client, while every statement its store
runs is recorded. Each statement on a hot table is then EXPLAINed (EXPLAIN QUERY PLAN
on SQLite, EXPLAIN on PostgreSQL with sequential scans priced out, with the
parameters it ran with): a full scan of a hot table, or on SQLite a walk of a whole
index that is not partial, fails the test and names the statement. The list queries' own indexes are pinned by
test_visibility_indexes.py.
"""

from __future__ import annotations

import re
import sqlite3
import uuid
from collections.abc import Iterator
from typing import Any

import asyncpg
import pytest

from flowforge import Client
from flowforge.server import FlowForgeServer, ServerConfig
from flowforge.server.stores import migrations
from flowforge.server.stores._sql import update_executions_sql
from flowforge.server.stores.postgres import _numbered, _PostgresTransaction
from flowforge.server.stores.sqlite import _SQLiteTransaction
from flowforge.worker import Worker
from samples.onboarding.workflows import ACTIVITIES, Onboarding
from testsupport.waiting import within
from testsupport.workloads import LIMITED_KEY, LimitedActivity, SingleActivity, noop

RUNS = 20_000
BASE_US = 1_700_000_000_000_000
FAR_US = 4_000_000_000_000_000
HOT_TABLES = ("executions", "tasks", "history_events", "timers", "request_ids", "activity_attempts")

# Written in dialect-neutral SQL over a series n = 1 .. RUNS ({series}); every 50th run is running.
_SEED = [
    "INSERT INTO executions (namespace, run_id, workflow_id, workflow_type, task_queue, status, next_event_id,"
    " version, start_us, close_us, wft_state, wft_attempt, wft_timeout_s)"
    " SELECT 'default', 'run-' || n, 'wf-' || n, 'T' || (n % 50), 'elsewhere',"
    " CASE WHEN n % 50 = 0 THEN 'RUNNING' ELSE 'COMPLETED' END, 4, 1, {base} + n * 1000000,"
    " CASE WHEN n % 50 = 0 THEN NULL ELSE {base} + n * 1000000 + 500 END, 'NONE', 1, 10 FROM {series}",
    "INSERT INTO history_events (namespace, run_id, event_id, event_type, event_us, attributes)"
    " SELECT 'default', 'run-' || n, e, 'WORKFLOW_EXECUTION_STARTED', {base} + n * 1000000, '{{}}'"
    " FROM {series} CROSS JOIN (SELECT 1 AS e UNION ALL SELECT 2 UNION ALL SELECT 3) AS events",
    "INSERT INTO tasks (namespace, run_id, workflow_id, workflow_type, kind, task_queue, state, visible_us,"
    " lease_expires_us, fencing_token, attempt, activity_id, activity_type, scheduled_us)"
    " SELECT 'default', 'run-' || n, 'wf-' || n, 'T' || (n % 50), 'ACTIVITY', 'elsewhere',"
    " CASE WHEN n % 100 = 0 THEN 'LEASED' ELSE 'PENDING' END, {base},"
    " CASE WHEN n % 100 = 0 THEN {far} ELSE NULL END, 1, 1, 'a', 'Work', {base} FROM {series} WHERE n % 50 = 0",
    "INSERT INTO timers (namespace, run_id, timer_id, started_event_id, fire_us)"
    " SELECT 'default', 'run-' || n, 't' || t, 3, {far} + n * 10 + t FROM {series}"
    " CROSS JOIN (SELECT 0 AS t UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4) AS timers"
    " WHERE n % 50 = 0",
    "INSERT INTO request_ids (namespace, request_id, run_id, create_us)"
    " SELECT 'default', 'request-' || n, 'run-' || n, {base} + n * 1000000 FROM {series}",
    "INSERT INTO activity_attempts (namespace, run_id, scheduled_event_id, attempt, activity_id, activity_type,"
    " identity, started_us, ended_us, outcome) SELECT 'default', 'run-' || n, 2, 1, 'a', 'Work', 'worker',"
    " {base} + n * 1000000, {base} + n * 1000000 + 100, 'completed' FROM {series} WHERE n % 50 <> 0",
]

Statements = dict[str, tuple[Any, ...]]


def _record(monkeypatch: pytest.MonkeyPatch, transaction: type[Any]) -> Statements:
    """Records the first parameters of every statement text a transaction of the
    class runs (both stores send every statement through these three)."""
    seen: Statements = {}
    for name in ("_execute", "_fetchone", "_fetchall"):
        original = getattr(transaction, name)

        async def recorded(self: Any, sql: str, params: Any = (), _original: Any = original) -> Any:
            seen.setdefault(sql, tuple(params))
            return await _original(self, sql, params)

        monkeypatch.setattr(transaction, name, recorded)
    if transaction is _SQLiteTransaction:  # its batched execution UPDATE is an executemany
        original_update = transaction._update_executions

        async def update(self: Any, columns: tuple[str, ...], params: list[tuple[Any, ...]]) -> None:
            seen.setdefault(update_executions_sql(columns), params[0])
            await original_update(self, columns, params)

        monkeypatch.setattr(transaction, "_update_executions", update)
    return seen


def _on_hot_tables(statements: Statements) -> Iterator[tuple[str, tuple[Any, ...]]]:
    for sql, params in statements.items():
        verb = sql.lstrip().split(None, 1)[0].upper()
        if verb in ("SELECT", "UPDATE", "DELETE", "WITH", "INSERT") and re.search(
            rf"\b({'|'.join(HOT_TABLES)})\b", sql
        ):
            yield sql, params


async def _workload(server: FlowForgeServer) -> None:
    """Onboardings with their timers, flow-controlled activities, namespace quotas and the console's reads."""
    client = await Client.connect(f"127.0.0.1:{server.port}")
    queue = f"plans-{uuid.uuid4().hex[:8]}"
    request = {"name": "Plan", "email": "plan@example.com", "work_seconds": 0, "cooling_off_seconds": 0.05}
    try:
        async with Worker(
            client,
            task_queue=queue,
            workflows=[Onboarding, SingleActivity, LimitedActivity],
            activities=[*ACTIVITIES, noop],
        ):
            await client.set_concurrency_limit(LIMITED_KEY, 2)
            # Quotas: a start counts the running runs, a lease the leased activities.
            await client.update_namespace("default", max_running_executions=10_000, max_concurrent_activities=10_000)
            handles = [
                await client.start_workflow(Onboarding.run, request, id=f"onb-{queue}-{i}", task_queue=queue)
                for i in range(4)
            ]
            handles += [
                await client.start_workflow(LimitedActivity.run, i, id=f"lim-{queue}-{i}", task_queue=queue)
                for i in range(3)
            ]
            for handle in handles:
                await within(handle.result(), timeout=120.0, what=f"workflow {handle.id!r} to close")
            await handles[0].describe()
            await client.describe_task_queue(queue)
            await client.count_workflows("ExecutionStatus = 'Running'")
            async for _ in client.list_workflows(f"WorkflowId = 'onb-{queue}-1'"):
                pass
    finally:
        await client.close()


async def _run_recorded(store_url: str, monkeypatch: pytest.MonkeyPatch, transaction: type[Any]) -> Statements:
    statements = _record(monkeypatch, transaction)
    server = FlowForgeServer(ServerConfig(store=store_url, port=0))
    await server.start()
    try:
        await _workload(server)
    finally:
        await server.stop()
    monkeypatch.undo()
    return statements


def _sqlite_full_walks(plan: list[str], partial: set[str]) -> list[str]:
    """Lines of a plan that read a whole hot table, or a whole index that is not partial."""
    bad = []
    for line in plan:
        match = re.match(r"SCAN (\w+)(?: USING (?:COVERING )?INDEX (\w+))?", line)
        if match and match.group(1) in HOT_TABLES and match.group(2) not in partial:
            bad.append(line)
    return bad


async def test_sqlite_statements_on_hot_tables_use_indexes(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "plans.db"
    connection = sqlite3.connect(path, isolation_level=None)
    try:
        migrations.apply_sqlite(connection)
        series = f"(WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < {RUNS}) SELECT n FROM s)"
        for template in _SEED:
            connection.execute(template.format(base=BASE_US, far=FAR_US, series=series))
        connection.execute("ANALYZE")
    finally:
        connection.close()
    statements = await _run_recorded(str(path), monkeypatch, _SQLiteTransaction)
    connection = sqlite3.connect(path)
    try:
        partial = {name for (name,) in connection.execute("SELECT name FROM sqlite_master WHERE sql LIKE '% WHERE %'")}
        checked, failures = 0, []
        for sql, params in _on_hot_tables(statements):
            plan = [row[-1] for row in connection.execute(f"EXPLAIN QUERY PLAN {sql}", params)]
            checked += 1
            if bad := _sqlite_full_walks(plan, partial):
                failures.append(f"{sql}\n  " + "\n  ".join(bad))
    finally:
        connection.close()
    assert checked >= 25, f"only {checked} statements on hot tables were recorded"
    assert not failures, "full scans:\n" + "\n".join(failures)


@pytest.mark.postgres
async def test_postgresql_statements_on_hot_tables_use_indexes(
    postgres_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    connection = await asyncpg.connect(postgres_dsn)
    try:
        series = f"generate_series(1::bigint, {RUNS}::bigint) AS n"
        for template in _SEED:
            await connection.execute(template.format(base=BASE_US, far=FAR_US, series=series))
        await connection.execute("ANALYZE")
    finally:
        await connection.close()
    statements = await _run_recorded(postgres_dsn, monkeypatch, _PostgresTransaction)
    connection = await asyncpg.connect(postgres_dsn)
    try:
        # A few thousand rows are cheaper read whole than through an index, so the
        # planner's own pick says nothing of a big table: with sequential scans priced
        # out, a plan that still has one found no index that serves the statement.
        await connection.execute("SET enable_seqscan = off")
        checked, failures = 0, []
        for sql, params in _on_hot_tables(statements):
            plan = [row[0] for row in await connection.fetch(f"EXPLAIN {_numbered(sql)}", *params)]
            checked += 1
            bad = [line for line in plan if re.search(rf"Seq Scan on ({'|'.join(HOT_TABLES)})\b", line)]
            if bad:
                failures.append(f"{sql}\n  " + "\n  ".join(bad))
    finally:
        await connection.close()
    assert checked >= 25, f"only {checked} statements on hot tables were recorded"
    assert not failures, "full scans:\n" + "\n".join(failures)
