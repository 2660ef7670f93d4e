"""Dead-letter RPCs: list (with the depth per activity type), describe (with every
attempt), retry and discard, one by id or in bulk by filter (docs/operations.md)."""

from __future__ import annotations

import json

from flowforge.api.schema import failure_from_json
from flowforge.api.v1 import dead_letters_pb2 as pb
from flowforge.server.errors import InvalidArgument
from flowforge.server.frontend._base import Context, ServiceBase, rpc
from flowforge.server.frontend.protos import optional_timestamp, timestamp
from flowforge.server.frontend.validation import dead_letter_filter, dead_letter_target, name
from flowforge.server.stores.rows import ActivityAttemptRow, DeadLetterRow

__all__ = ["DeadLetterHandlers", "attempt_proto"]

_MAX_LIST = 1000


class DeadLetterHandlers(ServiceBase):
    @rpc
    async def ListDeadLetters(self, request: pb.ListDeadLettersRequest, context: Context) -> pb.ListDeadLettersResponse:
        namespace = name(request.namespace, "namespace")
        limit = request.limit or 100
        if not 0 < limit <= _MAX_LIST:
            raise InvalidArgument(f"limit must be between 1 and {_MAX_LIST}")
        selection = dead_letter_filter(request.filter, self._engine.clock.now_us())
        page = await self._engine.list_dead_letters(namespace, selection, limit)
        return pb.ListDeadLettersResponse(
            dead_letters=[_dead_letter_proto(row) for row in page.dead_letters],
            depths=[pb.DeadLetterDepth(activity_type=t, count=n) for t, n in page.depths],
        )

    @rpc
    async def DescribeDeadLetter(
        self, request: pb.DescribeDeadLetterRequest, context: Context
    ) -> pb.DescribeDeadLetterResponse:
        row, attempts = await self._engine.describe_dead_letter(
            name(request.namespace, "namespace"), name(request.id, "id")
        )
        proto = _dead_letter_proto(row)
        proto.attempts.extend(attempt_proto(a) for a in attempts)
        if row.input is not None:
            proto.input.ParseFromString(row.input)
        return pb.DescribeDeadLetterResponse(dead_letter=proto)

    @rpc
    async def RetryDeadLetters(
        self, request: pb.RetryDeadLettersRequest, context: Context
    ) -> pb.RetryDeadLettersResponse:
        namespace, dead_letter_id, selection, reason = dead_letter_target(request, self._engine.clock.now_us())
        ids = await self._engine.retry_dead_letters(
            namespace,
            dead_letter_id,
            selection,
            reason=reason,
            identity=name(request.identity, "identity", required=False),
            fresh_budget=request.fresh_budget,
        )
        return pb.RetryDeadLettersResponse(ids=ids)

    @rpc
    async def DiscardDeadLetters(
        self, request: pb.DiscardDeadLettersRequest, context: Context
    ) -> pb.DiscardDeadLettersResponse:
        namespace, dead_letter_id, selection, reason = dead_letter_target(request, self._engine.clock.now_us())
        ids = await self._engine.discard_dead_letters(
            namespace,
            dead_letter_id,
            selection,
            reason=reason,
            identity=name(request.identity, "identity", required=False),
        )
        return pb.DiscardDeadLettersResponse(ids=ids)


def _dead_letter_proto(row: DeadLetterRow) -> pb.DeadLetter:
    return pb.DeadLetter(
        id=row.id,
        workflow_id=row.workflow_id,
        run_id=row.run_id,
        workflow_type=row.workflow_type,
        activity_id=row.activity_id,
        activity_type=row.activity_type,
        task_queue=row.task_queue,
        attempt=row.attempt,
        failure=failure_from_json(json.loads(row.failure)),
        dead_lettered_time=timestamp(row.dead_lettered_us),
        scheduled_event_id=row.scheduled_event_id,
    )


def attempt_proto(row: ActivityAttemptRow) -> pb.ActivityAttempt:
    """One attempt on record, as the API shows it."""
    failure = failure_from_json(json.loads(row.failure)) if row.failure else None
    return pb.ActivityAttempt(
        attempt=row.attempt,
        identity=row.identity,
        started_time=optional_timestamp(row.started_us),
        ended_time=timestamp(row.ended_us),
        outcome=row.outcome,
        failure=failure,
        activity_id=row.activity_id,
        activity_type=row.activity_type,
        scheduled_event_id=row.scheduled_event_id,
    )
