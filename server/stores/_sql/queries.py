"""SQL of workflow queries in flight."""

from __future__ import annotations

from flowforge.server.stores._sql.core import SQLCore, columns, placeholders
from flowforge.server.stores.contract import QueryOperations
from flowforge.server.stores.rows import QueryRow

_QUERY_COLUMNS = columns(QueryRow)
_QUERY_INSERT_COLUMNS = [c for c in _QUERY_COLUMNS if c != "query_id"]
_SELECT_QUERY = f"SELECT {', '.join(_QUERY_COLUMNS)} FROM workflow_queries"


#: Queries waiting for a worker of a queue: (namespace, task_queue, now_us).
VISIBLE_QUERY = (
    "SELECT 1 FROM workflow_queries WHERE namespace = ? AND task_queue = ? AND state = 'PENDING' AND visible_us <= ?"
)


class QuerySQL(SQLCore, QueryOperations):
    """:class:`QueryOperations` in SQL."""

    async def insert_query(self, row: QueryRow) -> int:
        record = await self._fetchone(
            f"INSERT INTO workflow_queries ({', '.join(_QUERY_INSERT_COLUMNS)})"
            f" VALUES ({placeholders(len(_QUERY_INSERT_COLUMNS))}) RETURNING query_id",
            [getattr(row, c) for c in _QUERY_INSERT_COLUMNS],
        )
        assert record is not None
        row.query_id = int(record[0])
        return row.query_id

    async def get_query(self, namespace: str, query_id: int, *, for_update: bool = False) -> QueryRow | None:
        lock = self.for_update_clause if for_update else ""
        return await self._one(
            QueryRow, f"{_SELECT_QUERY} WHERE namespace = ? AND query_id = ?{lock}", (namespace, query_id)
        )

    async def lease_next_query(self, namespace: str, task_queue: str, now_us: int) -> QueryRow | None:
        return await self._one(
            QueryRow,
            f"{_SELECT_QUERY} WHERE namespace = ? AND task_queue = ? AND state = 'PENDING' AND visible_us <= ?"
            f" ORDER BY visible_us, query_id LIMIT 1{self.skip_locked_clause}",
            (namespace, task_queue, now_us),
        )

    async def has_visible_query(self, namespace: str, task_queue: str, now_us: int) -> bool:
        return (
            await self._fetchone(
                f"{VISIBLE_QUERY} LIMIT 1",
                (namespace, task_queue, now_us),
            )
            is not None
        )

    async def update_query(self, row: QueryRow) -> None:
        columns = [c for c in _QUERY_COLUMNS if c not in ("query_id", "namespace")]
        await self._execute(
            f"UPDATE workflow_queries SET {', '.join(f'{c} = ?' for c in columns)} WHERE namespace = ? AND query_id = ?",
            (*[getattr(row, c) for c in columns], row.namespace, row.query_id),
        )

    async def delete_query(self, namespace: str, query_id: int) -> None:
        await self._execute("DELETE FROM workflow_queries WHERE namespace = ? AND query_id = ?", (namespace, query_id))

    async def delete_expired_queries(self, now_us: int) -> None:
        await self._execute("DELETE FROM workflow_queries WHERE expires_us < ?", (now_us,))
