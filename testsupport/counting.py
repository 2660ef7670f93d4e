"""Exact counts of what a workload costs: store transactions, SQL statements and, on
PostgreSQL, round trips (:class:`StoreCounters`) and client RPCs (:func:`count_rpcs`). The hot-path cost test
holds budgets on them; ``benchmarks.profile`` reports them."""

from __future__ import annotations

import collections
import contextlib
import os
import sys
import types
from collections.abc import AsyncIterator
from typing import Any

import grpc

from flowforge import Client
from flowforge.server.stores.base import ConcurrencyConflict


def _engine_caller(entry: str) -> str:
    """Who opened the current store transaction through ``HistoryEngine.<entry>``
    (``_transaction`` or ``read``): the function that defined its ``body``, e.g.
    ``HistoryEngine.complete_activity_task`` (found even when the engine runs the
    transaction in a shielded task of its own)."""
    frame: types.FrameType | None = sys._getframe(2)
    while frame is not None:
        # server/history.py, or any module of a server/history/ package
        if frame.f_code.co_name == entry and f"{os.sep}history" in frame.f_code.co_filename:
            body = frame.f_locals.get("body")
            return getattr(body, "__qualname__", "?").split(".<locals>")[0]
        frame = frame.f_back
    return "other"


# The server's periodic transactions that no workload causes, each counted under its own
# name: the health probe (every second, straight on the store) and the scheduler's leader
# election and lease renewal (every few seconds, through the engine).
_PERIODIC_FUNCTIONS = {("health.py", "_check_store"): "health_probes"}
_PERIODIC_ENGINE_CALLERS = {"Scheduler._elect": "scheduler_elections"}
# Read snapshots of the server's own loops, taken as often as time passes, not as work
# arrives: the timer and schedule loops' looks for what is due, the batch loop's look for
# running jobs, the token key reload and the namespace quota cache's refresh. Counted
# together as ``periodic_reads``: on a loaded machine a workload takes longer, and these
# outnumbered its own reads (86 against 108 in one slow onboarding run), breaking budgets.
_PERIODIC_READERS = frozenset(
    {
        "Timekeeper._run",
        "Timekeeper.tick",
        "Scheduler._run",
        "Scheduler.tick",
        "Batches.running_batches",
        "load_token_keys",
        "Namespaces.namespace_quotas",
    }
)


def _periodic_function() -> str | None:
    """The name of the periodic job whose function opened the current store transaction, if one did."""
    frame: types.FrameType | None = sys._getframe(2)
    while frame is not None:
        name = _PERIODIC_FUNCTIONS.get((os.path.basename(frame.f_code.co_filename), frame.f_code.co_name))
        if name is not None:
            return name
        frame = frame.f_back
    return None


class StoreCounters:
    """Wraps a store's transaction() and read() to count what they do.

    On PostgreSQL it also counts round trips (``write_round_trips``,
    ``read_round_trips``): the statements plus BEGIN and COMMIT or ROLLBACK, as the store's
    transaction reports them (not the NOTIFY of its wake-ups, sent after it).

    The server's periodic transactions (the health probe, the scheduler's election) are
    counted apart (``health_probes``, ``scheduler_elections``), not as write transactions
    or statements, and so are its loops' periodic read snapshots (``periodic_reads``):
    they are not the cost of any workload, and one falling inside a measured window
    would make exact budgets flaky.
    """

    def __init__(self, store: Any) -> None:
        self.counts: collections.Counter[str] = collections.Counter()
        #: Write transactions by the engine method that ran them: [all, those that changed rows].
        self.callers: collections.defaultdict[str, list[int]] = collections.defaultdict(lambda: [0, 0])
        #: Read transactions by the server function that ran them.
        self.readers: collections.Counter[str] = collections.Counter()
        #: Their round trips by the same function (PostgreSQL).
        self.reader_round_trips: collections.Counter[str] = collections.Counter()
        transaction, read = store.transaction, store.read

        def count_statements(tx: Any, prefix: str, changed: list[bool]) -> None:
            if hasattr(tx, "statements"):
                return  # the store counts what it sends (_count_sent reads it at the end)
            # A batch method may run its statement through another counted one: only
            # the outermost call is a statement sent.
            depth = [0]
            for name in ("_execute", "_fetchone", "_fetchall", "_insert_many", "_update_executions"):
                method = getattr(tx, name)

                async def counted(*args: Any, _method: Any = method, _name: str = name, **kwargs: Any) -> Any:
                    if depth[0] == 0:
                        self.counts[f"{prefix}_statements"] += 1
                    depth[0] += 1
                    try:
                        result = await _method(*args, **kwargs)
                    finally:
                        depth[0] -= 1
                    if _name == "_execute" and result:
                        changed[0] = True
                    return result

                setattr(tx, name, counted)

        @contextlib.asynccontextmanager
        async def counted_transaction() -> AsyncIterator[Any]:
            engine_caller = _engine_caller("_transaction")
            periodic = _periodic_function() or _PERIODIC_ENGINE_CALLERS.get(engine_caller)
            if periodic is not None:
                self.counts[periodic] += 1
                async with transaction() as tx:
                    yield tx
                return
            self.counts["write_transactions"] += 1
            caller = self.callers[engine_caller]
            caller[0] += 1
            changed = [False]
            tx = None
            try:
                async with transaction() as tx:
                    count_statements(tx, "write", changed)
                    yield tx
            except ConcurrencyConflict:
                self.counts["conflicts"] += 1
                raise
            finally:
                self._count_sent(tx, "write", changed=changed)
            if changed[0]:
                caller[1] += 1
                self.counts["write_transactions_that_changed_rows"] += 1

        @contextlib.asynccontextmanager
        async def counted_read(**options: Any) -> AsyncIterator[Any]:
            reader = _engine_caller("read")
            self.readers[reader] += 1
            if reader in _PERIODIC_READERS:
                self.counts["periodic_reads"] += 1
                async with read(**options) as tx:
                    yield tx
                return
            self.counts["read_transactions"] += 1
            tx = None
            try:
                async with read(**options) as tx:
                    count_statements(tx, "read", [False])
                    yield tx
            finally:
                self._count_sent(tx, "read", reader)

        store.transaction = counted_transaction
        store.read = counted_read

    def _count_sent(
        self, tx: Any, prefix: str, reader: str | None = None, *, changed: list[bool] | None = None
    ) -> None:
        """Adds what a finished transaction sent, on a store that counts it (PostgreSQL:
        round trips, statements, rows changed; its writes may go several in one statement)."""
        round_trips = getattr(tx, "round_trips", None)
        if round_trips is not None:
            self.counts[f"{prefix}_round_trips"] += round_trips
            if reader is not None:
                self.reader_round_trips[reader] += round_trips
        statements = getattr(tx, "statements", None)
        if statements is not None:
            self.counts[f"{prefix}_statements"] += statements
            if changed is not None and tx.changed_rows:
                changed[0] = True

    def reset(self) -> None:
        """Starts a new measured window: forgets every count so far."""
        self.counts.clear()
        self.callers.clear()
        self.readers.clear()
        self.reader_round_trips.clear()


