"""SQL of pending child workflows."""

from __future__ import annotations

import dataclasses

from flowforge.server.stores._sql.core import SQLCore, columns, placeholders
from flowforge.server.stores.contract import LineageOperations
from flowforge.server.stores.rows import ChildExecutionRow

_CHILD_COLUMNS = columns(ChildExecutionRow)
_SELECT_CHILD = f"SELECT {', '.join(_CHILD_COLUMNS)} FROM child_executions"


class LineageSQL(SQLCore, LineageOperations):
    """:class:`LineageOperations` in SQL."""

    async def insert_child_execution(self, row: ChildExecutionRow) -> None:
        await self._execute(
            f"INSERT INTO child_executions ({', '.join(_CHILD_COLUMNS)}) VALUES ({placeholders(len(_CHILD_COLUMNS))})",
            dataclasses.astuple(row),
        )

    async def get_lineage(
        self, namespace: str, run_id: str
    ) -> tuple[ChildExecutionRow | None, list[ChildExecutionRow]]:
        rows = await self._all(
            ChildExecutionRow,
            f"{_SELECT_CHILD} WHERE namespace = ? AND (run_id = ? OR parent_run_id = ?) ORDER BY initiated_event_id",
            (namespace, run_id, run_id),
        )
        link = next((row for row in rows if row.run_id == run_id), None)
        return link, [row for row in rows if row.parent_run_id == run_id]

    async def list_child_executions(self, namespace: str, parent_run_id: str) -> list[ChildExecutionRow]:
        return await self._all(
            ChildExecutionRow,
            f"{_SELECT_CHILD} WHERE namespace = ? AND parent_run_id = ? ORDER BY initiated_event_id",
            (namespace, parent_run_id),
        )

    async def delete_child_execution(self, namespace: str, parent_run_id: str, initiated_event_id: int) -> bool:
        return (
            await self._execute(
                "DELETE FROM child_executions WHERE namespace = ? AND parent_run_id = ? AND initiated_event_id = ?",
                (namespace, parent_run_id, initiated_event_id),
            )
            == 1
        )

    async def move_child_execution(self, namespace: str, run_id: str, new_run_id: str) -> None:
        await self._execute(
            "UPDATE child_executions SET run_id = ? WHERE namespace = ? AND run_id = ?", (new_run_id, namespace, run_id)
        )
