"""Close events handed from the transaction that closed a run to the ``result()`` long
polls parked on it in this process.

A ``result()`` waits with ``GetWorkflowExecutionHistory`` (``close_event_only``), parked
on the run's close channel. The closing commit wakes it; without this it would then
read the run and its last event back from the store, a read (on PostgreSQL a round trip
or more) between the last commit of a workflow and its answer. The closing transaction
has that event in hand: ``EngineCore._transaction`` leaves it here before its COMMIT, for
the runs that have a parked waiter, and settles it once the COMMIT is over. A woken
waiter takes it, after waiting for that settling if it came first (on PostgreSQL the
NOTIFY may arrive before the COMMIT's answer); a close whose transaction did not commit
is dropped and the waiter reads the store, as does one that finds nothing here (the
run closed in another replica, or before the waiter parked). Only runs with a parked
waiter are kept, so memory is bounded by the waiters.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
from collections.abc import Iterable, Iterator

from flowforge.server.observations import Observation, WorkflowClosed
from flowforge.server.stores.base import HistoryEventRow

__all__ = ["ParkedCloses", "PendingClose"]


@dataclasses.dataclass(eq=False)
class PendingClose:
    """A close event left by a transaction, and whether that transaction committed."""

    run_id: str
    event: HistoryEventRow
    committed: asyncio.Future[bool]


class ParkedCloses:
    """The runs ``result()`` long polls are parked on here, and the close events of
    those a transaction is closing or closed since."""

    def __init__(self) -> None:
        self._waiters: collections.Counter[str] = collections.Counter()
        self._closes: dict[str, PendingClose] = {}

    def __len__(self) -> int:
        """How many runs have a parked waiter."""
        return len(self._waiters)

    @contextlib.contextmanager
    def waiting(self, run_id: str) -> Iterator[None]:
        """Marks a waiter parked on ``run_id`` for the duration of the block."""
        self._waiters[run_id] += 1
        try:
            yield
        finally:
            self._waiters[run_id] -= 1
            if not self._waiters[run_id]:
                del self._waiters[run_id]
                self._closes.pop(run_id, None)

    def closing(self, observations: Iterable[Observation]) -> list[PendingClose]:
        """Before a transaction's COMMIT: leaves the close events it observed for the
        runs with a parked waiter; the caller must :meth:`settle` what it returns."""
        loop = asyncio.get_running_loop()
        pending = []
        for o in observations:
            if isinstance(o, WorkflowClosed) and o.close_event is not None and o.run_id in self._waiters:
                close = self._closes[o.run_id] = PendingClose(o.run_id, o.close_event, loop.create_future())
                pending.append(close)
        return pending

    def settle(self, closes: Iterable[PendingClose], committed: bool) -> list[str]:
        """After the COMMIT (``committed``) or its failure; returns the runs whose
        waiters now have their close event."""
        settled = []
        for close in closes:
            if not close.committed.done():
                close.committed.set_result(committed)
            if committed:
                settled.append(close.run_id)
            elif self._closes.get(close.run_id) is close:
                del self._closes[close.run_id]
        return settled

    async def close_event(self, run_id: str) -> HistoryEventRow | None:
        """The close event a committed transaction left for the waiters of ``run_id``,
        once its COMMIT is over; None if there is none or it did not commit."""
        close = self._closes.get(run_id)
        if close is None or not await asyncio.shield(close.committed):
            return None
        return close.event
