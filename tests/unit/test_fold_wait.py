"""A completion waiting on another fold of its run waits a short bound at most.

Two activities of one run complete while the first one's fold is in flight: the second waits
for its answer to fold on the instance the answer moves. Nothing extends the waiting attempt's
lease meanwhile, so a held answer must not hold it long: past the bound (the smaller of
``_FOLD_WAIT_S`` and a share of the lease left) it is sent unfolded, and at once when the
answer can only come on a new stream or the worker stops. A prompt answer still lets it fold.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, cast

import pytest
from google.protobuf.timestamp_pb2 import Timestamp

from flowforge.api.v1 import common_pb2, workflow_service_pb2
from flowforge.worker import _fold
from flowforge.worker._activity_worker import _RunningActivity
from flowforge.worker._fold import ActivityCompletions
from flowforge.worker._workflow_worker import WorkflowWorker
from tests.unit.test_fold_slots import SLOTS, _cache, _completion_at, _free_slots, _worker
from tests.unit.test_fold_synthesis import _events, _fold_points, _held, _instance
from testsupport.waiting import wait_until

HISTORY = "onboarding-folded.json"
_Request = workflow_service_pb2.RespondActivityTaskCompletedRequest
_Response = workflow_service_pb2.RespondActivityTaskCompletedResponse


class _Server:
    """Answers completions as the server would apply them; holds the first fold's answer until released.

    Every fold is answered applied, with the WorkflowTaskCompleted the recorded history has
    after its four events (so the answer brings the instance to the run's last event).
    """

    def __init__(self, events: list[common_pb2.HistoryEvent]) -> None:
        self._events = events
        self.sent: list[_Request] = []
        self.release = asyncio.Event()
        self._held = False

    async def call(self, rpc: str, request: Any, *, retry: bool = True) -> Any:
        assert rpc == "RespondActivityTaskCompleted"
        self.sent.append(_Request.FromString(request.SerializeToString()))
        if not request.HasField("folded_workflow_task"):
            return _Response()
        if not self._held:
            self._held = True
            await self.release.wait()
        completed_id = request.folded_workflow_task.last_event_id + 5
        return _Response(
            workflow_task_folded=True,
            folded_workflow_task_completed=workflow_service_pb2.RespondWorkflowTaskCompletedResponse(
                appended_events=[self._events[completed_id - 1]]
            ),
        )


class _Stream:
    """A worker stream that hands reports to ``server`` and can break (it then reconnects never)."""

    def __init__(self, server: _Server) -> None:
        self._server = server
        self.open = True
        self._ended = asyncio.Event()

    @property
    def reconnecting(self) -> bool:
        return not self.open

    async def ended(self) -> None:
        await self._ended.wait()

    def break_(self) -> None:
        self.open = False
        self._ended.set()

    async def report(self, rpc: str, request: Any, *, retry: bool = True) -> Any:
        return await self._server.call(rpc, request, retry=retry)


def _parallel_completions(
    worker: WorkflowWorker, events: list[common_pb2.HistoryEvent]
) -> list[tuple[workflow_service_pb2.PollActivityTaskQueueResponse, _Request]]:
    """Caches the onboarding run where its three parallel activities are running; the activity
    tasks and completions of the first two (each foldable there, as recorded)."""
    parallel = [i for i in _fold_points(events) if events[i - 1].event_type == "WorkflowTaskCompleted"]
    first = parallel[0] - 5  # the first of the three folded after the last WorkflowTaskCompleted before them
    instance = _instance()
    instance.activate(events[:first])
    _cache(worker, instance)
    return [_completion_at(events, i) for i in (first, parallel[0])]


async def _first_fold_in_flight(
    stream: bool = False,
) -> tuple[_Server, _Stream | None, WorkflowWorker, ActivityCompletions, asyncio.Task[None], Any]:
    """The first completion's fold sent, its answer held (``server.release`` lets it go); the second's task and request."""
    events = _events(HISTORY)
    server = _Server(events)
    fake_stream = _Stream(server) if stream else None
    worker = _worker(cast(Any, server))
    (first_task, first), second = _parallel_completions(worker, events)
    completions = ActivityCompletions(worker, cast(Any, server), cast(Any, fake_stream), "onboarding", _held(events))
    folding = asyncio.create_task(completions.complete(first_task, first, time.monotonic()))
    await wait_until(lambda: server.sent, timeout=30, what="the first completion to be sent")
    assert server.sent[0].HasField("folded_workflow_task")
    return server, fake_stream, worker, completions, folding, second


async def test_a_completion_is_sent_unfolded_when_the_fold_in_flight_is_not_answered_within_the_bound() -> None:
    server, _, worker, completions, folding, (task, request) = await _first_fold_in_flight()
    began = time.monotonic()
    await asyncio.wait_for(completions.complete(task, request, time.monotonic()), 30)
    waited = time.monotonic() - began
    assert not folding.done(), "the first fold's answer is still held"
    assert len(server.sent) == 2 and not server.sent[1].HasField("folded_workflow_task")
    assert server.sent[1].eager_workflow_task_queue == "onboarding"  # still asks for its task
    assert waited >= _fold._FOLD_WAIT_S  # it did wait for the answer, the bound long
    server.release.set()
    await asyncio.wait_for(folding, 30)
    assert _free_slots(worker) == SLOTS


async def test_the_wait_is_a_share_of_the_lease_left_when_that_is_shorter() -> None:
    server, _, worker, completions, folding, (task, request) = await _first_fold_in_flight()
    began = time.monotonic()
    await asyncio.wait_for(completions.complete(task, request, began, began + 0.4), 30)
    # A quarter of the 0.4 s left: well under the bound the answer would have had otherwise.
    assert time.monotonic() - began < _fold._FOLD_WAIT_S
    assert not folding.done() and not server.sent[1].HasField("folded_workflow_task")
    server.release.set()
    await asyncio.wait_for(folding, 30)
    assert _free_slots(worker) == SLOTS


async def test_a_completion_stops_waiting_when_the_stream_breaks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_fold, "_FOLD_WAIT_S", 3600.0)  # only the break can end the wait in time
    server, stream, worker, completions, folding, (task, request) = await _first_fold_in_flight(stream=True)
    assert stream is not None
    second = asyncio.create_task(completions.complete(task, request, time.monotonic()))
    await asyncio.sleep(0)
    assert not second.done(), "it waits while the stream is open"
    stream.break_()
    await asyncio.wait_for(second, 30)
    assert not server.sent[1].HasField("folded_workflow_task")
    server.release.set()
    await asyncio.wait_for(folding, 30)
    assert _free_slots(worker) == SLOTS


@pytest.mark.parametrize("why", ["stream down", "worker stopping"])
async def test_a_completion_does_not_wait_on_a_fold_whose_answer_cannot_come_soon(
    monkeypatch: pytest.MonkeyPatch, why: str
) -> None:
    monkeypatch.setattr(_fold, "_FOLD_WAIT_S", 3600.0)
    server, stream, worker, completions, folding, (task, request) = await _first_fold_in_flight(stream=True)
    assert stream is not None
    if why == "stream down":
        stream.break_()
    else:
        await worker.stop_polling()
    await asyncio.wait_for(completions.complete(task, request, time.monotonic()), 30)
    assert not server.sent[1].HasField("folded_workflow_task")
    server.release.set()
    await asyncio.wait_for(folding, 30)
    assert worker._slots.free == SLOTS  # a stopping worker reserves none: _free_slots would say 0


async def test_with_a_prompt_answer_the_waiting_completion_folds_on_the_updated_instance() -> None:
    server, _, worker, completions, folding, (task, request) = await _first_fold_in_flight()
    second = asyncio.create_task(completions.complete(task, request, time.monotonic()))
    await asyncio.sleep(0)
    assert not second.done(), "it waits for the first fold's answer"
    server.release.set()
    await asyncio.wait_for(asyncio.gather(folding, second), 30)
    first_sent, second_sent = server.sent
    assert second_sent.HasField("folded_workflow_task")
    # Folded after the first fold's events and its WorkflowTaskCompleted, as recorded.
    assert second_sent.folded_workflow_task.last_event_id == first_sent.folded_workflow_task.last_event_id + 5
    assert _free_slots(worker) == SLOTS


def test_the_lease_a_completion_has_left_is_the_servers_earliest_deadline_from_the_tasks_arrival() -> None:
    """The wait's bound counts on the attempt's lease as the server sets it
    (``activity_lease_expiry``): start-to-close, schedule-to-close, the heartbeat deadline."""
    leased = Timestamp(seconds=1_700_000_000)
    task = workflow_service_pb2.PollActivityTaskQueueResponse(
        scheduled_time=Timestamp(seconds=leased.seconds - 25), started_time=leased
    )
    running = _RunningActivity(task, is_async=True, arrived=100.0)
    assert running.lease_ends() is None  # no timeout: the wait's own bound only
    task.start_to_close_timeout.FromSeconds(10)
    assert running.lease_ends() == 110.0
    task.schedule_to_close_timeout.FromSeconds(30)  # 25 s of it went by before the lease
    assert running.lease_ends() == 105.0
    task.heartbeat_timeout.FromSeconds(3)
    assert running.lease_ends() == 103.0  # no heartbeat yet: counted from the arrival
    running.heartbeat_sent = 101.5
    assert running.lease_ends() == 104.5
