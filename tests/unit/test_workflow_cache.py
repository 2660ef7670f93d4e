"""The workflow worker's cache of run instances keeps the newest instance of a run.

An activity completion that folds a workflow task takes the run's instance out of the
cache until its answer comes. Meanwhile a workflow task of the run (a signal's, pushed or
polled before that answer arrived) may replay on a new instance and cache it at a later
event; the fold's answer must then not put its older instance back over it.
"""

from __future__ import annotations

from typing import Any, cast

from flowforge.api.v1 import common_pb2, workflow_service_pb2
from flowforge.converter import default_converter
from flowforge.worker._workflow_worker import Completion, WorkflowWorker


class _Instance:
    """Stands in for a WorkflowInstance that stopped at ``last_event_id``."""

    def __init__(self, last_event_id: int) -> None:
        self.last_event_id = last_event_id


def _worker() -> WorkflowWorker:
    return WorkflowWorker(
        service=cast(Any, None),
        namespace="default",
        task_queue="q",
        identity="w",
        converter=default_converter,
        workflows={},
        max_concurrent_tasks=2,
        max_concurrent_polls=1,
        cache_size=8,
        activity_worker=None,
        build_id="",
    )


def _take_answer(worker: WorkflowWorker, instance: _Instance) -> None:
    """What a completion's accepted answer (nothing appended, nothing handed back) does to the cache."""
    completion = Completion(
        workflow_service_pb2.RespondWorkflowTaskCompletedRequest(), 0, next_task_slot=False, closes_run=False
    )
    worker.completed(
        completion,
        workflow_service_pb2.RespondWorkflowTaskCompletedResponse(),
        common_pb2.WorkflowExecution(workflow_id="wf", run_id="run"),
        cast(Any, instance),
    )


def test_a_late_answer_does_not_put_an_older_instance_over_a_newer_one() -> None:
    worker = _worker()
    _take_answer(worker, _Instance(20))  # the signal's task, answered first
    _take_answer(worker, _Instance(14))  # the fold's answer, late
    assert worker.cached_event_id("run") == 20


def test_an_answer_puts_its_instance_over_an_older_one() -> None:
    worker = _worker()
    _take_answer(worker, _Instance(14))
    _take_answer(worker, _Instance(20))
    assert worker.cached_event_id("run") == 20
