"""The dead-letter store: activities parked after their retries, and the operator's
decision on each (docs/operations.md).

An activity scheduled with ``dead_letter`` that exhausts its retries, or fails
non-retryably, is *parked*: its task row goes, an ``ActivityTaskDeadLettered`` event
and a ``dead_letters`` row are written in the transaction that records the attempt
(rule 1), and the workflow is not woken: it keeps waiting, its timers, signals and
other branches go on. An operator then either *retries* it (the same activity of the
same run is scheduled again, its attempt count going on; ``ActivityTaskDeadLetterRetried``)
or *discards* it (it fails into the workflow as an ``ActivityTaskFailed`` whose failure
says it was discarded, and why, with the original failure as its cause).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import uuid
from collections.abc import Callable
from typing import Any

from flowforge.api.schema import (
    ActivityTaskDeadLetterRetriedAttributes,
    ActivityTaskFailedAttributes,
    EventType,
    FailureJSON,
    RetryState,
    TaskState,
    dumps,
)
from flowforge.server.errors import NotFound
from flowforge.server.history.core import EngineCore
from flowforge.server.history.mutation import PREVIOUS_EVENT, Delivery, _Mutation, activity_task_row
from flowforge.server.stores.base import TaskRow, Transaction
from flowforge.server.stores.rows import ActivityAttemptRow, DeadLetterFilter, DeadLetterRow

__all__ = ["PARKED_RETRY_STATES", "DeadLetterPage", "DeadLetters", "attempt_base", "park"]

# Why an activity stopped retrying that parks it (a timeout of its schedule-to-close
# or a cancellation does not: retrying could not help).
PARKED_RETRY_STATES = frozenset({RetryState.NON_RETRYABLE_FAILURE, RetryState.MAXIMUM_ATTEMPTS_REACHED})
# Dead letters handled per page of a bulk retry or discard (each in its own transaction).
_BULK_PAGE = 100
# What a decision does to one dead letter, in its run's mutation.
_Decision = Callable[[_Mutation, DeadLetterRow, dict[str, Any]], None]
# The options key a fresh budget sets: attempts before it do not count against the policy.
_ATTEMPT_BASE = "attempt_base"


def attempt_base(options: dict[str, Any]) -> int:
    """How many attempts a fresh retry budget left behind (0 without one)."""
    return int(options.get(_ATTEMPT_BASE, 0))


def park(
    m: _Mutation, task: TaskRow, failure: dict[str, Any], retry_state: str, started: Delivery | None, identity: str
) -> DeadLetterRow:
    """Records the activity of ``task`` as parked in ``m`` (its Started event first, if
    it ran) and returns the dead-letter row to insert; the caller deletes the task row."""
    dead_letter_id = uuid.uuid4().hex
    events: list[Delivery] = [started] if started is not None else []
    parked: dict[str, Any] = {
        "scheduled_event_id": task.scheduled_event_id,
        "started_event_id": PREVIOUS_EVENT if started is not None else 0,
        "failure": failure,
        "retry_state": retry_state,
        "dead_letter_id": dead_letter_id,
    }
    if identity:
        parked["identity"] = identity
    events.append((EventType.ACTIVITY_TASK_DEAD_LETTERED, parked))
    m.record(events)
    return DeadLetterRow(
        id=dead_letter_id,
        namespace=task.namespace,
        run_id=task.run_id,
        workflow_id=task.workflow_id,
        workflow_type=task.workflow_type,
        activity_id=task.activity_id or "",
        activity_type=task.activity_type or "",
        task_queue=task.task_queue,
        scheduled_event_id=task.scheduled_event_id,
        attempt=task.attempt,
        failure=dumps(failure),
        error_type=str(failure.get("type", "")),
        input=task.input,
        options=task.options,
        retry_delays=task.retry_delays,
        dead_lettered_us=m.now,
    )


@dataclasses.dataclass
class DeadLetterPage:
    """Dead letters as listed, with the namespace's depth per activity type."""

    dead_letters: list[DeadLetterRow]
    depths: list[tuple[str, int]]


