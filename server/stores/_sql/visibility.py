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
from flowforge.server.stores.rows import CompiledQuery, ExecutionRow, ListOrder, StoredValue

_SELECT_EXECUTION_AS_E = f"SELECT {', '.join('e.' + c for c in EXECUTION_COLUMNS)} FROM executions e"
_STORED_VALUE_COLUMNS = columns(StoredValue)


def list_executions_sql(
    namespace: str,
    condition: CompiledQuery,
    *,
    limit: int,
    after: tuple[Any, ...] | None,
) -> tuple[str, list[Any]]:
    """The statement behind ``list_executions`` (tests EXPLAIN it to show which index serves a query).

    Args:
        after: The previous page's last run's values of ``condition.order.key_columns``.
            Text compares in the column's collation both in the ORDER BY and in the
            cursor's condition, so pages follow each other whatever that collation is.
    """
    order = condition.order
    where, params = f"e.namespace = ? AND ({condition.where})", [namespace, *condition.params]
    if order.column == "close_us":
        return _closed_then_running_sql(where, params, order, limit=limit, after=after)
    sql, page_params = _page_sql(where, list(order.key_columns), order.descending, after)
    return sql, [*params, *page_params, limit]


def _page_sql(where: str, columns: list[str], descending: bool, after: tuple[Any, ...] | None) -> tuple[str, list[Any]]:
    """One page's SELECT ordered by ``columns`` after the cursor, ending in ``LIMIT ?``;
    the parameters after those of ``where``, the limit's left to the caller."""
    expressions = [f"e.{c}" for c in columns]
    params: list[Any] = []
    if after is not None:
        if len(after) != len(expressions):
            raise ValueError(f"a cursor of {len(after)} values for an order by {columns}")
        keyset, params = _after(expressions, list(after), "<" if descending else ">")
        where += f" AND {keyset}"
    direction = " DESC" if descending else ""
    sort = ", ".join(f"{e}{direction}" for e in expressions)
    return f"{_SELECT_EXECUTION_AS_E} WHERE {where} ORDER BY {sort} LIMIT ?", params


def _closed_then_running_sql(
    where: str, params: list[Any], order: ListOrder, *, limit: int, after: tuple[Any, ...] | None
) -> tuple[str, list[Any]]:
    """``ORDER BY CloseTime``: the closed runs in close order, then the running ones (no
    close time) in start order, whichever the direction. Each half is its own page read
    from its index (ix_executions_close, ix_executions_status_start: running is exactly
    ``close_us IS NULL``), and the page is the first ``limit`` of both."""
    parts, part_params = [], []
    if after is None or after[0] is not None:  # the cursor, if any, is among the closed runs
        closed, closed_params = _page_sql(
            f"{where} AND e.close_us IS NOT NULL", ["close_us", "start_us", "run_id"], order.descending, after
        )
        parts.append(closed)
        part_params += [*params, *closed_params, limit]
    running, running_params = _page_sql(
        f"{where} AND e.status = 'RUNNING'",
        ["start_us", "run_id"],
        order.descending,
        after[1:] if after is not None and after[0] is None else None,
    )
    parts.append(running)
    part_params += [*params, *running_params, limit]
    direction = " DESC" if order.descending else ""
    union = " UNION ALL ".join(f"SELECT * FROM ({part}) AS part_{i}" for i, part in enumerate(parts))
    sql = (
        f"SELECT * FROM ({union}) AS u ORDER BY (u.close_us IS NULL),"
        f" u.close_us{direction}, u.start_us{direction}, u.run_id{direction} LIMIT ?"
    )
    return sql, [*part_params, limit]


def _after(expressions: list[str], values: list[Any], op: str) -> tuple[str, list[Any]]:
    """``(e1, e2, ...) op (v1, v2, ...)`` compared in order, spelled out so that both
    stores' planners turn it into an index range: ``e1 op v1 OR (e1 = v1 AND e2 op v2) ...``."""
    terms, params = [], []
    for i, expression in enumerate(expressions):
        equal = [f"{e} = ?" for e in expressions[:i]]
        terms.append(" AND ".join([*equal, f"{expression} {op} ?"]))
        params += [*values[:i], values[i]]
    first, *rest = terms
    return "(" + " OR ".join([first, *(f"({t})" for t in rest)]) + ")", params


class VisibilitySQL(SQLCore, VisibilityOperations):
    """:class:`VisibilityOperations` in SQL."""

    async def list_executions(
        self, namespace: str, condition: CompiledQuery, *, limit: int, after: tuple[Any, ...] | None
    ) -> list[ExecutionRow]:
        return await self._all(
            ExecutionRow,
            *list_executions_sql(namespace, condition, limit=limit, after=after),
        )

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
