"""SQL of circuit breakers per activity type (docs/flow-control.md)."""

from __future__ import annotations

import dataclasses

from flowforge.server.stores._sql.core import SQLCore, columns
from flowforge.server.stores.contract import BreakerOperations
from flowforge.server.stores.rows import BreakerRow

_COLUMNS = columns(BreakerRow)
_SELECT = f"SELECT {', '.join(_COLUMNS)} FROM breakers"
_UPSERT = (
    f"INSERT INTO breakers ({', '.join(_COLUMNS)}) VALUES ({', '.join('?' for _ in _COLUMNS)})"
    " ON CONFLICT (namespace, activity_type) DO UPDATE SET "
    + ", ".join(f"{c} = excluded.{c}" for c in _COLUMNS if c not in ("namespace", "activity_type"))
)


class BreakerSQL(SQLCore, BreakerOperations):
    """:class:`BreakerOperations` in SQL."""

    async def lock_breaker(self, namespace: str, activity_type: str) -> BreakerRow | None:
        return await self._one(
            BreakerRow,
            f"{_SELECT} WHERE namespace = ? AND activity_type = ?{self.for_update_clause}",
            (namespace, activity_type),
        )

    async def save_breaker(self, row: BreakerRow) -> None:
        await self._execute(_UPSERT, dataclasses.astuple(row))

    async def count_breakers(self, namespace: str) -> None:
        await self._execute(
            "UPDATE namespaces SET breakers = (SELECT COUNT(*) FROM breakers WHERE namespace = ?) WHERE name = ?",
            (namespace, namespace),
        )

    async def release_breaker_holds(self, namespace: str, activity_type: str, held_until_us: int, now_us: int) -> None:
        await self._execute(
            "UPDATE tasks SET visible_us = ? WHERE namespace = ? AND kind = 'ACTIVITY' AND activity_type = ?"
            " AND state = 'PENDING' AND visible_us = ?",
            (now_us, namespace, activity_type, held_until_us),
        )

    async def list_breakers(self, namespace: str | None) -> list[BreakerRow]:
        if namespace is None:
            return await self._all(BreakerRow, f"{_SELECT} ORDER BY namespace, activity_type")
        return await self._all(BreakerRow, f"{_SELECT} WHERE namespace = ? ORDER BY activity_type", (namespace,))
