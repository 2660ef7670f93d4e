"""What closing a run sets off, in the transaction that closes it.

A child's run is created in the transaction that records
StartChildWorkflowExecutionInitiated in its parent, with a child_executions row
linking the two. Whatever closes a run (a close command, terminate, a timeout)
calls :meth:`RunClose._after_run_closed` in the same transaction, which starts the
next run of a continue-as-new or of a retry, applies the run's parent close policy
to its own pending children, and delivers the child's outcome to its parent and
deletes the link: a crash can neither lose nor repeat any of it (rule 1 of
docs/architecture.md, across runs).
"""

from __future__ import annotations

import json
from typing import Any

from flowforge.api.schema import (
    EventType,
    ExecutionStatus,
    ParentClosePolicy,
    RetryInitiator,
    RetryState,
    WorkflowTimeoutType,
    failure_from_json,
    payloads_from_json,
)
from flowforge.api.v1 import common_pb2
from flowforge.server.history.cron import cron_delay_s
from flowforge.server.history.data import TaskPriority
from flowforge.server.history.mutation import _Mutation, new_run
from flowforge.server.history.run_ids import time_ordered_run_id
from flowforge.server.history.visibility_writes import VisibilityWrites, visibility_attributes
from flowforge.server.retries import StoredRetryPolicy, decide_retry
from flowforge.server.stores.base import ChildExecutionRow, ExecutionRow, Transaction

__all__ = ["RunClose"]

# A closing child's event, and the event (with the attributes it copies) its parent gets.
_CHILD_OUTCOMES: dict[str, tuple[EventType, tuple[str, ...]]] = {
    EventType.WORKFLOW_EXECUTION_COMPLETED: (EventType.CHILD_WORKFLOW_EXECUTION_COMPLETED, ("result",)),
    EventType.WORKFLOW_EXECUTION_FAILED: (EventType.CHILD_WORKFLOW_EXECUTION_FAILED, ("failure",)),
    EventType.WORKFLOW_EXECUTION_CANCELED: (EventType.CHILD_WORKFLOW_EXECUTION_CANCELED, ("details",)),
    EventType.WORKFLOW_EXECUTION_TERMINATED: (EventType.CHILD_WORKFLOW_EXECUTION_TERMINATED, ("reason",)),
    EventType.WORKFLOW_EXECUTION_TIMED_OUT: (EventType.CHILD_WORKFLOW_EXECUTION_TIMED_OUT, ("timeout_type",)),
}
# What every run of a continue-as-new chain keeps from the first one.
_CARRIED_START_ATTRIBUTES = (
    "parent_workflow_namespace",
    "parent_workflow_id",
    "parent_run_id",
    "parent_initiated_event_id",
    "original_execution_run_id",
    "first_execution_run_id",
    "retry_policy",
    "cron_schedule",
)


