"""Schema migrations: versioned, idempotent, and the same schema in both dialects.

Constraint and index names are the contract between the two schemas, the docs and
future migrations, so the check compares the live catalogs of a migrated SQLite
file and a migrated PostgreSQL database: tables, columns (type family, nullability,
default, primary key), named constraints, foreign keys and indexes (columns,
uniqueness, partial or not).
"""

from __future__ import annotations

import asyncio
import re
import sqlite3
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from flowforge.api.schema import ExecutionStatus, QueryState, TaskKind, TaskState, WorkflowTaskState
from flowforge.server.stores import migrations
from testsupport.postgres import PostgresServer

pg = pytest.mark.postgres

Schema = dict[str, dict[str, Any]]

# Declared types by family; a column must be of the same family in both dialects.
_SQLITE_FAMILIES = {"INTEGER": "integer", "REAL": "real", "TEXT": "text", "BLOB": "bytes", "BIGINT": "integer"}
_POSTGRES_FAMILIES = {
    "integer": "integer",
    "bigint": "integer",
    "smallint": "integer",
    "double precision": "real",
    "text": "text",
    "bytea": "bytes",
}


def _default(value: Any) -> Any:
    """'[]'::text (PostgreSQL) and '[]' (SQLite) are the same default."""
    return None if value is None else re.sub(r"::[a-z ]+$", "", str(value))


def sqlite_schema(path: Path) -> Schema:
    connection = sqlite3.connect(path)
    try:
        schema: Schema = {}
        tables = connection.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
        ).fetchall()
        for table, sql in tables:
            columns = {
                name: (_SQLITE_FAMILIES[declared.upper()], not notnull and not pk, _default(default), bool(pk))
                for _cid, name, declared, notnull, default, pk in connection.execute(f"PRAGMA table_info({table})")
            }
            foreign_keys = {
                (source, target_table, target)
                for _id, _seq, target_table, source, target, *_ in connection.execute(
                    f"PRAGMA foreign_key_list({table})"
                )
            }
            indexes = {}
            for _seq, name, unique, origin, partial in connection.execute(f"PRAGMA index_list({table})"):
                if origin != "c":  # 'pk'/'u': the implicit index of a constraint
                    continue
                index_columns = tuple(row[2] for row in connection.execute(f"PRAGMA index_info({name})"))
                indexes[name] = (index_columns, bool(unique), bool(partial))
            schema[table] = {
                "columns": columns,
                # SQLite keeps constraint names only in the CREATE TABLE text.
                "constraints": set(re.findall(r"CONSTRAINT\s+(\w+)", sql)),
                "foreign_keys": foreign_keys,
                "indexes": indexes,
            }
        return schema
    finally:
        connection.close()


async def postgres_schema(connection: asyncpg.Connection) -> Schema:
    schema: Schema = {}
    for record in await connection.fetch(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE'"
    ):
        table = record["table_name"]
        primary_key = {
            r["attname"]
            for r in await connection.fetch(
                "SELECT a.attname FROM pg_index i JOIN pg_attribute a"
                " ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)"
                " WHERE i.indrelid = $1::regclass AND i.indisprimary",
                table,
            )
        }
        columns = {
            r["column_name"]: (
                _POSTGRES_FAMILIES[r["data_type"]],
                r["is_nullable"] == "YES",
                _default(r["column_default"]),
                r["column_name"] in primary_key,
            )
            for r in await connection.fetch(
                "SELECT column_name, data_type, is_nullable, column_default FROM information_schema.columns"
                " WHERE table_schema = 'public' AND table_name = $1",
                table,
            )
        }
        constraints = await connection.fetch(
            "SELECT conname, contype::text AS contype, conindid, pg_get_constraintdef(oid) AS definition FROM pg_constraint"
            " WHERE conrelid = $1::regclass",
            table,
        )
        foreign_keys = set()
        for c in constraints:
            if c["contype"] == "f":
                match = re.fullmatch(r"FOREIGN KEY \((\w+)\) REFERENCES (\w+)\((\w+)\)", c["definition"])
                assert match, c["definition"]
                foreign_keys.add(match.groups())
        constraint_indexes = {c["conindid"] for c in constraints}
        indexes = {}
        for r in await connection.fetch(
            "SELECT i.indexrelid, c.relname, i.indisunique, i.indpred IS NOT NULL AS partial,"
            " array(SELECT a.attname FROM unnest(i.indkey) WITH ORDINALITY AS k(attnum, n)"
            "       JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum ORDER BY k.n) AS columns"
            " FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE i.indrelid = $1::regclass",
            table,
        ):
            if r["indexrelid"] not in constraint_indexes:
                indexes[r["relname"]] = (tuple(r["columns"]), r["indisunique"], r["partial"])
        schema[table] = {
            "columns": columns,
            "constraints": {c["conname"] for c in constraints},
            "foreign_keys": foreign_keys,
            "indexes": indexes,
        }
    return schema


def migrate_sqlite(path: Path) -> list[int]:
    connection = sqlite3.connect(path, isolation_level=None)
    try:
        return migrations.apply_sqlite(connection)
    finally:
        connection.close()


def test_both_dialects_have_the_same_numbered_migrations() -> None:
    sqlite, postgresql = migrations.load("sqlite"), migrations.load("postgresql")
    assert [(m.version, m.name) for m in sqlite] == [(m.version, m.name) for m in postgresql]
    assert [m.version for m in sqlite] == list(range(1, len(sqlite) + 1))


