"""SQL of fair dispatch passes and concurrency limits per key (docs/flow-control.md)."""

from __future__ import annotations

from flowforge.server.stores._sql.core import SQLCore, columns
from flowforge.server.stores.contract import FlowControlOperations
from flowforge.server.stores.rows import ConcurrencyLimitRow, RateLimitRow, TaskRow

_SELECT_TASK = f"SELECT {', '.join(columns(TaskRow))} FROM tasks"
_QUEUE_CLOCK = (
    "SELECT pass FROM fairness_passes WHERE namespace = ? AND kind = ? AND task_queue = ? AND fairness_key = ''"
)
# A key's next pass: its own, or the queue's virtual time if it fell behind (it was
# idle), plus its stride. One statement, so concurrent inserts of a key take turns.
_ADVANCE_KEY = (
    "INSERT INTO fairness_passes (namespace, kind, task_queue, fairness_key, pass) VALUES (?, ?, ?, ?, ?)"
    " ON CONFLICT (namespace, kind, task_queue, fairness_key) DO UPDATE SET pass ="
    " CASE WHEN fairness_passes.pass > ? THEN fairness_passes.pass ELSE ? END + ? RETURNING pass"
)
_ADVANCE_CLOCK = (
    "INSERT INTO fairness_passes (namespace, kind, task_queue, fairness_key, pass) VALUES (?, ?, ?, '', ?)"
    " ON CONFLICT (namespace, kind, task_queue, fairness_key) DO UPDATE SET pass = excluded.pass"
    " WHERE fairness_passes.pass < excluded.pass"
)
_SELECT_RATE_LIMIT = f"SELECT {', '.join(columns(RateLimitRow))} FROM rate_limits"
_LEASED_WITH_KEY = "SELECT COUNT(*) FROM tasks WHERE namespace = ? AND concurrency_key = ? AND state = 'LEASED'"


