"""Activity tasks: lease, heartbeat, and the outcomes a worker reports (rules 3-5
of docs/architecture.md): an outcome deletes the task row in the transaction
that records it, and retries are decided here from the policy recorded when the
activity was scheduled."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from flowforge.api.schema import EventType, RetryState, TaskKind, TaskState, dumps, failure_json, payloads_json
from flowforge.api.v1 import common_pb2
from flowforge.server.errors import FailedPrecondition, InvalidArgument
from flowforge.server.history.data import ActivityCompletion, FoldedWorkflowTask, LeasedActivityTask
from flowforge.server.history.dead_letters import PARKED_RETRY_STATES, attempt_base, park
from flowforge.server.history.folds import why_fold_is_ignored
from flowforge.server.history.mutation import (
    HELD_US,
    PREVIOUS_EVENT,
    Delivery,
    StartedWorkflowTask,
    _Mutation,
    activity_lease_expiry,
    queue_channel,
    us,
)
from flowforge.server.history.workflow_tasks import WorkflowTasks, _Completed
from flowforge.server.observations import ActivityAttemptEnded, TaskStarted, WorkflowTaskFolded, observe
from flowforge.server.retries import StoredRetryPolicy, decide_retry
from flowforge.server.stores.base import TaskRow, Transaction
from flowforge.server.stores.rows import ActivityAttemptRow
from flowforge.server.tokens import TaskToken

__all__ = ["ActivityTasks"]


class ActivityTasks(WorkflowTasks):
    """Activity tasks, from their lease to their outcome."""

    async def try_lease_activity_task(
        self, namespace: str, task_queue: str, identity: str
    ) -> LeasedActivityTask | None:
        """Leases the queue's next visible activity task in dispatch order (flow_control.py),
        or returns None. Touches only the task row: starting an activity writes no history."""

        async def body(tx: Transaction) -> TaskRow | None:
            if not await self.activity_slot_free(tx, namespace):
                return None  # the namespace's max_concurrent_activities: the task waits
            task = await self.next_dispatchable(tx, namespace, TaskKind.ACTIVITY, task_queue)
            if task is None:
                return None
            now = self.clock.now_us()
            observe(TaskStarted(namespace, task_queue, "activity", max(0, now - task.visible_us) / 1e6))
            task.state = TaskState.LEASED
            task.fencing_token += 1
            task.started_us = now
            task.last_heartbeat_us = None
            task.identity = identity
            task.lease_expires_us = activity_lease_expiry(task, json.loads(task.options), now)
            await tx.update_task(task)
            return task

        # Grouped with the reports and leases that arrive together (group_commit.py).
        task = await self._reports.run("", body, lease=lambda task: self.release_lease(self._sign(task)))
        if task is None:
            return None
        self.on_new_deadline(task.lease_expires_us or 0)
        return LeasedActivityTask(self._sign(task), task)

    async def release_lease(self, raw_token: bytes) -> None:
        """Hands back a task leased to a poll whose caller went away before the answer
        reached it. An activity task returns to its queue without using an attempt; a
        workflow task's started event is already written, so it times out at once."""
        token = self.signer.verify(raw_token, expected_kind=None)

        async def body(tx: Transaction) -> None:
            try:
                task = await self._leased_task(tx, token)
            except FailedPrecondition:
                return
            if task.kind == TaskKind.ACTIVITY:
                task.state = TaskState.PENDING
                task.lease_expires_us = None
                task.identity = ""
                await tx.update_task(task)
                await self.release_slots(tx, task.namespace, task.concurrency_key)
                await self.count_breaker_outcome(tx, task, None)  # a probe handed back may be taken again
                tx.notify_after_commit(queue_channel(task.namespace, task.kind, task.task_queue))
                return
            await self.time_out_leased_workflow_task(tx, task)

        await self._transaction(body)

    async def record_heartbeat(self, raw_token: bytes, namespace: str, details: common_pb2.Payloads) -> bool:
        """Extends a heartbeating activity's lease; returns whether cancellation was requested."""
        token = self._token(raw_token, namespace, TaskKind.ACTIVITY)
        self.check_payloads(details, "the heartbeat details")

        async def body(tx: Transaction) -> bool:
            task = await self._leased_task(tx, token)
            now = self.clock.now_us()
            task.heartbeat_details = details.SerializeToString()
            task.last_heartbeat_us = now
            task.lease_expires_us = activity_lease_expiry(task, json.loads(task.options), now)
            await tx.update_task(task)
            return bool(task.cancel_requested)

        return await self._transaction(body)

    async def complete_activity_task(
        self,
        raw_token: bytes,
        namespace: str,
        result: common_pb2.Payloads,
        identity: str,
        eager_workflow_task_queue: str = "",
        eager_workflow_task_cached_event_id: int = 0,
        fold: FoldedWorkflowTask | None = None,
    ) -> ActivityCompletion:
        """Records the completion. With ``eager_workflow_task_queue``, the workflow
        task it schedules on that queue is leased to the caller in the same
        transaction and returned (one round trip instead of a completion and a poll),
        with the history from ``eager_workflow_task_cached_event_id`` on if the caller
        keeps the run cached through that event (sticky execution).

        With ``fold`` (that workflow task, already run by the caller), the task's
        completion is applied in the same transaction instead when the run is as the
        caller saw it (folds.py); otherwise the fold is ignored, and the task leased
        eagerly comes with the whole history (the caller's instance went past it)."""
        token = self._token(raw_token, namespace, TaskKind.ACTIVITY)
        self.check_payloads(result, "the activity result")
        if fold is not None:
            try:
                self._validator.validate(fold.completion.commands)
            except InvalidArgument as error:
                raise InvalidArgument(f"folded_workflow_task.completion: {error.message}") from None
        return await self._record_activity_outcome(
            token,
            identity,
            EventType.ACTIVITY_TASK_COMPLETED,
            {"result": payloads_json(result), "identity": identity},
            eager_workflow_task_queue,
            eager_workflow_task_cached_event_id,
            fold,
        )

    async def fail_activity_task(
        self, raw_token: bytes, namespace: str, failure: common_pb2.Failure, identity: str
    ) -> None:
        """Records a failed attempt: retried per the activity's policy, or its final failure."""
        token = self._token(raw_token, namespace, TaskKind.ACTIVITY)
        self.check_failure(failure, "the activity failure")

        async def body(tx: Transaction) -> None:
            task = await self._leased_task(tx, token)
            await self._activity_attempt_failed(tx, task, failure, identity, timed_out=False)

        await self._transaction(body)

    async def cancel_activity_task(
        self, raw_token: bytes, namespace: str, details: common_pb2.Payloads, identity: str
    ) -> None:
        """Records that the activity accepted its cancellation."""
        token = self._token(raw_token, namespace, TaskKind.ACTIVITY)
        self.check_payloads(details, "the cancellation details")
        await self._record_activity_outcome(
            token, identity, EventType.ACTIVITY_TASK_CANCELED, {"details": payloads_json(details), "identity": identity}
        )

    async def _record_activity_outcome(
        self,
        token: TaskToken,
        identity: str,
        outcome_type: EventType,
        attributes: dict[str, Any],
        eager_workflow_task_queue: str = "",
        cached_event_id: int = 0,
        fold: FoldedWorkflowTask | None = None,
    ) -> ActivityCompletion:
        """Ends the leased activity: its task row goes, Started + the outcome are
        delivered; applies the folded workflow task if it applies, else returns the
        workflow task leased eagerly, if asked and scheduled."""
        # An ignored fold ran the caller's instance past the history it would be handed.
        handed_from = 0 if fold is not None else cached_event_id

        async def body(tx: Transaction) -> StartedWorkflowTask | _Completed | None:
            task = await self._leased_task(tx, token)
            row = await self._execution_of(tx, task)
            now = self.clock.now_us()
            ignored = None
            if fold is not None:
                ignored = await why_fold_is_ignored(tx, row, fold, eager_workflow_task_queue, now, self.last_events)
                observe(WorkflowTaskFolded(row.namespace, ignored or "applied"))
            # A folded task's events up to its WorkflowTaskStarted are at the time its code ran at.
            m = _Mutation(tx, row, fold.started_us if fold is not None and ignored is None else now)
            await tx.delete_task(task.task_id or 0)
            await self.release_slots(tx, task.namespace, task.concurrency_key)
            outcome = "completed" if outcome_type == EventType.ACTIVITY_TASK_COMPLETED else "canceled"
            await self.count_breaker_outcome(tx, task, True if outcome == "completed" else None)
            observe(ActivityAttemptEnded(task.namespace, task.activity_type or "", outcome))
            await _record_attempt(tx, task, identity, outcome, None, now)
            m.deliver(
                [
                    (EventType.ACTIVITY_TASK_STARTED, _started_attributes(task, identity), task.started_us or m.now),
                    (
                        outcome_type,
                        {
                            "scheduled_event_id": task.scheduled_event_id,
                            "started_event_id": PREVIOUS_EVENT,
                            **attributes,
                        },
                    ),
                ]
            )
            eager = m.new_workflow_task(eager_workflow_task_queue)
            started = m.start_workflow_task(eager, identity) if eager is not None else None
            if fold is not None and ignored is None:
                assert eager is not None and started is not None, "why_fold_is_ignored saw it scheduled"
                m.new_tasks.remove(eager)  # completed in this transaction: its row is never written
                m.now = now
                return await self.apply_workflow_task_completion(m, eager, fold.completion)
            if started is not None:
                await self.read_history_gap(tx, started, handed_from)
            await m.save()
            return started

        outcome = await self._reports.run(token.run_id, body)
        if isinstance(outcome, _Completed):
            assert fold is not None
            return ActivityCompletion(
                folded=await self.workflow_task_completion(outcome, fold.completion.cached_event_id)
            )
        if outcome is None:
            return ActivityCompletion()
        return ActivityCompletion(workflow_task=await self._hand_out_workflow_task(outcome, handed_from))

    async def _activity_attempt_failed(
        self,
        tx: Transaction,
        task: TaskRow,
        failure: common_pb2.Failure,
        identity: str,
        *,
        timed_out: bool,
        final_retry_state: str | None = None,
    ) -> None:
        """Retries the activity per its policy, or records its final failure."""
        now = self.clock.now_us()
        observe(ActivityAttemptEnded(task.namespace, task.activity_type or "", _attempt_outcome(failure, timed_out)))
        # A leased task holds a slot of its concurrency key until this transaction.
        freed_key = task.concurrency_key if task.state == TaskState.LEASED else None
        if task.state == TaskState.LEASED:
            outcome_name = "timed_out" if timed_out else "failed"
            await _record_attempt(tx, task, identity, outcome_name, failure_json(failure), now)
            benign = _attempt_outcome(failure, timed_out) == "failed_benign"
            await self.count_breaker_outcome(tx, task, None if benign else False)
        options = json.loads(task.options)
        decision = None
        if final_retry_state is None:
            decision = decide_retry(
                StoredRetryPolicy.from_json(options["retry_policy"]),
                attempt=task.attempt - attempt_base(options),
                failure=failure,
                now_us=now,
                schedule_to_close_deadline_us=task.schedule_to_close_deadline_us,
                rng=self._rng,
            )
            if task.cancel_requested and decision.delay_s is not None:
                decision = dataclasses.replace(decision, delay_s=None, retry_state=RetryState.CANCEL_REQUESTED)
        if decision is not None and decision.delay_s is not None:
            _schedule_retry(task, failure, options, now, decision.delay_s)
            run = await tx.get_execution(task.namespace, task.run_id)
            if (run is not None and run.paused) or "paused" in options:  # the retry waits for the unpause (pauses.py)
                task.visible_us, task.pending_deadline_us = HELD_US, None
            await tx.update_task(task)
            await self.release_slots(tx, task.namespace, freed_key)
            # Pollers re-check on their own within a second; no wake-up needed now.
            return
        row = await self._execution_of(tx, task)
        m = _Mutation(tx, row, now)
        await tx.delete_task(task.task_id or 0)
        await self.release_slots(tx, task.namespace, freed_key)
        retry_state = final_retry_state or (decision.retry_state if decision else RetryState.TIMEOUT)
        started: Delivery | None = None
        if task.state == TaskState.LEASED:
            started = (EventType.ACTIVITY_TASK_STARTED, _started_attributes(task, identity), task.started_us or now)
        if options.get("dead_letter") and retry_state in PARKED_RETRY_STATES and not task.cancel_requested:
            await tx.insert_dead_letter(park(m, task, failure_json(failure), retry_state, started, identity))
            await m.save()
            return
        outcome: dict[str, Any] = {
            "scheduled_event_id": task.scheduled_event_id,
            "failure": failure_json(failure),
            "retry_state": retry_state,
        }
        events: list[Delivery] = []
        if started is not None:
            events.append(started)
            outcome["started_event_id"] = PREVIOUS_EVENT
        else:
            outcome["started_event_id"] = 0
        if not timed_out:
            outcome["identity"] = identity
        events.append((EventType.ACTIVITY_TASK_TIMED_OUT if timed_out else EventType.ACTIVITY_TASK_FAILED, outcome))
        m.deliver(events)
        await m.save()


