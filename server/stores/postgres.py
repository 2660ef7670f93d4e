"""The scale-out store: PostgreSQL via asyncpg, shared by several server replicas.

- Every :meth:`~PostgresStore.transaction` is one READ COMMITTED transaction on a
  pooled connection. Row locks replace SQLite's single writer: a poll leases with
  ``FOR UPDATE SKIP LOCKED`` (concurrent pollers take different rows), a report
  locks its task row ``FOR UPDATE``, and the execution row's ``version`` catches two
  transactions that read the same execution: READ COMMITTED re-evaluates the
  UPDATE's ``version = ?`` on the newest row version, so the later writer changes
  no row and gets :class:`ConcurrencyConflict`.
- Long-poll wake-ups: a committed transaction wakes its channels' waiters in this
  process at once (as on SQLite) and hands the channels to one sender that NOTIFYs
  them, packed into JSON arrays, to the other replicas, whose LISTEN connection (one
  per store, outside the pool) passes them to their
  :class:`~flowforge.server.stores.base.Notifier`; a store skips the notifications its
  own sender sent. Not inside the transaction: PostgreSQL serializes the commits of
  every transaction that NOTIFYs on one database-wide lock held through the WAL flush,
  so they could not share a flush (4x fewer commits/s with 8 sessions, measured). The
  sender has one NOTIFY in flight and sends whatever committed meanwhile in the next;
  a replica that dies between a COMMIT and its NOTIFY leaves the other replicas'
  waiters to their periodic re-check or deadline (a wake-up is a hint, the rows are
  the truth).
- Round trips are the cost on this store (each is a wait on the event loop and on
  the network): BEGIN, each statement, and COMMIT with its notifications; hot
  statements are prepared once per connection and kept (``statement_cache_size``),
  and a batch of rows is one statement over column arrays.
- :meth:`~PostgresStore.read` is a READ ONLY REPEATABLE READ transaction: all its
  statements see one snapshot, as on SQLite, and it never blocks or fails writers.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import dataclasses
import functools
import json
import logging
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import Any

import asyncpg
from asyncpg.pool import PoolConnectionProxy

from flowforge.server._tasks import cancel_and_wait, wait_event
from flowforge.server.stores import migrations
from flowforge.server.stores._sql import SQLTransaction
from flowforge.server.stores._sql.core import Record, columns, version_conflict
from flowforge.server.stores._sql.executions import EXECUTION_COLUMNS, SELECT_EXECUTION
from flowforge.server.stores.base import (
    ConcurrencyConflict,
    ExecutionRow,
    Store,
    StoreUnavailable,
    TaskRow,
    Transaction,
)
from flowforge.server.stores.postgres_writes import PendingWrite, combined_sql, reads_apart, shares_statement

__all__ = ["PostgresStore"]

log = logging.getLogger("flowforge.server.stores.postgres")

#: The one NOTIFY channel; the payload is the Notifier channel to wake.
NOTIFY_CHANNEL = "flowforge"
# PostgreSQL refuses a NOTIFY payload of 8000 bytes or more. Names are capped at
# 1000 characters, so only a queue and namespace both near the cap and in 4-byte
# characters reach it; such a queue's pollers fall back to their periodic re-check
# rather than failing the transaction.
_MAX_PAYLOAD_BYTES = 7999
# Sent as plain statements (the simple protocol runs several in one round trip).
# READ COMMITTED is named, not left to the database's default.
_BEGIN_WRITE = "BEGIN ISOLATION LEVEL READ COMMITTED"
_BEGIN_READ = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"

# Errors that mean "the database cannot be reached right now", not "the request is wrong".
_UNAVAILABLE_ERRORS: tuple[type[BaseException], ...] = (
    OSError,  # refused, reset, unreachable; TimeoutError too (connect, pool acquire)
    asyncpg.PostgresConnectionError,  # 08xxx, including a connection dropped mid-statement
    asyncpg.CannotConnectNowError,  # 57P03: starting up or in recovery
    asyncpg.AdminShutdownError,  # 57P01: shutting down
    asyncpg.CrashShutdownError,  # 57P02: another backend crashed
    asyncpg.TooManyConnectionsError,  # 53300
)
# Two transactions collided; running the whole transaction again resolves it.
_CONFLICT_ERRORS: tuple[type[BaseException], ...] = (
    asyncpg.SerializationError,  # 40001
    asyncpg.DeadlockDetectedError,  # 40P01
)


def _literal(text: str) -> str:
    """``text`` as an SQL string literal. Quotes are doubled and nothing else is special:
    the session runs with ``standard_conforming_strings`` on (set at connect)."""
    return "'" + text.replace("'", "''") + "'"


def _payloads(channels: set[str]) -> list[str]:
    """``channels`` packed into as few NOTIFY payloads as fit: JSON arrays below
    PostgreSQL's size limit (a batch of timers wakes thousands of runs' channels, and
    each payload is a queue entry and a message to every listener). JSON escapes NUL;
    a channel that fits in no payload, or that no encoding can hold (a lone
    surrogate), is left out: its pollers' periodic re-check finds the work."""
    payloads: list[str] = []
    items: list[str] = []
    size = 2  # the brackets
    for channel in sorted(channels):
        item = json.dumps(channel, ensure_ascii=False)
        try:
            item_size = len(item.encode()) + 1  # and a comma
        except UnicodeEncodeError:
            continue
        if size + item_size > _MAX_PAYLOAD_BYTES and items:
            payloads.append(f"[{','.join(items)}]")
            items, size = [], 2
        if size + item_size <= _MAX_PAYLOAD_BYTES:
            items.append(item)
            size += item_size
    if items:
        payloads.append(f"[{','.join(items)}]")
    return payloads


