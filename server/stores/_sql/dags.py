"""SQL of declarative DAGs: versions, aliases and the join counters of DAG runs."""

from __future__ import annotations

import dataclasses

from flowforge.server.stores._sql.core import SQLCore, columns, placeholders
from flowforge.server.stores.contract import DagOperations
from flowforge.server.stores.rows import DagAliasRow, DagRunTaskRow, DagVersionRow

_VERSION_COLUMNS = ", ".join(columns(DagVersionRow))
_ALIAS_COLUMNS = ", ".join(columns(DagAliasRow))
_RUN_TASK_FIELDS = [(f.name, str(f.type)) for f in dataclasses.fields(DagRunTaskRow)]


class DagSQL(SQLCore, DagOperations):
    """:class:`DagOperations` in SQL."""

    async def insert_dag_version(self, row: DagVersionRow) -> bool:
        return bool(
            await self._fetchall(
                f"INSERT INTO dag_versions ({_VERSION_COLUMNS}) VALUES ({placeholders(len(columns(DagVersionRow)))})"
                " ON CONFLICT (namespace, digest) DO NOTHING RETURNING digest",
                dataclasses.astuple(row),
            )
        )

    async def get_dag_version(self, namespace: str, digest: str) -> DagVersionRow | None:
        return await self._one(
            DagVersionRow,
            f"SELECT {_VERSION_COLUMNS} FROM dag_versions WHERE namespace = ? AND digest = ?",
            (namespace, digest),
        )

    async def list_dag_versions(self, namespace: str, name: str | None, limit: int) -> list[DagVersionRow]:
        where, params = "namespace = ?", [namespace]
        if name is not None:
            where += " AND name = ?"
            params.append(name)
        return await self._all(
            DagVersionRow,
            f"SELECT {_VERSION_COLUMNS} FROM dag_versions WHERE {where} ORDER BY create_us DESC, digest LIMIT ?",
            (*params, limit),
        )

    async def delete_dag_version(self, namespace: str, digest: str) -> bool:
        return bool(
            await self._execute("DELETE FROM dag_versions WHERE namespace = ? AND digest = ?", (namespace, digest))
        )

    async def dag_version_running(self, namespace: str, digest: str) -> bool:
        return bool(
            await self._fetchone(
                "SELECT 1 FROM executions WHERE namespace = ? AND dag_digest = ? AND status = 'RUNNING' LIMIT 1",
                (namespace, digest),
            )
        )

    async def set_dag_alias(self, row: DagAliasRow) -> str | None:
        previous = await self.get_dag_alias(row.namespace, row.name, row.alias)
        await self._execute(
            f"INSERT INTO dag_aliases ({_ALIAS_COLUMNS}) VALUES ({placeholders(len(columns(DagAliasRow)))})"
            " ON CONFLICT (namespace, name, alias) DO UPDATE SET digest = excluded.digest, update_us = excluded.update_us",
            dataclasses.astuple(row),
        )
        return previous

    async def get_dag_alias(self, namespace: str, name: str, alias: str) -> str | None:
        record = await self._fetchone(
            "SELECT digest FROM dag_aliases WHERE namespace = ? AND name = ? AND alias = ?", (namespace, name, alias)
        )
        return None if record is None else str(record[0])

    async def list_dag_aliases(self, namespace: str, name: str | None) -> list[DagAliasRow]:
        where, params = "namespace = ?", [namespace]
        if name is not None:
            where += " AND name = ?"
            params.append(name)
        return await self._all(
            DagAliasRow, f"SELECT {_ALIAS_COLUMNS} FROM dag_aliases WHERE {where} ORDER BY name, alias", params
        )

    async def insert_dag_run_tasks(self, rows: list[DagRunTaskRow]) -> None:
        await self._insert_many("dag_run_tasks", _RUN_TASK_FIELDS, [dataclasses.astuple(r) for r in rows])

    async def get_dag_run_tasks(self, run_id: str) -> list[DagRunTaskRow]:
        return await self._all(
            DagRunTaskRow,
            f"SELECT {', '.join(columns(DagRunTaskRow))} FROM dag_run_tasks WHERE run_id = ? ORDER BY task_id",
            (run_id,),
        )

    async def update_dag_run_task(self, row: DagRunTaskRow) -> None:
        await self._execute(
            "UPDATE dag_run_tasks SET waiting = ?, scheduled_event_id = ?, completed_event_id = ?"
            " WHERE run_id = ? AND task_id = ?",
            (row.waiting, row.scheduled_event_id, row.completed_event_id, row.run_id, row.task_id),
        )

    async def delete_dag_run_tasks(self, run_id: str) -> None:
        await self._execute("DELETE FROM dag_run_tasks WHERE run_id = ?", (run_id,))