def count_rpcs(client: Client) -> collections.Counter[str]:
    """Counts the calls ``client`` (and workers on it) make, by RPC name."""
    counts: collections.Counter[str] = collections.Counter()
    service = client.workflow_service
    call = service.call

    async def counted(rpc: str, request: Any, **kwargs: Any) -> Any:
        response = await call(rpc, request, **kwargs)
        empty_poll = rpc.startswith("Poll") and not response.task_token
        counts[rpc + ("_empty" if empty_poll else "")] += 1
        return response

    service.call = counted  # type: ignore[method-assign]
    return counts


def count_history_handed_out(client: Client) -> collections.Counter[str]:
    """Counts the workflow tasks ``client``'s workers receive (polled or handed back
    with a report, a folded workflow task's answer's too) and the history events they
    carry: ``workflow_tasks``, ``events``."""
    counts: collections.Counter[str] = collections.Counter()
    service = client.workflow_service
    call = service.call

    async def counted(rpc: str, request: Any, **kwargs: Any) -> Any:
        response = await call(rpc, request, **kwargs)
        answers = [response, getattr(response, "folded_workflow_task_completed", None)]
        for answer in answers:
            task = answer if rpc == "PollWorkflowTaskQueue" else getattr(answer, "workflow_task", None)
            if task is not None and task.task_token and not task.HasField("query"):
                counts["workflow_tasks"] += 1
                counts["events"] += len(task.history)
        return response

    service.call = counted  # type: ignore[method-assign]
    return counts


class _CountedStream:
    """A worker stream call that counts what passes each way (see :func:`count_stream_messages`)."""

    def __init__(self, call: Any, counts: collections.Counter[str]) -> None:
        self._call = call
        self._counts = counts

    async def write(self, message: Any) -> None:
        self._counts["sent"] += 1
        self._counts["reports"] += len(message.reports)
        self._counts["credits"] += sum(credit.count for credit in message.credits)
        await self._call.write(message)

    async def read(self) -> Any:
        message = await self._call.read()
        if message is not grpc.aio.EOF:
            self._counts["received"] += 1
            self._counts["tasks"] += len(message.tasks)
            self._counts["results"] += len(message.results)
        return message

    def __getattr__(self, name: str) -> Any:
        return getattr(self._call, name)


def count_stream_messages(client: Client) -> collections.Counter[str]:
    """Counts what the worker streams of ``client``'s workers carry: messages ``sent`` and
    ``received``, and in them ``reports``, ``credits``, pushed ``tasks`` and ``results``."""
    counts: collections.Counter[str] = collections.Counter()
    service = client.workflow_service
    open_stream = service.open_stream

    def counted(rpc: str) -> Any:
        return _CountedStream(open_stream(rpc), counts)

    service.open_stream = counted  # type: ignore[method-assign]
    return counts