class DeadLetters(EngineCore):
    """Listing the dead-letter store, and retrying or discarding what it holds."""

    async def list_dead_letters(self, namespace: str, selection: DeadLetterFilter, limit: int) -> DeadLetterPage:
        """The dead letters ``selection`` matches, oldest first, and the namespace's depths."""
        await self.ensure_namespace(namespace)

        async def body(tx: Transaction) -> DeadLetterPage:
            rows = await tx.list_dead_letters(namespace, selection, limit)
            depths = [(activity_type, count) for _, activity_type, count in await tx.dead_letter_depths(namespace)]
            return DeadLetterPage(rows, depths)

        return await self.read(body)

    async def dead_letter_depths(self) -> list[tuple[str, str, int]]:
        """(namespace, activity_type, count) of every waiting dead letter: for the gauge."""
        return await self.read(lambda tx: tx.dead_letter_depths())

    async def activity_attempts(self, namespace: str, run_id: str) -> list[ActivityAttemptRow]:
        """Every ended attempt of the run's activities, in order (for describe())."""
        return await self.read(lambda tx: tx.list_activity_attempts(namespace, run_id))

    async def describe_dead_letter(
        self, namespace: str, dead_letter_id: str
    ) -> tuple[DeadLetterRow, list[ActivityAttemptRow]]:
        """The dead letter with every attempt of its activity; NOT_FOUND if it is not waiting."""
        await self.ensure_namespace(namespace)

        async def body(tx: Transaction) -> tuple[DeadLetterRow, list[ActivityAttemptRow]]:
            row = await tx.get_dead_letter(namespace, dead_letter_id)
            if row is None:
                raise _not_found(dead_letter_id)
            return row, await tx.list_activity_attempts(namespace, row.run_id, row.scheduled_event_id)

        return await self.read(body)

    async def retry_dead_letters(
        self,
        namespace: str,
        dead_letter_id: str,
        selection: DeadLetterFilter | None,
        *,
        reason: str,
        identity: str,
        fresh_budget: bool,
    ) -> list[str]:
        """Schedules the parked activity (or every one ``selection`` matches) again in
        its run; returns the ids retried."""
        details = {"reason": reason, "identity": identity, "fresh_budget": fresh_budget}
        return await self._decide(namespace, dead_letter_id, selection, self._retry, details)

    async def discard_dead_letters(
        self, namespace: str, dead_letter_id: str, selection: DeadLetterFilter | None, *, reason: str, identity: str
    ) -> list[str]:
        """Fails the parked activity (or every one ``selection`` matches) into its
        workflow; returns the ids discarded."""
        return await self._decide(
            namespace, dead_letter_id, selection, self._discard, {"reason": reason, "identity": identity}
        )

    # ------------------------------------------------------------------ one decision per transaction

    async def _decide(
        self,
        namespace: str,
        dead_letter_id: str,
        selection: DeadLetterFilter | None,
        apply: _Decision,
        details: dict[str, Any],
    ) -> list[str]:
        await self.ensure_namespace(namespace)
        if dead_letter_id:
            if not await self._decide_one(namespace, dead_letter_id, apply, details):
                raise _not_found(dead_letter_id)
            return [dead_letter_id]
        assert selection is not None
        # Only what waits now: an activity retried here and parked again is not met twice.
        before = self.clock.now_us() + 1
        if selection.dead_lettered_before_us is not None:
            before = min(before, selection.dead_lettered_before_us)
        selection = dataclasses.replace(selection, dead_lettered_before_us=before)
        decided: list[str] = []
        after: tuple[int, str] | None = None
        while True:
            page = await self.read(functools.partial(_page, namespace, selection, after))
            for row in page:
                if await self._decide_one(namespace, row.id, apply, details):
                    decided.append(row.id)
            if len(page) < _BULK_PAGE:
                return decided
            after = (page[-1].dead_lettered_us, page[-1].id)

    async def _decide_one(self, namespace: str, dead_letter_id: str, apply: _Decision, details: dict[str, Any]) -> bool:
        """Applies the decision to one dead letter; False if it was no longer waiting."""

        async def body(tx: Transaction) -> bool:
            # Not locked: the run is locked first, then the dead letter deleted (the
            # order a workflow task cancelling the activity takes), so the two never deadlock.
            row = await tx.get_dead_letter(namespace, dead_letter_id)
            if row is None:
                return False
            execution = await tx.get_execution(namespace, row.run_id, for_update=True)
            assert execution is not None, "a dead letter is deleted with its run's close"
            if not await tx.delete_dead_letter(row.id):
                return False
            m = _Mutation(tx, execution, self.clock.now_us())
            apply(m, row, details)
            await m.save()
            return True

        return await self._transaction(body)

    @staticmethod
    def _retry(m: _Mutation, row: DeadLetterRow, details: dict[str, Any]) -> None:
        """Schedules the activity again as its next attempt, visible now. Its
        schedule-to-close deadline starts over; a fresh budget also starts its
        maximum attempts over."""
        options = json.loads(row.options)
        options.pop("paused", None)  # a retry is an operator's decision to run it
        if details["fresh_budget"]:
            options[_ATTEMPT_BASE] = row.attempt
        task = activity_task_row(
            m.row,
            scheduled_event_id=row.scheduled_event_id,
            activity_id=row.activity_id,
            activity_type=row.activity_type,
            task_queue=row.task_queue,
            input=row.input,
            options=options,
            now=m.now,
            attempt=row.attempt + 1,
        )
        task.last_failure = row.failure
        task.retry_delays = row.retry_delays
        assert task.state == TaskState.PENDING
        m.new_tasks.append(task)
        retried: ActivityTaskDeadLetterRetriedAttributes = {
            "scheduled_event_id": row.scheduled_event_id,
            "dead_letter_id": row.id,
            "attempt": row.attempt + 1,
            "fresh_budget": bool(details["fresh_budget"]),
            "reason": details["reason"],
            "identity": details["identity"],
        }
        m.record([(EventType.ACTIVITY_TASK_DEAD_LETTER_RETRIED, retried)])

    @staticmethod
    def _discard(m: _Mutation, row: DeadLetterRow, details: dict[str, Any]) -> None:
        """Fails the activity into its workflow: an ActivityError whose cause says it
        was discarded, and why, caused in turn by the failure that parked it."""
        failure: FailureJSON = {
            "message": f"discarded from the dead-letter queue: {details['reason']}",
            "type": "DeadLetterDiscarded",
            "non_retryable": True,
            "source": "server",
            "cause": json.loads(row.failure),
        }
        failed: ActivityTaskFailedAttributes = {
            "scheduled_event_id": row.scheduled_event_id,
            "started_event_id": 0,
            "failure": failure,
            "retry_state": RetryState.NON_RETRYABLE_FAILURE,
            "identity": details["identity"],
        }
        m.deliver([(EventType.ACTIVITY_TASK_FAILED, failed)])


async def _page(
    namespace: str, selection: DeadLetterFilter, after: tuple[int, str] | None, tx: Transaction
) -> list[DeadLetterRow]:
    return await tx.list_dead_letters(namespace, selection, _BULK_PAGE, after=after)


def _not_found(dead_letter_id: str) -> NotFound:
    return NotFound(
        f"no dead letter {dead_letter_id!r} is waiting in this namespace (it was retried or discarded"
        " already, its run closed, or the id is wrong); `flowforge dlq list` shows what waits"
    )
