"""The storage contract: one abstract store, implemented for SQLite and PostgreSQL.

The history engine expresses every state change as one transaction on a
:class:`Transaction`; the store guarantees it commits atomically (rule 1: state,
events and tasks together) and that a concurrent change of the same execution is
detected (:class:`ConcurrencyConflict`, the engine retries). Both stores share the
SQL of :mod:`flowforge.server.stores._sql`; they differ in connections, locking
and how a commit wakes long-polls (in-process events vs LISTEN/NOTIFY).

The contract is spread over three modules, re-exported here so a caller imports
from one place: the row types (:mod:`.rows`), the transaction split by concern
(:mod:`.contract`) and the exceptions (:mod:`.errors`).
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import weakref

from flowforge.server._tasks import wait_event
from flowforge.server.stores.contract import Transaction
from flowforge.server.stores.errors import (
    ConcurrencyConflict,
    DuplicateRunningExecution,
    FencingTokenRejected,
    StoreUnavailable,
)
from flowforge.server.stores.rows import (
    ChildExecutionRow,
    CompiledQuery,
    EventDedupeRow,
    EventTriggerRow,
    ExecutionRow,
    HistoryEventRow,
    LeaseRow,
    NamespaceRow,
    QueryRow,
    ScheduleRow,
    StoredValue,
    TaskQueueBacklogRow,
    TaskRow,
    TimerRow,
)

__all__ = [
    "ChildExecutionRow",
    "CompiledQuery",
    "ConcurrencyConflict",
    "DuplicateRunningExecution",
    "EventDedupeRow",
    "EventTriggerRow",
    "ExecutionRow",
    "FencingTokenRejected",
    "HistoryEventRow",
    "LeaseRow",
    "NamespaceRow",
    "Notifier",
    "QueryRow",
    "ScheduleRow",
    "Store",
    "StoreUnavailable",
    "StoredValue",
    "TaskQueueBacklogRow",
    "TaskRow",
    "TimerRow",
    "Transaction",
]


class Notifier:
    """Wakes long-polls in this process. Waiters must call :meth:`listen` *before*
    checking the database and then :meth:`wait` on what it returned, so a
    notification between the check and the wait is never lost."""

    def __init__(self) -> None:
        # Held weakly: a channel's event lives while a waiter holds it, so channels
        # nobody waits on any more (a poll on a queue name used once) cost nothing.
        self._events: weakref.WeakValueDictionary[str, asyncio.Event] = weakref.WeakValueDictionary()

    def __len__(self) -> int:
        """How many channels have a waiter."""
        return len(self._events)

    def listen(self, channel: str) -> asyncio.Event:
        event = self._events.get(channel)
        if event is None:
            event = self._events[channel] = asyncio.Event()
        return event

    def notify(self, channel: str) -> None:
        event = self._events.pop(channel, None)
        if event is not None:
            event.set()

    def notify_all(self) -> None:
        """Wakes every waiter once, on every channel: after notifications may have been
        lost (a dropped LISTEN connection), each re-reads the store instead of sleeping
        through a change until its deadline."""
        events = list(self._events.values())
        self._events.clear()
        for event in events:
            event.set()

    @staticmethod
    async def wait(event: asyncio.Event, timeout: float) -> bool:
        """True when notified, False when ``timeout`` passed first."""
        return await wait_event(event, timeout)


class Store(abc.ABC):
    """A durable store: transactions plus long-poll wake-ups."""

    #: Whether write transactions on different rows make progress at the same time
    #: (row locks) rather than take turns (one write lock): where they do, work that
    #: splits into disjoint batches (due timers) is worth running in parallel.
    parallel_writes: bool = False

    def __init__(self) -> None:
        self.notifier = Notifier()

    @abc.abstractmethod
    async def open(self) -> None:
        """Connects and applies pending migrations."""

    @abc.abstractmethod
    async def close(self) -> None: ...

    @abc.abstractmethod
    def transaction(self) -> contextlib.AbstractAsyncContextManager[Transaction]:
        """A read-write transaction: committed when the block exits normally, rolled
        back on an exception. Raises :class:`StoreUnavailable` if the database is
        unreachable; commit-time serialization failures raise ConcurrencyConflict."""

    @abc.abstractmethod
    def read(self, *, one_statement: bool = False) -> contextlib.AbstractAsyncContextManager[Transaction]:
        """A read-only snapshot; never blocks writers.

        Args:
            one_statement: The body runs at most one statement, a SELECT. One statement
                sees one snapshot by itself, so the store may skip the transaction around
                it (PostgreSQL: no BEGIN and no ROLLBACK, two round trips fewer).
        """

    async def wait_for_notification(self, event: asyncio.Event, timeout: float) -> bool:
        return await self.notifier.wait(event, timeout)

    @abc.abstractmethod
    async def ping(self) -> None:
        """Raises :class:`StoreUnavailable` unless the database answers."""
