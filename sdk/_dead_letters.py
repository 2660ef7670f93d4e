"""The dead-letter calls of :class:`flowforge.client.Client` and what they return
(docs/operations.md): activities parked after their retries, retried or discarded."""

from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta
from typing import Any

from flowforge._rpc import WorkflowServiceClient
from flowforge._workflow_executions import ActivityAttempt, _timestamp_to_datetime
from flowforge.api import schema
from flowforge.api.v1 import dead_letters_pb2 as pb

__all__ = ["DeadLetter", "DeadLetterList"]


@dataclasses.dataclass(frozen=True)
class DeadLetter:
    """A parked activity.

    Attributes:
        id: What ``dlq show``, ``dlq retry`` and ``dlq discard`` take.
        workflow_id: Its workflow's id.
        run_id: Its run (still running: a run that closes drops its dead letters).
        workflow_type: Its workflow's type.
        activity_id: The activity's id within the run.
        activity_type: The activity's type.
        task_queue: Where its attempts run.
        attempt: The last attempt's number; a retry goes on from it.
        failure: The failure that parked it, as JSON (``message``, ``type``, ...).
        dead_lettered_time: When it was parked.
        scheduled_event_id: Its ActivityTaskScheduled event (the input is recorded there).
        attempts: Every attempt on record (:meth:`Client.describe_dead_letter` only).
    """

    id: str
    workflow_id: str
    run_id: str
    workflow_type: str
    activity_id: str
    activity_type: str
    task_queue: str
    attempt: int
    failure: dict[str, Any]
    dead_lettered_time: datetime | None
    scheduled_event_id: int
    attempts: list[ActivityAttempt]

    @classmethod
    def _from_proto(cls, proto: pb.DeadLetter) -> DeadLetter:
        return cls(
            id=proto.id,
            workflow_id=proto.workflow_id,
            run_id=proto.run_id,
            workflow_type=proto.workflow_type,
            activity_id=proto.activity_id,
            activity_type=proto.activity_type,
            task_queue=proto.task_queue,
            attempt=proto.attempt,
            failure=dict(schema.failure_json(proto.failure)),
            dead_lettered_time=_timestamp_to_datetime(proto.dead_lettered_time, proto.HasField("dead_lettered_time")),
            scheduled_event_id=proto.scheduled_event_id,
            attempts=[ActivityAttempt._from_proto(a) for a in proto.attempts],
        )


@dataclasses.dataclass(frozen=True)
class DeadLetterList:
    """What :meth:`Client.list_dead_letters` returns.

    Attributes:
        dead_letters: The ones the filter matched, oldest first.
        depths: The namespace's waiting dead letters per activity type (all of them).
    """

    dead_letters: list[DeadLetter]
    depths: dict[str, int]


class _DeadLetterCalls:
    """The dead-letter calls of :class:`flowforge.client.Client` (a base class of it).

    Filters: ``workflow_type``, ``activity_type``, ``error_type`` (the failure's type),
    ``workflow_id`` and ``older_than`` (parked at least that long ago); empty matches all.
    """

    _workflow_service: WorkflowServiceClient
    _namespace: str
    _identity: str

    async def list_dead_letters(
        self,
        *,
        workflow_type: str = "",
        activity_type: str = "",
        error_type: str = "",
        workflow_id: str = "",
        older_than: timedelta | None = None,
        limit: int = 100,
    ) -> DeadLetterList:
        """The namespace's parked activities the filter matches, oldest first, and its depths.

        Raises:
            RPCError: ``INVALID_ARGUMENT`` for a bad filter or limit (1..1000).
        """
        request = pb.ListDeadLettersRequest(
            namespace=self._namespace,
            filter=_filter(workflow_type, activity_type, error_type, workflow_id, older_than),
            limit=limit,
        )
        response: pb.ListDeadLettersResponse = await self._workflow_service.call("ListDeadLetters", request)
        return DeadLetterList(
            dead_letters=[DeadLetter._from_proto(d) for d in response.dead_letters],
            depths={d.activity_type: d.count for d in response.depths},
        )

    async def describe_dead_letter(self, dead_letter_id: str) -> DeadLetter:
        """One parked activity with every attempt on record.

        Raises:
            RPCError: ``NOT_FOUND`` when it is not waiting (retried, discarded, its run closed).
        """
        request = pb.DescribeDeadLetterRequest(namespace=self._namespace, id=dead_letter_id)
        response: pb.DescribeDeadLetterResponse = await self._workflow_service.call("DescribeDeadLetter", request)
        return DeadLetter._from_proto(response.dead_letter)

    async def retry_dead_letters(
        self,
        dead_letter_id: str = "",
        *,
        reason: str,
        fresh_budget: bool = False,
        workflow_type: str = "",
        activity_type: str = "",
        error_type: str = "",
        workflow_id: str = "",
        older_than: timedelta | None = None,
    ) -> list[str]:
        """Schedules the parked activity again in its run (the same execution, its attempt
        count going on), or every one the filter matches when no id is given; returns the
        ids retried. ``fresh_budget`` starts the retry policy's attempts over; otherwise a
        failed retry parks it again. Needs the operator role; audited with ``reason``.

        Raises:
            RPCError: ``NOT_FOUND`` for an id not waiting; ``INVALID_ARGUMENT`` without a reason.
        """
        request = pb.RetryDeadLettersRequest(
            namespace=self._namespace,
            id=dead_letter_id,
            reason=reason,
            identity=self._identity,
            fresh_budget=fresh_budget,
        )
        if not dead_letter_id:
            request.filter.CopyFrom(_filter(workflow_type, activity_type, error_type, workflow_id, older_than))
        response: pb.RetryDeadLettersResponse = await self._workflow_service.call("RetryDeadLetters", request)
        return list(response.ids)

    async def discard_dead_letters(
        self,
        dead_letter_id: str = "",
        *,
        reason: str,
        workflow_type: str = "",
        activity_type: str = "",
        error_type: str = "",
        workflow_id: str = "",
        older_than: timedelta | None = None,
    ) -> list[str]:
        """Fails the parked activity into its workflow (an ``ActivityError`` whose cause,
        a ``DeadLetterDiscarded`` error, says why), or every one the filter matches when
        no id is given; returns the ids discarded. Needs the operator role; audited.

        Raises:
            RPCError: ``NOT_FOUND`` for an id not waiting; ``INVALID_ARGUMENT`` without a reason.
        """
        request = pb.DiscardDeadLettersRequest(
            namespace=self._namespace, id=dead_letter_id, reason=reason, identity=self._identity
        )
        if not dead_letter_id:
            request.filter.CopyFrom(_filter(workflow_type, activity_type, error_type, workflow_id, older_than))
        response: pb.DiscardDeadLettersResponse = await self._workflow_service.call("DiscardDeadLetters", request)
        return list(response.ids)


def _filter(
    workflow_type: str, activity_type: str, error_type: str, workflow_id: str, older_than: timedelta | None
) -> pb.DeadLetterFilter:
    selection = pb.DeadLetterFilter(
        workflow_type=workflow_type, activity_type=activity_type, error_type=error_type, workflow_id=workflow_id
    )
    if older_than is not None:
        selection.older_than.FromTimedelta(older_than)
    return selection
