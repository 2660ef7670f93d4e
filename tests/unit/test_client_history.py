"""WorkflowHistory / HistoryEvent: wire conversion and the JSON file format."""

import json
from datetime import UTC, datetime, timedelta

import pytest

from flowforge.api.v1 import common_pb2
from flowforge.client import HistoryEvent, WorkflowHistory
from flowforge.converter import default_converter, message_to_json_dict

START = datetime(2024, 5, 1, 12, 0, 0, 123456, tzinfo=UTC)


def _sample_history() -> WorkflowHistory:
    payloads = message_to_json_dict(default_converter.to_payloads([{"name": "Ada"}]))
    return WorkflowHistory(
        workflow_id="onb-1",
        events=[
            HistoryEvent(
                1,
                "WorkflowExecutionStarted",
                START,
                {
                    "workflow_type": "Onboarding",
                    "task_queue": "onboarding",
                    "input": payloads,
                    "workflow_execution_timeout": 0.0,
                },
            ),
            HistoryEvent(2, "WorkflowTaskScheduled", START, {"attempt": 1, "start_to_close_timeout": 10.0}),
            HistoryEvent(
                3,
                "ActivityTaskScheduled",
                START + timedelta(seconds=1),
                {
                    "activity_id": "1",
                    "depends_on_activity_ids": [],
                    "retry_policy": {"maximum_attempts": 5},
                },
            ),
            HistoryEvent(4, "TimerFired", START + timedelta(minutes=1), {}),
            HistoryEvent(5, "WorkflowExecutionTerminated", START + timedelta(hours=1), {"reason": "cödé"}),
        ],
    )


def test_json_round_trip_is_exact():
    history = _sample_history()

    assert WorkflowHistory.from_json(history.to_json()) == history


def test_json_is_stable_and_readable():
    history = _sample_history()
    reordered = WorkflowHistory(
        workflow_id=history.workflow_id,
        events=[
            HistoryEvent(
                event.event_id,
                event.event_type,
                event.event_time,
                dict(reversed(event.attributes.items())),
            )
            for event in history.events
        ],
    )

    text = history.to_json()

    assert text == reordered.to_json()
    assert text == WorkflowHistory.from_json(text).to_json()
    document = json.loads(text)
    assert list(document) == ["workflow_id", "events"]
    assert document["events"][0]["event_time"] == "2024-05-01T12:00:00.123456Z"
    assert list(document["events"][0]) == ["event_id", "event_type", "event_time", "attributes"]
    assert "cödé" in text  # not \u-escaped
    assert "\n  " in text


def test_from_json_converts_offsets_to_utc():
    text = json.dumps(
        {
            "workflow_id": "w",
            "events": [
                {
                    "event_id": 1,
                    "event_type": "WorkflowExecutionStarted",
                    "event_time": "2024-05-01T14:00:00+02:00",
                    "attributes": {},
                }
            ],
        }
    )

    (event,) = WorkflowHistory.from_json(text).events

    assert event.event_time == datetime(2024, 5, 1, 12, tzinfo=UTC)
    assert event.event_time.tzinfo is UTC


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ("[]", "JSON object"),
        ("{", "must be JSON"),
        ('{"events": []}', "workflow_id"),
        ('{"workflow_id": "w"}', "events"),
        ('{"workflow_id": "w", "events": [1]}', r"events\[0\]"),
        (
            '{"workflow_id": "w", "events": [{"event_id": true, "event_type": "X", '
            '"event_time": "2024-01-01T00:00:00Z"}]}',
            r"events\[0\].event_id",
        ),
        (
            '{"workflow_id": "w", "events": [{"event_id": 1, "event_type": "X", "event_time": "2024-01-01T00:00:00"}]}',
            "no UTC offset",
        ),
        (
            '{"workflow_id": "w", "events": [{"event_id": 1, "event_type": "X", "event_time": "yesterday"}]}',
            "ISO-8601",
        ),
        (
            '{"workflow_id": "w", "events": [{"event_id": 1, "event_type": "X", '
            '"event_time": "2024-01-01T00:00:00Z", "attributes": []}]}',
            r"events\[0\].attributes",
        ),
    ],
)
def test_from_json_rejects_malformed_documents(document, message):
    with pytest.raises(ValueError, match=message):
        WorkflowHistory.from_json(document)


def test_proto_round_trip():
    proto = common_pb2.HistoryEvent(
        event_id=7,
        event_type="ActivityTaskCompleted",
        attributes_json='{"scheduled_event_id": 5, "result": {"payloads": []}}',
    )
    proto.event_time.FromDatetime(START)

    event = HistoryEvent.from_proto(proto)

    assert event == HistoryEvent(
        7, "ActivityTaskCompleted", START, {"scheduled_event_id": 5, "result": {"payloads": []}}
    )
    assert event.event_time.tzinfo is UTC
    assert HistoryEvent.from_proto(event.to_proto()) == event


def test_empty_attributes_json_reads_as_empty_dict():
    proto = common_pb2.HistoryEvent(event_id=1, event_type="TimerFired")

    assert HistoryEvent.from_proto(proto).attributes == {}
