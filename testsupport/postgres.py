"""A PostgreSQL server for tests and benchmarks, found or started on demand.

:func:`start_postgres` tries, in order:

1. ``FLOWFORGE_TEST_POSTGRES_DSN`` (``postgresql://user:pw@host:port/db``): an existing
   server. Its user needs CREATEDB; databases are created next to ``db`` with a
   per-process prefix and dropped again.
2. A throwaway cluster from the local binaries (``initdb`` / ``pg_ctl`` on PATH or in
   ``/usr/lib/postgresql/*/bin``) in a temporary directory, listening on 127.0.0.1 and
   a free port, deleted afterwards. PostgreSQL refuses to run as root, so as root the
   cluster runs as ``FLOWFORGE_TEST_POSTGRES_USER`` (default ``nobody``) via ``runuser``.
3. A ``testcontainers`` container, if that package is installed and a Docker daemon answers.

Each database handed out is a copy of a template holding the migrated schema, so
it costs one ``CREATE DATABASE`` instead of running migrations.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import glob
import itertools
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import tempfile
import urllib.parse
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TypeVar

import asyncpg

from flowforge.server.stores import migrations

__all__ = [
    "ENV_DSN",
    "LocalCluster",
    "PostgresServer",
    "PostgresUnavailable",
    "find_binary",
    "free_port",
    "start_postgres",
    "with_address",
    "with_database",
]

ENV_DSN = "FLOWFORGE_TEST_POSTGRES_DSN"
ENV_USER = "FLOWFORGE_TEST_POSTGRES_USER"

_T = TypeVar("_T")


class PostgresUnavailable(Exception):
    """No PostgreSQL could be found or started; the message says why, per method."""


def _run_sync(coroutine: Awaitable[_T]) -> _T:
    """Runs ``coroutine`` to completion from synchronous code, even code called
    inside a running event loop (a fixture set up from an async fixture)."""

    async def run() -> _T:
        return await coroutine

    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as thread:
        return thread.submit(asyncio.run, run()).result()


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on (at the time of asking)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def with_database(dsn: str, database: str) -> str:
    """``dsn`` with its database name replaced."""
    parts = urllib.parse.urlsplit(dsn)
    return urllib.parse.urlunsplit(parts._replace(path="/" + database))


def with_address(dsn: str, host: str, port: int) -> str:
    """``dsn`` pointing at another host and port (same user, password, database)."""
    parts = urllib.parse.urlsplit(dsn)
    credentials = parts.netloc.rpartition("@")[0]
    netloc = f"{credentials}@{host}:{port}" if credentials else f"{host}:{port}"
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc))


class PostgresServer:
    """A running server on which tests create and drop databases.

    Args:
        admin_dsn: A database on the server whose user may create databases.
        description: Where the server came from (for skip messages and logs).
        stop: Stops the server (or forgets an external one).
    """

    def __init__(self, admin_dsn: str, description: str, stop: Callable[[], None]) -> None:
        self.admin_dsn = admin_dsn
        self.description = description
        self._stop = stop
        # Unique per process, so runs sharing one external server never collide.
        self._prefix = f"flowforge_test_{secrets.token_hex(4)}"
        self._template: str | None = None
        self._numbers = itertools.count(1)

    def dsn(self, database: str) -> str:
        return with_database(self.admin_dsn, database)

    async def _admin(self, *statements: str) -> None:
        connection = await asyncpg.connect(self.admin_dsn)
        try:
            for statement in statements:
                await connection.execute(statement)
        finally:
            await connection.close()

    async def _migrated_template(self) -> str:
        if self._template is None:
            name = f"{self._prefix}_template"
            await self._admin(f'CREATE DATABASE "{name}"')
            connection = await asyncpg.connect(self.dsn(name))
            try:
                await migrations.apply_postgres(connection)
            finally:
                # CREATE DATABASE ... TEMPLATE needs the template free of sessions.
                await connection.close()
            self._template = name
        return self._template

    async def create_database(self, *, migrated: bool = True) -> str:
        """Creates a database and returns its DSN: with the current schema applied,
        or (``migrated=False``) empty."""
        template = await self._migrated_template() if migrated else "template0"
        name = f"{self._prefix}_{next(self._numbers)}"
        await self._admin(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
        return self.dsn(name)

    async def drop_database(self, dsn: str) -> None:
        """Drops the database of ``dsn``, disconnecting whatever a test left connected."""
        name = urllib.parse.urlsplit(dsn).path.lstrip("/")
        await self._admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    @contextlib.asynccontextmanager
    async def database(self, *, migrated: bool = True) -> AsyncIterator[str]:
        """A fresh database for the block; dropped afterwards."""
        dsn = await self.create_database(migrated=migrated)
        try:
            yield dsn
        finally:
            await self.drop_database(dsn)

    def stop(self) -> None:
        if self._template is not None:
            with contextlib.suppress(Exception):
                _run_sync(self._admin(f'DROP DATABASE IF EXISTS "{self._template}" WITH (FORCE)'))
        self._stop()


def find_binary(name: str) -> str | None:
    """A PostgreSQL program (``initdb``, ``pgbench``, ...) on PATH or in the newest local installation."""
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return candidates[-1] if candidates else None


class LocalCluster:
    """A PostgreSQL cluster in a temporary directory, from the local binaries.

    The server runs with ``fsync=on`` (commit latency like production, not a RAM
    disk) and trust authentication on 127.0.0.1 only.
    """

    def __init__(self) -> None:
        initdb, pg_ctl = find_binary("initdb"), find_binary("pg_ctl")
        if initdb is None or pg_ctl is None:
            raise PostgresUnavailable("initdb/pg_ctl not found on PATH or in /usr/lib/postgresql/*/bin")
        self._initdb, self._pg_ctl = initdb, pg_ctl
        self._run_as: list[str] = []
        self._owner: str | None = None
        if os.geteuid() == 0:
            # PostgreSQL refuses to run as root.
            user = os.environ.get(ENV_USER, "nobody")
            runuser = shutil.which("runuser")
            if runuser is None:
                raise PostgresUnavailable("running as root and runuser is missing")
            try:
                pwd.getpwnam(user)
            except KeyError:
                raise PostgresUnavailable(
                    f"running as root and user {user!r} does not exist (set {ENV_USER})"
                ) from None
            self._run_as = [runuser, "-u", user, "--"]
            self._owner = user
        self.directory = tempfile.mkdtemp(prefix="flowforge-pg-")
        self.data = os.path.join(self.directory, "data")
        self.log = os.path.join(self.directory, "postgres.log")
        self.port = 0

    @property
    def dsn(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, *command: str) -> None:
        result = subprocess.run([*self._run_as, *command], capture_output=True, text=True, timeout=120)
        if result.returncode != 0:
            raise PostgresUnavailable(
                f"{os.path.basename(command[0])} failed ({result.returncode}): {result.stderr.strip() or result.stdout.strip()}"
            )

    def start(self) -> str:
        """Initializes (once) and starts the cluster; returns the DSN of ``postgres``."""
        try:
            if self._owner is not None:
                shutil.chown(self.directory, user=self._owner)
            if not os.path.exists(self.data):
                self._run(
                    self._initdb,
                    "-D",
                    self.data,
                    "-A",
                    "trust",
                    "-U",
                    "postgres",
                    "-E",
                    "UTF8",
                    "--locale=C",
                    "--no-sync",
                    "--no-instructions",
                )
            for attempt in range(3):
                self.port = free_port()
                try:
                    self._run(
                        self._pg_ctl,
                        "-D",
                        self.data,
                        "-l",
                        self.log,
                        "-w",
                        "-t",
                        "60",
                        "-o",
                        f"-c listen_addresses=127.0.0.1 -p {self.port} -c unix_socket_directories={self.directory}"
                        " -c fsync=on -c max_connections=300",
                        "start",
                    )
                    return self.dsn
                except PostgresUnavailable:
                    if attempt == 2:  # not a lost race for the port
                        raise
        except BaseException:
            self.remove()
            raise
        raise AssertionError("unreachable")

    def stop(self) -> None:
        """Stops the server at once (no checkpoint: the data is thrown away or restarted)."""
        if os.path.exists(os.path.join(self.data, "postmaster.pid")):
            with contextlib.suppress(PostgresUnavailable, subprocess.TimeoutExpired):
                self._run(self._pg_ctl, "-D", self.data, "-m", "immediate", "-w", "stop")

    def remove(self) -> None:
        self.stop()
        shutil.rmtree(self.directory, ignore_errors=True)


def _start_container() -> PostgresServer:
    try:
        from testcontainers.postgres import PostgresContainer
    except ImportError:
        raise PostgresUnavailable("testcontainers is not installed") from None
    container = PostgresContainer("postgres:15-alpine", username="postgres", password="postgres", dbname="postgres")
    try:
        container.start()
    except Exception as error:  # no Docker daemon, no image, ...
        raise PostgresUnavailable(f"testcontainers: {error}") from error
    host, port = container.get_container_host_ip(), container.get_exposed_port(5432)
    return PostgresServer(f"postgresql://postgres:postgres@{host}:{port}/postgres", "testcontainers", container.stop)


def start_postgres() -> PostgresServer:
    """Finds or starts a PostgreSQL server (see the module docstring); raises
    :class:`PostgresUnavailable` naming why each way failed."""
    dsn = os.environ.get(ENV_DSN)
    if dsn:
        server = PostgresServer(dsn, ENV_DSN, lambda: None)
        try:
            _run_sync(server._admin("SELECT 1"))
        except (OSError, asyncpg.PostgresError) as error:
            raise PostgresUnavailable(f"{ENV_DSN} is set but does not answer: {error}") from error
        return server
    reasons = []
    try:
        cluster = LocalCluster()
        cluster.start()
        return PostgresServer(cluster.dsn, f"local cluster in {cluster.directory}", cluster.remove)
    except PostgresUnavailable as error:
        reasons.append(f"local binaries: {error}")
    try:
        return _start_container()
    except PostgresUnavailable as error:
        reasons.append(str(error))
    raise PostgresUnavailable(f"{ENV_DSN} is not set; " + "; ".join(reasons))
