"""The timekeeper: fires durable timers and reaps expired leases and runs.

It sleeps until the earliest deadline in the store (at most ``max_sleep_s``) and
is woken early when the engine creates an earlier one. With several replicas
each runs one; a timer or lease is handled once because its handling claims the
row in the same transaction (rules 1 and 4), so a second claimer finds nothing.

Due timers fire in batches, one transaction (one commit) per batch: when many fall
due together, the last fires after ``count / timer_batch`` commits rather than
``count``. Replicas claim with ``SKIP LOCKED`` and so split a backlog between them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from flowforge.server._tasks import cancel_and_wait
from flowforge.server.history import HistoryEngine
from flowforge.server.stores.base import TimerRow, Transaction

__all__ = ["Timekeeper"]

log = logging.getLogger("flowforge.server.timers")

_BATCH = 200
# Timers per transaction. A batch is set-based (one statement per kind of row), so
# it costs ~90 µs per timer on 2 loaded cores plus a per-batch part (a commit, a turn
# of the write lock shared with the workers' reports). 10,000 falling due together:
# the last TimerFired 1.21 s late with batches of 1,000, 0.83 s with 2,500. A full
# batch holds the lock ~0.25 s; only a backlog fills one.
_TIMER_BATCH = 2500


class Timekeeper:
    """Background loop turning deadlines into events."""

    def __init__(self, engine: HistoryEngine, max_sleep_s: float = 1.0, timer_batch: int = _TIMER_BATCH) -> None:
        self._engine = engine
        self._timer_batch = timer_batch
        self._max_sleep_s = max_sleep_s
        self._wake = asyncio.Event()
        self._planned_wake_us = 0
        self._task: asyncio.Task[None] | None = None
        engine.on_new_deadline = self.deadline_added
        # A virtual clock that jumps ahead may pass every deadline we sleep towards.
        engine.clock.add_jump_listener(self._wake.set)

    def deadline_added(self, deadline_us: int) -> None:
        if deadline_us < self._planned_wake_us:
            self._wake.set()

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="flowforge-timekeeper")

    async def stop(self) -> None:
        await cancel_and_wait(self._task)
        self._task = None

    async def _run(self) -> None:
        failures = 0
        while True:
            try:
                busy = await self.tick()
                failures = 0
                if busy:
                    continue
                next_deadline = await self._engine.read(lambda tx: tx.next_deadline_us())
                sleep_s = self._max_sleep_s
                if next_deadline is not None:
                    sleep_s = max(0.0, min(sleep_s, (next_deadline - self._engine.clock.now_us()) / 1e6 + 0.001))
            except asyncio.CancelledError:
                raise
            except Exception:
                failures += 1
                log.exception("timekeeper pass failed (%d in a row); retrying", failures)
                sleep_s = min(0.1 * 2**failures, 5.0)
            self._planned_wake_us = self._engine.clock.now_us() + int(sleep_s * 1e6)
            self._wake.clear()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._wake.wait(), sleep_s)

    async def tick(self) -> bool:
        """One pass over everything due now; True if a batch was full (more is due)."""
        engine = self._engine
        now = self._engine.clock.now_us()

        async def due(tx: Transaction) -> tuple[list[TimerRow], list[int], list[tuple[str, str]]]:
            return (
                await tx.due_timers(now, 1),
                await tx.expired_task_ids(now, _BATCH),
                await tx.expired_run_ids(now, _BATCH),
            )

        # Looked at first, so an idle pass takes no write lock.
        timers, task_ids, runs = await engine.read(due)
        fired = await engine.fire_due_timers(self._timer_batch) if timers else 0
        for task_id in task_ids:
            await engine.expire_task(task_id)
        for namespace, run_id in runs:
            await engine.time_out_execution(namespace, run_id)
        return fired >= self._timer_batch or max(len(task_ids), len(runs)) >= _BATCH