class FlowControlSQL(SQLCore, FlowControlOperations):
    """:class:`FlowControlOperations` in SQL."""

    async def assign_fair_passes(self, rows: list[TaskRow]) -> None:
        # One statement per fairness key, not per row: a key's rows in one insert follow
        # each other (each pass is the previous one plus its stride, all past the queue's
        # clock), so the key advances by their strides' sum at once and each row's pass is
        # counted back from the key's new pass (10,000 rows of one key took 25 s on a
        # loaded PostgreSQL, one round trip each).
        keys: dict[tuple[str, str, str, str], list[TaskRow]] = {}
        for row in rows:
            if row.fairness_key:
                keys.setdefault((row.namespace, row.kind, row.task_queue, row.fairness_key), []).append(row)
        clocks: dict[tuple[str, str, str], float] = {}
        for (namespace, kind, task_queue, fairness_key), members in keys.items():
            queue = (namespace, kind, task_queue)
            if queue not in clocks:
                record = await self._fetchone(_QUEUE_CLOCK, queue)
                clocks[queue] = 0.0 if record is None else float(record[0])
            clock = clocks[queue]
            strides = [1.0 / row.fairness_weight for row in members]
            total = sum(strides)
            record = await self._fetchone(_ADVANCE_KEY, (*queue, fairness_key, clock + total, clock, clock, total))
            assert record is not None
            last = float(record[0])
            fair_pass = last - total
            for row, stride in zip(members, strides, strict=True):
                fair_pass += stride
                row.fair_pass = fair_pass
            members[-1].fair_pass = last

    async def advance_fair_clock(self, namespace: str, kind: str, task_queue: str, fair_pass: float) -> None:
        await self._execute(_ADVANCE_CLOCK, (namespace, kind, task_queue, fair_pass))

    async def lock_concurrency_limit(self, namespace: str, concurrency_key: str) -> int:
        record = await self._fetchone(
            "SELECT max_running FROM concurrency_limits WHERE namespace = ? AND concurrency_key = ?"
            f"{self.for_update_clause}",
            (namespace, concurrency_key),
        )
        return 0 if record is None else int(record[0])

    async def count_leased_with_key(self, namespace: str, concurrency_key: str) -> int:
        record = await self._fetchone(_LEASED_WITH_KEY, (namespace, concurrency_key))
        assert record is not None
        return int(record[0])

    async def held_tasks(self, namespace: str, concurrency_key: str, limit: int) -> list[TaskRow]:
        return await self._all(
            TaskRow,
            f"{_SELECT_TASK} WHERE namespace = ? AND concurrency_key = ? AND held IS NOT NULL"
            f" ORDER BY priority_key, fair_pass, task_id LIMIT ?{self.for_update_clause}",
            (namespace, concurrency_key, limit),
        )

    async def keys_with_held_tasks(self, limit: int) -> list[tuple[str, str]]:
        records = await self._fetchall(
            "SELECT DISTINCT namespace, concurrency_key FROM tasks WHERE held IS NOT NULL LIMIT ?", (limit,)
        )
        return [(str(r[0]), str(r[1])) for r in records]

    async def set_concurrency_limit(self, namespace: str, concurrency_key: str, max_running: int, now_us: int) -> None:
        if max_running <= 0:
            await self._execute(
                "DELETE FROM concurrency_limits WHERE namespace = ? AND concurrency_key = ?",
                (namespace, concurrency_key),
            )
            return
        await self._execute(
            "INSERT INTO concurrency_limits (namespace, concurrency_key, max_running, update_us) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (namespace, concurrency_key) DO UPDATE SET max_running = excluded.max_running,"
            " update_us = excluded.update_us",
            (namespace, concurrency_key, max_running, now_us),
        )

    async def list_concurrency_limits(self, namespace: str) -> list[ConcurrencyLimitRow]:
        records = await self._fetchall(
            "SELECT l.namespace, l.concurrency_key, l.max_running, l.update_us,"
            " (SELECT COUNT(*) FROM tasks t WHERE t.namespace = l.namespace"
            " AND t.concurrency_key = l.concurrency_key AND t.state = 'LEASED'),"
            " (SELECT COUNT(*) FROM tasks t WHERE t.namespace = l.namespace"
            " AND t.concurrency_key = l.concurrency_key AND t.held IS NOT NULL)"
            " FROM concurrency_limits l WHERE l.namespace = ? ORDER BY l.concurrency_key",
            (namespace,),
        )
        return [ConcurrencyLimitRow(str(r[0]), str(r[1]), int(r[2]), int(r[3]), int(r[4]), int(r[5])) for r in records]

    async def lock_rate_limit(self, namespace: str, scope: str, name: str) -> RateLimitRow | None:
        return await self._one(
            RateLimitRow,
            f"{_SELECT_RATE_LIMIT} WHERE namespace = ? AND scope = ? AND name = ?{self.for_update_clause}",
            (namespace, scope, name),
        )

    async def save_rate_tokens(self, namespace: str, scope: str, name: str, tokens: float, refill_us: int) -> None:
        await self._execute(
            "UPDATE rate_limits SET tokens = ?, refill_us = ? WHERE namespace = ? AND scope = ? AND name = ?",
            (tokens, refill_us, namespace, scope, name),
        )

    async def set_rate_limit(self, namespace: str, scope: str, name: str, per_second: float, now_us: int) -> None:
        if per_second <= 0:
            await self._execute(
                "DELETE FROM rate_limits WHERE namespace = ? AND scope = ? AND name = ?", (namespace, scope, name)
            )
        else:
            await self._execute(
                "INSERT INTO rate_limits (namespace, scope, name, per_second, tokens, refill_us, update_us)"
                " VALUES (?, ?, ?, ?, 1.0, ?, ?) ON CONFLICT (namespace, scope, name) DO UPDATE SET"
                " per_second = excluded.per_second, update_us = excluded.update_us",
                (namespace, scope, name, per_second, now_us, now_us),
            )
        await self._execute(
            "UPDATE namespaces SET rate_limits = (SELECT COUNT(*) FROM rate_limits WHERE namespace = ?) WHERE name = ?",
            (namespace, namespace),
        )

    async def list_rate_limits(self, namespace: str) -> list[RateLimitRow]:
        return await self._all(
            RateLimitRow, f"{_SELECT_RATE_LIMIT} WHERE namespace = ? ORDER BY scope, name", (namespace,)
        )
