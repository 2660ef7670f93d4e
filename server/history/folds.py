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
from flowforge.server.stores.base import ExecutionRow, Transaction

__all__ = ["FOLD_STARTED_TIME_WINDOW_US", "FoldIgnored", "why_fold_is_ignored"]

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


async def why_fold_is_ignored(
    tx: Transaction, row: ExecutionRow, fold: FoldedWorkflowTask, task_queue: str, now_us: int
) -> FoldIgnored | None:
    """Why ``fold`` cannot be applied to the run ``row`` (running, since its activity's
    lease holds; locked in ``tx``) as its activity's completion finds it now, or None
    if it applies: recording the completion must schedule a new workflow task on
    ``task_queue`` at the very history position the worker ran from. Reads only the
    run's last event (for its time), and only when everything else holds."""
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
    (last,) = await tx.read_events(row.namespace, row.run_id, after_event_id=fold.last_event_id - 1, limit=1)
    if fold.started_us < last.event_us:
        return FoldIgnored.STARTED_TIME
    return None
