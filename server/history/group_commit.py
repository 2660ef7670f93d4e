"""Group commit: reports that arrive together share one store transaction.

One group serves every report on a run that the engine groups (workflow task
completions and activity completions alike), so reports of both kinds share a
transaction. Up to ``max_in_flight`` report transactions run at once (one on a store
with a single writer; several where writes proceed in parallel, so the round trips of
one group never hold up the next). A report that finds one of them free takes it and
yields to the event loop once, so the reports already on their way in the same turn
(those of one worker stream message, which start together) join it; if none did, it
runs alone, as before. Reports that arrive while all are under way queue, and the
first to end commits them together in one transaction (up to ``max_batch``), ordered
by run id so every group takes its row locks in one order. No report waits for
company that is not already on its way: a queued report waits only for a transaction
that was already running. Most reports of a group touch different executions; two of
one execution are applied one after the other in the same transaction, as they would
be in two.

No transaction begins with a run that a sibling under way holds: beside it, the
report would wait on the run's row lock with its whole group behind it. Such a
report is held back and its group goes on without it. When the sibling ends, the
reports held back for it go first in the queue, for the next group: at once if no
other transaction is under way, else the next to end takes them with the reports
queued meanwhile (a group of their own at once would cost more commits per activity).

A caller may set :data:`on_committed` (a context variable) to learn when its report
has committed, before the report's caller resumes: the worker stream waits for the
answers already decided to write them in one message.

Leases of workflow and activity tasks (a poll's, a worker stream feed's) go through the
same groups: polls woken together lease in one transaction, with the reports under way.
A lease does not know its run before it runs, so it sorts first. Unlike a report, a
lease whose caller goes away is not kept: alone it rolls back, queued it leaves the
queue, and one whose group is already under way is given back once it commits.

If the group's transaction fails for any reason (a lost lease, a conflict that kept
coming back, an unavailable store), it rolls back whole and each report of the
group runs again alone, so each gets its own answer and one report's failure never
fails another.
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import logging
from collections.abc import Awaitable, Callable, Collection
from typing import Any, Generic, Protocol, TypeVar

from flowforge.server.errors import Unavailable
from flowforge.server.stores.base import Transaction

log = logging.getLogger(__name__)

_T = TypeVar("_T")

Body = Callable[[Transaction], Awaitable[_T]]

#: Called (without arguments) once the current context's report has committed.
on_committed: contextvars.ContextVar[Callable[[], None] | None] = contextvars.ContextVar(
    "flowforge_group_commit_on_committed", default=None
)


class _Transact(Protocol):
    def __call__(self, body: Body[list[Any]], *, shielded: bool = ...) -> Awaitable[list[Any]]: ...


@dataclasses.dataclass(eq=False)
class _Report(Generic[_T]):
    run_id: str
    body: Body[_T]
    answer: asyncio.Future[_T]
    committed: Callable[[], None] | None
    # A lease's: gives back what the body leased when its caller went away meanwhile.
    abandoned: Callable[[Any], Awaitable[None]] | None = None

    def settle(self, result: _T) -> None:
        if self.committed is not None:
            self.committed()
        if not self.answer.done():
            self.answer.set_result(result)


class GroupCommit:
    """Runs transaction bodies of reports (and leases), grouping those that arrive together.

    Args:
        transaction: Runs a body in a transaction (retried on a conflict), e.g.
            ``EngineCore._transaction``.
        max_batch: The most reports in one transaction.
        max_in_flight: The most report transactions under way at once.
    """

    def __init__(
        self,
        transaction: _Transact,
        max_batch: int = 64,
        max_in_flight: int = 1,
    ) -> None:
        self._transaction = transaction
        self._max_batch = max_batch
        self._max_in_flight = max_in_flight
        self._queue: list[_Report[Any]] = []
        self._in_flight = 0
        # A report took a free transaction and lets this loop turn's reports join it.
        self._gathering = False
        # Run id -> the reports held back for the transaction under way that holds it:
        # they join the first group that begins after it ends.
        self._holders: dict[str, list[_Report[Any]]] = {}
        self._flushers: set[asyncio.Task[None]] = set()  # referenced, so none is collected mid-run
        self._giving_back: set[asyncio.Task[None]] = set()

    async def run(self, run_id: str, body: Body[_T], *, lease: Callable[[Any], Awaitable[None]] | None = None) -> _T:
        """Runs ``body`` (a report on ``run_id``) with the reports that arrive in the
        same turn of the event loop, else alone, if a report transaction is free; in
        the next group if none is. Returns what ``body`` returned.

        A report's body runs to its end even if the caller goes away. A ``lease`` body
        (one that leases a task: ``run_id`` empty, it finds its run) is the exception:
        alone it rolls back, queued it leaves the queue, and in a group under way it
        commits and ``lease`` is called with what it returned, if anything, to give
        the task back at once.
        """
        report: _Report[_T] = _Report(
            run_id, body, asyncio.get_running_loop().create_future(), on_committed.get(), lease
        )
        if self._gathering or self._in_flight == self._max_in_flight:
            return await self._join(report)
        self._in_flight += 1
        self._gathering = True
        try:
            await asyncio.sleep(0)  # the reports that started with this one arrive meanwhile
        except BaseException:
            self._next_group()
            raise
        finally:
            self._gathering = False
        if self._queue or run_id in self._holders:
            # Its run is under way in a sibling: held back for it (_hold).
            return await self._join(report, leading=True)
        _, held = self._hold([report])
        try:
            result = await self._alone(body, shielded=lease is None)
        finally:
            if self._release([run_id], held):
                self._in_flight -= 1
            else:
                self._next_group()
        if report.committed is not None:
            report.committed()
        return result

    async def _join(self, report: _Report[_T], *, leading: bool = False) -> _T:
        self._queue.append(report)
        if leading:
            self._next_group()
        try:
            # Shielded like a transaction of its own: a caller that goes away does not
            # take the group (or its own report) with it.
            return await asyncio.shield(report.answer)
        except asyncio.CancelledError:
            if report.abandoned is not None:
                self._abandon(report)
            else:
                report.answer.add_done_callback(_note_unheard_failure)
            raise

    def _abandon(self, report: _Report[Any]) -> None:
        """A lease whose caller went away: out of the queue if its group has not
        begun, else given back once its group has committed."""
        if any(queued is report for queued in self._queue):
            self._queue.remove(report)
            return
        give_back = report.abandoned
        assert give_back is not None

        def settled(answer: asyncio.Future[Any]) -> None:
            if answer.cancelled() or answer.exception() is not None or answer.result() is None:
                return
            task = asyncio.create_task(_give_back(give_back, answer.result()), context=contextvars.Context())
            self._giving_back.add(task)
            task.add_done_callback(self._giving_back.discard)

        report.answer.add_done_callback(settled)

    async def _alone(self, body: Body[_T], *, shielded: bool = True) -> _T:
        result: _T
        (result,) = await self._transaction(lambda tx: _all(tx, [body]), shielded=shielded)
        return result

    def _next_group(self) -> None:
        """The transaction that just ended hands its place to the queued reports, if any."""
        if not self._queue:
            self._in_flight -= 1
            return
        # A context of its own: the group is no one caller's (its spans, its audit).
        flusher = asyncio.create_task(self._flush(), name="flowforge-group-commit", context=contextvars.Context())
        self._flushers.add(flusher)
        flusher.add_done_callback(self._flushers.discard)

    async def _flush(self) -> None:
        try:
            while self._queue:
                group, held = self._hold(self._queue[: self._max_batch])
                del self._queue[: self._max_batch]
                if not group:
                    continue  # all held back, each for a sibling under way
                try:
                    await self._commit(sorted(group, key=lambda report: report.run_id))
                finally:
                    company_coming = self._release({report.run_id for report in group}, held)
                if company_coming:
                    break
        except BaseException:  # cancelled: the server stops
            for report in self._queue:
                if not report.answer.done():
                    report.answer.set_exception(Unavailable("the server is stopping; retry the call"))
            self._queue.clear()
            raise
        finally:
            self._in_flight -= 1

    def _hold(self, reports: list[_Report[Any]]) -> tuple[list[_Report[Any]], list[_Report[Any]]]:
        """Marks the runs of ``reports`` (a lease's empty run id aside) as held by the
        transaction about to begin, except those a sibling under way holds: their
        reports are held back for it. Returns the reports this transaction commits and
        the list the reports held back for it go to."""
        now: list[_Report[Any]] = []
        held: list[_Report[Any]] = []
        for report in reports:
            holder = self._holders.setdefault(report.run_id, held) if report.run_id else held
            (now if holder is held else holder).append(report)
        return now, held

    def _release(self, runs: Collection[str], held: list[_Report[Any]]) -> bool:
        """The transaction that held ``runs`` ended: the reports held back for it go
        first in the queue, for the next group. Returns whether they are all the queue
        holds while another transaction is under way: that one takes them when it
        ends, with the reports that queue meanwhile, rather than a small group now."""
        for run_id in runs:
            if run_id:
                del self._holders[run_id]
        company_coming = bool(held) and not self._queue and self._in_flight > 1
        self._queue[:0] = held
        return company_coming

    async def _commit(self, group: list[_Report[Any]]) -> None:
        if len(group) > 1:
            try:
                results = await self._transaction(lambda tx: _all(tx, [report.body for report in group]))
            except Exception:
                pass
            else:
                for report, result in zip(group, results, strict=True):
                    report.settle(result)
                return
        await asyncio.gather(*(self._answer_alone(report) for report in group))

    async def _answer_alone(self, report: _Report[Any]) -> None:
        try:
            result = await self._alone(report.body)
        except Exception as error:
            if not report.answer.done():
                report.answer.set_exception(error)
        else:
            report.settle(result)


def _note_unheard_failure(answer: asyncio.Future[Any]) -> None:
    """A report whose caller went away: its failure reaches nobody, so it is noted here
    (by kind only; the message may quote the report) rather than left for asyncio to
    report as a never-retrieved exception with a traceback."""
    if answer.cancelled():
        return
    error = answer.exception()
    if error is not None:
        log.info("a report whose caller went away failed (%s); its worker retries it", type(error).__name__)


async def _give_back(give_back: Callable[[Any], Awaitable[None]], leased: Any) -> None:
    try:
        await give_back(leased)
    except Exception:
        log.warning("could not give back a task leased for a poll that went away", exc_info=True)


async def _all(tx: Transaction, bodies: list[Body[Any]]) -> list[Any]:
    return [await body(tx) for body in bodies]
