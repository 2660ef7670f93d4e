"""What the engine saw happen, reported only once the change is committed.

A transaction body may run several times (a concurrency conflict runs it again from
the start) and may roll back; a counter bumped inside it would count attempts, not
changes. So a body only *notes* an observation (:func:`observe`);
the engine's ``EngineCore._transaction`` collects the notes of each attempt and hands them to the
metrics after that attempt committed, and drops them when it did not.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
from collections.abc import Iterator

from flowforge.server.stores.rows import HistoryEventRow

__all__ = [
    "ActivityAttemptEnded",
    "Observation",
    "ScheduleFired",
    "TaskStarted",
    "TimerFired",
    "WorkflowClosed",
    "WorkflowTaskFolded",
    "collecting",
    "observe",
]


@dataclasses.dataclass(frozen=True)
class WorkflowClosed:
    """A run closed with ``status`` (a WorkflowExecutionStatus name); ``close_event`` is
    its last event, for the ``result()`` long polls parked on it (history/parked_closes.py)."""

    namespace: str
    workflow_type: str
    status: str
    run_id: str = ""
    close_event: HistoryEventRow | None = None


@dataclasses.dataclass(frozen=True)
class ActivityAttemptEnded:
    """An activity attempt ended: ``completed``, ``failed``, ``failed_benign`` (an ``ApplicationError``
    of category BENIGN), ``timed_out`` or ``canceled``."""

    namespace: str
    activity_type: str
    outcome: str


@dataclasses.dataclass(frozen=True)
class TaskStarted:
    """A poll leased a task ``wait_s`` seconds after it became visible on its queue."""

    namespace: str
    task_queue: str
    kind: str
    wait_s: float


@dataclasses.dataclass(frozen=True)
class TimerFired:
    """A durable timer fired ``late_s`` seconds after it was due."""

    late_s: float


@dataclasses.dataclass(frozen=True)
class ScheduleFired:
    """A schedule started a run ``late_s`` seconds after the nominal time its spec named."""

    namespace: str
    late_s: float


@dataclasses.dataclass(frozen=True)
class WorkflowTaskFolded:
    """An activity completion carried a folded workflow task: ``outcome`` is ``applied``,
    or why it was ignored (history/folds.py ``FoldIgnored``)."""

    namespace: str
    outcome: str


Observation = WorkflowClosed | ActivityAttemptEnded | TaskStarted | TimerFired | ScheduleFired | WorkflowTaskFolded

_pending: contextvars.ContextVar[list[Observation] | None] = contextvars.ContextVar(
    "flowforge_pending_observations", default=None
)


def observe(observation: Observation) -> None:
    """Notes ``observation`` for after the current transaction commits (dropped
    outside a transaction of the engine)."""
    pending = _pending.get()
    if pending is not None:
        pending.append(observation)


@contextlib.contextmanager
def collecting() -> Iterator[list[Observation]]:
    """Collects the observations noted inside the block (one transaction attempt)."""
    pending: list[Observation] = []
    token = _pending.set(pending)
    try:
        yield pending
    finally:
        _pending.reset(token)
