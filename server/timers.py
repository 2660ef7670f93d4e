"""The timekeeper: fires durable timers and reaps expired leases and runs.

It sleeps until the earliest deadline in the store (at most ``max_sleep_s``) and
is woken early when the engine creates an earlier one. With several replicas
each runs one; a timer or lease is handled once because its handling claims the
row in the same transaction (rules 1 and 4), so a second claimer finds nothing.

Due timers fire in batches, one transaction (one commit) per batch: when many fall
due together, the last fires after ``count / timer_batch`` commits rather than
``count``. Claims use ``SKIP LOCKED``, so batches are disjoint: replicas split a
backlog between them, and on a store whose writers do not take turns (PostgreSQL)
one timekeeper fires several batches at once, so the database's work for them runs
on several cores while this process builds the next batch.

There, timers are also fired ahead of time: the loop wakes before a burst is due,
as long before as its size needs (``_LEAD_US_PER_TIMER``), and each firer claims a
batch of timers due within ``_SLACK_S`` of each other, writes it, and holds the
transaction open until the batch's last timer is due; then only the COMMIT is left,
instead of the writing of thousands of timers after they fall due. Nothing shows
before that commit (no timer fires early); the cost is that a report on one of
those executions waits for it.

Each item is handled on its own (server/quarantine.py): an expired task or a run
timeout whose handling fails is held aside with its reason and retried after a
backoff, and a timer batch that fails is fired one timer at a time so the timer
that fails is deferred while the others fire. No item can stall the others.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Hashable

from flowforge.server._tasks import cancel_and_wait, wait_event
from flowforge.server.errors import Unavailable
from flowforge.server.history import HistoryEngine
from flowforge.server.quarantine import Quarantine
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
# Where the store's writers do not take turns (PostgreSQL) several firers claim and
# fire batches at once: a batch there is mostly the database's work (index
# maintenance of the rows written), which overlaps across connections and with the
# server's building of the next batch, and a timer is stamped fired once its batch
# has claimed it and locked its execution, so claiming many early is what bounds
# lateness. 10,000 due together on 2 cores loaded by others (benchmarks.timers): 4
# firers of 2,500 stamp them all within ~0.5 s; 8 of 1,250 took ~1.1 s (a batch's
# claim costs about the same at either size there).
_PARALLEL_FIRERS = 4
# Batches one firer fires back to back in a pass before the pass reaps expired leases.
_ROUNDS_PER_PASS = 4
# How long after a deadline the loop wakes (timer slack): deadlines that fall due
# together are rarely exactly together (a timer's due time counts from when its
# workflow task completed), and a wake-up at the first would fire a small round, then
# the rest only after that round's commits, behind the work its workflow tasks bring.
# 10,000 timers "due at one instant" in benchmarks.timers spread over ~0.1 s (90 %).
# Ahead of time (PostgreSQL), the same slack is how far apart a batch's due times may
# be: the batch commits when its last is due.
_SLACK_S = 0.1
# How long ahead of a burst the firing starts, per timer due within _BURST_US of its
# first: writing 10,000 as 4 batches at once took ~1.5 s on 2 quiet cores
# (benchmarks.timers), ~6.5 s at load 20. Capped: an execution whose timer is claimed
# ahead of time keeps its row locked until then.
_LEAD_US_PER_TIMER = 250
_BURST_US = 1_000_000
_MAX_LEAD_US = 3_000_000


class Timekeeper:
    """Background loop turning deadlines into events."""

    def __init__(self, engine: HistoryEngine, max_sleep_s: float = 1.0, timer_batch: int = _TIMER_BATCH) -> None:
        self._engine = engine
        self._timer_batch = timer_batch
        self._timer_batches_at_once = _PARALLEL_FIRERS if engine.store.parallel_writes else 1
        # Ahead of time only where batches do not take turns, and on a clock that gets
        # to a due time by itself (a test's manual clock might never).
        self._ahead_of_time = engine.store.parallel_writes and engine.clock.advances_on_its_own
        #: How far ahead of due this pass claims timers (set as the loop plans its sleep).
        self._lead_us = 0
        self._clock_jumped = asyncio.Event()
        self._max_sleep_s = max_sleep_s
        self._wake = asyncio.Event()
        self._planned_wake_us = 0
        self._task: asyncio.Task[None] | None = None
        #: Expired tasks, timed-out runs and due timers whose handling failed, held aside.
        self.tasks_held = Quarantine("timekeeper: expired task", engine.metrics)
        self.runs_held = Quarantine("timekeeper: run timeout", engine.metrics)
        self.timers_held = Quarantine("timekeeper: timer", engine.metrics)
        self.keys_held = Quarantine("timekeeper: concurrency key", engine.metrics)
        self._last_slot_sweep = 0.0
        engine.on_new_deadline = self.deadline_added
        # A virtual clock that jumps ahead may pass every deadline we sleep towards.
        engine.clock.add_jump_listener(self._wake.set)
        engine.clock.add_jump_listener(self._clock_jumped.set)

    def deadline_added(self, deadline_us: int) -> None:
        slack_us = 0 if self._ahead_of_time else int(_SLACK_S * 1e6)
        if deadline_us + slack_us < self._planned_wake_us:
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
                next_deadline, burst = await self._engine.read(self._plan)
                sleep_s = self._max_sleep_s
                if next_deadline is not None:
                    now = self._engine.clock.now_us()
                    until_due_s = max(0.0, (next_deadline - now) / 1e6)
                    sleep_s = min(sleep_s, until_due_s + _SLACK_S)
                    if burst is not None:
                        first_us, count = burst
                        self._lead_us = min(_MAX_LEAD_US, count * _LEAD_US_PER_TIMER)
                        sleep_s = min(sleep_s, max(0.0, (first_us - self._lead_us - now) / 1e6))
                    if until_due_s == 0.0 and (self.tasks_held or self.runs_held):
                        # What is due now may be only held items: do not spin on them; a
                        # new earlier deadline still wakes the loop (deadline_added).
                        sleep_s = self._max_sleep_s
            except asyncio.CancelledError:
                raise
            except Exception:
                failures += 1
                log.exception("timekeeper pass failed (%d in a row); retrying", failures)
                sleep_s = min(0.1 * 2**failures, 5.0)
            self._planned_wake_us = self._engine.clock.now_us() + int(sleep_s * 1e6)
            self._wake.clear()
            await wait_event(self._wake, sleep_s)

    async def _plan(self, tx: Transaction) -> tuple[int | None, tuple[int, int] | None]:
        """The next deadline and, when firing ahead of time, the next burst of timers."""
        burst = await tx.timer_burst(_BURST_US) if self._ahead_of_time else None
        return await tx.next_deadline_us(), burst

    async def tick(self) -> bool:
        """One pass over everything due now (timers: due within the lead); True if a
        batch was full (more is due)."""
        engine = self._engine
        now = self._engine.clock.now_us()

        async def due(
            tx: Transaction,
        ) -> tuple[list[TimerRow], list[int], list[tuple[str, str]], list[tuple[str, str]]]:
            return (
                await tx.due_timers(now + self._lead_us, 1),
                await tx.expired_task_ids(now, _BATCH + len(self.tasks_held)),
                await tx.expired_run_ids(now, _BATCH + len(self.runs_held)),
                await tx.keys_with_held_tasks(_BATCH),
            )

        # Looked at first, so an idle pass takes no write lock. Held items are read
        # too and skipped, so the batch still holds _BATCH items to handle.
        timers, task_ids, runs, held_keys = await engine.read(due)
        timers_left = await self._fire_timers() if timers else False
        task_ids = [t for t in task_ids if not self.tasks_held.is_held(t)]
        runs = [r for r in runs if not self.runs_held.is_held(r)]
        for task_id in task_ids:
            await self._handle(self.tasks_held, task_id, engine.expire_task(task_id))
        for namespace, run_id in runs:
            await self._handle(self.runs_held, (namespace, run_id), engine.time_out_execution(namespace, run_id))
        # Slots freed without a report (a run closed with an activity leased): flow_control.py.
        # Reports release slots themselves, so this safety net runs at most once a second.
        if held_keys and time.monotonic() - self._last_slot_sweep >= 1.0:
            self._last_slot_sweep = time.monotonic()
        else:
            held_keys = []
        for namespace, key in held_keys:
            await self._handle(self.keys_held, (namespace, key), engine.release_held_slots(namespace, key))
        return timers_left or max(len(task_ids), len(runs)) >= _BATCH

    @staticmethod
    async def _handle(quarantine: Quarantine, item: Hashable, handling: Awaitable[None]) -> None:
        """Handles one item; one that fails is held aside (logged once) instead of
        ending the pass, so it never stalls the items after it."""
        try:
            await handling
        except (asyncio.CancelledError, Unavailable):
            raise  # the store is down: the whole pass retries, no item is to blame
        except Exception as error:
            quarantine.hold(item, error)
        else:
            quarantine.release(item)

    async def _earliest_due_timer(self) -> TimerRow | None:
        now = self._engine.clock.now_us()
        due = await self._engine.read(lambda tx: tx.due_timers(now, 1))
        return due[0] if due else None

    async def _defer(self, timer: TimerRow, error: Exception) -> None:
        """Holds a timer that failed to fire, and moves its due time past the backoff."""
        key = (timer.namespace, timer.run_id, timer.timer_id)
        self.timers_held.hold(key, error)
        retry_us = self._engine.clock.now_us() + int(max(1.0, self.timers_held.backoff_s(key)) * 1e6)
        await self._engine.transaction(lambda tx: tx.defer_timer(timer.run_id, timer.timer_id, retry_us))

    async def _fire_back_to_back(self) -> bool:
        """One firer: batches of due timers one after another, up to _ROUNDS_PER_PASS;
        returns whether more may be due. A full batch means more may be due. Beside
        other firers a partial one may not mean none is left (the others held some of
        the due timers when it claimed, and more fell due during its commit), so this
        firer claims again at once rather than after the slowest batch in flight."""
        for _ in range(_ROUNDS_PER_PASS):
            if self._ahead_of_time:
                fired = await self._engine.fire_due_timers(
                    self._timer_batch,
                    lead_us=self._lead_us,
                    window_us=int(_SLACK_S * 1e6),
                    wait_until=self._wait_until,
                )
            else:
                fired = await self._engine.fire_due_timers(self._timer_batch)
            if fired < self._timer_batch and (fired == 0 or self._timer_batches_at_once == 1):
                return False
        return True

    async def _wait_until(self, when_us: int) -> None:
        """Returns once the clock reads ``when_us`` (a jump of the clock counts)."""
        while (left_us := when_us - self._engine.clock.now_us()) > 0:
            self._clock_jumped.clear()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._clock_jumped.wait(), left_us / 1e6)

    async def _fire_timers(self) -> bool:
        """Fires batches of due timers, with several firers at once where the store
        allows; returns whether more may be due. If a batch fails, fires the timers
        one at a time to find the timer that fails; that one is deferred (its due time
        moved past a backoff, held with its reason) so the others fire."""
        outcomes = await asyncio.gather(
            *(self._fire_back_to_back() for _ in range(self._timer_batches_at_once)), return_exceptions=True
        )
        failures = [e for e in outcomes if isinstance(e, BaseException)]
        for error in failures:
            if isinstance(error, (asyncio.CancelledError, Unavailable)):
                raise error
        if not failures:
            return any(outcomes)
        log.warning("a batch of due timers failed; firing them one at a time to find the one that fails")
        alone = 0
        while alone < self._timer_batch:
            due = await self._earliest_due_timer()
            if due is None:
                break
            try:
                alone += await self._engine.fire_due_timers(1)
            except (asyncio.CancelledError, Unavailable):
                raise
            except Exception as error:
                await self._defer(due, error)
                break
        return alone >= self._timer_batch
