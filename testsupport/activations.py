"""Workflow runs replayed through ``WorkflowInstance`` without a server, task by task as
a sticky worker activates them, and the calls their workflow code makes under the
determinism guard's hook: for ``benchmarks.replay`` (CPU per workflow task) and the guard
cost test (tests/unit/test_guard_cost.py), which holds budgets on the calls."""

from __future__ import annotations

import base64
import contextlib
import gc
import itertools
import json
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from types import FrameType
from typing import Any, Self

from flowforge import _workflow_instance, workflow
from flowforge._determinism import DeterminismGuard
from flowforge._workflow_instance import WorkflowInstance
from flowforge.api.v1 import common_pb2
from samples.onboarding.workflows import Onboarding
from testsupport.workloads import SingleActivity

_EPOCH = datetime(2026, 1, 1, tzinfo=UTC)


def _payloads(value: Any) -> dict[str, Any]:
    data = json.dumps(value, separators=(",", ":"), sort_keys=True).encode()
    encoding = base64.b64encode(b"json/plain").decode()
    return {"payloads": [{"data": base64.b64encode(data).decode(), "metadata": {"encoding": encoding}}]}


class History:
    """Appends events as the server writes them for a workflow that completes its activities in turn."""

    def __init__(self, workflow_type: str, task_queue: str, argument: Any) -> None:
        self.events: list[common_pb2.HistoryEvent] = []
        self.task_ends: list[int] = []  # the WorkflowTaskStarted event id of each workflow task
        self._add(
            "WorkflowExecutionStarted",
            workflow_type=workflow_type,
            task_queue=task_queue,
            input=_payloads(argument),
            attempt=1,
            identity="bench",
        )
        self.workflow_task()

    def _add(self, event_type: str, **attributes: Any) -> int:
        event_id = len(self.events) + 1
        event = common_pb2.HistoryEvent(
            event_id=event_id,
            event_type=event_type,
            attributes_json=json.dumps(attributes, sort_keys=True, separators=(",", ":")),
        )
        event.event_time.FromDatetime(_EPOCH + timedelta(milliseconds=event_id))
        self.events.append(event)
        return event_id

    def workflow_task(self) -> None:
        scheduled = self._add("WorkflowTaskScheduled", task_queue="bench", attempt=1, start_to_close_timeout=10.0)
        self.task_ends.append(self._add("WorkflowTaskStarted", scheduled_event_id=scheduled, identity="bench"))

    def completed(self, *activities: tuple[str, Any]) -> dict[str, int]:
        """The last workflow task completed, scheduling ``activities`` (type, argument); their event ids by type."""
        started = len(self.events)
        self._add("WorkflowTaskCompleted", scheduled_event_id=started - 1, started_event_id=started, identity="bench")
        scheduled = {}
        for activity_type, argument in activities:
            activity_id = str(sum(e.event_type == "ActivityTaskScheduled" for e in self.events) + 1)
            scheduled[activity_type] = self._add(
                "ActivityTaskScheduled",
                activity_id=activity_id,
                activity_type=activity_type,
                task_queue="bench",
                input=_payloads(argument),
                start_to_close_timeout=30.0,
            )
        return scheduled

    def activity_done(self, scheduled_event_id: int, result: Any) -> None:
        started = self._add("ActivityTaskStarted", scheduled_event_id=scheduled_event_id, attempt=1, identity="bench")
        self._add(
            "ActivityTaskCompleted",
            scheduled_event_id=scheduled_event_id,
            started_event_id=started,
            result=_payloads(result),
            identity="bench",
        )


def one_activity_history() -> History:
    """SingleActivity(7): schedule noop(7), complete with 7."""
    history = History("SingleActivity", "bench", 7)
    scheduled = history.completed(("noop", 7))
    history.activity_done(scheduled["noop"], 7)
    history.workflow_task()
    return history


