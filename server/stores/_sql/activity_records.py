"""SQL of the activity records: every attempt (``activity_attempts``) and the
dead-letter store (``dead_letters``)."""

from __future__ import annotations

from typing import Any

from flowforge.server.stores._sql.core import SQLCore, columns, placeholders
from flowforge.server.stores.contract import ActivityRecordOperations
from flowforge.server.stores.rows import ActivityAttemptRow, DeadLetterFilter, DeadLetterRow

_ATTEMPT_COLUMNS = columns(ActivityAttemptRow)
_INSERT_ATTEMPT = (
    f"INSERT INTO activity_attempts ({', '.join(_ATTEMPT_COLUMNS)}) VALUES ({placeholders(len(_ATTEMPT_COLUMNS))})"
)
_SELECT_ATTEMPTS = f"SELECT {', '.join(_ATTEMPT_COLUMNS)} FROM activity_attempts"
_DEAD_LETTER_COLUMNS = columns(DeadLetterRow)
_INSERT_DEAD_LETTER = (
    f"INSERT INTO dead_letters ({', '.join(_DEAD_LETTER_COLUMNS)}) VALUES ({placeholders(len(_DEAD_LETTER_COLUMNS))})"
)
_SELECT_DEAD_LETTERS = f"SELECT {', '.join(_DEAD_LETTER_COLUMNS)} FROM dead_letters"


class ActivityRecordSQL(SQLCore, ActivityRecordOperations):
    """:class:`ActivityRecordOperations` in SQL."""

    async def insert_activity_attempt(self, row: ActivityAttemptRow) -> None:
        await self._write(_INSERT_ATTEMPT, [getattr(row, c) for c in _ATTEMPT_COLUMNS])

    async def list_activity_attempts(
        self, namespace: str, run_id: str, scheduled_event_id: int | None = None
    ) -> list[ActivityAttemptRow]:
        where, params = "namespace = ? AND run_id = ?", list[Any]([namespace, run_id])
        if scheduled_event_id is not None:
            where += " AND scheduled_event_id = ?"
            params.append(scheduled_event_id)
        return await self._all(
            ActivityAttemptRow, f"{_SELECT_ATTEMPTS} WHERE {where} ORDER BY scheduled_event_id, attempt", params
        )

    async def insert_dead_letter(self, row: DeadLetterRow) -> None:
        await self._execute(_INSERT_DEAD_LETTER, [getattr(row, c) for c in _DEAD_LETTER_COLUMNS])

    async def get_dead_letter(self, namespace: str, dead_letter_id: str) -> DeadLetterRow | None:
        return await self._one(
            DeadLetterRow,
            f"{_SELECT_DEAD_LETTERS} WHERE namespace = ? AND id = ?",
            (namespace, dead_letter_id),
        )

    async def get_run_dead_letters(self, run_id: str, activity_ids: list[str]) -> list[DeadLetterRow]:
        if not activity_ids:
            return []
        return await self._all(
            DeadLetterRow,
            f"{_SELECT_DEAD_LETTERS} WHERE run_id = ? AND activity_id IN ({placeholders(len(activity_ids))})",
            (run_id, *activity_ids),
        )

    async def list_dead_letters(
        self, namespace: str, selection: DeadLetterFilter, limit: int, *, after: tuple[int, str] | None = None
    ) -> list[DeadLetterRow]:
        where, params = ["namespace = ?"], list[Any]([namespace])
        for column in ("workflow_type", "activity_type", "error_type", "workflow_id"):
            value = getattr(selection, column)
            if value:
                where.append(f"{column} = ?")
                params.append(value)
        if selection.dead_lettered_before_us is not None:
            where.append("dead_lettered_us < ?")
            params.append(selection.dead_lettered_before_us)
        if after is not None:
            where.append("(dead_lettered_us > ? OR (dead_lettered_us = ? AND id > ?))")
            params += [after[0], after[0], after[1]]
        sql = f"{_SELECT_DEAD_LETTERS} WHERE {' AND '.join(where)} ORDER BY dead_lettered_us, id LIMIT ?"
        return await self._all(DeadLetterRow, sql, [*params, limit])

    async def dead_letter_depths(self, namespace: str | None = None) -> list[tuple[str, str, int]]:
        where, params = ("WHERE namespace = ?", (namespace,)) if namespace is not None else ("", ())
        records = await self._fetchall(
            f"SELECT namespace, activity_type, COUNT(*) FROM dead_letters {where}"
            " GROUP BY namespace, activity_type ORDER BY namespace, activity_type",
            params,
        )
        return [(r[0], r[1], int(r[2])) for r in records]

    async def delete_dead_letter(self, dead_letter_id: str) -> bool:
        return await self._execute("DELETE FROM dead_letters WHERE id = ?", (dead_letter_id,)) > 0

    async def delete_run_dead_letters(self, run_ids: list[str]) -> None:
        if run_ids:
            params: list[Any] = list(run_ids)
            await self._write(f"DELETE FROM dead_letters WHERE run_id IN ({placeholders(len(run_ids))})", params)