def _channels(payload: str) -> list[str]:
    """The channels a NOTIFY payload names: a JSON array of them, or (as a replica of
    an older version sends) one channel as it is."""
    with contextlib.suppress(ValueError):
        channels = json.loads(payload)
        if isinstance(channels, list) and all(isinstance(c, str) for c in channels):
            return channels
    return [payload]


def _notify_script(channels: set[str]) -> str | None:
    """A transaction that NOTIFYs ``channels``, in one round trip (None if no channel
    fits in a payload). It holds no data, so its commit need not wait for the WAL
    flush: the notifications leave at commit, and the database-wide NOTIFY lock is
    held that much less."""
    payloads = [_literal(payload) for payload in _payloads(channels)]
    if not payloads:
        return None
    return (
        "BEGIN; SET LOCAL synchronous_commit = off;"
        f" SELECT pg_notify('{NOTIFY_CHANNEL}', payload) FROM unnest(ARRAY[{', '.join(payloads)}]::text[]) AS payload;"
        " COMMIT"
    )


def _array_type(annotation: str) -> str:
    """The PostgreSQL array type for a row field's annotation."""
    for python_type, sql_type in (
        ("bytes", "bytea"),
        ("str", "text"),
        ("float", "double precision"),
        ("int", "bigint"),
    ):
        if python_type in annotation:
            return f"{sql_type}[]"
    raise TypeError(f"no PostgreSQL type for {annotation!r}")


_TASK_COLUMNS = columns(TaskRow)
_LOCK_TASK_AND_EXECUTION = (
    f"SELECT {', '.join(f't.{c}' for c in _TASK_COLUMNS)}, {', '.join(f'e.{c}' for c in EXECUTION_COLUMNS)}"
    " FROM tasks AS t JOIN executions AS e ON e.namespace = t.namespace AND e.run_id = t.run_id"
    " WHERE t.task_id = ? FOR UPDATE OF t, e"
)
_LOCK_EXECUTIONS = f"{SELECT_EXECUTION} WHERE namespace = ? AND run_id = ANY(?::text[]) ORDER BY run_id FOR UPDATE"
_EXECUTION_TYPES = {f.name: str(f.type) for f in dataclasses.fields(ExecutionRow)}


@functools.lru_cache(maxsize=64)
def _update_executions_from_arrays(columns: tuple[str, ...]) -> str:
    """Many executions' ``columns`` and versions in one UPDATE, each row checked
    against its expected version (one array parameter per column)."""
    arrays = [
        *((c, _EXECUTION_TYPES[c]) for c in (*columns, "version", "namespace", "run_id")),
        ("expected_version", "int"),
    ]
    return (
        f"UPDATE executions AS e SET {', '.join(f'{c} = v.{c}' for c in (*columns, 'version'))}"
        f" FROM unnest({', '.join(f'?::{_array_type(t)}' for _, t in arrays)})"
        f" AS v({', '.join(name for name, _ in arrays)})"
        " WHERE e.namespace = v.namespace AND e.run_id = v.run_id AND e.version = v.expected_version"
    )


