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
from flowforge.worker._fold import HeldActivities, fold_events, fold_started_time
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


def _held(events: list[common_pb2.HistoryEvent], run_id: str = "run-grace") -> HeldActivities:
    """Every activity ``events`` schedule, held by the worker (none runs elsewhere): each may fold."""
    held = HeldActivities()
    for event in events:
        if event.event_type == "ActivityTaskScheduled":
            held.hold(
                workflow_service_pb2.PollActivityTaskQueueResponse(
                    workflow_execution=common_pb2.WorkflowExecution(run_id=run_id),
                    activity_id=_attributes(event)["activity_id"],
                    task_token=f"held-{event.event_id}".encode(),
                )
            )
    return held


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
        point = folding.fold_point(_activity_id(events, scheduled_event_id), _held(events).activity_ids("run-grace"))
        assert point == (scheduled_event_id, events[i - 1].event_time, True)
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
    held = _held(events).activity_ids("run-grace")
    assert instance.fold_point(activity_id, held) is None
    instance.activate(events[:i])
    assert instance.fold_point("no such activity", held) is None
    assert instance.fold_point(activity_id, held) is not None
    instance.activate(events[: i + 4])  # the activity's outcome is in: nothing left to fold for it
    assert instance.fold_point(activity_id, held) is None


def test_an_instance_folds_only_when_every_activity_it_awaits_is_held_here() -> None:
    """At the onboarding's three parallel activities: all three must be held here to fold."""
    events = _events("onboarding-folded.json")
    parallel = [i for i in _fold_points(events) if events[i - 1].event_type == "WorkflowTaskCompleted"]
    first = parallel[0] - 5  # the first of the three folded after the last WorkflowTaskCompleted before them
    instance = _instance()
    instance.activate(events[:first])
    scheduled = {e.event_id for e in events[:first] if e.event_type == "ActivityTaskScheduled"}
    resolved = {_attributes(e)["scheduled_event_id"] for e in events[:first] if e.event_type == "ActivityTaskCompleted"}
    awaited = {_activity_id(events, event_id) for event_id in scheduled - resolved}
    assert len(awaited) == 3
    activity_id = sorted(awaited)[0]

    def all_held(held: set[str]) -> bool:
        point = instance.fold_point(activity_id, frozenset(held))
        assert point is not None
        return point[2]

    assert all_held(awaited)
    assert all_held(awaited | {"another"})
    for missing in awaited:
        assert not all_held(awaited - {missing})
    instance.activate(events[: first + 5])  # the first one's outcome (and its task) in: two are left
    done = _activity_id(events, _attributes(events[first + 1])["scheduled_event_id"])
    activity_id = sorted(awaited - {done})[0]
    assert all_held(awaited - {done})
    assert not all_held({done, activity_id})


def test_held_activities_are_released_once_whatever_the_order() -> None:
    def task(run_id: str, activity_id: str, token: bytes) -> workflow_service_pb2.PollActivityTaskQueueResponse:
        return workflow_service_pb2.PollActivityTaskQueueResponse(
            workflow_execution=common_pb2.WorkflowExecution(run_id=run_id), activity_id=activity_id, task_token=token
        )

    held = HeldActivities()
    held.hold(task("r1", "1", b"a"))
    held.hold(task("r1", "1", b"b"))  # a new attempt of the same activity while the old one still runs here
    held.hold(task("r2", "1", b"c"))
    assert held.activity_ids("r1") == {"1"} and held.activity_ids("r2") == {"1"}
    held.release(b"a")
    assert held.activity_ids("r1") == {"1"}  # the other attempt still holds it
    held.release(b"b")
    held.release(b"b")  # sent unfolded, then the handler ends: released once
    assert held.activity_ids("r1") == frozenset() and held.activity_ids("r2") == {"1"}
    held.release(b"c")
    assert held._by_run == {} and held._runs == {}


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
