"""Circuit breakers per activity type (docs/flow-control.md).

A breaker counts the outcomes of its type's attempts in a fixed window, in the
transaction of each outcome (completion, failure, timeout). ``closed``: tasks are
leased as usual; once the window has ``min_calls`` outcomes and the failure rate
reaches the threshold it opens. ``open``: the lease transaction holds the type's
tasks back (visible again when the open period ends) without leasing them, so no
attempt is spent. After ``open_s`` the next lease turns it ``half_open`` and takes
the one probe; the breaker row is locked in that transaction, so two replicas
cannot both probe. The probe's success closes it, its failure opens it again.
"""

from __future__ import annotations

import math

from flowforge.api.schema import TaskKind, TaskState
from flowforge.server.errors import InvalidArgument, NotFound
from flowforge.server.history.input_checks import check_name
from flowforge.server.history.mutation import us
from flowforge.server.history.namespaces import Namespaces
from flowforge.server.stores.base import TaskRow, Transaction
from flowforge.server.stores.rows import BreakerRow

__all__ = ["Breakers", "held_by_breaker"]

# While a half-open breaker's probe runs, other tasks of its type look again this often.
_PROBE_RECHECK_S = 1.0
_MAX_SECONDS = 86_400.0 * 7


def held_by_breaker(task: TaskRow, open_types: set[str]) -> str:
    """Why a pending task is not handed out because of its type's breaker (for describe);
    empty when its type's breaker is closed (``open_types``: types not closed)."""
    if task.kind == TaskKind.ACTIVITY and task.activity_type in open_types and task.state == TaskState.PENDING:
        return f"held by the open circuit breaker of activity type {task.activity_type}"
    return ""


def _reset_window(row: BreakerRow, now: int) -> None:
    row.window_start_us, row.successes, row.failures = now, 0, 0


def _enter(row: BreakerRow, state: str, now: int, reason: str = "") -> None:
    row.state, row.since_us, row.probe_in_flight, row.update_us = state, now, 0, now
    if reason:
        row.reason = reason
    _reset_window(row, now)


