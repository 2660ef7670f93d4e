"""SQL of leader leases."""

from __future__ import annotations

from flowforge.server.stores._sql.core import SQLCore, columns
from flowforge.server.stores.contract import LeaseOperations
from flowforge.server.stores.rows import LeaseRow

_LEASE_COLUMNS = columns(LeaseRow)


class LeaseSQL(SQLCore, LeaseOperations):
    """:class:`LeaseOperations` in SQL."""

    async def get_lease(self, name: str) -> LeaseRow | None:
        return await self._one(LeaseRow, f"SELECT {', '.join(_LEASE_COLUMNS)} FROM leases WHERE name = ?", (name,))

    async def acquire_lease(self, name: str, holder: str, now_us: int, ttl_us: int) -> LeaseRow | None:
        if await self._execute(
            f"INSERT INTO leases ({', '.join(_LEASE_COLUMNS)}) VALUES (?, ?, 1, ?, ?) ON CONFLICT (name) DO NOTHING",
            (name, holder, now_us, now_us + ttl_us),
        ):
            return await self.get_lease(name)
        return await self._one(
            LeaseRow,
            "UPDATE leases SET holder = ?, fencing_token = fencing_token + 1, acquired_us = ?, expires_us = ?"
            f" WHERE name = ? AND expires_us <= ? RETURNING {', '.join(_LEASE_COLUMNS)}",
            (holder, now_us, now_us + ttl_us, name, now_us),
        )

    async def renew_lease(self, name: str, holder: str, fencing_token: int, expires_us: int) -> bool:
        return (
            await self._execute(
                "UPDATE leases SET expires_us = ? WHERE name = ? AND holder = ? AND fencing_token = ?",
                (expires_us, name, holder, fencing_token),
            )
            == 1
        )
