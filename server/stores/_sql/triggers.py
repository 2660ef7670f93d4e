"""SQL of event triggers and the event dedupe window."""

from __future__ import annotations

import dataclasses

from flowforge.server.stores._sql.core import SQLCore, columns, placeholders
from flowforge.server.stores.contract import TriggerOperations
from flowforge.server.stores.rows import EventDedupeRow, EventTriggerRow

_EVENT_TRIGGER_COLUMNS = columns(EventTriggerRow)
_EVENT_DEDUPE_COLUMNS = columns(EventDedupeRow)


class TriggerSQL(SQLCore, TriggerOperations):
    """:class:`TriggerOperations` in SQL."""

    async def insert_event_trigger(self, row: EventTriggerRow) -> bool:
        # ON CONFLICT instead of catching the violation: on PostgreSQL a failed
        # statement would abort the whole transaction.
        return bool(
            await self._fetchall(
                f"INSERT INTO event_triggers ({', '.join(_EVENT_TRIGGER_COLUMNS)})"
                f" VALUES ({placeholders(len(_EVENT_TRIGGER_COLUMNS))})"
                " ON CONFLICT (namespace, trigger_id) DO NOTHING RETURNING trigger_id",
                dataclasses.astuple(row),
            )
        )

    async def get_event_trigger(self, namespace: str, trigger_id: str) -> EventTriggerRow | None:
        return await self._one(
            EventTriggerRow,
            f"SELECT {', '.join(_EVENT_TRIGGER_COLUMNS)} FROM event_triggers WHERE namespace = ? AND trigger_id = ?",
            (namespace, trigger_id),
        )

    async def list_event_triggers(
        self, namespace: str, *, limit: int, after_trigger_id: str, event_type: str | None = None
    ) -> list[EventTriggerRow]:
        where, params = ["namespace = ?", "trigger_id > ?"], [namespace, after_trigger_id]
        if event_type is not None:
            where.append("event_type = ?")
            params.append(event_type)
        return await self._all(
            EventTriggerRow,
            f"SELECT {', '.join(_EVENT_TRIGGER_COLUMNS)} FROM event_triggers WHERE {' AND '.join(where)}"
            " ORDER BY trigger_id LIMIT ?",
            (*params, limit),
        )

    async def delete_event_trigger(self, namespace: str, trigger_id: str) -> bool:
        return bool(
            await self._execute(
                "DELETE FROM event_triggers WHERE namespace = ? AND trigger_id = ?", (namespace, trigger_id)
            )
        )

    async def claim_event(self, namespace: str, source: str, event_id: str, now_us: int, expires_us: int) -> bool:
        # _fetchall: a RETURNING statement is stepped to its end before the commit.
        return bool(
            await self._fetchall(
                "INSERT INTO event_dedupe (namespace, source, event_id, publish_us, expires_us, outcome)"
                " VALUES (?, ?, ?, ?, ?, '[]')"
                " ON CONFLICT (namespace, source, event_id) DO UPDATE"
                " SET publish_us = excluded.publish_us, expires_us = excluded.expires_us, outcome = '[]'"
                " WHERE event_dedupe.expires_us <= excluded.publish_us"
                " RETURNING event_id",
                (namespace, source, event_id, now_us, expires_us),
            )
        )

    async def set_event_outcome(self, namespace: str, source: str, event_id: str, outcome: str) -> None:
        await self._execute(
            "UPDATE event_dedupe SET outcome = ? WHERE namespace = ? AND source = ? AND event_id = ?",
            (outcome, namespace, source, event_id),
        )

    async def get_event_dedupe(self, namespace: str, source: str, event_id: str) -> EventDedupeRow | None:
        return await self._one(
            EventDedupeRow,
            f"SELECT {', '.join(_EVENT_DEDUPE_COLUMNS)} FROM event_dedupe"
            " WHERE namespace = ? AND source = ? AND event_id = ?",
            (namespace, source, event_id),
        )

    async def delete_expired_event_dedupe(self, now_us: int, limit: int) -> int:
        return await self._execute(
            "DELETE FROM event_dedupe WHERE (namespace, source, event_id) IN"
            " (SELECT namespace, source, event_id FROM event_dedupe WHERE expires_us <= ?"
            " ORDER BY expires_us LIMIT ?)",
            (now_us, limit),
        )
