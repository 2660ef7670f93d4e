"""Per-execution limits (Temporal's, with Temporal's defaults), checked where a run grows.

- **History**: past ``warn_history_events`` events or ``warn_history_bytes`` bytes a
  warning is logged (once per run and replica); past ``max_history_events`` or
  ``max_history_bytes`` the next workflow task completion terminates the run with a
  reason naming the limit, instead of letting it grow until its workflow task can no
  longer be handed out (a wedged run). The byte size is measured once per
  :attr:`ExecutionLimits.size_check_every` events (one read of the run's history), so a
  run may pass the byte limit by that many events before it is closed.
- **Signals**: past ``max_signals`` signals a run refuses more (``RESOURCE_EXHAUSTED``).
- **Pending activities and children**: a workflow task completion that would leave more
  than ``max_pending_activities`` activities or ``max_pending_children`` children
  pending fails its workflow task (retried with backoff): it runs again once some
  have finished. Accepted work is delayed, never dropped.

Commands per completion are bounded in command_validation.py.
"""

from __future__ import annotations

import collections
import dataclasses
import logging
from collections.abc import Sequence

from flowforge.api.schema import EventType, TaskKind
from flowforge.api.v1 import command_pb2
from flowforge.server.errors import ResourceExhausted
from flowforge.server.stores.base import ExecutionRow, HistoryEventRow, Transaction

__all__ = ["ExecutionLimits", "LimitBreach", "check_completion", "check_signal"]

log = logging.getLogger("flowforge.server.limits")

_MIB = 1024 * 1024
# Runs warned about in this process (bounded: the oldest are forgotten).
_WARNED: collections.OrderedDict[str, None] = collections.OrderedDict()
_MAX_WARNED = 10_000


@dataclasses.dataclass(frozen=True)
class ExecutionLimits:
    """Per-execution limits; the defaults are Temporal's."""

    max_history_events: int = 51_200
    warn_history_events: int = 10_240
    max_history_bytes: int = 50 * _MIB
    warn_history_bytes: int = 10 * _MIB
    max_signals: int = 10_000
    max_pending_activities: int = 2_000
    max_pending_children: int = 2_000
    size_check_every: int = 100
    """The history's byte size is read when a completion crosses a multiple of this many events."""


@dataclasses.dataclass(frozen=True)
class LimitBreach:
    """A limit a completion would pass: ``fatal`` ones close the run, others fail its workflow task."""

    message: str
    fatal: bool


def _warn_once(row: ExecutionRow, what: str) -> None:
    if row.run_id in _WARNED:
        return
    _WARNED[row.run_id] = None
    if len(_WARNED) > _MAX_WARNED:
        _WARNED.popitem(last=False)
    log.warning(
        "run %s of workflow %r in namespace %r is large (%s); it is terminated at the history limit",
        row.run_id,
        row.workflow_id,
        row.namespace,
        what,
    )


async def _history_breach(
    tx: Transaction,
    row: ExecutionRow,
    started_event_id: int,
    added: int,
    unsaved: Sequence[HistoryEventRow],
    limits: ExecutionLimits,
) -> str | None:
    events = row.next_event_id - 1 + added
    if events > limits.max_history_events:
        return f"its history would have {events} events, over the limit of {limits.max_history_events} per run"
    if events > limits.warn_history_events:
        _warn_once(row, f"{events} events")
    if events // limits.size_check_every == started_event_id // limits.size_check_every:
        return None
    _count, size = await tx.history_size(row.namespace, row.run_id)
    size += sum(len(event.attributes) for event in unsaved)
    if size > limits.max_history_bytes:
        return f"its history is {size} bytes, over the limit of {limits.max_history_bytes} per run"
    if size > limits.warn_history_bytes:
        _warn_once(row, f"{size} bytes of history")
    return None


async def check_completion(
    tx: Transaction,
    row: ExecutionRow,
    started_event_id: int,
    commands: Sequence[command_pb2.Command],
    limits: ExecutionLimits,
    unsaved: Sequence[HistoryEventRow] = (),
) -> LimitBreach | None:
    """What limit a workflow task completion of ``row`` would pass, if any (before it is applied).

    Args:
        started_event_id: The run's history length when the task started: the size is
            measured when the history crossed a multiple of ``size_check_every`` since.
        unsaved: Events the completion's transaction appended but has not written yet
            (a folded task's activity events): counted with the stored ones.
    """
    # The completion adds WorkflowTaskCompleted and about one event per command.
    history = await _history_breach(tx, row, started_event_id, len(commands) + 1, unsaved, limits)
    if history is not None:
        return LimitBreach(
            f"the run was terminated because {history}; continue as new before a run's history grows this large",
            fatal=True,
        )
    kinds = collections.Counter(command.WhichOneof("attributes") for command in commands)
    # Each pending activity or child has an event in the history: a run with fewer
    # events than a limit cannot be at it, and needs no count (the hot path).
    events = row.next_event_id - 1
    if kinds["schedule_activity_task"] and events + kinds["schedule_activity_task"] > limits.max_pending_activities:
        pending = await tx.count_run_tasks(row.run_id, TaskKind.ACTIVITY, limits.max_pending_activities + 1)
        if pending + kinds["schedule_activity_task"] > limits.max_pending_activities:
            return LimitBreach(
                f"the run would have {pending + kinds['schedule_activity_task']} pending activities, over the"
                f" limit of {limits.max_pending_activities}; the workflow task is retried",
                fatal=False,
            )
    if (
        kinds["start_child_workflow_execution"]
        and events + kinds["start_child_workflow_execution"] > limits.max_pending_children
    ):
        children = await tx.count_child_executions(row.namespace, row.run_id, limits.max_pending_children + 1)
        if children + kinds["start_child_workflow_execution"] > limits.max_pending_children:
            return LimitBreach(
                f"the run would have {children + kinds['start_child_workflow_execution']} pending child"
                f" workflows, over the limit of {limits.max_pending_children}; the workflow task is retried",
                fatal=False,
            )
    return None


async def check_signal(tx: Transaction, row: ExecutionRow, limits: ExecutionLimits) -> None:
    """RESOURCE_EXHAUSTED if ``row`` may take no more signals (or no more history)."""
    events = row.next_event_id - 1
    if events >= limits.max_history_events:
        raise ResourceExhausted(
            f"run {row.run_id} has {events} history events, the limit per run; it takes no more signals"
        )
    if events < limits.max_signals:
        return  # fewer events than the limit: fewer signals too, no need to count
    signals = await tx.count_run_events(row.namespace, row.run_id, EventType.WORKFLOW_EXECUTION_SIGNALED)
    if signals >= limits.max_signals:
        raise ResourceExhausted(
            f"run {row.run_id} has received {signals} signals, the limit per execution ({limits.max_signals});"
            " have the workflow continue as new to take more"
        )
