"""Flow control (docs/flow-control.md): a task's priority and fairness key, and the
fleet-wide concurrency limits per key.

Polls lease in the order of the ``ix_tasks_dispatch_order`` index: the lowest
priority key, then the lowest fair pass (stride scheduling per fairness key, kept
in the store), then arrival. A task whose concurrency key is at its limit is
*held*: taken out of that order (``held``) until a slot of its key frees, so it
never reaches a worker and never blocks the tasks behind it. Leases and releases
of one key take turns on the key's limit row, so no interleaving of replicas leases
more than the limit or leaves a task held while a slot is free; the timekeeper also
releases slots every pass, for the ways a slot frees without a report (a run closed
with a leased activity).
"""

from __future__ import annotations

import json
import math
import time

from flowforge.api.schema import TaskKind
from flowforge.api.v1 import common_pb2
from flowforge.server.clock import Clock
from flowforge.server.errors import InvalidArgument
from flowforge.server.history.breakers import Breakers
from flowforge.server.history.data import EngineConfig, TaskPriority
from flowforge.server.history.input_checks import check_name
from flowforge.server.history.mutation import queue_channel, us
from flowforge.server.stores.base import Store, TaskRow, Transaction
from flowforge.server.stores.rows import ConcurrencyLimitRow, RateLimitRow

__all__ = [
    "HELD_FOR_CONCURRENCY",
    "RATE_SCOPES",
    "FlowControl",
    "priority_from_proto",
    "waiting_reason",
]

#: Why a task is held: its concurrency key has no free slot.
HELD_FOR_CONCURRENCY = "concurrency"
# Held tasks one lease transaction passes over before it gives up (the poll looks again).
_HOLDS_PER_LEASE = 64
# Held tasks released at once when their key has no limit (any more).
_RELEASE_BATCH = 100
_MAX_FAIRNESS_WEIGHT = 1000.0
#: What a rate limit applies to: every activity task of a queue, or of a concurrency key.
RATE_SCOPES = ("task_queue", "concurrency_key")
_MAX_RATE = 1_000_000.0
# A rate limit's bucket holds this many seconds' worth of tokens (at least one): short,
# so dispatches stay smooth, long enough that a busy moment does not lose tokens.
_BURST_S = 0.25


def priority_from_proto(
    priority: common_pb2.Priority, inherited: TaskPriority, where: str = "the priority"
) -> TaskPriority:
    """``priority`` with its unset fields taken from ``inherited``.

    Raises:
        InvalidArgument: a priority key outside 1..5, a bad weight or key.
    """
    key = priority.priority_key
    if key and not 1 <= key <= 5:
        raise InvalidArgument(f"{where}: priority_key is {key}; it must be 1 (first) to 5 (last), or 0 to inherit")
    weight = priority.fairness_weight
    if weight and not (math.isfinite(weight) and 0 < weight <= _MAX_FAIRNESS_WEIGHT):
        raise InvalidArgument(
            f"{where}: fairness_weight is {weight}; it must be above 0 and at most {_MAX_FAIRNESS_WEIGHT:g}"
        )
    check_name(where, "fairness_key", priority.fairness_key, required=False)
    return TaskPriority(
        priority_key=key or inherited.priority_key,
        fairness_key=priority.fairness_key or inherited.fairness_key,
        fairness_weight=float(weight) if weight else inherited.fairness_weight,
    )


def waiting_reason(task: TaskRow) -> str:
    """Why a pending task is not handed out, for describe; empty when it is not held."""
    if task.held == HELD_FOR_CONCURRENCY:
        return f"waiting for a slot of concurrency key {task.concurrency_key}"
    return ""


