"""The retention sweeper: purges closed executions past their namespace's retention.

Every ``interval_s`` it walks the namespaces and purges, in transactions of at most
``batch`` runs, the runs closed longer ago than the namespace's retention: the
execution with its history, visibility rows, tasks, timers, request ids, queries and
child rows (:meth:`RetentionOperations.purge_runs`). A pass does at most
``max_batches`` batches per namespace, so one namespace with a large backlog cannot
hold the sweeper from the others; the rest waits for the next pass.

Each namespace is handled on its own: one that fails is logged (once until it
recovers) and skipped. With several replicas each runs a sweeper; the namespace
row is locked while a batch is purged, so two replicas never purge the same runs.
"""

from __future__ import annotations

import asyncio
import logging

from flowforge.server._tasks import cancel_and_wait
from flowforge.server.history import HistoryEngine

__all__ = ["RetentionSweeper"]

log = logging.getLogger("flowforge.server.retention")


class RetentionSweeper:
    """Background loop purging closed runs past retention, in bounded batches.

    Args:
        engine: The history engine whose store is swept.
        interval_s: Seconds between passes.
        batch: Runs purged per transaction.
        max_batches: Batches per namespace per pass.
    """

    def __init__(
        self, engine: HistoryEngine, *, interval_s: float = 60.0, batch: int = 200, max_batches: int = 10
    ) -> None:
        self._engine = engine
        self._interval_s = interval_s
        self._batch = batch
        self._max_batches = max_batches
        self._task: asyncio.Task[None] | None = None
        # Namespaces whose last pass failed: their failure is logged once, not every pass.
        self._failing: set[str] = set()

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="flowforge-retention-sweeper")

    async def stop(self) -> None:
        await cancel_and_wait(self._task)
        self._task = None

    async def sweep(self) -> int:
        """One pass over every namespace; returns how many runs were purged."""
        purged = 0
        for namespace in await self._engine.list_namespaces():
            try:
                purged += await self._sweep_namespace(namespace.name)
            except asyncio.CancelledError:
                raise
            except Exception:
                if namespace.name not in self._failing:
                    self._failing.add(namespace.name)
                    log.exception("retention: namespace %r could not be swept; skipped until it can", namespace.name)
                continue
            if namespace.name in self._failing:
                self._failing.discard(namespace.name)
                log.info("retention: namespace %r is swept again", namespace.name)
        return purged

    async def _sweep_namespace(self, namespace: str) -> int:
        purged = 0
        for _ in range(self._max_batches):
            count = await self._engine.purge_expired_runs(namespace, self._batch)
            purged += count
            if count < self._batch:
                break
        if purged:
            log.info("retention: purged %d closed runs of namespace %r", purged, namespace)
        return purged

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self._interval_s)
            try:
                await self.sweep()
            except asyncio.CancelledError:
                raise
            except Exception as error:  # the store may be down for a while; try again next pass
                log.warning("retention pass failed: %s", error)
