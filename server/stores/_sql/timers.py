"""SQL of durable timers and the deadlines the timekeeper sleeps until."""

from __future__ import annotations

import dataclasses

from flowforge.server.stores._sql.core import SQLCore, columns, placeholders
from flowforge.server.stores.contract import TimerOperations
from flowforge.server.stores.rows import TimerRow

_TIMER_COLUMNS = columns(TimerRow)
# The earliest deadline of each kind, in one statement (one round trip on PostgreSQL).
_NEXT_DEADLINES = (
    "SELECT (SELECT MIN(lease_expires_us) FROM tasks WHERE state = 'LEASED'),"
    " (SELECT MIN(pending_deadline_us) FROM tasks WHERE state = 'PENDING' AND pending_deadline_us IS NOT NULL),"
    " (SELECT MIN(fire_us) FROM timers),"
    " (SELECT MIN(deadline_us) FROM executions WHERE status = 'RUNNING' AND deadline_us IS NOT NULL)"
)


class TimerSQL(SQLCore, TimerOperations):
    """:class:`TimerOperations` in SQL."""

    async def insert_timer(self, row: TimerRow) -> None:
        await self._write(
            f"INSERT INTO timers ({', '.join(_TIMER_COLUMNS)}) VALUES ({placeholders(5)})",
            dataclasses.astuple(row),
        )

    async def get_timers(self, run_id: str, timer_ids: list[str]) -> list[TimerRow]:
        if not timer_ids:
            return []
        return await self._all(
            TimerRow,
            f"SELECT {', '.join(_TIMER_COLUMNS)} FROM timers WHERE run_id = ?"
            f" AND timer_id IN ({placeholders(len(timer_ids))}){self.for_update_clause}",
            (run_id, *timer_ids),
        )

    async def delete_timer(self, run_id: str, timer_id: str) -> TimerRow | None:
        return await self._one(
            TimerRow,
            f"DELETE FROM timers WHERE run_id = ? AND timer_id = ? RETURNING {', '.join(_TIMER_COLUMNS)}",
            (run_id, timer_id),
        )

    async def delete_run_timers(self, run_id: str) -> None:
        await self._write("DELETE FROM timers WHERE run_id = ?", (run_id,))

    async def defer_timer(self, run_id: str, timer_id: str, fire_us: int) -> bool:
        changed = await self._execute(
            "UPDATE timers SET fire_us = ? WHERE run_id = ? AND timer_id = ?", (fire_us, run_id, timer_id)
        )
        return changed > 0

    async def due_timers(self, now_us: int, limit: int) -> list[TimerRow]:
        return await self._all(
            TimerRow,
            f"SELECT {', '.join(_TIMER_COLUMNS)} FROM timers WHERE fire_us <= ? ORDER BY fire_us LIMIT ?",
            (now_us, limit),
        )

    async def claim_due_timers(
        self, due_by_us: int, limit: int, window_us: int | None = None, now_us: int | None = None
    ) -> list[TimerRow]:
        returning = f" RETURNING {', '.join(_TIMER_COLUMNS)}"
        if window_us is None:
            return await self._all(
                TimerRow,
                "DELETE FROM timers WHERE (run_id, timer_id) IN (SELECT run_id, timer_id FROM timers"
                f" WHERE fire_us <= ? ORDER BY fire_us LIMIT ?{self.skip_locked_clause}){returning}",
                (due_by_us, limit),
            )
        # The window starts at the earliest timer no other claim holds, not the earliest
        # in the table: a concurrent firer's uncommitted batch must not leave this one an
        # empty window. Finding it locks it, so both look in one total order: the batch
        # then starts with that timer, and holds no lock on a timer it does not fire.
        # Timers already due (a backlog) are all in the window: a full batch, at once.
        order = "ORDER BY fire_us, run_id, timer_id"
        first = f"SELECT fire_us FROM timers WHERE fire_us <= ? {order} LIMIT 1{self.skip_locked_clause}"
        return await self._all(
            TimerRow,
            "DELETE FROM timers WHERE (run_id, timer_id) IN (SELECT run_id, timer_id FROM timers"
            f" WHERE fire_us <= ? OR fire_us <= ? + ({first}) {order} LIMIT ?{self.skip_locked_clause}){returning}",
            (due_by_us if now_us is None else now_us, window_us, due_by_us, limit),
        )

    async def timer_burst(self, within_us: int) -> tuple[int, int] | None:
        record = await self._fetchone(
            "SELECT first_us, (SELECT COUNT(*) FROM timers WHERE fire_us <= first_us + ?)"
            " FROM (SELECT MIN(fire_us) AS first_us FROM timers) AS earliest WHERE first_us IS NOT NULL",
            (within_us,),
        )
        return None if record is None else (int(record[0]), int(record[1]))

    async def expired_run_ids(self, now_us: int, limit: int) -> list[tuple[str, str]]:
        records = await self._fetchall(
            "SELECT namespace, run_id FROM executions WHERE status = 'RUNNING' AND deadline_us IS NOT NULL"
            " AND deadline_us <= ? ORDER BY deadline_us LIMIT ?",
            (now_us, limit),
        )
        return [(r[0], r[1]) for r in records]

    async def next_deadline_us(self) -> int | None:
        record = await self._fetchone(_NEXT_DEADLINES)
        candidates = [int(value) for value in record or () if value is not None]
        return min(candidates) if candidates else None
