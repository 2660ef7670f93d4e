"""The base of the SQL mixins: a store's dialect primitives and row mapping.

Statements are written once with ``?`` placeholders; a store supplies the
primitives (execute, fetch one, fetch all, batch insert and update) and its
dialect's row-locking clauses.
"""

from __future__ import annotations

import abc
import dataclasses
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol, TypeVar

from flowforge.server.stores.errors import ConcurrencyConflict

_Row = TypeVar("_Row")


class Record(Protocol):
    """A fetched row, read by position: a tuple (SQLite) or an ``asyncpg.Record``."""

    def __getitem__(self, index: int, /) -> Any: ...

    def __iter__(self) -> Iterator[Any]: ...


def columns(row_type: type) -> list[str]:
    """The column names of a row dataclass, in field (= column) order."""
    return [f.name for f in dataclasses.fields(row_type)]


def version_conflict(executions: Sequence[tuple[str, str]]) -> str:
    """What a failed version check of ``executions`` (namespace, run_id) says."""
    if len(executions) == 1:
        return executions[0][1]
    return f"one of {len(executions)} executions changed concurrently"


def placeholders(count: int) -> str:
    """``?, ?, ...``: ``count`` placeholders for a VALUES list."""
    return ", ".join("?" for _ in range(count))


class SQLCore(abc.ABC):
    """What every SQL mixin builds on: the dialect primitives and row mapping."""

    #: Appended to a SELECT that must lock its row until commit ("" when the
    #: database serializes writers anyway).
    for_update_clause: str = ""
    #: Appended to the poll SELECT so concurrent pollers skip each other's rows.
    skip_locked_clause: str = ""

    @abc.abstractmethod
    async def _execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Runs a statement and returns the number of rows it changed."""

    @abc.abstractmethod
    async def _fetchone(self, sql: str, params: Sequence[Any] = ()) -> Record | None: ...

    @abc.abstractmethod
    async def _fetchall(self, sql: str, params: Sequence[Any] = ()) -> Sequence[Record]: ...

    async def _write(
        self,
        sql: str,
        params: Sequence[Any] = (),
        *,
        versions_of: Sequence[tuple[str, str]] = (),
        receive: Callable[[Any], None] | None = None,
    ) -> None:
        """Runs a write of one table whose outcome the caller does not read at once. A
        store may send it later, before the transaction's next statement or its commit
        (PostgreSQL sends the writes waiting then in one statement).

        Args:
            versions_of: The executions (namespace, run_id) whose expected version the
                write checks: it must change one row each, else it raises
                :class:`ConcurrencyConflict`, when it is sent.
            receive: Called with the one value the statement returns (RETURNING), when it is sent.
        """
        if receive is not None:
            record = await self._fetchone(sql, params)
            assert record is not None
            receive(record[0])
            return
        changed = await self._execute(sql, params)
        if versions_of and changed != len(versions_of):
            raise ConcurrencyConflict(version_conflict(versions_of))

    @abc.abstractmethod
    async def _insert_many(self, table: str, fields: list[tuple[str, str]], rows: Sequence[Sequence[Any]]) -> None:
        """Inserts ``rows`` (values in the order of ``fields``, (name, annotation)
        pairs) into ``table`` in one call, whatever their number (a write that may be
        sent later, as :meth:`_write`)."""

    @abc.abstractmethod
    async def _update_executions(self, columns: tuple[str, ...], params: list[tuple[Any, ...]]) -> None:
        """Sets ``columns`` then ``version`` of each execution (a parameter tuple holds
        those values, then namespace, run_id and the expected version); raises
        :class:`ConcurrencyConflict` unless every row changed (a write that may be sent
        later, as :meth:`_write`)."""

    async def _one(self, row_type: type[_Row], sql: str, params: Sequence[Any] = ()) -> _Row | None:
        record = await self._fetchone(sql, params)
        return None if record is None else row_type(*record)

    async def _all(self, row_type: type[_Row], sql: str, params: Sequence[Any] = ()) -> list[_Row]:
        return [row_type(*record) for record in await self._fetchall(sql, params)]