class FlowControl(Breakers):
    """Dispatch order bookkeeping, concurrency and rate limits, inside lease and report transactions."""

    def __init__(self, store: Store, config: EngineConfig | None = None, clock: Clock | None = None) -> None:
        super().__init__(store, config, clock)
        # Queue channel -> (monotonic time of the next token no waiting poll has claimed,
        # seconds between tokens): matching.py's polls each wait for a token of their own.
        self._rate_waits: dict[str, tuple[float, float]] = {}

    async def has_rate_limits(self, namespace: str, tx: Transaction) -> bool:
        """Whether the namespace has any rate limit (from the cached namespace row)."""
        row = await self.namespace_quotas(namespace, tx)
        return row is not None and row.rate_limits > 0

    def claim_rate_token(self, channel: str) -> float | None:
        """For a poll about to wait: claims the next token the rate limit of a queue
        channel gives that no other waiting poll of this process has claimed, and says
        when it is due (monotonic time; None: no wait known). Each poll wakes for its own
        token, in turn, rather than every poll at every token to race for it (the herd's
        transactions, queued on the bucket's row lock, are what held the rate down under load)."""
        wait = self._rate_waits.get(channel)
        if wait is None or wait[0] <= time.monotonic():
            self._rate_waits.pop(channel, None)
            return None
        until, interval_s = wait
        self._rate_waits[channel] = (until + interval_s, interval_s)
        return until

    def rate_limited(self, channel: str) -> bool:
        """Whether every token the rate limit of a queue channel gives before a later
        one is claimed by a waiting poll: a new poll need not try to lease now."""
        wait = self._rate_waits.get(channel)
        return wait is not None and wait[0] > time.monotonic()

    def _note_rate_wait(self, channel: str, wait_s: float, per_second: float) -> None:
        """A lease found the queue's bucket empty, its next token due in ``wait_s``."""
        until = time.monotonic() + wait_s
        current = self._rate_waits.get(channel)
        # Tokens already claimed by waiting polls stay theirs.
        self._rate_waits[channel] = (max(until, current[0]) if current else until, 1.0 / per_second)

    async def _take_rate_token(
        self, tx: Transaction, namespace: str, scope: str, name: str, channel: str | None = None
    ) -> float:
        """Takes a token of a rate limit's bucket: 0.0 if taken (or no such limit), else
        the seconds until the next one (noted for ``channel``'s polls if given). The clock
        is read once the row is locked, and a refill never moves back, so no time counts
        twice across replicas."""
        bucket = await tx.lock_rate_limit(namespace, scope, name)
        if bucket is None:
            return 0.0
        refill_us = max(bucket.refill_us, self.clock.now_us())
        capacity = max(1.0, bucket.per_second * _BURST_S)
        tokens = min(capacity, bucket.tokens + (refill_us - bucket.refill_us) / 1e6 * bucket.per_second)
        wait_s = 0.0 if tokens >= 1.0 else (1.0 - tokens) / bucket.per_second
        await tx.save_rate_tokens(namespace, scope, name, tokens - 1.0 if not wait_s else tokens, refill_us)
        if channel is not None:
            if wait_s:
                self._note_rate_wait(channel, wait_s, bucket.per_second)
            elif tokens >= 2.0:
                # A backlog of tokens (polls woke late): new polls lease at once until it is
                # spent, rather than leave it to the waiting polls' turns to overflow the bucket.
                self._rate_waits.pop(channel, None)
        return wait_s

    async def dispatchable(
        self, tx: Transaction, task: TaskRow, now: int, saturated: set[str], delayed: dict[str, int] | None
    ) -> bool:
        """Inside a lease's transaction, with ``task`` locked: whether it may be leased
        now. If its key is at its limit it is held instead, and if its key's rate limit
        has no token it waits for one (False either way); ``saturated`` and ``delayed``
        remember such keys for the rest of the transaction (``delayed``: None when the
        namespace has no rate limit)."""
        key = task.concurrency_key
        if not key:
            return True
        if key not in saturated:
            limit = await tx.lock_concurrency_limit(task.namespace, key)
            if limit and await tx.count_leased_with_key(task.namespace, key) >= limit:
                saturated.add(key)
        if key in saturated:
            task.held = HELD_FOR_CONCURRENCY
            task.held_since_us = now
            # Waiting for a slot does not count against schedule-to-start.
            task.pending_deadline_us = task.schedule_to_close_deadline_us
            await tx.update_task(task)
            return False
        if delayed is not None:
            if key not in delayed:
                wait_s = await self._take_rate_token(tx, task.namespace, "concurrency_key", key)
                if wait_s:
                    delayed[key] = now + us(wait_s)
            if key in delayed:
                task.visible_us = delayed[key]
                await tx.update_task(task)
                return False
        return True

    async def next_dispatchable(self, tx: Transaction, namespace: str, kind: str, task_queue: str) -> TaskRow | None:
        """Locks the next task of the queue that may be leased now, holding the ones
        over their key's limit on the way; None if there is none (or too many held),
        or if the queue's rate limit has no token now."""
        now = self.clock.now_us()
        saturated: set[str] = set()
        rated = kind == TaskKind.ACTIVITY and await self.has_rate_limits(namespace, tx)
        delayed: dict[str, int] | None = {} if rated else None
        for _ in range(_HOLDS_PER_LEASE):
            task = await tx.lease_next_task(namespace, kind, task_queue, now)
            if task is None:
                return None
            if not await self.dispatchable(tx, task, now, saturated, delayed):
                continue
            if rated:
                channel = queue_channel(namespace, kind, task_queue)
                if await self._take_rate_token(tx, namespace, "task_queue", task_queue, channel):
                    return None
            # Last, so a probe the breaker admits is leased in this transaction.
            if not await self.breaker_admits(tx, task, now):
                continue
            if task.fairness_key:
                await tx.advance_fair_clock(task.namespace, task.kind, task.task_queue, task.fair_pass)
            return task
        return None

    async def release_slots(self, tx: Transaction, namespace: str, concurrency_key: str | None) -> None:
        """After a task of ``concurrency_key`` stopped being leased (in the same
        transaction): hands its slot, and any other free one, to the best held tasks."""
        if not concurrency_key:
            return
        limit = await tx.lock_concurrency_limit(namespace, concurrency_key)
        free = limit - await tx.count_leased_with_key(namespace, concurrency_key) if limit else _RELEASE_BATCH
        if free <= 0:
            return
        now = self.clock.now_us()
        channels: set[tuple[str, str, str]] = set()
        for task in await tx.held_tasks(namespace, concurrency_key, free):
            options = json.loads(task.options)
            task.held = None
            task.held_since_us = None
            schedule_to_start = options.get("schedule_to_start_timeout") or 0
            task.pending_deadline_us = min(
                (
                    d
                    for d in (
                        task.schedule_to_close_deadline_us,
                        now + us(schedule_to_start) if schedule_to_start else None,
                    )
                    if d is not None
                ),
                default=None,
            )
            await tx.update_task(task)
            channels.add((task.namespace, task.kind, task.task_queue))
        for channel in channels:
            tx.notify_after_commit(queue_channel(*channel))

    async def release_held_slots(self, namespace: str, concurrency_key: str) -> None:
        """Hands the free slots of a key with held tasks to them (the timekeeper's
        safety net, for slots freed without a report)."""
        await self._transaction(lambda tx: self.release_slots(tx, namespace, concurrency_key))

    async def set_concurrency_limit(self, namespace: str, concurrency_key: str, max_running: int) -> None:
        """Sets the namespace's limit on ``concurrency_key`` (0 removes it); tasks
        held under a lower limit are released at once if slots are now free."""
        await self.ensure_namespace(namespace)
        check_name("the limit", "concurrency_key", concurrency_key, required=True)
        if max_running < 0:
            raise InvalidArgument(f"max_running is {max_running}; it must be 0 (no limit) or more")

        async def body(tx: Transaction) -> None:
            await tx.set_concurrency_limit(namespace, concurrency_key, max_running, self.clock.now_us())
            await self.release_slots(tx, namespace, concurrency_key)

        await self._transaction(body)

    async def list_concurrency_limits(self, namespace: str) -> list[ConcurrencyLimitRow]:
        """The namespace's limits with their leased and held task counts."""
        await self.ensure_namespace(namespace)
        return await self.read(lambda tx: tx.list_concurrency_limits(namespace))

    async def set_rate_limit(self, namespace: str, scope: str, name: str, per_second: float) -> None:
        """Sets the namespace's dispatch rate limit on a task queue or a concurrency key
        (``scope``: one of :data:`RATE_SCOPES`); 0 removes it."""
        await self.ensure_namespace(namespace)
        check_name("the rate limit", scope, name, required=True)
        if not (math.isfinite(per_second) and 0 <= per_second <= _MAX_RATE):
            raise InvalidArgument(f"per_second is {per_second}; it must be 0 (no limit) to {_MAX_RATE:g}")
        await self._transaction(lambda tx: tx.set_rate_limit(namespace, scope, name, per_second, self.clock.now_us()))
        self._namespace_quotas.pop(namespace, None)  # this replica sees it at once, others within seconds

    async def list_rate_limits(self, namespace: str) -> list[RateLimitRow]:
        """The namespace's rate limits."""
        await self.ensure_namespace(namespace)
        return await self.read(lambda tx: tx.list_rate_limits(namespace))
