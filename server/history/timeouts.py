"""Timeouts and timers: what the timekeeper (server/timers.py) calls when a
deadline passes: a durable timer is due, a lease or a pending task expired, a
run reached its execution or run timeout."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

from flowforge.api.schema import (
    EventType,
    ExecutionStatus,
    RetryState,
    TaskKind,
    TaskState,
    TimeoutType,
    WorkflowTimeoutType,
)
from flowforge.api.v1 import common_pb2
from flowforge.server.history.activities import ActivityTasks
from flowforge.server.history.mutation import _Mutation, us
from flowforge.server.observations import TimerFired, observe
from flowforge.server.stores.base import TaskRow, TimerRow, Transaction

__all__ = ["Timeouts"]

# Mutations a timer batch builds between two turns of the event loop.
_YIELD_EVERY = 250


class Timeouts(ActivityTasks):
    """Deadlines turned into events, each in one transaction that claims its row."""

    async def expire_task(self, task_id: int) -> None:
        """Handles one task whose lease or pending deadline passed (called by the reaper)."""

        async def body(tx: Transaction) -> None:
            task = await tx.get_task(task_id, for_update=True)
            now = self.clock.now_us()
            if task is None:
                return
            lease_expired = task.state == TaskState.LEASED and (task.lease_expires_us or 0) <= now
            pending_expired = (
                task.state == TaskState.PENDING
                and task.pending_deadline_us is not None
                and task.pending_deadline_us <= now
            )
            if not (lease_expired or pending_expired):
                return  # another replica or a report got there first
            if task.kind == TaskKind.WORKFLOW:
                row = await self._execution_of(tx, task)
                m = _Mutation(tx, row, now)
                await tx.delete_task(task.task_id or 0)
                m.time_out_started_workflow_task(task)
                await m.save()
                return
            timeout_type, final = _which_timeout(task, json.loads(task.options), now, lease_expired)
            failure = common_pb2.Failure(
                message=f"activity {timeout_type.lower().replace('_', '-')} timeout",
                type="TimeoutError",
                timeout_type=f"TIMEOUT_TYPE_{timeout_type}",
                source="server",
            )
            if task.heartbeat_details:
                failure.details.ParseFromString(task.heartbeat_details)
            await self._activity_attempt_failed(
                tx, task, failure, "", timed_out=True, final_retry_state=RetryState.TIMEOUT if final else None
            )

        await self._transaction(body)

    async def fire_due_timers(
        self,
        limit: int,
        *,
        lead_us: int = 0,
        window_us: int | None = None,
        wait_until: Callable[[int], Awaitable[None]] | None = None,
    ) -> int:
        """Fires up to ``limit`` timers due within ``lead_us`` from now in one
        transaction; returns how many.

        The batch is claimed by deleting its rows (skipping rows another replica's
        timekeeper holds), so each timer fires exactly once however many replicas
        run; its executions are read (and locked) with one statement, in (namespace,
        run id) order, so two batches never wait on each other in a cycle, and a
        concurrent report waits rather than conflicts. Their events, workflow tasks
        and execution rows are written a batch at a time (:meth:`_Mutation.save_all`).

        A batch claimed ahead of its due times (``lead_us``; ``window_us`` bounds how
        far apart they are) is written at once, stamped with its last due time, and
        committed when ``wait_until`` returns at that time: the work is done before
        the timers are due, and the commit at their due time is all that is left.
        Nothing is visible before that commit, so no timer fires early. A cancelled
        batch rolls back and its timers stay due.
        """

        async def body(tx: Transaction) -> int:
            now = self.clock.now_us()
            claimed = await tx.claim_due_timers(now + lead_us, limit, window_us, now)
            if not claimed:
                return 0
            timers_of_run: dict[tuple[str, str], list[TimerRow]] = {}
            for timer in sorted(claimed, key=lambda t: (t.fire_us, t.started_event_id)):
                timers_of_run.setdefault((timer.namespace, timer.run_id), []).append(timer)
            rows = await tx.lock_executions(list(timers_of_run))
            assert len(rows) == len(timers_of_run), "timers are deleted with their run"
            # One mutation per execution: its timers of the batch fire in due order,
            # with gapless event ids, through the same rules as any other delivery.
            fire_us = max(self.clock.now_us(), max(timer.fire_us for timer in claimed))
            mutations = []
            for index, row in enumerate(rows, 1):
                if index % _YIELD_EVERY == 0:
                    # Building thousands of mutations is ~0.1 s of CPU: let a batch written
                    # ahead of time commit at its due time meanwhile, not after this one.
                    await asyncio.sleep(0)
                assert row.status == ExecutionStatus.RUNNING, "timers are deleted when their run closes"
                m = _Mutation(tx, row, fire_us)
                m.deliver(
                    [
                        (
                            EventType.TIMER_FIRED,
                            {"timer_id": timer.timer_id, "started_event_id": timer.started_event_id},
                        )
                        for timer in timers_of_run[(row.namespace, row.run_id)]
                    ]
                )
                mutations.append(m)
            await _Mutation.save_all(tx, mutations)
            if fire_us > self.clock.now_us():
                assert wait_until is not None, "a batch claimed ahead of time needs wait_until"
                # Written now, not by the COMMIT at due (a store may hold writes back).
                await tx.send_writes()
                await wait_until(fire_us)
            now = self.clock.now_us()
            for timer in claimed:
                observe(TimerFired(max(0, now - timer.fire_us) / 1e6))
            return len(claimed)

        # Unshielded: a batch whose caller (the timekeeper) stops rolls back, and its
        # timers stay due; one waiting for its due time must not hold up shutdown.
        return await self._transaction(body, shielded=False)

    async def time_out_execution(self, namespace: str, run_id: str) -> None:
        """Closes a run whose execution or run timeout passed as TIMED_OUT."""

        async def body(tx: Transaction) -> None:
            row = await tx.get_execution(namespace, run_id)
            now = self.clock.now_us()
            if row is None or row.status != ExecutionStatus.RUNNING or row.deadline_us is None or row.deadline_us > now:
                return
            m = _Mutation(tx, row, now)
            m.abandon_started_workflow_task("workflow timed out")
            m.append(
                EventType.WORKFLOW_EXECUTION_TIMED_OUT,
                {"timeout_type": row.deadline_kind or WorkflowTimeoutType.EXECUTION},
            )
            m.close(ExecutionStatus.TIMED_OUT)
            await m.save()
            await self._after_run_closed(m)

        await self._transaction(body)


def _which_timeout(task: TaskRow, options: dict[str, Any], now: int, lease_expired: bool) -> tuple[TimeoutType, bool]:
    """(timeout type, whether it ends the activity without retry)."""
    if task.schedule_to_close_deadline_us is not None and task.schedule_to_close_deadline_us <= now:
        return TimeoutType.SCHEDULE_TO_CLOSE, True
    if not lease_expired:
        return TimeoutType.SCHEDULE_TO_START, True
    assert task.started_us is not None
    if task.started_us + us(options["start_to_close_timeout"]) <= now:
        return TimeoutType.START_TO_CLOSE, False
    return TimeoutType.HEARTBEAT, False
