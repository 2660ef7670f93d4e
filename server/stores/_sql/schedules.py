"""SQL of schedules, whose scheduler writes are fenced by the ``scheduler`` lease."""

from __future__ import annotations

import dataclasses
from typing import Any

from flowforge.server.stores._sql.core import SQLCore, columns, placeholders
from flowforge.server.stores.contract import ScheduleOperations
from flowforge.server.stores.errors import ConcurrencyConflict, FencingTokenRejected
from flowforge.server.stores.rows import ScheduleRow

_SCHEDULE_COLUMNS = columns(ScheduleRow)
_SELECT_SCHEDULE = f"SELECT {', '.join(_SCHEDULE_COLUMNS)} FROM schedules"
_SCHEDULER_LEASE = "scheduler"


class ScheduleSQL(SQLCore, ScheduleOperations):
    """:class:`ScheduleOperations` in SQL."""

    async def get_schedule(self, namespace: str, schedule_id: str) -> ScheduleRow | None:
        return await self._one(
            ScheduleRow, f"{_SELECT_SCHEDULE} WHERE namespace = ? AND schedule_id = ?", (namespace, schedule_id)
        )

    async def insert_schedule(self, row: ScheduleRow) -> bool:
        return (
            await self._execute(
                f"INSERT INTO schedules ({', '.join(_SCHEDULE_COLUMNS)})"
                f" VALUES ({placeholders(len(_SCHEDULE_COLUMNS))}) ON CONFLICT (namespace, schedule_id) DO NOTHING",
                dataclasses.astuple(row),
            )
            == 1
        )

    async def update_schedule(self, row: ScheduleRow, expected_version: int, fencing_token: int | None) -> None:
        columns = [c for c in _SCHEDULE_COLUMNS if c not in ("namespace", "schedule_id", "version", "fencing_token")]
        sql = (
            f"UPDATE schedules SET {', '.join(f'{c} = ?' for c in columns)}, version = ?, fencing_token = ?"
            " WHERE namespace = ? AND schedule_id = ? AND version = ?"
        )
        params: list[Any] = [getattr(row, c) for c in columns]
        params += [expected_version + 1, fencing_token if fencing_token is not None else row.fencing_token]
        params += [row.namespace, row.schedule_id, expected_version]
        if fencing_token is not None:
            # Checked by the statement that writes, against the newest committed lease.
            sql += " AND fencing_token <= ? AND ? >= (SELECT fencing_token FROM leases WHERE name = ?)"
            params += [fencing_token, fencing_token, _SCHEDULER_LEASE]
        if await self._execute(sql, params) == 1:
            row.version = expected_version + 1
            if fencing_token is not None:
                row.fencing_token = fencing_token
            return
        current = await self.get_schedule(row.namespace, row.schedule_id)
        if current is not None and current.version == expected_version and fencing_token is not None:
            raise FencingTokenRejected(f"fencing token {fencing_token} is stale")
        raise ConcurrencyConflict(row.schedule_id)

    async def delete_schedule(self, namespace: str, schedule_id: str) -> bool:
        return (
            await self._execute(
                "DELETE FROM schedules WHERE namespace = ? AND schedule_id = ?", (namespace, schedule_id)
            )
            == 1
        )

    async def list_schedules(self, namespace: str, *, after: str, limit: int) -> list[ScheduleRow]:
        return await self._all(
            ScheduleRow,
            f"{_SELECT_SCHEDULE} WHERE namespace = ? AND schedule_id > ? ORDER BY schedule_id LIMIT ?",
            (namespace, after, limit),
        )

    async def due_schedules(self, now_us: int, limit: int) -> list[tuple[str, str]]:
        records = await self._fetchall(
            "SELECT namespace, schedule_id FROM schedules WHERE next_action_us IS NOT NULL AND next_action_us <= ?"
            " ORDER BY next_action_us LIMIT ?",
            (now_us, limit),
        )
        return [(r[0], r[1]) for r in records]

    async def next_schedule_action_us(self) -> int | None:
        record = await self._fetchone("SELECT MIN(next_action_us) FROM schedules WHERE next_action_us IS NOT NULL")
        return None if record is None or record[0] is None else int(record[0])