@functools.lru_cache(maxsize=16)
def _insert_from_arrays(table: str, fields: tuple[tuple[str, str], ...]) -> str:
    """Inserts one row per array index: a batch in one statement whatever its size."""
    arrays = ", ".join(f"?::{_array_type(annotation)}" for _, annotation in fields)
    return f"INSERT INTO {table} ({', '.join(name for name, _ in fields)}) SELECT * FROM unnest({arrays})"


@functools.lru_cache(maxsize=1024)
def _numbered(sql: str) -> str:
    """Rewrites ``?`` placeholders to PostgreSQL's ``$1 .. $n``, once per statement
    text (the SQL of :mod:`._sql` holds no ``?`` inside literals)."""
    parts = sql.split("?")
    return "".join(f"{part}${i}" if i < len(parts) else part for i, part in enumerate(parts, 1))


@contextlib.contextmanager
def _translated(connection: PoolConnectionProxy | None = None) -> Iterator[None]:
    """Maps asyncpg's errors onto the store contract's exceptions."""
    try:
        yield
    except _CONFLICT_ERRORS as error:
        raise ConcurrencyConflict(str(error)) from error
    except _UNAVAILABLE_ERRORS as error:
        raise StoreUnavailable(f"PostgreSQL: {error}") from error
    except asyncpg.InterfaceError as error:
        # "connection is closed" after a drop; other interface errors are bugs.
        if connection is not None and connection.is_closed():
            raise StoreUnavailable(f"PostgreSQL: {error}") from error
        raise


