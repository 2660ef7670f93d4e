"""Pause and unpause a run (docs/operations.md).

While a run is paused nothing of it is dispatched: the tasks that wait in their queues
(its workflow task, activities not started, retries) are *held* — their visible time is
:data:`~flowforge.server.history.mutation.HELD_US`, so no poll leases them — and every
task the run gets meanwhile is created held (``new_task_row``). Activities already running
finish and report; their outcomes, signals and fired timers are appended to history and wait
there with the held workflow task. Unpause makes the held tasks visible at once: the workflow
task then delivers everything that arrived, in order. Both are recorded in history
(``WorkflowExecutionPaused`` / ``WorkflowExecutionUnpaused``, not delivered to workflow code)
and on the execution row (``paused``, ``pause_note``: who, why, since when).
"""

from __future__ import annotations

import json
from typing import Any

from flowforge.api.schema import (
    EventType,
    TaskKind,
    TaskState,
    WorkflowExecutionPausedAttributes,
    WorkflowExecutionUnpausedAttributes,
    dumps,
)
from flowforge.server.errors import FailedPrecondition, NotFound
from flowforge.server.history.executions import Executions
from flowforge.server.history.mutation import HELD_US, _Mutation, queue_channel, us
from flowforge.server.stores.base import ExecutionRow, TaskRow, Transaction

__all__ = ["PauseNote", "Pauses", "activity_paused"]

PauseNote = dict[str, Any]
"""``{"identity", "reason", "since_us"}`` of a paused run."""


class Pauses(Executions):
    """Holding a run's dispatch, and releasing it."""

    async def pause(
        self,
        namespace: str,
        workflow_id: str,
        run_id: str,
        *,
        reason: str,
        identity: str,
        tx: Transaction | None = None,
    ) -> None:
        """Holds the run: no workflow task and no new activity task of it is dispatched.
        Joins ``tx`` when given (a batch)."""
        await self.ensure_namespace(namespace)

        async def body(tx: Transaction) -> None:
            row = await self._running_execution(tx, namespace, workflow_id, run_id)
            m = _Mutation(tx, await self._locked(tx, row.namespace, row.run_id), self.clock.now_us())
            if m.row.paused:
                raise FailedPrecondition(f"workflow {m.row.workflow_id!r} run {m.row.run_id} is already paused")
            m.row.paused = 1
            m.row.pause_note = dumps({"identity": identity, "reason": reason, "since_us": m.now})
            paused: WorkflowExecutionPausedAttributes = {"reason": reason, "identity": identity}
            m.record([(EventType.WORKFLOW_EXECUTION_PAUSED, paused)])
            for task in await tx.list_run_tasks(row.namespace, row.run_id):
                if task.state == TaskState.PENDING:
                    task.visible_us, task.pending_deadline_us = HELD_US, None
                    await tx.update_task(task)
            await m.save()

        await (body(tx) if tx is not None else self._transaction(body))

    async def unpause(self, namespace: str, workflow_id: str, run_id: str, *, reason: str, identity: str) -> None:
        """Releases the run's held tasks; it goes on exactly where it was."""
        await self.ensure_namespace(namespace)

        async def body(tx: Transaction) -> None:
            row = await self._running_execution(tx, namespace, workflow_id, run_id)
            m = _Mutation(tx, await self._locked(tx, row.namespace, row.run_id), self.clock.now_us())
            if not m.row.paused:
                raise FailedPrecondition(f"workflow {m.row.workflow_id!r} run {m.row.run_id} is not paused")
            m.row.paused = 0
            m.row.pause_note = None
            unpaused: WorkflowExecutionUnpausedAttributes = {"reason": reason, "identity": identity}
            m.record([(EventType.WORKFLOW_EXECUTION_UNPAUSED, unpaused)])
            for task in await tx.list_run_tasks(row.namespace, row.run_id):
                if task.state == TaskState.PENDING and task.visible_us >= HELD_US and not activity_paused(task):
                    task.visible_us = m.now
                    if task.kind == TaskKind.ACTIVITY:
                        task.pending_deadline_us = _pending_deadline(
                            task.schedule_to_close_deadline_us, task.options, m.now
                        )
                    await tx.update_task(task)
                    tx.notify_after_commit(queue_channel(task.namespace, task.kind, task.task_queue))
            await m.save()

        await self._transaction(body)

    async def pause_activity(
        self, namespace: str, workflow_id: str, run_id: str, activity_id: str, *, reason: str, identity: str
    ) -> None:
        """Holds one pending activity: a running attempt finishes, no further attempt starts."""
        await self._hold_activity(namespace, workflow_id, run_id, activity_id, {"identity": identity, "reason": reason})

    async def unpause_activity(self, namespace: str, workflow_id: str, run_id: str, activity_id: str) -> None:
        """Releases a paused activity (its next attempt is dispatched now, unless the run is paused)."""
        await self._hold_activity(namespace, workflow_id, run_id, activity_id, None)

    async def _hold_activity(
        self, namespace: str, workflow_id: str, run_id: str, activity_id: str, note: dict[str, Any] | None
    ) -> None:
        await self.ensure_namespace(namespace)

        async def body(tx: Transaction) -> None:
            row = await self._running_execution(tx, namespace, workflow_id, run_id)
            run = await self._locked(tx, row.namespace, row.run_id)
            tasks = await tx.get_activity_tasks(run.run_id, [activity_id])
            if not tasks:
                raise NotFound(f"run {run.run_id} has no pending activity {activity_id!r} (it ended, or is parked)")
            task, now = tasks[0], self.clock.now_us()
            options = json.loads(task.options)
            if (note is not None) == ("paused" in options):
                state = "already paused" if note is not None else "not paused"
                raise FailedPrecondition(f"activity {activity_id!r} of run {run.run_id} is {state}")
            if note is not None:
                options["paused"] = {**note, "since_us": now}
                if task.state == TaskState.PENDING:
                    task.visible_us, task.pending_deadline_us = HELD_US, None
            else:
                del options["paused"]
                if task.state == TaskState.PENDING and not run.paused:
                    task.visible_us = now
                    task.pending_deadline_us = _pending_deadline(task.schedule_to_close_deadline_us, task.options, now)
                    tx.notify_after_commit(queue_channel(task.namespace, task.kind, task.task_queue))
            task.options = dumps(options)
            await tx.update_task(task)

        await self._transaction(body)

    @staticmethod
    async def _locked(tx: Transaction, namespace: str, run_id: str) -> ExecutionRow:
        row = await tx.get_execution(namespace, run_id, for_update=True)
        assert row is not None
        return row


def activity_paused(task: TaskRow) -> bool:
    """Whether an operator paused this activity (``options.paused``: who, why, since when)."""
    return task.kind == TaskKind.ACTIVITY and "paused" in json.loads(task.options)


def _pending_deadline(schedule_to_close_deadline_us: int | None, options: str, now: int) -> int | None:
    """A released activity task's deadline while it waits: schedule-to-start counts from now."""
    schedule_to_start = json.loads(options)["schedule_to_start_timeout"]
    deadlines = [schedule_to_close_deadline_us, now + us(schedule_to_start) if schedule_to_start else None]
    return min((d for d in deadlines if d is not None), default=None)
