"""The folded workflow task, worker side: the events a worker synthesizes for a fold give its
cached instance exactly what the unfolded path's history gives a replay (same commands, same
``workflow.now()``), and the instance says when it can fold at all."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from google.protobuf.timestamp_pb2 import Timestamp

from flowforge._workflow_definition import _Definition
from flowforge._workflow_instance import WorkflowInstance
from flowforge.api import schema
from flowforge.api.v1 import common_pb2, workflow_service_pb2
from flowforge.client import WorkflowHistory
from flowforge.worker._fold import fold_events, fold_started_time
from samples.onboarding.workflows import Onboarding

HISTORIES = Path(__file__).parents[1] / "replay" / "histories"
# An onboarding recorded before folds, and one recorded with every activity folded (the
# three parallel ones too, one after another).
RECORDED = {"onboarding-grace.json": 3, "onboarding-folded.json": 6}
FOLDED = ["ActivityTaskStarted", "ActivityTaskCompleted", "WorkflowTaskScheduled", "WorkflowTaskStarted"]


def _events(name: str = "onboarding-grace.json") -> list[common_pb2.HistoryEvent]:
    return [event.to_proto() for event in WorkflowHistory.from_json((HISTORIES / name).read_text()).events]


def _instance() -> WorkflowInstance:
    return WorkflowInstance(
        _Definition.from_class(Onboarding),
        namespace="default",
        workflow_id="onboarding-grace",
        run_id="run-grace",
        task_queue="onboarding",
    )


def _attributes(event: common_pb2.HistoryEvent) -> dict[str, Any]:
    parsed: dict[str, Any] = json.loads(event.attributes_json)
    return parsed


def _fold_points(events: list[common_pb2.HistoryEvent]) -> list[int]:
    """Indexes where the unfolded path wrote a fold's four events right after a completed task's."""
    return [
        i
        for i in range(1, len(events) - 4)
        if [e.event_type for e in events[i : i + 4]] == FOLDED and events[i + 4].event_type == "WorkflowTaskCompleted"
    ]


def _activity_id(events: list[common_pb2.HistoryEvent], scheduled_event_id: int) -> str:
    activity_id: str = _attributes(events[scheduled_event_id - 1])["activity_id"]
    return activity_id


@pytest.mark.parametrize("name", sorted(RECORDED))
def test_a_folded_task_runs_as_the_unfolded_tasks_replay_does(name: str) -> None:
    events = _events(name)
    points = _fold_points(events)
    assert len(points) == RECORDED[name]
    for i in points:
        completed = _attributes(events[i + 1])
        scheduled_event_id = completed["scheduled_event_id"]
        folding = _instance()
        folding.activate(events[:i])
        point = folding.fold_point(_activity_id(events, scheduled_event_id))
        assert point == (scheduled_event_id, events[i - 1].event_time)
        task = workflow_service_pb2.PollActivityTaskQueueResponse(
            started_time=events[i].event_time, attempt=1, task_queue="onboarding"
        )
        request = workflow_service_pb2.RespondActivityTaskCompletedRequest(
            result=schema.payloads_from_json(completed["result"]), identity=completed["identity"]
        )
        synthesized = fold_events(
            last_event_id=events[i - 1].event_id,
            scheduled_event_id=scheduled_event_id,
            task=task,
            request=request,
            started_time=events[i + 3].event_time,
        )
        assert [(e.event_id, e.event_type) for e in synthesized] == [
            (e.event_id, e.event_type) for e in events[i : i + 4]
        ]
        folded_commands = folding.activate(synthesized)

        replaying = _instance()
        replayed_commands = replaying.activate(events[: i + 4])
        # An empty list for the first two of the parallel three: the code still waits.
        assert folded_commands == replayed_commands
        assert folding.workflow_now() == replaying.workflow_now()
        assert folding.last_event_id == replaying.last_event_id == events[i + 3].event_id


def test_an_instance_folds_only_at_the_runs_last_event_for_a_pending_activity() -> None:
    events = _events()
    i = _fold_points(events)[0]
    scheduled_event_id = _attributes(events[i + 1])["scheduled_event_id"]
    activity_id = _activity_id(events, scheduled_event_id)
    instance = _instance()
    instance.activate(events[: i - 2])  # ends at WorkflowTaskStarted: its task is not completed yet
    assert instance.fold_point(activity_id) is None
    instance.activate(events[:i])
    assert instance.fold_point("no such activity") is None
    assert instance.fold_point(activity_id) is not None
    instance.activate(events[: i + 4])  # the activity's outcome is in: nothing left to fold for it
    assert instance.fold_point(activity_id) is None


def test_the_fold_time_is_the_lease_time_plus_the_time_since_the_task_arrived_never_before_the_last_event() -> None:
    leased = Timestamp(seconds=1_700_000_000, nanos=500_000_000)
    task = workflow_service_pb2.PollActivityTaskQueueResponse(started_time=leased)
    arrived = time.monotonic() - 0.25
    before = Timestamp(seconds=1_600_000_000)
    started = fold_started_time(task, arrived, before)
    elapsed = started.ToNanoseconds() - leased.ToNanoseconds()
    assert 250_000_000 <= elapsed < 250_000_000 + 5_000_000_000
    later = Timestamp(seconds=1_800_000_000, nanos=7)
    assert fold_started_time(task, arrived, later) == later


def test_the_fold_time_is_one_the_server_records_as_is() -> None:
    """The server keeps event times in whole microseconds: a fold time finer than that would
    give the folded task a clock (the workflow loop's ``time()``) a replay does not see."""
    task = workflow_service_pb2.PollActivityTaskQueueResponse(started_time=Timestamp(seconds=1_700_000_000, nanos=123))
    for arrived in (time.monotonic(), time.monotonic() - 0.000_000_7, time.monotonic() - 1.5):
        started = fold_started_time(task, arrived, Timestamp(seconds=1_600_000_000))
        recorded = Timestamp()
        recorded.FromMicroseconds(started.ToMicroseconds())
        assert started == recorded
