"""SQL of listing and counting runs, search attributes and memos (docs/visibility.md).

A list query's condition arrives compiled by :mod:`flowforge.server.visibility`, its
values as parameters (:class:`~flowforge.server.stores.rows.CompiledQuery`).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from flowforge.server.stores._sql.core import SQLCore, columns, placeholders
from flowforge.server.stores._sql.executions import EXECUTION_COLUMNS
from flowforge.server.stores.contract import VisibilityOperations
from flowforge.server.stores.rows import CompiledQuery, ExecutionRow, StoredValue

_SELECT_EXECUTION_AS_E = f"SELECT {', '.join('e.' + c for c in EXECUTION_COLUMNS)} FROM executions e"
_STORED_VALUE_COLUMNS = columns(StoredValue)


def list_executions_sql(
    namespace: str, condition: CompiledQuery, *, limit: int, before: tuple[int, str] | None
) -> tuple[str, list[Any]]:
    """The statement behind ``list_executions`` (tests EXPLAIN it to show which index serves a query)."""
    where, params = f"e.namespace = ? AND ({condition.where})", [namespace, *condition.params]
    if before is not None:
        where += " AND (e.start_us < ? OR (e.start_us = ? AND e.run_id < ?))"
        params += [before[0], before[0], before[1]]
    sql = f"{_SELECT_EXECUTION_AS_E} WHERE {where} ORDER BY e.start_us DESC, e.run_id DESC LIMIT ?"
    return sql, [*params, limit]


class VisibilitySQL(SQLCore, VisibilityOperations):
    """:class:`VisibilityOperations` in SQL."""

    async def list_executions(
        self, namespace: str, condition: CompiledQuery, *, limit: int, before: tuple[int, str] | None
    ) -> list[ExecutionRow]:
        return await self._all(ExecutionRow, *list_executions_sql(namespace, condition, limit=limit, before=before))

    async def count_executions(self, namespace: str, condition: CompiledQuery) -> int:
        record = await self._fetchone(
            f"SELECT COUNT(*) FROM executions e WHERE e.namespace = ? AND ({condition.where})",
            (namespace, *condition.params),
        )
        return int(record[0]) if record is not None else 0

    async def get_search_attribute_types(self, namespace: str) -> dict[str, str]:
        records = await self._fetchall(
            "SELECT name, value_type FROM search_attribute_types WHERE namespace = ?", (namespace,)
        )
        return {r[0]: r[1] for r in records}

    async def insert_search_attribute_type(self, namespace: str, name: str, value_type: str, now_us: int) -> None:
        await self._execute(
            "INSERT INTO search_attribute_types (namespace, name, value_type, create_us) VALUES (?, ?, ?, ?)",
            (namespace, name, value_type, now_us),
        )

    async def set_search_attributes(self, namespace: str, run_id: str, values: dict[str, StoredValue]) -> None:
        if not values:
            return
        row = f"({placeholders(3 + len(_STORED_VALUE_COLUMNS))})"
        await self._execute(
            f"INSERT INTO search_attributes (namespace, run_id, name, {', '.join(_STORED_VALUE_COLUMNS)})"
            f" VALUES {', '.join(row for _ in values)} ON CONFLICT (run_id, name) DO UPDATE SET"
            f" {', '.join(f'{c} = excluded.{c}' for c in _STORED_VALUE_COLUMNS)}",
            [
                x
                for name, value in sorted(values.items())
                for x in (namespace, run_id, name, *dataclasses.astuple(value))
            ],
        )

    async def delete_search_attribute(self, run_id: str, name: str) -> None:
        await self._execute("DELETE FROM search_attributes WHERE run_id = ? AND name = ?", (run_id, name))

    async def get_search_attributes(self, namespace: str, run_ids: list[str]) -> dict[str, dict[str, StoredValue]]:
        found: dict[str, dict[str, StoredValue]] = {}
        if not run_ids:
            return found
        records = await self._fetchall(
            f"SELECT run_id, name, {', '.join(_STORED_VALUE_COLUMNS)} FROM search_attributes"
            f" WHERE namespace = ? AND run_id IN ({placeholders(len(run_ids))})",
            (namespace, *run_ids),
        )
        for run_id, name, *values in records:
            found.setdefault(run_id, {})[name] = StoredValue(*values)
        return found

    async def insert_memo(self, namespace: str, run_id: str, memo: bytes) -> None:
        await self._execute("INSERT INTO memos (namespace, run_id, memo) VALUES (?, ?, ?)", (namespace, run_id, memo))

    async def get_memos(self, namespace: str, run_ids: list[str]) -> dict[str, bytes]:
        if not run_ids:
            return {}
        records = await self._fetchall(
            f"SELECT run_id, memo FROM memos WHERE namespace = ? AND run_id IN ({placeholders(len(run_ids))})",
            (namespace, *run_ids),
        )
        return {r[0]: bytes(r[1]) for r in records}
