"""Histories as the client fetches them and as files hold them (:meth:`WorkflowHistory.to_json`)."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime
from typing import Any

from flowforge.api.v1 import common_pb2

__all__ = ["HistoryEvent", "WorkflowHistory"]


def _format_event_time(value: datetime) -> str:
    # A fixed layout (always microseconds, always "Z") keeps to_json() byte-stable.
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _parse_event_time(text: Any, where: str) -> datetime:
    try:
        value = datetime.fromisoformat(text)
    except (TypeError, ValueError):
        raise ValueError(f"{where}: {text!r} is not an ISO-8601 time") from None
    if value.tzinfo is None:
        raise ValueError(f"{where}: {text!r} has no UTC offset")
    return value.astimezone(UTC)


def _with_sorted_keys(value: Any) -> Any:
    """``value`` with every dict's keys sorted, so equal attributes print equally."""
    if isinstance(value, dict):
        return {key: _with_sorted_keys(value[key]) for key in sorted(value)}
    if isinstance(value, list):
        return [_with_sorted_keys(item) for item in value]
    return value


@dataclasses.dataclass(frozen=True)
class HistoryEvent:
    """One entry of an execution's append-only history.

    Attributes:
        event_id: 1, 2, 3, ... without gaps within a run.
        event_type: Temporal's name, e.g. ``"ActivityTaskScheduled"``.
        event_time: When the server wrote the event (UTC).
        attributes: The event's attributes (see docs/history-events.md); payloads
            and failures inside are in their protobuf JSON form.
    """

    event_id: int
    event_type: str
    event_time: datetime
    attributes: dict[str, Any]

    @classmethod
    def from_proto(cls, proto: common_pb2.HistoryEvent) -> HistoryEvent:
        """Builds an event from its wire form."""
        return cls(
            event_id=proto.event_id,
            event_type=proto.event_type,
            event_time=proto.event_time.ToDatetime(tzinfo=UTC),
            attributes=json.loads(proto.attributes_json) if proto.attributes_json else {},
        )

    def to_proto(self) -> common_pb2.HistoryEvent:
        """The wire form of this event."""
        proto = common_pb2.HistoryEvent(
            event_id=self.event_id,
            event_type=self.event_type,
            attributes_json=json.dumps(self.attributes, sort_keys=True, separators=(",", ":")),
        )
        proto.event_time.FromDatetime(self.event_time)
        return proto


@dataclasses.dataclass(frozen=True)
class WorkflowHistory:
    """The events of one workflow run, as fetched or as read back from a file.

    Attributes:
        workflow_id: The workflow id the events belong to.
        events: The events in order of ``event_id``.
    """

    workflow_id: str
    events: list[HistoryEvent]

    def to_json(self) -> str:
        """The history as stable, human-readable JSON.

        The same history always gives the same text: keys of the attributes are
        sorted and times are written as UTC with microseconds, e.g.
        ``{"workflow_id": "onb-1", "events": [{"event_id": 1, "event_type":
        "WorkflowExecutionStarted", "event_time": "2024-05-01T12:00:00.000000Z",
        "attributes": {...}}]}``. :meth:`from_json` reads it back to an equal history.
        """
        document = {
            "workflow_id": self.workflow_id,
            "events": [
                {
                    "event_id": event.event_id,
                    "event_type": event.event_type,
                    "event_time": _format_event_time(event.event_time),
                    "attributes": _with_sorted_keys(event.attributes),
                }
                for event in self.events
            ],
        }
        return json.dumps(document, indent=2, ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str | bytes) -> WorkflowHistory:
        """Reads a history written by :meth:`to_json` (or ``flowforge workflow show
        --output json``).

        Raises:
            ValueError: The text is not such a history; the message says where.
        """
        try:
            document = json.loads(text)
        except json.JSONDecodeError as error:
            raise ValueError(f"a workflow history must be JSON: {error}") from None
        if not isinstance(document, dict):
            raise ValueError("a workflow history must be a JSON object")
        workflow_id = document.get("workflow_id")
        raw_events = document.get("events")
        if not isinstance(workflow_id, str):
            raise ValueError("workflow_id: expected a string")
        if not isinstance(raw_events, list):
            raise ValueError("events: expected a list")
        events = [_event_from_json(raw, index) for index, raw in enumerate(raw_events)]
        return cls(workflow_id=workflow_id, events=events)


def _event_from_json(raw: Any, index: int) -> HistoryEvent:
    where = f"events[{index}]"
    if not isinstance(raw, dict):
        raise ValueError(f"{where}: expected an object")
    event_id, event_type = raw.get("event_id"), raw.get("event_type")
    attributes = raw.get("attributes", {})
    # bool is an int subclass; an event id of true is a broken file, not 1.
    if not isinstance(event_id, int) or isinstance(event_id, bool):
        raise ValueError(f"{where}.event_id: expected an integer")
    if not isinstance(event_type, str) or not event_type:
        raise ValueError(f"{where}.event_type: expected a non-empty string")
    if not isinstance(attributes, dict):
        raise ValueError(f"{where}.attributes: expected an object")
    return HistoryEvent(
        event_id=event_id,
        event_type=event_type,
        event_time=_parse_event_time(raw.get("event_time"), f"{where}.event_time"),
        attributes=attributes,
    )
