"""Completions keep the worker's workflow slots counted whatever their report ends with.

A fold holds a workflow slot (the one its workflow task runs in, or an eager task would) and
the slots its completion reserved for what the answer may hand back; an unfolded completion and
a workflow task's completion hold those an eager task would take. A report that ends in an
error other than the server's (an answer the payload codec or payload storage cannot decode, a
cancellation) must free them as an RPC error does; a leaked slot is a workflow task the worker
never polls for again.
"""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any, cast

import pytest

from flowforge._codec import UndecodableResponse
from flowforge._workflow_definition import _Definition
from flowforge._workflow_instance import WorkflowInstance
from flowforge.api import schema
from flowforge.api.v1 import common_pb2, workflow_service_pb2
from flowforge.converter import default_converter
from flowforge.worker._fold import ActivityCompletions
from flowforge.worker._workflow_worker import Completion, WorkflowWorker
from samples.onboarding.workflows import Onboarding
from tests.unit.test_fold_synthesis import _activity_id, _attributes, _events, _fold_points, _held, _instance

SLOTS = 3


class _Undecodable:
    """An RPC layer whose every answer the payload codec fails on."""

    def __init__(self) -> None:
        self.sent: list[str] = []

    async def call(self, rpc: str, request: Any, *, retry: bool = True) -> Any:
        self.sent.append(rpc)
        raise UndecodableResponse(rpc, workflow_service_pb2.RespondActivityTaskCompletedResponse(), ValueError("key"))


def _free_slots(worker: WorkflowWorker) -> int:
    taken = 0
    while worker.reserve_eager_slot():
        taken += 1
    for _ in range(taken):
        worker.release_eager_slot()
    return taken


_EXECUTION = common_pb2.WorkflowExecution(workflow_id="onboarding-grace", run_id="run-grace")


def _cache(worker: WorkflowWorker, instance: WorkflowInstance) -> None:
    """Caches ``instance`` (of the onboarding run) on ``worker``, as a completed workflow task does."""
    worker.completed(
        Completion(
            workflow_service_pb2.RespondWorkflowTaskCompletedRequest(), 0, next_task_slot=False, closes_run=False
        ),
        workflow_service_pb2.RespondWorkflowTaskCompletedResponse(),
        _EXECUTION,
        instance,
    )


def _completion_at(
    events: list[common_pb2.HistoryEvent], i: int
) -> tuple[
    workflow_service_pb2.PollActivityTaskQueueResponse, workflow_service_pb2.RespondActivityTaskCompletedRequest
]:
    """The activity task and completion of the fold the recorded ``events`` have at index ``i``."""
    completed = _attributes(events[i + 1])
    task = workflow_service_pb2.PollActivityTaskQueueResponse(
        workflow_execution=_EXECUTION,
        activity_id=_activity_id(events, completed["scheduled_event_id"]),
        started_time=events[i].event_time,
        attempt=1,
        task_queue="onboarding",
    )
    request = workflow_service_pb2.RespondActivityTaskCompletedRequest(
        namespace="default",
        task_token=f"token-{i}".encode(),
        result=schema.payloads_from_json(completed["result"]),
        identity=completed["identity"],
    )
    return task, request


def _completion_of_a_cached_run(
    worker: WorkflowWorker,
) -> tuple[
    workflow_service_pb2.PollActivityTaskQueueResponse, workflow_service_pb2.RespondActivityTaskCompletedRequest
]:
    """Caches the onboarding run at its first fold point; the activity task and completion that fold there."""
    events = _events()
    i = _fold_points(events)[0]
    instance = _instance()
    instance.activate(events[:i])
    _cache(worker, instance)
    return _completion_at(events, i)


def _worker(service: _Undecodable) -> WorkflowWorker:
    return WorkflowWorker(
        service=cast(Any, service),
        namespace="default",
        task_queue="onboarding",
        identity="w",
        converter=default_converter,
        workflows={"Onboarding": _Definition.from_class(Onboarding)},
        max_concurrent_tasks=SLOTS,
        max_concurrent_polls=1,
        cache_size=8,
        activity_worker=None,
        build_id="",
    )


async def test_an_undecodable_answer_to_a_fold_frees_its_slots() -> None:
    service = _Undecodable()
    worker = _worker(service)
    task, request = _completion_of_a_cached_run(worker)
    completions = ActivityCompletions(worker, cast(Any, service), None, "onboarding", _held(_events()))
    with pytest.raises(UndecodableResponse):
        await completions.complete(task, request, time.monotonic())
    assert service.sent == ["RespondActivityTaskCompleted"]
    assert request.HasField("folded_workflow_task"), "it was folded"
    assert _free_slots(worker) == SLOTS


async def test_an_undecodable_answer_to_an_unfolded_completion_frees_its_slot() -> None:
    service = _Undecodable()
    worker = _worker(service)
    task, request = _completion_of_a_cached_run(_worker(service))  # cached on another worker
    completions = ActivityCompletions(worker, cast(Any, service), None, "onboarding", _held(_events()))
    with pytest.raises(UndecodableResponse):
        await completions.complete(task, request, time.monotonic())
    assert not request.HasField("folded_workflow_task") and request.eager_workflow_task_queue == "onboarding"
    assert _free_slots(worker) == SLOTS


async def test_an_undecodable_answer_to_a_workflow_task_completion_frees_its_slots() -> None:
    """The same rule for a workflow task's own completion (the slot for a next task it asks for)."""
    service = _Undecodable()
    worker = _worker(service)
    events = _events()
    first_task = next(i for i, e in enumerate(events) if e.event_type == "WorkflowTaskStarted") + 1
    assert worker.reserve_eager_slot()  # the task's own slot, as an eager task's
    worker.run_eager(
        workflow_service_pb2.PollWorkflowTaskQueueResponse(
            task_token=b"token",
            workflow_execution=common_pb2.WorkflowExecution(workflow_id="onboarding-grace", run_id="run-grace"),
            workflow_type="Onboarding",
            history=events[:first_task],
            task_queue="onboarding",
        )
    )
    await worker.drain(timedelta(seconds=30))
    assert service.sent == ["RespondWorkflowTaskCompleted"]
    assert _free_slots(worker) == SLOTS
