"""The machine's raw durable-commit rate: the physical limit under the engine.

    python -m benchmarks.commit_rate [--store sqlite|postgresql|both] [-T 20]

- ``postgresql``: ``pgbench`` with a custom script of one single-row INSERT per
  transaction (``benchmarks/insert.sql``) against a fresh database on the server
  :func:`testsupport.postgres.start_postgres` finds or starts (a throwaway cluster from
  the local binaries, ``fsync=on``, default ``synchronous_commit=on``, the same
  kind of server ``python -m benchmarks.onboarding --store postgresql`` uses).
  Runs with 1 client (the commit latency of one session) and with 8 clients on 2
  threads (``-c 8 -j 2``: group commit lets concurrent sessions share a WAL flush).
- ``sqlite``: one connection in WAL mode with ``synchronous=FULL`` (the embedded
  store's settings) committing one single-row INSERT per transaction in a loop,
  in a file in the temporary directory (the filesystem the benchmark's SQLite
  store uses). SQLite has one writer at a time, so one connection is the limit.

Prints one JSON line per measurement.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sqlite3
import subprocess
import tempfile
import time
import urllib.parse
from pathlib import Path

from benchmarks.onboarding import load_average, machine

INSERT_SQL = Path(__file__).with_name("insert.sql")
SETUP_SQL = "CREATE TABLE IF NOT EXISTS commit_rate (id bigserial PRIMARY KEY, at timestamptz NOT NULL DEFAULT now(), payload text NOT NULL)"


def _pgbench() -> str:
    from testsupport.postgres import find_binary

    found = find_binary("pgbench")
    if found is None:
        raise SystemExit("pgbench not found on PATH or in /usr/lib/postgresql/*/bin")
    return found


def postgresql(seconds: int, clients: list[int]) -> list[dict]:
    import asyncpg

    from testsupport.postgres import start_postgres

    server = start_postgres()
    try:
        dsn = asyncio.run(server.create_database(migrated=False))

        async def prepare() -> dict:
            connection = await asyncpg.connect(dsn)
            try:
                await connection.execute(SETUP_SQL)
                settings = {}
                for name in (
                    "server_version",
                    "fsync",
                    "synchronous_commit",
                    "wal_sync_method",
                    "commit_delay",
                    "shared_buffers",
                ):
                    settings[name] = await connection.fetchval(f"SHOW {name}")
                return settings
            finally:
                await connection.close()

        settings = asyncio.run(prepare())
        parts = urllib.parse.urlsplit(dsn)
        results = []
        for count in clients:
            threads = min(count, os.cpu_count() or 1)
            command = [
                _pgbench(),
                "-n",
                "-c",
                str(count),
                "-j",
                str(threads),
                "-T",
                str(seconds),
                "-f",
                str(INSERT_SQL),
                "-h",
                parts.hostname or "127.0.0.1",
                "-p",
                str(parts.port or 5432),
                "-U",
                parts.username or "postgres",
                parts.path.lstrip("/"),
            ]
            output = subprocess.run(command, capture_output=True, text=True, check=True).stdout
            tps = float(re.search(r"tps = ([0-9.]+)", output).group(1))  # type: ignore[union-attr]
            latency = re.search(r"latency average = ([0-9.]+) ms", output)
            results.append(
                {
                    "store": "postgresql",
                    "tool": "pgbench",
                    "command": f"pgbench -n -c {count} -j {threads} -T {seconds} -f benchmarks/insert.sql",
                    "clients": count,
                    "seconds": seconds,
                    "commits_per_s": round(tps, 1),
                    "latency_avg_ms": float(latency.group(1)) if latency else None,
                    "settings": settings,
                    "server": server.description,
                }
            )
        return results
    finally:
        server.stop()


def sqlite(seconds: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="flowforge-commit-rate-") as tmp:
        path = os.path.join(tmp, "commit_rate.db")
        connection = sqlite3.connect(path, isolation_level=None)
        connection.execute("PRAGMA journal_mode = WAL")
        connection.execute("PRAGMA synchronous = FULL")
        connection.execute("CREATE TABLE commit_rate (id INTEGER PRIMARY KEY, at REAL NOT NULL, payload TEXT NOT NULL)")
        commits = 0
        latencies = []
        began = time.perf_counter()
        deadline = began + seconds
        while (now := time.perf_counter()) < deadline:
            connection.execute("BEGIN IMMEDIATE")
            connection.execute("INSERT INTO commit_rate (at, payload) VALUES (?, ?)", (time.time(), "x" * 100))
            connection.execute("COMMIT")
            latencies.append(time.perf_counter() - now)
            commits += 1
        elapsed = time.perf_counter() - began
        connection.close()
    latencies.sort()
    return {
        "store": "sqlite",
        "tool": "python sqlite3",
        "clients": 1,
        "seconds": seconds,
        "commits_per_s": round(commits / elapsed, 1),
        "latency_p50_ms": round(latencies[len(latencies) // 2] * 1000, 3),
        "latency_p95_ms": round(latencies[int(len(latencies) * 0.95)] * 1000, 3),
        "settings": {
            "journal_mode": "wal",
            "synchronous": "FULL",
            "sqlite_version": sqlite3.sqlite_version,
            "directory": tempfile.gettempdir(),
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", choices=("sqlite", "postgresql", "both"), default="both")
    parser.add_argument("-T", "--seconds", type=int, default=20, help="duration of each measurement")
    parser.add_argument("--clients", default="1,8", help="pgbench client counts, comma-separated (default 1,8)")
    args = parser.parse_args()
    load_before = load_average()
    results = []
    if args.store in ("sqlite", "both"):
        results.append(sqlite(args.seconds))
    if args.store in ("postgresql", "both"):
        results.extend(postgresql(args.seconds, [int(c) for c in args.clients.split(",")]))
    for result in results:
        result["machine"] = machine()
        result["load_average_1m_before"] = load_before
        result["load_average_1m_after"] = load_average()
        print(json.dumps(result))


if __name__ == "__main__":
    main()
