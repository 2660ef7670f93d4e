"""When a folded workflow task applies (docs/worker-stream.md, "Folded workflow tasks").

A worker that completed an activity and holds the run's instance cached may run the
workflow task the completion schedules before it reports, and send both in one
report. The completion's transaction applies that task only when the run is as the
worker saw it; otherwise the fold is ignored (not an error) and the completion
schedules its workflow task as if none had been folded.
"""

from __future__ import annotations

import enum

from flowforge.api.schema import WorkflowTaskState
from flowforge.server.history.data import FoldedWorkflowTask
from flowforge.server.stores.base import ExecutionRow, HistoryEventRow, Transaction

__all__ = ["FOLD_STARTED_TIME_WINDOW_US", "FoldIgnored", "LastEvents", "why_fold_is_ignored"]

# Runs whose last event LastEvents keeps (one entry each, the oldest noted forgotten first).
_LAST_EVENTS_KEPT = 10_000

#: How far behind the server's clock a fold's started_time may be: the workflow time
#: its code ran at must not lag the time the server records it at by more.
FOLD_STARTED_TIME_WINDOW_US = 10_000_000


class FoldIgnored(enum.StrEnum):
    """Why a folded workflow task was not applied (the ``outcome`` label of its metric)."""

    PAUSED = "paused"
    """An operator holds the run: its workflow task waits for the unpause."""
    HISTORY_MOVED = "history_moved"
    """Events were appended after the one the worker's instance stopped at (a signal, a timer)."""
    WORKFLOW_TASK_PENDING = "workflow_task_pending"
    """A workflow task is already scheduled or running: the completion schedules none."""
    OTHER_QUEUE = "other_queue"
    """The completion's workflow task is not for the queue the worker named (or it named none)."""
    STARTED_TIME = "started_time"
    """started_time is before the run's last event, after the server's clock, or too old."""
    NO_WORKFLOW_CODE = "no_workflow_code"
    """A declarative DAG run: the server takes its steps, no worker does."""


class LastEvents:
    """The last event of the runs whose workflow tasks this server completed lately,
    as committed: (event id, time) by run id. An event, once committed, never changes,
    so a fold whose ``last_event_id`` is the one kept for its run needs no read for
    its time; any other is read (another replica wrote it, or it was forgotten)."""

    def __init__(self, kept: int = _LAST_EVENTS_KEPT) -> None:
        self._kept = kept
        self._by_run: dict[str, tuple[int, int]] = {}

    def note(self, run_id: str, event: HistoryEventRow) -> None:
        """Keeps ``event``, committed as the run's last event (call only after the commit)."""
        self._by_run.pop(run_id, None)
        self._by_run[run_id] = (event.event_id, event.event_us)
        if len(self._by_run) > self._kept:
            del self._by_run[next(iter(self._by_run))]

    def time_of(self, run_id: str, event_id: int) -> int | None:
        """The time (µs) of the run's event ``event_id`` if it is the one kept, else None."""
        kept = self._by_run.get(run_id)
        return kept[1] if kept is not None and kept[0] == event_id else None


async def why_fold_is_ignored(
    tx: Transaction,
    row: ExecutionRow,
    fold: FoldedWorkflowTask,
    task_queue: str,
    now_us: int,
    last_events: LastEvents,
) -> FoldIgnored | None:
    """Why ``fold`` cannot be applied to the run ``row`` (running, since its activity's
    lease holds; locked in ``tx``) as its activity's completion finds it now, or None
    if it applies: recording the completion must schedule a new workflow task on
    ``task_queue`` at the very history position the worker ran from. Reads only the
    run's last event (for its time), only when everything else holds and
    ``last_events`` does not know it."""
    if row.dag_digest is not None:
        return FoldIgnored.NO_WORKFLOW_CODE
    if row.paused:
        return FoldIgnored.PAUSED
    if row.next_event_id - 1 != fold.last_event_id:
        return FoldIgnored.HISTORY_MOVED
    if row.wft_state != WorkflowTaskState.NONE:
        return FoldIgnored.WORKFLOW_TASK_PENDING
    if task_queue != row.task_queue:
        return FoldIgnored.OTHER_QUEUE
    if not now_us - FOLD_STARTED_TIME_WINDOW_US <= fold.started_us <= now_us:
        return FoldIgnored.STARTED_TIME
    last_us = last_events.time_of(row.run_id, fold.last_event_id)
    if last_us is None:
        (last,) = await tx.read_events(row.namespace, row.run_id, after_event_id=fold.last_event_id - 1, limit=1)
        last_us = last.event_us
    if fold.started_us < last_us:
        return FoldIgnored.STARTED_TIME
    return None
