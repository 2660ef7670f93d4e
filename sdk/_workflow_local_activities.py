"""Local activities of a workflow run: requested by the code, run by the worker, recorded as markers.

Both when the code first runs and when it replays, an outcome is delivered only once the
workflow loop is idle, in the order the activities were started, and with a RecordMarker command
at that point: live, after the worker ran them; on replay, from the ``local_activity`` markers
history holds. So the commands come out in the same order either way and replay matches them.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Iterable
from typing import Any, cast

from flowforge import exceptions
from flowforge._activity_calls import ActivityHandle
from flowforge._local_activity_calls import LocalActivityOutcome, LocalActivityRequest, _LocalActivityCall
from flowforge._workflow_commands import (
    LOCAL_ACTIVITY_MARKER_NAME,
    LOCAL_ACTIVITY_SEQ_DETAIL,
    CommandBuffer,
    attributes_of,
    recorded_marker_details,
)
from flowforge.api import schema
from flowforge.api.schema import EventType, message_to_json_dict
from flowforge.api.v1 import command_pb2, common_pb2
from flowforge.converter import DataConverter, default_converter, failure_to_error

__all__ = ["LocalActivities"]

_TYPE_DETAIL = "activity_type"
_RESULT_DETAIL = "result"
_FAILURE_DETAIL = "failure"
_ATTEMPTS_DETAIL = "attempts"
_RETRY_STATE_DETAIL = "retry_state"


@dataclasses.dataclass(eq=False)
class _Pending:
    request: LocalActivityRequest
    result_type: Any
    outcome: asyncio.Future[Any]
    handle: ActivityHandle[Any] | None = None
    dispatched: bool = False


class LocalActivities:
    """The local activities a run started, and the markers that record their outcomes.

    Args:
        loop: The workflow loop the handles run on.
        commands: Where the RecordMarker commands go.
        converter: Encodes arguments, decodes results.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, commands: CommandBuffer, converter: DataConverter) -> None:
        self._loop = loop
        self._commands = commands
        self._converter = converter
        self._seq = 0
        self._pending: dict[int, _Pending] = {}
        # Marker details by seq, from the history given to activate().
        self._recorded: dict[int, dict[str, common_pb2.Payloads]] = {}

    def note_markers(self, events: Iterable[common_pb2.HistoryEvent]) -> None:
        """Remembers the outcome each local activity marker among ``events`` recorded."""
        for event in events:
            if event.event_type != EventType.MARKER_RECORDED:
                continue
            attributes = cast(schema.MarkerRecordedAttributes, attributes_of(event))
            if attributes["marker_name"] == LOCAL_ACTIVITY_MARKER_NAME:
                details = recorded_marker_details(attributes)
                seq = int(default_converter.from_payloads(details[LOCAL_ACTIVITY_SEQ_DETAIL])[0])
                self._recorded[seq] = details

    def start(self, call: _LocalActivityCall) -> ActivityHandle[Any]:
        """Registers the request; the handle resolves when its outcome is delivered."""
        self._seq += 1
        request = LocalActivityRequest(
            seq=self._seq,
            activity_type=call.activity_type,
            input=self._converter.to_payloads(call.args),
            start_to_close_timeout=call.start_to_close_timeout,
            schedule_to_close_timeout=call.schedule_to_close_timeout,
            retry_policy=call.retry_policy,
        )
        pending = _Pending(request, call.result_type, self._loop.create_future())
        self._pending[request.seq] = pending
        pending.handle = ActivityHandle(
            _outcome_of(pending),
            loop=self._loop,
            activity_id=f"local-{request.seq}",
            activity_type=call.activity_type,
        )
        return pending.handle

    def resolve_recorded(self) -> bool:
        """Delivers the outcomes history recorded for waiting local activities; whether there were any."""
        if not self._pending or not self._recorded:
            return False  # the usual case, answered without a call: this runs under the determinism guard
        recorded = [seq for seq in sorted(self._pending) if seq in self._recorded]
        for seq in recorded:
            self._deliver(self._pending.pop(seq), self._recorded.pop(seq))
        return bool(recorded)

    def to_run(self) -> list[LocalActivityRequest]:
        """The requests the worker has not been given yet (none has a marker); marks them given."""
        requests = []
        for pending in self._pending.values():
            if not pending.dispatched:
                pending.dispatched = True
                requests.append(pending.request)
        return requests

    def resolve(self, outcomes: Iterable[LocalActivityOutcome]) -> None:
        """Delivers what the worker's runs gave, in start order, each recorded as a marker."""
        for outcome in sorted(outcomes, key=lambda o: o.seq):
            pending = self._pending.pop(outcome.seq)
            details = {
                LOCAL_ACTIVITY_SEQ_DETAIL: default_converter.to_payloads([outcome.seq]),
                _TYPE_DETAIL: default_converter.to_payloads([pending.request.activity_type]),
                _ATTEMPTS_DETAIL: default_converter.to_payloads([outcome.attempts]),
            }
            if outcome.failure is not None:
                details[_FAILURE_DETAIL] = default_converter.to_payloads([message_to_json_dict(outcome.failure)])
                details[_RETRY_STATE_DETAIL] = default_converter.to_payloads([outcome.retry_state])
            else:
                details[_RESULT_DETAIL] = outcome.result or common_pb2.Payloads()
            self._deliver(pending, details)

    def _deliver(self, pending: _Pending, details: dict[str, common_pb2.Payloads]) -> None:
        self._commands.append(
            command_pb2.Command(
                record_marker=command_pb2.RecordMarkerCommandAttributes(
                    marker_name=LOCAL_ACTIVITY_MARKER_NAME, details=details
                )
            )
        )
        if pending.handle is not None and pending.handle.done():
            return  # the handle was cancelled: the outcome is recorded, nobody waits for it
        request = pending.request
        failure = details.get(_FAILURE_DETAIL)
        if failure is None:
            payloads = details.get(_RESULT_DETAIL, common_pb2.Payloads()).payloads
            result = self._converter.from_payload(payloads[0], pending.result_type) if payloads else None
            pending.outcome.set_result(result)
            return
        cause = failure_to_error(
            schema.json_dict_to_message(default_converter.from_payloads(failure)[0], common_pb2.Failure),
            self._converter,
        )
        error = exceptions.ActivityError(
            f"local activity {request.activity_type!r} (seq {request.seq}) failed",
            activity_type=request.activity_type,
            activity_id=f"local-{request.seq}",
            scheduled_event_id=0,
            retry_state=exceptions.RetryState.__members__.get(
                str(default_converter.from_payloads(details[_RETRY_STATE_DETAIL])[0])
                if _RETRY_STATE_DETAIL in details
                else "",
                exceptions.RetryState.UNSPECIFIED,
            ),
        )
        error.__cause__ = cause
        pending.outcome.set_exception(error)


async def _outcome_of(pending: _Pending) -> Any:
    # Shielded: cancelling the handle stops the wait; the outcome is still recorded.
    return await asyncio.shield(pending.outcome)