def onboarding_history() -> History:
    """Onboarding without the cooling-off timer; verify_identity completes alone, so
    one task only records its outcome (the workflow still waits on the gather)."""
    request = {"name": "Grace Hopper", "email": "grace@example.com", "work_seconds": 0, "cooling_off_seconds": 0}
    customer = {"customer_id": "cus_1", "name": "Grace Hopper", "email": "grace@example.com", "work_seconds": 0}
    checks = [{"check": "identity", "verified": True}, {"check": "risk", "score": 19}, {"check": "credit"}]
    history = History("Onboarding", "bench", request)
    scheduled = history.completed(("create_customer", request))
    history.activity_done(scheduled["create_customer"], customer)
    history.workflow_task()
    scheduled = history.completed(
        ("verify_identity", customer), ("score_risk", customer), ("fetch_credit_file", customer)
    )
    history.activity_done(scheduled["verify_identity"], checks[0])
    history.workflow_task()
    history.completed()
    for name, check in (("score_risk", checks[1]), ("fetch_credit_file", checks[2])):
        history.activity_done(scheduled[name], check)
    history.workflow_task()
    scheduled = history.completed(("enrich_customer", [customer, checks]))
    history.activity_done(scheduled["enrich_customer"], {**customer, "tier": "gold"})
    history.workflow_task()
    scheduled = history.completed(("send_notification", {**customer, "tier": "gold"}))
    history.activity_done(scheduled["send_notification"], {"sent_to": "grace@example.com"})
    history.workflow_task()
    return history


def new_instance(definition: workflow._Definition) -> WorkflowInstance:
    """A new instance of a run of ``definition``, as a worker makes one for a run's first task."""
    return WorkflowInstance(definition, namespace="bench", workflow_id="bench", run_id="bench-run", task_queue="bench")


class Run:
    """A workflow class with a history of its run, to activate task by task.

    Args:
        workflow_class: The ``@workflow.defn`` class.
        history: Its run's events; checked once here (the last task completes the run).
    """

    def __init__(self, workflow_class: type, history: History) -> None:
        self.definition = workflow._Definition.from_class(workflow_class)
        self.history = history
        ends = history.task_ends
        # What a sticky worker hands each activation: the first task gets events 1..3,
        # each later one the events after the previous task's WorkflowTaskStarted.
        self.slices = [history.events[: ends[0]]] + [
            history.events[start:end] for start, end in itertools.pairwise(ends)
        ]
        self.whole = history.events[: ends[-1]]
        # Check the history against the code once: the run completes in its last task.
        instance = new_instance(self.definition)
        commands = [instance.activate(events) for events in self.slices][-1]
        if [c.WhichOneof("attributes") for c in commands] != ["complete_workflow_execution"]:
            raise AssertionError(f"{workflow_class.__name__}: the last workflow task gave {commands}")

    def first_task(self) -> int:
        """Runs the first workflow task on a new instance; the tasks run (1)."""
        new_instance(self.definition).activate(self.slices[0])
        return 1

    def whole_run(self) -> int:
        """Runs every task in turn on one instance, as a sticky worker; the tasks run."""
        instance = new_instance(self.definition)
        for events in self.slices:
            instance.activate(events)
        return len(self.slices)

    def full_replay(self) -> int:
        """Replays the whole history on a new instance (a cache miss); the tasks replayed."""
        new_instance(self.definition).activate(self.whole)
        return len(self.slices)


@contextlib.contextmanager
def guard_replaced(stand_in: type) -> Iterator[None]:
    """Workflow instances use ``stand_in`` (a class shaped like DeterminismGuard) meanwhile."""
    _workflow_instance.DeterminismGuard = stand_in  # type: ignore[misc, assignment]
    try:
        yield
    finally:
        _workflow_instance.DeterminismGuard = DeterminismGuard  # type: ignore[misc]


class _CountingGuard:
    """Stands in for DeterminismGuard: counts the calls its hook would see."""

    calls = 0
    violation = None

    def __init__(self, **_: Any) -> None: ...

    def __enter__(self) -> Self:
        sys.setprofile(self._hook)
        return self

    def __exit__(self, *exc_info: object) -> None:
        sys.setprofile(None)

    @staticmethod
    def _hook(_frame: FrameType, event: str, _arg: Any) -> None:
        if event in ("call", "c_call"):
            _CountingGuard.calls += 1


def calls_per_task(run: Run) -> float:
    """Calls per workflow task of a whole run under the guard's hook (Python calls,
    coroutine resumptions and C calls: each costs the hook two events)."""
    _CountingGuard.calls = 0
    # Without a collection meanwhile: one would run the weakref callbacks of earlier
    # runs' tasks under the hook, and the count would vary from run to run.
    gc.collect()
    gc.disable()
    try:
        with guard_replaced(_CountingGuard):
            tasks = run.whole_run()
    finally:
        gc.enable()
    return _CountingGuard.calls / tasks


def one_activity_run() -> Run:
    """``SingleActivity`` (one activity: 2 workflow tasks)."""
    return Run(SingleActivity, one_activity_history())


def onboarding_run() -> Run:
    """The onboarding DAG (6 activities, 3 in parallel: 6 workflow tasks)."""
    return Run(Onboarding, onboarding_history())
