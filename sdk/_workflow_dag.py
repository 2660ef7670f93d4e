"""The DAG of a workflow's activities: which outcomes the code had seen when it scheduled each one.

Each task of the workflow loop keeps the frontier of the activities whose
outcome it observed (those no other observed activity depends on); each
activity keeps the frontier it was scheduled with, which becomes its
``depends_on_activity_ids``.
"""

from __future__ import annotations

import asyncio
import functools
from typing import Any

__all__ = ["DagTracker"]


class DagTracker:
    """Tracks what each task of a workflow loop observed, to give activities their dependencies.

    Args:
        loop: The workflow loop whose tasks are tracked.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._frontiers: dict[asyncio.Task[Any] | None, set[int]] = {}
        self._dependencies: dict[int, tuple[int, ...]] = {}

    def track_task(self, task: asyncio.Task[Any]) -> None:
        """A new task inherits what its creator observed and hands back what it observes."""
        creator = asyncio.current_task(self._loop)
        self._frontiers[task] = set(self._frontiers.get(creator, ()))
        task.add_done_callback(functools.partial(self._merge_frontier, creator))
        # The pending tasks of an evicted instance are garbage, not a bug worth a log line.
        task._log_destroy_pending = False  # type: ignore[attr-defined]

    def schedule(self, activity_seq: int) -> tuple[int, ...]:
        """Records an activity the running task schedules; returns its dependencies."""
        dependencies = tuple(sorted(self._frontiers.get(asyncio.current_task(self._loop), ())))
        self._dependencies[activity_seq] = dependencies
        return dependencies

    def observe(self, activity_seq: int) -> None:
        """The running task saw the activity's outcome."""
        self._add_to_frontier(self._frontiers[asyncio.current_task(self._loop)], activity_seq)

    def _merge_frontier(self, creator: asyncio.Task[Any] | None, task: asyncio.Task[Any]) -> None:
        observed = self._frontiers.pop(task)
        creator_frontier = self._frontiers.get(creator)
        if creator_frontier is not None:
            for activity_seq in observed:
                self._add_to_frontier(creator_frontier, activity_seq)

    def _add_to_frontier(self, frontier: set[int], observed: int) -> None:
        # An activity is scheduled after its dependencies, so it has a higher sequence
        # number: only a later member can imply ``observed``, only an earlier one be
        # implied by it. Plain loops: this runs in workflow code, under the determinism
        # guard, where every call (a comprehension's or a generator's frame too) costs
        # its hook two events.
        for member in frontier:
            if member > observed and self._depends_on(member, observed):
                return  # already implied
        implied = []
        for member in frontier:
            if member < observed and self._depends_on(observed, member):
                implied.append(member)
        if implied:
            frontier.difference_update(implied)
        frontier.add(observed)

    def _depends_on(self, activity: int, candidate: int) -> bool:
        """Whether ``activity`` depends, directly or not, on ``candidate``."""
        dependencies = self._dependencies[activity]
        if candidate in dependencies:
            return True
        # The search never needs to go below ``candidate`` (see _add_to_frontier).
        pending = [activity]
        visited: set[int] = set()
        while pending:
            for dependency in self._dependencies[pending.pop()]:
                if dependency == candidate:
                    return True
                if dependency > candidate and dependency not in visited:
                    visited.add(dependency)
                    pending.append(dependency)
        return False