class _PostgresTransaction(SQLTransaction):
    for_update_clause = " FOR UPDATE"
    skip_locked_clause = " FOR UPDATE SKIP LOCKED"

    def __init__(self, connection: PoolConnectionProxy, *, one_statement: bool = False) -> None:
        super().__init__()
        self.connection = connection
        #: Requests sent to PostgreSQL and waited for, BEGIN and COMMIT included (the
        #: hot-path cost test counts them). Preparing a statement the connection has
        #: not seen yet is one more, once per connection.
        self.round_trips = 0
        #: Of those, the statements (writes sent together are one), and the rows the
        #: writes changed as PostgreSQL counted them (the cost test reads both).
        self.statements = 0
        self.changed_rows = 0
        self._prefetched: ExecutionRow | None = None
        # A read outside any transaction (Store.read(one_statement=True)): one SELECT.
        self._one_statement = one_statement
        # Writes waiting for the next statement or the commit (postgres_writes.py).
        self._pending: list[PendingWrite] = []
        # Executions (namespace, run_id) this transaction holds locked or inserted.
        self._locked: set[tuple[str, str]] = set()

    def _round_trip(self, sql: str, *, statement: bool = True) -> None:
        if self._one_statement and (self.round_trips or not sql.startswith("SELECT")):
            raise RuntimeError(f"a one-statement read may run one SELECT, not also {sql[:40]!r}")
        self.round_trips += 1
        self.statements += statement
        # A prefetched execution serves only the call right after its task's.
        self._prefetched = None

    async def get_task(self, task_id: int, *, for_update: bool = False) -> TaskRow | None:
        if not for_update:
            return await super().get_task(task_id)
        # A report locks its task, then the task's execution (HistoryEngine._leased_task,
        # then _execution_of): both rows in one statement, locked in that order, save
        # the second round trip; get_execution hands the row out if it is asked next.
        record = await self._fetchone(_LOCK_TASK_AND_EXECUTION, (task_id,))
        if record is None:
            return None
        values = tuple(record)
        self._prefetched = ExecutionRow(*values[len(_TASK_COLUMNS) :])
        self._locked.add((self._prefetched.namespace, self._prefetched.run_id))
        return TaskRow(*values[: len(_TASK_COLUMNS)])

    async def get_execution(self, namespace: str, run_id: str, *, for_update: bool = False) -> ExecutionRow | None:
        row, self._prefetched = self._prefetched, None
        if for_update and row is not None and (row.namespace, row.run_id) == (namespace, run_id):
            return row
        row = await super().get_execution(namespace, run_id, for_update=for_update)
        if for_update and row is not None:
            self._locked.add((namespace, run_id))
        return row

    async def insert_execution(self, row: ExecutionRow) -> None:
        await super().insert_execution(row)
        self._locked.add((row.namespace, row.run_id))

    async def _script(self, sql: str) -> None:
        """Runs statements without parameters, all in one round trip (after the writes waiting)."""
        await self._send_pending()
        self._round_trip(sql, statement=False)
        with _translated(self.connection):
            await self.connection.execute(sql)

    async def _execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        await self._send_pending()
        self._round_trip(sql)
        with _translated(self.connection):
            status = await self.connection.execute(_numbered(sql), *params)
        # The command tag ends with the row count: "UPDATE 1", "INSERT 0 1", "DELETE 0".
        count = status.rpartition(" ")[2]
        changed = int(count) if count.isdigit() else 0
        self.changed_rows += changed
        return changed

    async def _fetchone(self, sql: str, params: Sequence[Any] = ()) -> Record | None:
        if self._pending and reads_apart(sql, self._pending):
            rows = await self._send_pending((sql, params))
            return rows[0] if rows else None
        await self._send_pending()
        self._round_trip(sql)
        with _translated(self.connection):
            return await self.connection.fetchrow(_numbered(sql), *params)

    async def _fetchall(self, sql: str, params: Sequence[Any] = ()) -> Sequence[Record]:
        if self._pending and reads_apart(sql, self._pending):
            return await self._send_pending((sql, params))
        await self._send_pending()
        self._round_trip(sql)
        with _translated(self.connection):
            return await self.connection.fetch(_numbered(sql), *params)

    async def _write(
        self,
        sql: str,
        params: Sequence[Any] = (),
        *,
        versions_of: Sequence[tuple[str, str]] = (),
        receive: Callable[[Any], None] | None = None,
    ) -> None:
        if self._one_statement:
            raise RuntimeError(f"a one-statement read may run one SELECT, not {sql[:40]!r}")
        write = PendingWrite(sql, params, versions_of, receive)
        unlocked = not self._locked.issuperset(versions_of)
        if unlocked or not shares_statement(write, self._pending):
            await self._send_pending()
        self._pending.append(write)
        if unlocked:  # see postgres_writes.py: its check goes out alone, now
            await self._send_pending()
            self._locked.update(versions_of)

    async def send_writes(self) -> None:
        await self._send_pending()

    async def _send_pending(self, read: tuple[str, Sequence[Any]] | None = None) -> list[Record]:
        """Sends the writes waiting, in one statement, and checks what they changed.
        With ``read`` (a SELECT that rides with them, postgres_writes.reads_apart),
        returns its rows."""
        pending, self._pending = self._pending, []
        if not pending:
            return []
        rows: list[Record] = []
        if len(pending) == 1 and pending[0].receive is None and read is None:
            outcomes: Sequence[Any] = [await self._execute(pending[0].sql, pending[0].params)]
        else:
            sql = combined_sql(tuple((write.sql, write.receive is not None) for write in pending), read and read[0])
            params = [value for write in pending for value in write.params]
            record = await self._fetchone(sql, [*params, *read[1]] if read else params)
            assert record is not None
            outcomes = tuple(record)
            if read is not None:
                rows, outcomes = outcomes[-1] or [], outcomes[:-1]
            self.changed_rows += sum(1 if w.receive else n for w, n in zip(pending, outcomes, strict=True))
        for write, outcome in zip(pending, outcomes, strict=True):
            if write.receive is not None:
                write.receive(outcome)
            elif write.versions_of and outcome != len(write.versions_of):
                raise ConcurrencyConflict(version_conflict(write.versions_of))
        return rows

    async def _insert_many(self, table: str, fields: list[tuple[str, str]], rows: Sequence[Sequence[Any]]) -> None:
        # One statement over column arrays: one plan and one round trip for any count.
        await self._write(
            _insert_from_arrays(table, tuple(fields)), [list(column) for column in zip(*rows, strict=False)]
        )

    async def _lock_namespace_executions(self, namespace: str, run_ids: list[str]) -> list[ExecutionRow]:
        # One array parameter whatever the count: one round trip and one prepared
        # statement, where IN lists would be a statement text per length.
        rows = await self._all(ExecutionRow, _LOCK_EXECUTIONS, (namespace, run_ids))
        self._locked.update((row.namespace, row.run_id) for row in rows)
        return rows

    async def _update_executions(self, columns: tuple[str, ...], params: list[tuple[Any, ...]]) -> None:
        # One statement over column arrays: asyncpg's executemany reports no row
        # counts, and the version check needs them.
        await self._write(
            _update_executions_from_arrays(columns),
            [list(values) for values in zip(*params, strict=False)],
            versions_of=[(values[-3], values[-2]) for values in params],
        )


