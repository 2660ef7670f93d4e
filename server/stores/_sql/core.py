"""The base of the SQL mixins: a store's dialect primitives and row mapping.

Statements are written once with ``?`` placeholders; a store supplies the
primitives (execute, fetch one, fetch all, batch insert and update) and its
dialect's row-locking clauses.
"""

from __future__ import annotations

import abc
import dataclasses
from collections.abc import Iterator, Sequence
from typing import Any, Protocol, TypeVar

_Row = TypeVar("_Row")


class Record(Protocol):
    """A fetched row, read by position: a tuple (SQLite) or an ``asyncpg.Record``."""

    def __getitem__(self, index: int, /) -> Any: ...

    def __iter__(self) -> Iterator[Any]: ...


def columns(row_type: type) -> list[str]:
    """The column names of a row dataclass, in field (= column) order."""
    return [f.name for f in dataclasses.fields(row_type)]


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

    @abc.abstractmethod
    async def _insert_many(self, table: str, fields: list[tuple[str, str]], rows: Sequence[Sequence[Any]]) -> None:
        """Inserts ``rows`` (values in the order of ``fields``, (name, annotation)
        pairs) into ``table`` in one call, whatever their number."""

    @abc.abstractmethod
    async def _update_executions(self, columns: tuple[str, ...], params: list[tuple[Any, ...]]) -> int:
        """Sets ``columns`` then ``version`` of each execution (a parameter tuple holds
        those values, then namespace, run_id and the expected version); returns the
        number of rows changed."""

    async def _one(self, row_type: type[_Row], sql: str, params: Sequence[Any] = ()) -> _Row | None:
        record = await self._fetchone(sql, params)
        return None if record is None else row_type(*record)

    async def _all(self, row_type: type[_Row], sql: str, params: Sequence[Any] = ()) -> list[_Row]:
        return [row_type(*record) for record in await self._fetchall(sql, params)]