class Breakers(Namespaces):
    """Breaker checks inside lease and outcome transactions, and the operator's calls."""

    async def has_breakers(self, namespace: str, tx: Transaction) -> bool:
        """Whether the namespace has any breaker (from the cached namespace row)."""
        row = await self.namespace_quotas(namespace, tx)
        return row is not None and row.breakers > 0

    async def breaker_admits(self, tx: Transaction, task: TaskRow, now: int) -> bool:
        """Inside a lease's transaction, with ``task`` locked: whether its type's breaker
        lets it be leased now (closed, or this is the half-open probe). If not, the task
        is held back until the breaker may admit it, its attempt and schedule-to-start
        untouched (False)."""
        if not task.activity_type or not await self.has_breakers(task.namespace, tx):
            return True
        row = await tx.lock_breaker(task.namespace, task.activity_type)
        if row is None or row.state == "closed":
            return True
        if row.state == "open" and now >= row.since_us + us(row.open_s):
            _enter(row, "half_open", now)
        if row.state == "half_open" and not row.probe_in_flight:
            row.probe_in_flight, row.update_us = 1, now
            await tx.save_breaker(row)
            return True
        await tx.save_breaker(row)
        task.visible_us = row.since_us + us(row.open_s) if row.state == "open" else now + us(_PROBE_RECHECK_S)
        # Waiting for the breaker does not count against schedule-to-start.
        task.pending_deadline_us = task.schedule_to_close_deadline_us
        await tx.update_task(task)
        return False

    async def count_breaker_outcome(self, tx: Transaction, task: TaskRow, succeeded: bool | None) -> None:
        """In an attempt's outcome transaction: counts it in its type's breaker, which
        may open (or, half-open, close or reopen). ``succeeded`` None: the attempt
        decides nothing (canceled, or handed back unrun), a half-open breaker may probe again."""
        if not task.activity_type or not await self.has_breakers(task.namespace, tx):
            return
        row = await tx.lock_breaker(task.namespace, task.activity_type)
        if row is None or row.state == "open":
            return  # open: attempts leased before it opened end unseen
        now = self.clock.now_us()
        if row.state == "half_open":
            if succeeded is None:
                row.probe_in_flight, row.update_us = 0, now
            else:
                _enter(row, "closed" if succeeded else "open", now, "probe succeeded" if succeeded else "probe failed")
        elif succeeded is not None:
            if now >= row.window_start_us + us(row.window_s):
                _reset_window(row, now)
            if succeeded:
                row.successes += 1
            else:
                row.failures += 1
            calls = row.successes + row.failures
            if calls >= row.min_calls and row.failures / calls >= row.failure_rate:
                _enter(row, "open", now, f"{row.failures} of {calls} calls failed")
        await tx.save_breaker(row)

    async def open_breaker_types(self, namespace: str) -> set[str]:
        """The namespace's activity types whose breaker is not closed (describe's waiting reasons)."""
        rows = await self.read(lambda tx: tx.list_breakers(namespace))
        return {row.activity_type for row in rows if row.state != "closed"}

    async def set_breaker(
        self, namespace: str, activity_type: str, failure_rate: float, min_calls: int, window_s: float, open_s: float
    ) -> None:
        """Sets the breaker of ``activity_type`` (a new one starts closed; a changed one keeps its state).

        Raises:
            InvalidArgument: a rate outside (0, 1], fewer than one call, a bad window or open period.
        """
        await self.ensure_namespace(namespace)
        check_name("the breaker", "activity_type", activity_type, required=True)
        if not (math.isfinite(failure_rate) and 0 < failure_rate <= 1):
            raise InvalidArgument(f"failure_rate is {failure_rate}; it must be above 0 and at most 1")
        if min_calls < 1:
            raise InvalidArgument(f"min_calls is {min_calls}; it must be 1 or more")
        for field, value in (("window_seconds", window_s), ("open_seconds", open_s)):
            if not (math.isfinite(value) and 0 < value <= _MAX_SECONDS):
                raise InvalidArgument(f"{field} is {value}; it must be above 0 and at most {_MAX_SECONDS:g}")

        async def body(tx: Transaction) -> None:
            now = self.clock.now_us()
            row = await tx.lock_breaker(namespace, activity_type)
            if row is None:
                row = BreakerRow(namespace, activity_type, failure_rate, min_calls, window_s, open_s, "closed",
                                 now, now, 0, 0, 0, "", now)  # fmt: skip
            row.failure_rate, row.min_calls, row.window_s, row.open_s = failure_rate, min_calls, window_s, open_s
            row.update_us = now
            await tx.save_breaker(row)
            await tx.count_breakers(namespace)

        await self._transaction(body)
        self._namespace_quotas.pop(namespace, None)  # this replica sees it at once, others within seconds

    async def force_breaker(self, namespace: str, activity_type: str, state: str, reason: str) -> None:
        """Opens or closes a breaker by hand (``state``: ``open`` or ``closed``).

        Raises:
            NotFound: the type has no breaker (set one first).
        """
        await self.ensure_namespace(namespace)
        check_name("the breaker", "activity_type", activity_type, required=True)

        async def body(tx: Transaction) -> None:
            row = await tx.lock_breaker(namespace, activity_type)
            if row is None:
                raise NotFound(f"activity type {activity_type!r} has no breaker; set one with 'breaker set'")
            now = self.clock.now_us()
            if row.state == "open" and state == "closed":
                # The tasks it held wait for the end of its open period: they go now.
                await tx.release_breaker_holds(namespace, activity_type, row.since_us + us(row.open_s), now)
            _enter(row, state, now, reason)
            await tx.save_breaker(row)

        await self._transaction(body)

    async def list_breakers(self, namespace: str) -> list[BreakerRow]:
        """The namespace's breakers by activity type."""
        await self.ensure_namespace(namespace)
        return await self.read(lambda tx: tx.list_breakers(namespace))

    async def breaker_states(self) -> list[tuple[str, str, str]]:
        """``(namespace, activity_type, state)`` of every breaker (the /metrics gauge)."""
        return [
            (row.namespace, row.activity_type, row.state) for row in await self.read(lambda tx: tx.list_breakers(None))
        ]