def _attempt_outcome(failure: common_pb2.Failure, timed_out: bool) -> str:
    """How an attempt that did not complete is counted: benign failures apart, so they raise no alert."""
    if timed_out:
        return "timed_out"
    return "failed_benign" if failure.category == common_pb2.APPLICATION_ERROR_CATEGORY_BENIGN else "failed"


async def _record_attempt(
    tx: Transaction, task: TaskRow, identity: str, outcome: str, failure: dict[str, Any] | None, now: int
) -> None:
    """Keeps the ended attempt on record (``activity_attempts``), in the transaction of its outcome."""
    await tx.insert_activity_attempt(
        ActivityAttemptRow(
            namespace=task.namespace,
            run_id=task.run_id,
            scheduled_event_id=task.scheduled_event_id,
            attempt=task.attempt,
            activity_id=task.activity_id or "",
            activity_type=task.activity_type or "",
            identity=identity or task.identity,
            started_us=task.started_us,
            ended_us=now,
            outcome=outcome,
            failure=dumps(failure) if failure is not None else None,
        )
    )


def _started_attributes(task: TaskRow, identity: str) -> dict[str, Any]:
    """The ActivityTaskStarted event of the attempt that ends (written only with its outcome)."""
    attributes: dict[str, Any] = {
        "scheduled_event_id": task.scheduled_event_id,
        "attempt": task.attempt,
        "identity": identity or task.identity,
        "retry_delays": json.loads(task.retry_delays),
    }
    if task.last_failure:
        attributes["last_failure"] = json.loads(task.last_failure)
    return attributes


def _schedule_retry(
    task: TaskRow, failure: common_pb2.Failure, options: dict[str, Any], now: int, delay_s: float
) -> None:
    """Turns the task row into its next attempt, visible after ``delay_s``."""
    delays = [*json.loads(task.retry_delays), round(delay_s, 6)]
    task.state = TaskState.PENDING
    task.lease_expires_us = None
    task.attempt += 1
    task.visible_us = now + us(delay_s)
    task.last_failure = dumps(failure_json(failure))
    task.retry_delays = json.dumps(delays, separators=(",", ":"))
    task.identity = ""
    # Schedule-to-start limits every attempt's wait in the queue, counted
    # from when the retry becomes due (the first attempt's is set at scheduling).
    schedule_to_start_deadline = (
        task.visible_us + us(options["schedule_to_start_timeout"]) if options["schedule_to_start_timeout"] else None
    )
    task.pending_deadline_us = min(
        (d for d in (task.schedule_to_close_deadline_us, schedule_to_start_deadline) if d is not None),
        default=None,
    )
