"""The embedded store: one SQLite file (WAL, synchronous=FULL), one server process.

Writers are serialized by an asyncio lock (SQLite has one writer anyway); their
statements run inline on the event loop (microseconds, the pages are cached).
A transaction yields to the loop once before its COMMIT (the reports already on
their way queue behind it, group_commit.py). If that turn found the loop idle and
recent COMMITs (the fsync) were quick, COMMIT runs inline: the hand-off to a thread
and back costs more CPU than a quick fsync takes (issue 20). Otherwise it runs on a
thread, so the loop's other work, the polls and the reads go on during the fsync,
and a slow disk stalls the loop at most once before COMMITs move to the thread.
Reads use a second connection, which in WAL mode sees only committed data.

Another process may hold the database's write lock (a backup, an operator's
``sqlite3`` shell). SQLite's own busy handler would wait for it by sleeping inside
the statement, which here would freeze the event loop and with it the whole server,
so the connections do not wait: a writer retries ``BEGIN IMMEDIATE`` with
``asyncio.sleep`` for at most ``lock_timeout_s`` and then fails with
:class:`StoreUnavailable` (UNAVAILABLE to the caller). While the lock stays taken,
the writers queued behind that one try once each instead of waiting in turn, so
every caller is answered promptly; the first ``BEGIN`` that succeeds ends that mode.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import functools
import os
import queue
import sqlite3
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any

from flowforge.server.stores import migrations
from flowforge.server.stores._sql import SQLTransaction, update_executions_sql
from flowforge.server.stores._sql.core import Record, version_conflict
from flowforge.server.stores.base import ConcurrencyConflict, ExecutionRow, Store, StoreUnavailable, Transaction

__all__ = ["SQLiteStore"]


@functools.lru_cache(maxsize=16)
def _insert_row_sql(table: str, columns: tuple[str, ...]) -> str:
    return f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' for _ in columns)})"


class _SQLiteTransaction(SQLTransaction):
    def __init__(self, connection: sqlite3.Connection) -> None:
        super().__init__()
        self._connection = connection

    def _run(self, sql: str, params: Sequence[Any]) -> sqlite3.Cursor:
        try:
            return self._connection.execute(sql, params)
        except sqlite3.OperationalError as error:
            raise StoreUnavailable(f"SQLite: {error}") from error

    async def _execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        return self._run(sql, params).rowcount

    async def _fetchone(self, sql: str, params: Sequence[Any] = ()) -> Record | None:
        record: tuple[Any, ...] | None = self._run(sql, params).fetchone()
        return record

    async def _fetchall(self, sql: str, params: Sequence[Any] = ()) -> Sequence[Record]:
        return self._run(sql, params).fetchall()

    async def _insert_many(self, table: str, fields: list[tuple[str, str]], rows: Sequence[Sequence[Any]]) -> None:
        try:
            self._connection.executemany(_insert_row_sql(table, tuple(name for name, _ in fields)), rows)
        except sqlite3.OperationalError as error:
            raise StoreUnavailable(f"SQLite: {error}") from error

    async def update_execution(
        self, row: ExecutionRow, expected_version: int, changed: tuple[str, ...] | None = None
    ) -> None:
        if changed is None:
            await super().update_execution(row, expected_version)
        else:
            # SQLite updates the index of every column an UPDATE sets, changed or not:
            # the whole row cost ~4x the few columns a transaction changes (issue 20).
            await self.update_executions(changed, [(row, expected_version)])

    async def _update_executions(self, columns: tuple[str, ...], params: list[tuple[Any, ...]]) -> None:
        try:
            # executemany's rowcount sums the rows every run of the statement changed.
            changed = self._connection.executemany(update_executions_sql(columns), params).rowcount
        except sqlite3.OperationalError as error:
            raise StoreUnavailable(f"SQLite: {error}") from error
        if changed != len(params):
            raise ConcurrencyConflict(version_conflict([(p[-3], p[-2]) for p in params]))


class _Commit:
    """One COMMIT handed to the commit thread: its outcome, how long it took, and
    the future the transaction awaits it on (a new one after a cancellation)."""

    __slots__ = ("error", "seconds", "settled", "waiter")

    def __init__(self) -> None:
        self.settled = False
        self.error: BaseException | None = None
        self.seconds = 0.0
        self.waiter: asyncio.Future[None] | None = None

    def settle(self, error: BaseException | None, seconds: float) -> None:
        """On the loop: the COMMIT is over (``error`` if it failed) after ``seconds``."""
        self.settled, self.error, self.seconds = True, error, seconds
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(None)


class _CommitPlace:
    """Where the next COMMIT runs: inline while recent COMMITs took less than
    ``inline_below_s`` on average (a moving one: a slow checkpoint sends the next few
    to the thread, a slow disk all of them); ``inline_below_s`` of 0: always the thread."""

    __slots__ = ("_average_s", "_inline_below_s")

    # The weight of the latest COMMIT in the average.
    _WEIGHT = 0.25

    def __init__(self, inline_below_s: float) -> None:
        self._inline_below_s = inline_below_s
        self._average_s = 0.0

    def inline(self) -> bool:
        """Whether the next COMMIT runs inline."""
        return self._average_s < self._inline_below_s

    def took(self, seconds: float) -> None:
        """A COMMIT (inline or on the thread) took ``seconds``."""
        self._average_s += self._WEIGHT * (seconds - self._average_s)


class _CommitThread:
    """Runs each COMMIT (the fsync) off the event loop, one at a time, and settles it
    on the loop. A plain thread and queue: a thread pool's futures, their chaining
    into asyncio and ``asyncio.wait`` cost more CPU than the rest of a small
    transaction's Python work."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[tuple[sqlite3.Connection, Callable[[BaseException | None, float], object]] | None]
        self._jobs = queue.SimpleQueue()
        # A daemon: a COMMIT cut short at interpreter exit is one that never happened (WAL).
        self._thread = threading.Thread(target=self._run, name="flowforge-sqlite-commit", daemon=True)
        self._thread.start()

    def commit(self, connection: sqlite3.Connection, commit: _Commit) -> None:
        """Queues COMMIT on ``connection``; ``commit`` is settled on the running loop."""
        loop = asyncio.get_running_loop()
        self._jobs.put((connection, lambda error, seconds: loop.call_soon_threadsafe(commit.settle, error, seconds)))

    def _run(self) -> None:
        while (job := self._jobs.get()) is not None:
            connection, settle = job
            error, seconds = _run_commit(connection)
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits
                settle(error, seconds)

    def stop(self) -> None:
        self._jobs.put(None)
        self._thread.join()


