"""Migration 0018 (fewer task indexes) upgrades a database that has outstanding tasks.

A database migrated up to 0017 gets a run with an activity task and a workflow task;
applying the rest keeps both rows, leaves tasks with the indexes the migration says,
and the merged ``ux_tasks_run_activity`` still refuses a second task for one activity
id of a run, as ``ux_tasks_run_workflow_task`` a second workflow task, while another
activity of the run is admitted.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import asyncpg
import pytest

from flowforge.server.stores import migrations
from testsupport.postgres import PostgresServer

BEFORE = 17
TASK_INDEXES = {
    "ix_tasks_dispatch_order",
    "ix_tasks_held_key",
    "ix_tasks_leased_expiry",
    "ix_tasks_leased_key",
    "ix_tasks_leased_namespace",
    "ix_tasks_pending_deadline",
    "ux_tasks_run_activity",
    "ux_tasks_run_workflow_task",
}

_RUN = (
    "INSERT INTO executions (namespace, run_id, workflow_id, workflow_type, task_queue, status, next_event_id,"
    " version, start_us, wft_state, wft_attempt, wft_timeout_s)"
    " VALUES ('default', 'r1', 'w1', 'T', 'q', 'RUNNING', 5, 1, 1, 'SCHEDULED', 1, 10)"
)


def _task(kind: str, activity_id: str | None) -> str:
    activity = "NULL, NULL" if activity_id is None else f"'{activity_id}', 'Work'"
    return (
        "INSERT INTO tasks (namespace, run_id, workflow_id, workflow_type, kind, task_queue, state, visible_us,"
        " fencing_token, attempt, activity_id, activity_type, scheduled_us)"
        f" VALUES ('default', 'r1', 'w1', 'T', '{kind}', 'q', 'PENDING', 1, 0, 1, {activity}, 1)"
    )


def test_sqlite_upgrade_keeps_tasks_and_their_uniqueness(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    every = migrations.load("sqlite")
    monkeypatch.setattr(migrations, "load", lambda dialect: every[:BEFORE])
    connection = sqlite3.connect(tmp_path / "old.db", isolation_level=None)
    try:
        assert migrations.apply_sqlite(connection) == list(range(1, BEFORE + 1))
        monkeypatch.undo()
        for statement in (_RUN, _task("ACTIVITY", "a"), _task("WORKFLOW", None)):
            connection.execute(statement)
        assert migrations.apply_sqlite(connection) == list(range(BEFORE + 1, len(every) + 1))
        assert connection.execute("SELECT kind, activity_id FROM tasks ORDER BY task_id").fetchall() == [
            ("ACTIVITY", "a"),
            ("WORKFLOW", None),
        ]
        indexes = {row[1] for row in connection.execute("PRAGMA index_list(tasks)") if row[3] == "c"}
        assert indexes == TASK_INDEXES
        with pytest.raises(
            sqlite3.IntegrityError, match=r"UNIQUE constraint failed: tasks\.run_id, tasks\.activity_id$"
        ):
            connection.execute(_task("ACTIVITY", "a"))
        with pytest.raises(sqlite3.IntegrityError, match=r"UNIQUE constraint failed: tasks\.run_id$"):
            connection.execute(_task("WORKFLOW", None))
        connection.execute(_task("ACTIVITY", "b"))
    finally:
        connection.close()


@pytest.mark.postgres
async def test_postgresql_upgrade_keeps_tasks_and_their_uniqueness(
    postgres: PostgresServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    every = migrations.load("postgresql")
    monkeypatch.setattr(migrations, "load", lambda dialect: every[:BEFORE])
    async with postgres.database(migrated=False) as dsn:
        connection = await asyncpg.connect(dsn)
        try:
            assert await migrations.apply_postgres(connection) == list(range(1, BEFORE + 1))
            monkeypatch.undo()
            for statement in (_RUN, _task("ACTIVITY", "a"), _task("WORKFLOW", None)):
                await connection.execute(statement)
            assert await migrations.apply_postgres(connection) == list(range(BEFORE + 1, len(every) + 1))
            rows = await connection.fetch("SELECT kind, activity_id FROM tasks ORDER BY task_id")
            assert [tuple(row) for row in rows] == [("ACTIVITY", "a"), ("WORKFLOW", None)]
            indexes = {
                row[0]
                for row in await connection.fetch(
                    "SELECT indexname FROM pg_indexes WHERE tablename = 'tasks' AND indexname <> 'pk_tasks'"
                )
            }
            assert indexes == TASK_INDEXES
            with pytest.raises(asyncpg.UniqueViolationError, match="ux_tasks_run_activity"):
                await connection.execute(_task("ACTIVITY", "a"))
            with pytest.raises(asyncpg.UniqueViolationError, match="ux_tasks_run_workflow_task"):
                await connection.execute(_task("WORKFLOW", None))
            await connection.execute(_task("ACTIVITY", "b"))
        finally:
            await connection.close()
