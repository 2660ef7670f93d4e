"""List queries are served by indexes, on both stores.

20 000 runs (2 % running, 50 workflow types, a Keyword, an Int and a Datetime
attribute each) are written straight into a migrated database and analysed; then
the planner's plan for the statement ``list_workflows`` runs (EXPLAIN on
PostgreSQL, EXPLAIN QUERY PLAN on SQLite) must name the index docs/visibility.md
says serves that filter.
"""

from __future__ import annotations

import sqlite3
from typing import Any

import asyncpg
import pytest

from flowforge.server.stores import migrations
from flowforge.server.stores._sql import list_executions_sql
from flowforge.server.stores.postgres import _numbered
from flowforge.server.visibility import compile_query

RUNS = 20_000
BASE_US = 1_700_000_000_000_000
CUSTOM = {"Region": "KEYWORD", "Amount": "INT", "DueAt": "DATETIME"}

_EXECUTIONS = """
INSERT INTO executions (namespace, run_id, workflow_id, workflow_type, task_queue, status, next_event_id, version,
                        start_us, close_us, wft_state, wft_attempt, wft_timeout_s)
SELECT 'default', 'run-' || n, 'wf-' || n, 'T' || (n % 50), 'q',
       CASE WHEN n % 50 = 0 THEN 'RUNNING' ELSE 'COMPLETED' END, 5, 1, {base} + n * 1000000,
       CASE WHEN n % 50 = 0 THEN NULL ELSE {base} + n * 1000000 + 500 END, 'NONE', 1, 10
FROM {series}"""
_ATTRIBUTES = [
    "INSERT INTO search_attributes (namespace, run_id, name, keyword_value)"
    " SELECT 'default', 'run-' || n, 'Region', 'r-' || (n % 1000) FROM {series}",
    "INSERT INTO search_attributes (namespace, run_id, name, int_value) SELECT 'default', 'run-' || n, 'Amount', n FROM {series}",
    "INSERT INTO search_attributes (namespace, run_id, name, datetime_us)"
    " SELECT 'default', 'run-' || n, 'DueAt', {base} + n * 1000 FROM {series}",
]

# query -> the index (or indexes) its plan must use
CASES: dict[str, str | tuple[str, ...]] = {
    "": "ix_executions_namespace_start",
    "WorkflowType = 'T7'": "ix_executions_type_start",
    "ExecutionStatus = 'Running'": "ix_executions_status_start",
    "WorkflowId = 'wf-123'": "ix_executions_workflow_id_start",
    "StartTime > '2023-11-15T00:00:00Z'": "ix_executions_namespace_start",
    "CloseTime BETWEEN '2023-11-14T22:15:00Z' AND '2023-11-14T22:20:00Z'": "ix_executions_close",
    "Region = 'r-17'": "ix_search_attributes_keyword",
    "Amount BETWEEN 100 AND 120": "ix_search_attributes_int",
    "DueAt < '2023-11-14T22:13:21Z'": "ix_search_attributes_datetime",
    # ORDER BY: the index of the column read in order, stopping after a page.
    "ORDER BY StartTime ASC": "ix_executions_namespace_start",
    "ORDER BY WorkflowType": "ix_executions_type_start",
    "ORDER BY ExecutionStatus ASC": "ix_executions_status_start",
    "ORDER BY WorkflowId ASC": "ix_executions_workflow_id_start",
    "WorkflowType = 'T7' ORDER BY StartTime ASC": "ix_executions_type_start",
    # The closed runs in close order, then the running ones by start (each half its index).
    "ORDER BY CloseTime": ("ix_executions_close", "ix_executions_status_start"),
    "ORDER BY CloseTime ASC": ("ix_executions_close", "ix_executions_status_start"),
}


def _names(index: str | tuple[str, ...]) -> tuple[str, ...]:
    return (index,) if isinstance(index, str) else index


def _statement(query: str) -> tuple[str, list[Any]]:
    return list_executions_sql("default", compile_query(query, "default", CUSTOM), limit=100, after=None)


def test_sqlite_plans_use_the_documented_indexes(tmp_path) -> None:
    connection = sqlite3.connect(tmp_path / "plans.db", isolation_level=None)
    migrations.apply_sqlite(connection)
    series = "s"
    with_series = f"WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < {RUNS}) "
    for template in (_EXECUTIONS, *_ATTRIBUTES):
        connection.execute(with_series + template.format(base=BASE_US, series=series))
    connection.execute("ANALYZE")
    for query, index in CASES.items():
        sql, params = _statement(query)
        plan = "\n".join(row[-1] for row in connection.execute(f"EXPLAIN QUERY PLAN {sql}", params))
        assert all(name in plan for name in _names(index)), f"{query!r} should use {index}:\n{plan}"


@pytest.mark.postgres
async def test_postgresql_plans_use_the_documented_indexes(postgres_dsn: str) -> None:
    connection = await asyncpg.connect(postgres_dsn)
    try:
        series = f"generate_series(1::bigint, {RUNS}::bigint) AS n"
        for template in (_EXECUTIONS, *_ATTRIBUTES):
            await connection.execute(template.format(base=BASE_US, series=series))
        await connection.execute("ANALYZE")
        for query, index in CASES.items():
            sql, params = _statement(query)
            plan = "\n".join(row[0] for row in await connection.fetch(f"EXPLAIN {_numbered(sql)}", *params))
            assert all(name in plan for name in _names(index)), f"{query!r} should use {index}:\n{plan}"
    finally:
        await connection.close()