async def _keep_session(_connection: asyncpg.Connection) -> None:
    """Pool reset hook: our transactions leave no session state (no SET, LISTEN,
    cursor or session-level lock), so asyncpg's default reset query would only
    cost a round trip per transaction. An open transaction is still rolled back."""


class PostgresStore(Store):
    """A :class:`Store` in a PostgreSQL database; any number of server replicas may
    share it.

    Args:
        dsn: A libpq connection URI, ``postgresql://user:password@host:port/database``.
        min_connections: Pooled connections kept open.
        max_connections: Most pooled connections; a transaction waits for a free one.
        acquire_timeout_s: How long a transaction waits for a pooled connection
            before it fails with :class:`StoreUnavailable`.
        connect_timeout_s: How long opening one connection may take.
        listener_check_interval_s: How often the idle LISTEN connection is probed,
            to find a connection that died without the server closing it.
        notify_delay_s: How long after a commit its NOTIFY to the other replicas
            waits, gathering the commits of that time into one.
    """

    parallel_writes = True

    def __init__(
        self,
        dsn: str,
        *,
        min_connections: int = 2,
        max_connections: int = 20,
        acquire_timeout_s: float = 10.0,
        connect_timeout_s: float = 5.0,
        listener_check_interval_s: float = 10.0,
        notify_delay_s: float = 0.001,
    ) -> None:
        super().__init__()
        self._dsn = dsn
        self._min_connections = min_connections
        self._max_connections = max_connections
        self._acquire_timeout_s = acquire_timeout_s
        self._connect_timeout_s = connect_timeout_s
        self._listener_check_interval_s = listener_check_interval_s
        self._notify_delay_s = notify_delay_s
        self._pool: asyncpg.Pool | None = None
        self._listener: asyncpg.Connection | None = None
        self._listener_lost = asyncio.Event()
        self._listener_task: asyncio.Task[None] | None = None
        # Committed channels the other replicas have not been sent yet, and the task
        # sending them (one NOTIFY in flight).
        self._unsent: set[str] = set()
        self._sender: asyncio.Task[None] | None = None
        # The backends this store's NOTIFYs come from: their notifications woke this
        # process's waiters at commit already.
        self._sender_pids: set[int] = set()

    async def open(self) -> None:
        try:
            with _translated():
                self._pool = await asyncpg.create_pool(
                    self._dsn,
                    min_size=self._min_connections,
                    max_size=self._max_connections,
                    timeout=self._connect_timeout_s,
                    # Above the number of distinct statements of _sql/, so every
                    # connection prepares each statement once and keeps it.
                    statement_cache_size=256,
                    # A statement that hangs (a silently dropped network, a lock held
                    # elsewhere) raises TimeoutError, i.e. UNAVAILABLE, instead of
                    # holding the caller until its deadline; ours take milliseconds.
                    command_timeout=15.0,
                    reset=_keep_session,
                    # Pooled connections stay open: closing idle ones would arm and
                    # cancel a timer on every release and acquire.
                    max_inactive_connection_lifetime=0,
                    server_settings={
                        "application_name": "flowforge",
                        # What _literal relies on (PostgreSQL's default since 9.1).
                        "standard_conforming_strings": "on",
                        # A paused replica (SIGSTOP, a VM freeze) must not hold row
                        # locks for ever; our transactions last milliseconds.
                        "idle_in_transaction_session_timeout": "60s",
                    },
                )
                async with self._pool.acquire(timeout=self._acquire_timeout_s) as connection:
                    applied = await migrations.apply_postgres(connection)
                if applied:
                    log.info("applied PostgreSQL migrations %s", applied)
                await self._connect_listener()
        except BaseException:
            await self.close()
            raise
        self._listener_task = asyncio.create_task(self._keep_listening(), name="flowforge-postgres-listener")

    async def close(self) -> None:
        await cancel_and_wait(self._listener_task)
        self._listener_task = None
        await cancel_and_wait(self._sender)
        self._sender = None
        self._unsent.clear()
        if self._listener is not None:
            self._listener.terminate()
            self._listener = None
        pool, self._pool = self._pool, None
        if pool is not None:
            try:
                await asyncio.wait_for(pool.close(), self._acquire_timeout_s)
            except (TimeoutError, OSError, asyncpg.PostgresError, asyncpg.InterfaceError):
                # A connection still in use, or a server that is gone: close hard.
                pool.terminate()

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[Transaction]:
        async with self._begin(_BEGIN_WRITE) as tx:
            yield tx
            await tx._script("COMMIT")
        if tx.channels:
            self._committed(tx.channels)

    @contextlib.asynccontextmanager
    async def read(self, *, one_statement: bool = False) -> AsyncIterator[Transaction]:
        if one_statement:
            async with self._begin(None) as tx:
                yield tx
            return
        async with self._begin(_BEGIN_READ) as tx:
            yield tx
            await tx._script("ROLLBACK")

    async def ping(self) -> None:
        async with self.read(one_statement=True) as tx:
            await tx.get_metadata("schema_version")

    @contextlib.asynccontextmanager
    async def _begin(self, begin: str | None) -> AsyncIterator[_PostgresTransaction]:
        """A pooled connection in a transaction started by ``begin``, rolled back if the
        block raises; the block itself commits or rolls back when it succeeds. The
        transaction is plain SQL (BEGIN, COMMIT), not asyncpg's Transaction object: one
        round trip each, nothing else. Without ``begin``, no transaction: the block runs
        one SELECT, a snapshot by itself."""
        pool = self._pool
        if pool is None:
            raise StoreUnavailable("the PostgreSQL store is closed")
        connection = await self._acquire(pool)
        try:
            tx = _PostgresTransaction(connection, one_statement=begin is None)
            try:
                # Inside the try: cancelled during BEGIN, the transaction may have begun on
                # the server, and the pool would otherwise reset it with an error logged.
                if begin is not None:
                    await tx._script(begin)
                yield tx
            except BaseException as error:
                # Outside a transaction only a cancelled statement leaves something to clear.
                if begin is not None or not isinstance(error, Exception):
                    await self._roll_back(connection)
                raise
        finally:
            await pool.release(connection)

    async def _acquire(self, pool: asyncpg.Pool) -> PoolConnectionProxy:
        """A pooled connection, within ``acquire_timeout_s`` (StoreUnavailable after).
        Under asyncio.timeout rather than acquire(timeout=): that runs the wait as a
        task of its own and makes the release time out too, a few timers and a loop
        turn per transaction."""
        with _translated():
            async with asyncio.timeout(self._acquire_timeout_s):
                connection: PoolConnectionProxy = await pool.acquire()
        return connection

    @staticmethod
    async def _roll_back(connection: PoolConnectionProxy) -> None:
        """Rolls back after a failure without masking it (after a failed COMMIT there
        is nothing to roll back, which PostgreSQL only warns about). A
        connection that cannot (dropped, still busy with a cancelled statement) is
        closed; the pool opens a fresh one."""
        try:
            if connection.is_closed():
                return
        except asyncpg.InterfaceError:
            return  # the pool took it back as it died (a failed BEGIN): nothing to roll back
        try:
            await connection.execute("ROLLBACK")
        except Exception:
            connection.terminate()

    # ------------------------------------------------------------ wake-ups

    def _committed(self, channels: set[str]) -> None:
        """Wakes ``channels`` here now and queues them for the other replicas."""
        for channel in channels:
            self.notifier.notify(channel)
        self._unsent |= channels
        if self._sender is None or self._sender.done():
            # A context of its own: the sends are no one transaction's (its spans).
            self._sender = asyncio.create_task(
                self._send_unsent(), name="flowforge-postgres-notify", context=contextvars.Context()
            )

    async def _send_unsent(self) -> None:
        """NOTIFYs the queued channels, all that queued meanwhile in the next NOTIFY;
        a failed send is retried with backoff (until the store closes), whatever the
        error: a sender that ended on one would drop the other replicas' wake-ups.

        It starts ``notify_delay_s`` after the commit that wakes it: the committing
        report's answer is written first (the sender's first step would otherwise run
        on the loop before it, ~50 µs a commit on the hello's path, measured), and the
        commits of that moment share one NOTIFY transaction. Another replica's waiters
        wake that much later; a wake-up is a hint."""
        delay_s = 0.1
        await asyncio.sleep(self._notify_delay_s)
        while self._unsent:
            channels, self._unsent = self._unsent, set()
            try:
                await self._notify(channels)
                delay_s = 0.1
            except Exception as error:
                self._unsent |= channels
                log.warning("cannot NOTIFY the other replicas (%s); retrying in %.1f s", error, delay_s)
                await asyncio.sleep(delay_s)
                delay_s = min(delay_s * 2, 5.0)

    async def _notify(self, channels: set[str]) -> None:
        script, pool = _notify_script(channels), self._pool
        if script is None or pool is None:
            return
        with _translated():
            async with pool.acquire(timeout=self._acquire_timeout_s) as connection:
                pid = connection.get_server_pid()
                if pid not in self._sender_pids:
                    self._sender_pids.add(pid)
                    # A closed connection's pid may be reused by another replica's backend.
                    connection.add_termination_listener(lambda _connection: self._sender_pids.discard(pid))
                await connection.execute(script)

    # ------------------------------------------------------------ LISTEN connection

    async def _connect_listener(self) -> None:
        """Opens the LISTEN connection and makes it the current one."""
        connection = await asyncpg.connect(
            self._dsn,
            timeout=self._connect_timeout_s,
            server_settings={"application_name": "flowforge-listener"},
        )
        try:
            await connection.add_listener(NOTIFY_CHANNEL, self._on_notification)
        except BaseException:
            connection.terminate()
            raise
        # One event per connection, so a replaced connection's late termination
        # callback cannot flag its successor.
        lost = asyncio.Event()
        connection.add_termination_listener(lambda _connection: lost.set())
        self._listener, self._listener_lost = connection, lost

    def _on_notification(
        self, _connection: asyncpg.Connection[Any] | PoolConnectionProxy[Any], pid: int, _channel: str, payload: object
    ) -> None:
        if pid in self._sender_pids:
            return  # this store's own: its waiters were woken at commit
        for channel in _channels(str(payload)):
            self.notifier.notify(channel)

    async def _keep_listening(self) -> None:
        """Replaces the LISTEN connection when it drops, retrying with backoff.
        Notifications sent meanwhile are lost, so once LISTEN is back every waiter is
        woken once to re-read the store (the rows are the truth, a wake-up is a hint):
        history long-polls have no periodic re-check and would otherwise sleep
        through a lost wake-up until their deadline."""
        while True:
            listener = self._listener
            assert listener is not None
            # A server that closes the connection is noticed at once; a peer that
            # vanished silently only when a probe gets no answer.
            await wait_event(self._listener_lost, self._listener_check_interval_s)
            if listener.is_closed():
                log.warning("lost the LISTEN connection; reconnecting (wake-ups from other replicas wait)")
            else:
                try:
                    await asyncio.wait_for(listener.fetchval("SELECT 1"), self._connect_timeout_s)
                    continue
                except Exception as error:
                    log.warning("the LISTEN connection does not answer (%s); replacing it", error)
                    listener.terminate()
            await self._reconnect_listener()
            self.notifier.notify_all()
            log.info("LISTEN connection re-established; woke every waiter to re-check")

    async def _reconnect_listener(self) -> None:
        delay_s = 0.1
        while True:
            try:
                await self._connect_listener()
                return
            except Exception as error:
                log.warning("cannot open the LISTEN connection (%s); retrying in %.1f s", error, delay_s)
            await asyncio.sleep(delay_s)
            delay_s = min(delay_s * 2, 5.0)
