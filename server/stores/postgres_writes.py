"""Writes a PostgreSQL transaction sends later, several in one statement.

A write whose outcome its caller does not read at once (an execution's update with
its version check, appended events, a new task whose id is needed only after the
commit, an ended task's row deleted) waits in its transaction until the next
statement or the commit, and the writes waiting then go together: one statement of
data-modifying CTEs, one round trip for all. They change what they would change one
by one, because:

- a read (any statement that is not such a write) sends the writes waiting first, so
  it sees them, as it would have; a plain SELECT of tables none of them changes (nor
  changes through a trigger) rides in their statement instead, its rows aggregated
  into one value: it sees what it would have seen after them, as they change none of
  its rows (a closing run's read of its lineage goes with the deletes of its tasks);
- two writes wait together only if they touch different tables, or both insert, or
  both delete: the parts of one statement see one snapshot, so an update or a delete
  would miss a row another part inserted or changed, and an insert could collide on a
  unique key (one workflow task per run) with the row another part deletes. Two
  deletes remove the rows either matches, as one after the other would (a row both
  match is removed once: PostgreSQL skips a row the same statement already deleted),
  only the split of the rows counted between them may differ, and neither count is
  checked (a closing run's report deletes its task, then all of the run's tasks);
- a version check (an optimistic update must change its rows) raises
  :class:`ConcurrencyConflict` when it is sent, inside its transaction, which then
  rolls back whole as before; it waits only if the transaction holds the rows locked.
  On a row it does not lock, another transaction may have moved the version on and
  appended the same events, and those of this batch would fail on their key before
  the check could tell a conflict: such an update goes out at once, alone.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["PendingWrite", "combined_sql", "reads_apart", "shares_statement"]

_TARGET = re.compile(r"(INSERT INTO|UPDATE|DELETE FROM) (\w+)")
_LOCKING = re.compile(r"\bFOR (?:UPDATE|SHARE|NO KEY UPDATE|KEY SHARE)\b")
# Tables a write to the key changes besides its own: the lifecycle outbox trigger
# (migrations/postgresql/0009_lifecycle_outbox.sql) inserts a row per run event.
_ALSO_CHANGED = {"history_events": ("lifecycle_outbox",)}


@dataclasses.dataclass(frozen=True, slots=True)
class PendingWrite:
    """One write waiting to be sent; ``sql`` has ``?`` placeholders."""

    sql: str
    params: Sequence[Any]
    versions_of: Sequence[tuple[str, str]] = ()
    """The executions whose versions it checks: it must change one row each."""
    receive: Callable[[Any], None] | None = None
    """Called with the one value the statement returns (its own RETURNING clause)."""


@functools.lru_cache(maxsize=256)
def _target(sql: str) -> tuple[str, str]:
    """The table a write changes, and how (``INSERT INTO``, ``UPDATE`` or ``DELETE FROM``)."""
    match = _TARGET.match(sql)
    if match is None:
        raise ValueError(f"not a single-table write: {sql[:60]!r}")
    return match[2], match[1]


def shares_statement(write: PendingWrite, pending: Sequence[PendingWrite]) -> bool:
    """Whether ``write`` can go in one statement with the writes ``pending`` (see the module)."""
    table, how = _target(write.sql)
    for other in pending:
        other_table, other_how = _target(other.sql)
        if other_table == table and not (how == other_how == "INSERT INTO" or _unchecked_deletes(write, other)):
            return False
    return True


def _unchecked_deletes(*writes: PendingWrite) -> bool:
    """Whether ``writes`` all delete and nothing reads how many rows they changed or what they returned."""
    return all(
        _target(write.sql)[1] == "DELETE FROM" and not write.versions_of and write.receive is None for write in writes
    )


def reads_apart(sql: str, pending: Sequence[PendingWrite]) -> bool:
    """Whether the read ``sql`` can ride in the statement of the writes ``pending`` (see the module)."""
    return all(_reads_apart(sql, _target(write.sql)[0]) for write in pending)


@functools.lru_cache(maxsize=1024)
def _reads_apart(sql: str, table: str) -> bool:
    """Whether ``sql`` is a plain SELECT (not a write, not a locking read) that names
    neither ``table`` nor a table a write to it changes: any mention of the name counts,
    a column of that name included, so no way of naming a table slips through."""
    if not sql.startswith("SELECT ") or _LOCKING.search(sql):
        return False
    return not any(re.search(rf"\b{name}\b", sql) for name in (table, *_ALSO_CHANGED.get(table, ())))


@functools.lru_cache(maxsize=256)
def combined_sql(writes: tuple[tuple[str, bool], ...], read: str | None = None) -> str:
    """One statement with each write (sql, whether it returns a value) as a CTE of its
    own; its one row holds, per write, the value it returned or the rows it changed,
    then, with a ``read``, the array of the rows it returned (NULL if none) in its order."""
    parts = []
    outputs = []
    for i, (sql, returns_value) in enumerate(writes):
        if returns_value:
            parts.append(f"w{i}(r) AS ({sql})")
            outputs.append(f"(SELECT r FROM w{i})")
        else:
            parts.append(f"w{i}(r) AS ({sql} RETURNING 1)")
            outputs.append(f"(SELECT count(*) FROM w{i})")
    if read is not None:
        # A sorted subquery feeds the aggregate in its order (PostgreSQL's documented idiom).
        outputs.append(f"(SELECT array_agg(q) FROM ({read}) AS q)")
    return f"WITH {', '.join(parts)} SELECT {', '.join(outputs)}"