class RunClose(VisibilityWrites):
    """Continue-as-new, retries of runs, parent close policies and child outcomes."""

    async def _after_run_closed(self, m: _Mutation) -> bool:
        """The consequences of closing ``m``'s run, in its transaction (see above);
        whether they reached another run (one started, a parent, a child's close policy),
        which may add deadlines of its own."""
        row = m.row
        close_event = m.events[-1]
        attributes = json.loads(close_event.attributes)
        new_run_id: str | None = None
        retry_state: str | None = None
        # Only a run that goes on (continued, or retried) needs its start event: a
        # completing run, the common case, does not read it.
        if close_event.event_type == EventType.WORKFLOW_EXECUTION_CONTINUED_AS_NEW:
            new_run_id = await self._start_continued_run(m, await self._started_attributes_of(m), attributes)
        elif (
            close_event.event_type == EventType.WORKFLOW_EXECUTION_FAILED
            or attributes.get("timeout_type") == WorkflowTimeoutType.RUN
        ):
            new_run_id, retry_state = await self._retry_run(m, await self._started_attributes_of(m), attributes)
        link, children = await m.tx.get_lineage(row.namespace, row.run_id)
        for child in children:
            await m.tx.delete_child_execution(row.namespace, row.run_id, child.initiated_event_id)
            await self._apply_parent_close_policy(m.tx, child, m.now, parent=row)
        reached_others = new_run_id is not None or bool(children)
        if link is None:
            return reached_others
        if new_run_id is not None:
            await m.tx.move_child_execution(row.namespace, row.run_id, new_run_id)
            return True
        await m.tx.delete_child_execution(row.namespace, link.parent_run_id, link.initiated_event_id)
        parent = await m.tx.get_execution(row.namespace, link.parent_run_id)
        if parent is None or parent.status != ExecutionStatus.RUNNING:
            return reached_others
        outcome_type, outcome = _CHILD_OUTCOMES[close_event.event_type]
        pm = _Mutation(m.tx, parent, m.now)
        pm.deliver(
            [
                (
                    outcome_type,
                    {
                        "initiated_event_id": link.initiated_event_id,
                        "workflow_id": row.workflow_id,
                        "run_id": row.run_id,
                        "workflow_type": row.workflow_type,
                        **{key: attributes.get(key) for key in outcome},
                        **({"retry_state": retry_state} if retry_state else {}),
                    },
                )
            ]
        )
        await pm.save()
        return True

    @staticmethod
    async def _started_attributes_of(m: _Mutation) -> dict[str, Any]:
        """The attributes of the run's WorkflowExecutionStarted event (read once per mutation)."""
        if m.started_attributes is None:
            first = await m.tx.read_events(m.row.namespace, m.row.run_id, 0, 1)
            m.started_attributes = json.loads(first[0].attributes)
        return m.started_attributes

    async def _retry_run(self, m: _Mutation, started: dict[str, Any], closed: dict[str, Any]) -> tuple[str | None, str]:
        """Starts the next attempt of a failed (or run-timed-out) run that has a retry
        policy, after its backoff; returns (the new run id or None, the retry state)."""
        if "retry_policy" not in started:
            return None, RetryState.NON_RETRYABLE_FAILURE if "failure" in closed else RetryState.TIMEOUT
        attempt = int(started.get("attempt", 1))
        failure = (
            failure_from_json(closed["failure"])
            if "failure" in closed
            else common_pb2.Failure(message="workflow run timed out", type="TimeoutError")
        )
        decision = decide_retry(
            StoredRetryPolicy.from_json(started["retry_policy"]),
            attempt=attempt,
            failure=failure,
            now_us=m.now,
            schedule_to_close_deadline_us=started.get("workflow_execution_expiration_us"),
            rng=self._rng,
        )
        if decision.delay_s is None:
            return None, decision.retry_state
        row = m.row
        retry = {
            "new_execution_run_id": time_ordered_run_id(),
            "workflow_type": row.workflow_type,
            "task_queue": row.task_queue,
            "input": started["input"],
            "workflow_run_timeout": started["workflow_run_timeout"],
            "workflow_task_timeout": row.wft_timeout_s,
        }
        new_run_id = await self._start_continued_run(
            m,
            started,
            retry,
            extra={"attempt": attempt + 1, "initiator": RetryInitiator.RETRY},
            first_task_delay_s=decision.delay_s,
        )
        return new_run_id, decision.retry_state

    async def _start_continued_run(
        self,
        m: _Mutation,
        started: dict[str, Any],
        continued: dict[str, Any],
        *,
        extra: dict[str, Any] | None = None,
        first_task_delay_s: float = 0.0,
    ) -> str:
        """Starts the run a continue-as-new (or a retry) asked for: same workflow id,
        fresh history, the execution timeout still counted from the chain's first run."""
        row = m.row
        carried = {key: started[key] for key in _CARRIED_START_ATTRIBUTES if key in started}
        if "cron_schedule" in carried and not first_task_delay_s:
            # A cron execution's next run waits for the next matching time (cron.py).
            first_task_delay_s = cron_delay_s(carried["cron_schedule"], m.now)
        # Like Temporal, the new run keeps the memo and the search attributes as they are now (upserts included).
        search_attributes, memo = (await self._visibility_of(m.tx, row.namespace, [row.run_id]))[row.run_id]
        new = new_run(
            m.tx,
            m.now,
            namespace=row.namespace,
            workflow_id=row.workflow_id,
            workflow_type=continued["workflow_type"],
            task_queue=continued["task_queue"],
            input=payloads_from_json(continued["input"]),
            identity=started.get("identity", ""),
            execution_timeout_s=started.get("workflow_execution_timeout", 0.0),
            run_timeout_s=continued["workflow_run_timeout"],
            task_timeout_s=continued["workflow_task_timeout"],
            default_task_timeout_s=self.config.default_workflow_task_timeout_s,
            started={
                **carried,
                "continued_execution_run_id": row.run_id,
                # Cron on start: what the next run reads with get_last_completion_result / get_last_failure.
                **{key: continued[key] for key in ("last_completion_result", "last_failure") if key in continued},
                **visibility_attributes(search_attributes, memo),
                **(extra or {}),
            },
            run_id=continued["new_execution_run_id"],
            execution_expiration_us=started.get("workflow_execution_expiration_us"),
            first_task_delay_s=first_task_delay_s,
            priority=TaskPriority.of_run(row),
        )
        await new.save()
        values = await self._stored_values(m.tx, row.namespace, search_attributes)
        await self._write_visibility(m.tx, new.row, values, memo)
        return new.row.run_id

    async def _apply_parent_close_policy(
        self, tx: Transaction, child: ChildExecutionRow, now: int, *, parent: ExecutionRow
    ) -> None:
        if child.parent_close_policy == ParentClosePolicy.ABANDON:
            return
        reason = (
            f"parent {parent.workflow_id} closed ({parent.status}; parent close policy {child.parent_close_policy})"
        )
        if child.parent_close_policy == ParentClosePolicy.REQUEST_CANCEL:
            await self._request_cancel_run(tx, child.namespace, child.run_id, now, reason=reason)
            return
        row = await tx.get_execution(child.namespace, child.run_id)
        if row is None or row.status != ExecutionStatus.RUNNING:
            return
        cm = _Mutation(tx, row, now)
        cm.terminate(reason, "server")
        await cm.save()
        await self._after_run_closed(cm)

    @staticmethod
    async def _request_cancel_run(tx: Transaction, namespace: str, run_id: str, now: int, *, reason: str) -> None:
        """Delivers WorkflowExecutionCancelRequested (from the server) to a running run, once."""
        row = await tx.get_execution(namespace, run_id)
        if row is None or row.status != ExecutionStatus.RUNNING:
            return
        cm = _Mutation(tx, row, now)
        if cm.request_cancel(reason, "server"):
            await cm.save()