def test_gaps_in_numbering_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "sqlite").mkdir()
    (tmp_path / "sqlite" / "0001_initial.sql").write_text("SELECT 1;")
    (tmp_path / "sqlite" / "0003_later.sql").write_text("SELECT 1;")
    monkeypatch.setattr(migrations, "_DIRECTORY", tmp_path)
    with pytest.raises(ValueError, match=r"1\.\.n without gaps"):
        migrations.load("sqlite")


def test_sqlite_migrations_apply_once(tmp_path: Path) -> None:
    versions = [m.version for m in migrations.load("sqlite")]
    assert migrate_sqlite(tmp_path / "db") == versions
    assert migrate_sqlite(tmp_path / "db") == []
    connection = sqlite3.connect(tmp_path / "db")
    try:
        assert [r[0] for r in connection.execute("SELECT version FROM schema_migrations ORDER BY version")] == versions
        assert connection.execute("SELECT name FROM namespaces").fetchall() == [("default",)]
    finally:
        connection.close()


@pg
async def test_postgres_migrations_apply_once_even_when_replicas_race(postgres: PostgresServer) -> None:
    versions = [m.version for m in migrations.load("postgresql")]
    async with postgres.database(migrated=False) as dsn:
        connections = [await asyncpg.connect(dsn) for _ in range(4)]
        try:
            # Replicas starting together: the advisory lock lets one apply, the others find it done.
            applied = await asyncio.gather(*(migrations.apply_postgres(c) for c in connections))
            assert sorted(applied) == [[], [], [], versions]
            assert await migrations.apply_postgres(connections[0]) == []
            assert [
                r[0] for r in await connections[0].fetch("SELECT version FROM schema_migrations ORDER BY version")
            ] == versions
            assert await connections[0].fetchval("SELECT count(*) FROM namespaces WHERE name = 'default'") == 1
        finally:
            for connection in connections:
                await connection.close()


@pytest.fixture
async def postgres_connection(postgres: PostgresServer) -> asyncpg.Connection:
    async with postgres.database(migrated=False) as dsn:
        connection = await asyncpg.connect(dsn)
        try:
            await migrations.apply_postgres(connection)
            yield connection
        finally:
            await connection.close()


@pg
async def test_sqlite_and_postgresql_schemas_agree(tmp_path: Path, postgres_connection: asyncpg.Connection) -> None:
    migrate_sqlite(tmp_path / "db")
    sqlite, postgresql = sqlite_schema(tmp_path / "db"), await postgres_schema(postgres_connection)
    assert sorted(sqlite) == sorted(postgresql)
    for table in sqlite:
        for aspect in ("columns", "constraints", "foreign_keys", "indexes"):
            assert sqlite[table][aspect] == postgresql[table][aspect], f"{table}: {aspect} differ"
    # The names the docs and the CHECK tests rely on exist.
    assert "ck_tasks_lease_iff_leased" in postgresql["tasks"]["constraints"]
    assert postgresql["executions"]["indexes"]["ux_executions_running_workflow_id"] == (
        ("namespace", "workflow_id"),
        True,
        True,
    )


@pg
@pytest.mark.parametrize(
    "drift",
    [
        "ALTER TABLE timers RENAME CONSTRAINT pk_timers TO timers_pkey",
        "ALTER INDEX ix_tasks_leased_expiry RENAME TO ix_tasks_lease",
        "ALTER TABLE tasks ALTER COLUMN identity DROP NOT NULL",
        "ALTER TABLE tasks ADD COLUMN priority INTEGER",
        "DROP INDEX ix_timers_fire",
    ],
)
async def test_schema_check_notices_drift(tmp_path: Path, postgres_connection: asyncpg.Connection, drift: str) -> None:
    migrate_sqlite(tmp_path / "db")
    await postgres_connection.execute(drift)
    assert sqlite_schema(tmp_path / "db") != await postgres_schema(postgres_connection)


# The state columns' CHECK constraints and the enums of flowforge.api.schema name the same values.
_VOCABULARIES = pytest.mark.parametrize(
    ("constraint", "vocabulary"),
    [
        ("ck_executions_status", set(ExecutionStatus)),
        ("ck_executions_wft_state", set(WorkflowTaskState)),
        # QUERY names a leased query in a task token, never a task row.
        ("ck_tasks_kind", set(TaskKind) - {TaskKind.QUERY}),
        ("ck_tasks_state", set(TaskState)),
        ("ck_workflow_queries_state", set(QueryState)),
    ],
)


@_VOCABULARIES
def test_sqlite_state_columns_admit_exactly_the_schema_vocabulary(
    tmp_path: Path, constraint: str, vocabulary: set[str]
) -> None:
    migrate_sqlite(tmp_path / "db")
    connection = sqlite3.connect(tmp_path / "db")
    try:
        tables = "\n".join(sql for (sql,) in connection.execute("SELECT sql FROM sqlite_master WHERE type = 'table'"))
    finally:
        connection.close()
    check = re.search(rf"CONSTRAINT {constraint} CHECK \(\w+ IN\s*\(([^)]*)\)\)", tables)
    assert check is not None, f"{constraint} is not a CHECK (column IN (...)) constraint"
    assert set(re.findall(r"'(\w+)'", check.group(1))) == {str(value) for value in vocabulary}


@pg
@_VOCABULARIES
async def test_postgres_state_columns_admit_exactly_the_schema_vocabulary(
    postgres_connection: asyncpg.Connection, constraint: str, vocabulary: set[str]
) -> None:
    definition = await postgres_connection.fetchval(
        "SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conname = $1", constraint
    )
    assert definition is not None, f"no constraint {constraint}"
    # e.g. CHECK ((state = ANY (ARRAY['PENDING'::text, 'LEASED'::text])))
    assert set(re.findall(r"'(\w+)'::text", definition)) == {str(value) for value in vocabulary}
