"""Versioned schema migrations, one folder of numbered .sql files per dialect.

A migration runs once, in one transaction with the row that records it in
``schema_migrations``; applying them again is a no-op.
"""

from __future__ import annotations

import re
import sqlite3
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import asyncpg
    from asyncpg.pool import PoolConnectionProxy

__all__ = ["Migration", "apply_postgres", "apply_sqlite", "load"]

_DIRECTORY = Path(__file__).parent
_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")

CREATE_MIGRATIONS_TABLE = (
    "CREATE TABLE IF NOT EXISTS schema_migrations ("
    " version INTEGER NOT NULL CONSTRAINT pk_schema_migrations PRIMARY KEY,"
    " name TEXT NOT NULL,"
    " applied_us BIGINT NOT NULL)"
)


class Migration:
    """One numbered SQL script."""

    def __init__(self, version: int, name: str, sql: str) -> None:
        self.version = version
        self.name = name
        self.sql = sql


def load(dialect: str) -> list[Migration]:
    """The migrations of ``dialect`` ("sqlite" or "postgresql"), in version order."""
    found = []
    for path in sorted((_DIRECTORY / dialect).glob("*.sql")):
        match = _NAME.match(path.name)
        if match is None:
            raise ValueError(f"migration file name {path.name!r} is not NNNN_name.sql")
        found.append(Migration(int(match.group(1)), match.group(2), path.read_text()))
    versions = [m.version for m in found]
    if versions != list(range(1, len(found) + 1)):
        raise ValueError(f"{dialect} migrations must be numbered 1..n without gaps, found {versions}")
    return found


def apply_sqlite(connection: sqlite3.Connection) -> list[int]:
    """Applies the pending SQLite migrations; returns the versions it applied."""
    connection.execute(CREATE_MIGRATIONS_TABLE)
    applied = {row[0] for row in connection.execute("SELECT version FROM schema_migrations")}
    done = []
    for migration in load("sqlite"):
        if migration.version in applied:
            continue
        connection.execute("BEGIN IMMEDIATE")
        try:
            for statement in _statements(migration.sql):
                connection.execute(statement)
            connection.execute(
                "INSERT INTO schema_migrations (version, name, applied_us) VALUES (?, ?, ?)",
                (migration.version, migration.name, time.time_ns() // 1000),
            )
            connection.execute("COMMIT")
        except BaseException:
            connection.execute("ROLLBACK")
            raise
        done.append(migration.version)
    return done


#: Serializes migrations of one PostgreSQL database across replicas starting at once
#: (any constant works; this one spells "FlowForg").
POSTGRES_MIGRATION_LOCK = 0x466C6F77466F7267


async def apply_postgres(connection: asyncpg.Connection | PoolConnectionProxy) -> list[int]:
    """Applies the pending PostgreSQL migrations; returns the versions it applied.

    Everything runs in one transaction that first takes a transaction-scoped
    advisory lock, so replicas starting together apply each migration once: the
    others wait, then find it recorded. PostgreSQL DDL is transactional, so a failed
    migration leaves neither its changes nor its ``schema_migrations`` row.
    """
    done = []
    async with connection.transaction():
        await connection.execute("SELECT pg_advisory_xact_lock($1)", POSTGRES_MIGRATION_LOCK)
        await connection.execute(CREATE_MIGRATIONS_TABLE)
        applied = {row[0] for row in await connection.fetch("SELECT version FROM schema_migrations")}
        for migration in load("postgresql"):
            if migration.version in applied:
                continue
            # Without arguments asyncpg uses the simple query protocol, which runs a
            # whole multi-statement script.
            await connection.execute(migration.sql)
            await connection.execute(
                "INSERT INTO schema_migrations (version, name, applied_us) VALUES ($1, $2, $3)",
                migration.version,
                migration.name,
                time.time_ns() // 1000,
            )
            done.append(migration.version)
    return done


def _statements(script: str) -> list[str]:
    """Splits a script into statements on ';' (our migrations hold no ';' in literals),
    keeping a trigger's ``BEGIN ... END`` body, whose statements end in ';' too, whole."""
    without_comments = "\n".join(line for line in script.splitlines() if not line.strip().startswith("--"))
    statements, pending = [], ""
    for piece in without_comments.split(";"):
        pending += piece + ";"
        if sqlite3.complete_statement(pending):
            statements.append(pending.strip().removesuffix(";").strip())
            pending = ""
    return [statement for statement in statements if statement]