def _run_commit(connection: sqlite3.Connection) -> tuple[BaseException | None, float]:
    """Runs COMMIT on ``connection``: the error it raised, if any, and how long it took."""
    began = time.perf_counter()
    try:
        connection.execute("COMMIT")
    except BaseException as failure:  # handed to the transaction, which raises it
        return failure, time.perf_counter() - began
    return None, time.perf_counter() - began


class SQLiteStore(Store):
    """A :class:`Store` in one SQLite file, or in memory for throwaway servers.

    Args:
        path: The database file; ``None`` keeps everything in a temporary file that
            is deleted on close (``start-dev --in-memory``).
        lock_timeout_s: How long a transaction waits for a write lock held by
            another process before it fails with :class:`StoreUnavailable`.
        inline_commit_below_s: COMMITs run on the event loop while they take less
            than this on average (see the module docstring); 0 runs every COMMIT on
            the thread.
        idle_turn_s: A turn of the event loop shorter than this before a COMMIT found
            the loop idle: one that runs nothing else takes ~10 µs, while at 100
            workflows in flight most take 0.1-2 ms.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None,
        *,
        lock_timeout_s: float = 2.0,
        inline_commit_below_s: float = 0.001,
        idle_turn_s: float = 0.00005,
    ) -> None:
        super().__init__()
        self._lock_timeout_s = lock_timeout_s
        self._commit_place = _CommitPlace(inline_commit_below_s)
        self._idle_turn_s = idle_turn_s
        # Set while another process holds the write lock past lock_timeout_s.
        self._locked_out = False
        self._temporary = path is None
        if path is None:
            fd, name = tempfile.mkstemp(prefix="flowforge-", suffix=".db")
            os.close(fd)
            path = name
        self.path = Path(path)
        self._writer: sqlite3.Connection | None = None
        self._reader: sqlite3.Connection | None = None
        self._write_lock = asyncio.Lock()
        self._commit_thread: _CommitThread | None = None
        self._lock_file: int | None = None

    def _connect(self) -> sqlite3.Connection:
        # Opening may wait for a lock (a recovering WAL); nothing is being served yet.
        connection = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=5.0)
        connection.execute("PRAGMA journal_mode = WAL")
        connection.execute("PRAGMA synchronous = FULL")
        connection.execute("PRAGMA foreign_keys = ON")
        return connection

    @staticmethod
    def _serve_without_blocking(connection: sqlite3.Connection) -> None:
        """From now on a busy database fails a statement at once (see the module
        docstring) instead of sleeping on the event loop."""
        connection.execute("PRAGMA busy_timeout = 0")

    async def open(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        _make_private(self.path)
        # One server per file: a second one would break the single-writer design.
        self._lock_file = os.open(f"{self.path}.lock", os.O_CREAT | os.O_RDWR, 0o600)
        try:
            fcntl.flock(self._lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self._lock_file)
            self._lock_file = None
            raise StoreUnavailable(f"{self.path} is in use by another FlowForge server") from None
        self._writer = self._connect()
        self._reader = self._connect()
        migrations.apply_sqlite(self._writer)
        for connection in (self._writer, self._reader):
            self._serve_without_blocking(connection)
        self._commit_thread = _CommitThread()

    async def close(self) -> None:
        async with self._write_lock:
            for connection in (self._reader, self._writer):
                if connection is not None:
                    connection.close()
            self._reader = self._writer = None
        if self._commit_thread is not None:
            self._commit_thread.stop()
            self._commit_thread = None
        if self._lock_file is not None:
            os.close(self._lock_file)
            self._lock_file = None
        if self._temporary:
            for suffix in ("", "-wal", "-shm", ".lock"):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(f"{self.path}{suffix}")

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[Transaction]:
        await self._write_lock.acquire()
        try:
            connection = self._require(self._writer)
            await self._begin_immediate(connection)
            tx = _SQLiteTransaction(connection)
            try:
                yield tx
            except BaseException:
                connection.execute("ROLLBACK")
                raise
            commit = _Commit()
            assert self._commit_thread is not None, "open, as the writer is"
            # A cancellation (the caller's client went away) must neither cancel the
            # queued COMMIT nor release the write lock before the COMMIT is over:
            # either would leave the writer inside this transaction, and every later
            # BEGIN would fail until a restart. So commit regardless, then re-raise.
            cancelled: BaseException | None = None
            loop = asyncio.get_running_loop()
            # One turn of the loop first: reports already on their way queue behind this
            # transaction (group_commit.py), and a turn that took long says the loop has
            # other work, which goes on during the fsync if it runs on the thread.
            turn_began = loop.time()
            try:
                await asyncio.sleep(0)
            except asyncio.CancelledError as error:
                cancelled = error
            now = loop.time()
            if now - turn_began < self._idle_turn_s and self._commit_place.inline():
                commit.settle(*_run_commit(connection))
            else:
                self._commit_thread.commit(connection, commit)
            while not commit.settled:
                commit.waiter = loop.create_future()
                try:
                    await commit.waiter
                except asyncio.CancelledError as error:
                    cancelled = error
            self._commit_place.took(commit.seconds)
            failure = commit.error
            if failure is not None:
                with contextlib.suppress(sqlite3.Error):
                    connection.execute("ROLLBACK")
                if isinstance(failure, sqlite3.OperationalError):
                    raise StoreUnavailable(f"SQLite commit failed: {failure}") from failure
                raise failure
        finally:
            self._write_lock.release()
        for channel in tx.channels:
            self.notifier.notify(channel)
        if cancelled is not None:
            raise cancelled

    async def _begin_immediate(self, connection: sqlite3.Connection) -> None:
        """Takes the database's write lock, waiting (without blocking the loop) at most
        ``lock_timeout_s`` for another process to release it; StoreUnavailable if not."""
        loop = asyncio.get_running_loop()
        give_up_at = loop.time() + (0.0 if self._locked_out else self._lock_timeout_s)
        delay = 0.001
        while True:
            try:
                connection.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as error:
                if not self._is_busy(error):
                    raise StoreUnavailable(f"SQLite: {error}") from error
                if loop.time() + delay > give_up_at:
                    self._locked_out = True
                    raise StoreUnavailable(
                        f"SQLite: {error} (another process holds the write lock of {self.path})"
                    ) from error
                await asyncio.sleep(delay)
                delay = min(delay * 2, 0.05)
                continue
            self._locked_out = False
            return

    @staticmethod
    def _is_busy(error: sqlite3.OperationalError) -> bool:
        code = getattr(error, "sqlite_errorcode", None)
        if code is not None:
            return code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
        return "locked" in str(error) or "busy" in str(error)

    @contextlib.asynccontextmanager
    async def read(self, *, one_statement: bool = False) -> AsyncIterator[Transaction]:
        # one_statement changes nothing here: BEGIN and COMMIT are calls in this process.
        connection = self._require(self._reader)
        # The body runs without yielding to the loop (SQLite calls are inline), so
        # one reader connection serves every coroutine; BEGIN gives a snapshot.
        try:
            connection.execute("BEGIN")
        except sqlite3.OperationalError as error:
            raise StoreUnavailable(f"SQLite: {error}") from error
        try:
            yield _SQLiteTransaction(connection)
        finally:
            try:
                connection.execute("COMMIT")
            except sqlite3.OperationalError:
                # Never leave the shared reader inside a transaction.
                with contextlib.suppress(sqlite3.Error):
                    connection.execute("ROLLBACK")

    async def ping(self) -> None:
        async with self.read() as tx:
            await tx.get_metadata("schema_version")

    @staticmethod
    def _require(connection: sqlite3.Connection | None) -> sqlite3.Connection:
        if connection is None:
            raise StoreUnavailable("the SQLite store is closed")
        return connection


def _make_private(path: Path) -> None:
    """Creates the database file readable and writable by this user only (0600), and
    narrows an existing one and its WAL; SQLite gives the ``-wal`` and ``-shm`` files
    it creates the database file's mode."""
    os.close(os.open(path, os.O_CREAT | os.O_RDWR, 0o600))
    for suffix in ("", "-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError, PermissionError):
            os.chmod(f"{path}{suffix}", 0o600)
