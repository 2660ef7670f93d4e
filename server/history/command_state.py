"""What a workflow task's commands need of their run, and what they change of it.

A completion runs load → apply → save, as Temporal's mutable state does: every
row the commands need is read before any command is applied, each kind of row in
one statement (:meth:`Commands._load`); the commands are applied to
:class:`Applying` in memory; and everything they changed is written in one step
(:meth:`Commands._save`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from flowforge.api.schema import EventType
from flowforge.api.v1 import common_pb2
from flowforge.server.history.mutation import _Mutation
from flowforge.server.history.visibility_writes import StoredValues
from flowforge.server.stores.base import ChildExecutionRow, TaskRow, TimerRow
from flowforge.server.stores.rows import DeadLetterRow

__all__ = ["Applying", "StartedChild"]


@dataclasses.dataclass
class StartedChild:
    """A child run a command started, with what is written beside it."""

    run: _Mutation
    link: ChildExecutionRow
    search_attributes: StoredValues
    memo: common_pb2.Memo


@dataclasses.dataclass
class Applying:
    """One workflow task completion: the run's loaded state and the commands' changes."""

    m: _Mutation
    """The completing run."""
    completed_id: int = 0
    """The WorkflowTaskCompleted event every command's event refers to."""

    # ---- loaded before any command is applied
    activities: dict[str, TaskRow] = dataclasses.field(default_factory=dict)
    """The run's activity tasks the commands name, by activity id."""
    parked: dict[str, DeadLetterRow] = dataclasses.field(default_factory=dict)
    """The run's parked activities a cancel names (no task row), by activity id."""
    timers: dict[str, TimerRow] = dataclasses.field(default_factory=dict)
    """The run's pending timers the commands name, by timer id."""
    attribute_types: dict[str, str] = dataclasses.field(default_factory=dict)
    """The namespace's search attribute types (when a command sets search attributes)."""
    children: list[ChildExecutionRow] = dataclasses.field(default_factory=list)
    """The run's pending children (when a command signals or cancels one)."""
    child_runs: dict[str, _Mutation] = dataclasses.field(default_factory=dict)
    """The running runs of those children, by run id, locked."""
    running_workflow_ids: set[str] = dataclasses.field(default_factory=set)
    """The workflow ids of child starts that have a running execution."""

    # ---- changed by the commands, written by the save
    outcomes: list[tuple[EventType, Mapping[str, Any]]] = dataclasses.field(default_factory=list)
    """Events delivered after every command was applied, in order."""
    canceled_activities: list[TaskRow] = dataclasses.field(default_factory=list)
    """Activity tasks cancelled before they started: deleted."""
    cancel_requested: dict[int, TaskRow] = dataclasses.field(default_factory=dict)
    """Started activity tasks asked to cancel, by task id: updated."""
    canceled_dead_letters: list[str] = dataclasses.field(default_factory=list)
    """Dead letters of parked activities cancelled: deleted."""
    canceled_timers: list[str] = dataclasses.field(default_factory=list)
    """Timer ids cancelled: deleted."""
    search_attributes: StoredValues | None = None
    """The run's changed search attributes (None: unchanged)."""
    started_children: list[StartedChild] = dataclasses.field(default_factory=list)
    changed_children: dict[str, _Mutation] = dataclasses.field(default_factory=dict)
    """Children runs signalled or asked to cancel, by run id."""

    def pending_child_run(self, workflow_id: str, run_id: str) -> _Mutation | None:
        """The running run of the pending child with this workflow id (and run id, if given)."""
        child = next((c for c in self.children if c.workflow_id == workflow_id and run_id in ("", c.run_id)), None)
        return None if child is None else self.child_runs.get(child.run_id)
