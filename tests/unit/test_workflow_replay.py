"""Replaying workflow code against history: commands, DAG edges, determinism checks.

Histories are written by hand, event by event, the way the server records them
(docs/history-events.md); each test replays one on a WorkflowInstance and checks
the commands of the current workflow task or the error replay raises.
"""

from __future__ import annotations

import asyncio
import dataclasses
import gc
import json
import linecache
import logging
import random
import re
import sys
import time
import traceback
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from flowforge import activity, workflow
from flowforge._workflow_instance import HistoryContinuityError, WorkflowInstance
from flowforge.api.v1 import command_pb2, common_pb2
from flowforge.common import RetryPolicy
from flowforge.converter import default_converter, error_to_failure, message_to_json_dict
from flowforge.exceptions import ActivityError, ApplicationError, NonDeterminismError
from flowforge.testing import Replayer

WORKFLOW_ID = "onb-1"
RUN_ID = "run-7f3a"
TASK_QUEUE = "onboarding"
HISTORY_START = datetime(2024, 5, 1, 9, 0, tzinfo=UTC)
TEN_SECONDS = timedelta(seconds=10)


# --------------------------------------------------------------------------- history building


def _payloads(*values: Any) -> dict[str, Any]:
    return message_to_json_dict(default_converter.to_payloads(values))


class _History:
    """Appends history events with consecutive ids, each one second after the previous."""

    def __init__(self) -> None:
        self.events: list[common_pb2.HistoryEvent] = []
        self.scheduled: dict[str, int] = {}  # ActivityTaskScheduled event ids by activity id
        self.timers: dict[str, int] = {}  # TimerStarted event ids by timer id

    @staticmethod
    def time_of(event_id: int) -> datetime:
        return HISTORY_START + timedelta(seconds=event_id)

    def add(self, event_type: str, **attributes: Any) -> int:
        event_id = len(self.events) + 1
        event = common_pb2.HistoryEvent(
            event_id=event_id, event_type=event_type, attributes_json=json.dumps(attributes)
        )
        event.event_time.FromDatetime(self.time_of(event_id))
        self.events.append(event)
        return event_id

    def until(self, event_id: int) -> list[common_pb2.HistoryEvent]:
        """The history as it was when event ``event_id`` was the last one."""
        return self.events[:event_id]

    def started(self, workflow_type: str, *args: Any) -> int:
        return self.add(
            "WorkflowExecutionStarted",
            workflow_id=WORKFLOW_ID,
            workflow_type=workflow_type,
            task_queue=TASK_QUEUE,
            input=_payloads(*args),
            original_execution_run_id=RUN_ID,
        )

    def workflow_task(self) -> int:
        """A workflow task a worker is running now; returns its WorkflowTaskStarted id."""
        scheduled = self.add("WorkflowTaskScheduled", task_queue=TASK_QUEUE, attempt=1)
        return self.add("WorkflowTaskStarted", scheduled_event_id=scheduled, identity="worker-1")

    def completed_workflow_task(self) -> int:
        started = self.workflow_task()
        self.add("WorkflowTaskCompleted", scheduled_event_id=started - 1, started_event_id=started)
        return started

    def failed_workflow_task(self, closing_event_type: str = "WorkflowTaskFailed") -> int:
        started = self.workflow_task()
        self.add(closing_event_type, scheduled_event_id=started - 1, started_event_id=started)
        return started

    def activity_scheduled(self, activity_id: str, activity_type: str) -> int:
        event_id = self.add(
            "ActivityTaskScheduled", activity_id=activity_id, activity_type=activity_type, task_queue=TASK_QUEUE
        )
        self.scheduled[activity_id] = event_id
        return event_id

    def activity_completed(self, scheduled: int, result: Any) -> int:
        started = self.add("ActivityTaskStarted", scheduled_event_id=scheduled, attempt=1)
        return self.add(
            "ActivityTaskCompleted", scheduled_event_id=scheduled, started_event_id=started, result=_payloads(result)
        )

    def activity_failed(self, scheduled: int, error: Exception, retry_state: str) -> int:
        started = self.add("ActivityTaskStarted", scheduled_event_id=scheduled, attempt=1)
        failure = message_to_json_dict(error_to_failure(error))
        return self.add(
            "ActivityTaskFailed",
            scheduled_event_id=scheduled,
            started_event_id=started,
            failure=failure,
            retry_state=retry_state,
        )

    def activity_canceled(self, scheduled: int) -> int:
        return self.add("ActivityTaskCanceled", scheduled_event_id=scheduled, started_event_id=0)

    def timer_started(self, timer_id: str, seconds: float) -> None:
        self.timers[timer_id] = self.add("TimerStarted", timer_id=timer_id, start_to_fire_timeout=seconds)

    def timer_fired(self, timer_id: str) -> None:
        self.add("TimerFired", timer_id=timer_id, started_event_id=self.timers[timer_id])

    def record(self, commands: list[command_pb2.Command]) -> None:
        """Records the completion of the running workflow task and its commands, as the server does."""
        self.add("WorkflowTaskCompleted")
        for command in commands:
            kind = command.WhichOneof("attributes")
            if kind == "schedule_activity_task":
                self.activity_scheduled(
                    command.schedule_activity_task.activity_id, command.schedule_activity_task.activity_type
                )
            elif kind == "start_timer":
                seconds = command.start_timer.start_to_fire_timeout.ToTimedelta().total_seconds()
                self.timer_started(command.start_timer.timer_id, seconds)
            elif kind == "cancel_timer":
                self.add("TimerCanceled", timer_id=command.cancel_timer.timer_id)
            elif kind == "request_cancel_activity_task":
                activity_id = command.request_cancel_activity_task.activity_id
                self.add("ActivityTaskCancelRequested", scheduled_event_id=self.scheduled[activity_id])
            elif kind == "complete_workflow_execution":
                self.add(
                    "WorkflowExecutionCompleted",
                    result=message_to_json_dict(command.complete_workflow_execution.result),
                )
            else:
                raise AssertionError(f"this helper does not record {kind} commands")


def _instance(workflow_cls: type, run_id: str = RUN_ID) -> WorkflowInstance:
    return WorkflowInstance(
        workflow._Definition.from_class(workflow_cls),
        namespace="default",
        workflow_id=WORKFLOW_ID,
        run_id=run_id,
        task_queue=TASK_QUEUE,
    )


def _kinds(commands: list[command_pb2.Command]) -> list[str | None]:
    return [command.WhichOneof("attributes") for command in commands]


def _schedules(commands: list[command_pb2.Command]) -> list[tuple[str, str, list[str]]]:
    """(activity_id, activity_type, depends_on_activity_ids) of each ScheduleActivityTask."""
    return [
        (
            c.schedule_activity_task.activity_id,
            c.schedule_activity_task.activity_type,
            list(c.schedule_activity_task.depends_on_activity_ids),
        )
        for c in commands
        if c.WhichOneof("attributes") == "schedule_activity_task"
    ]


def _result(command: command_pb2.Command) -> Any:
    assert command.WhichOneof("attributes") == "complete_workflow_execution"
    (value,) = default_converter.from_payloads(command.complete_workflow_execution.result)
    return value


# --------------------------------------------------------------------------- the onboarding DAG


@dataclasses.dataclass
class Customer:
    id: str
    email: str


# Activity bodies never run in replay tests; only their names and type hints
# matter. Workflows may refer to an activity by an @activity.defn function, by
# any function (its name is the type), or by the type name.
@activity.defn
async def create_customer(req: dict) -> Customer: ...
@activity.defn
async def verify_identity(customer: Customer) -> bool: ...
@activity.defn(name="score-risk")
async def score_risk(customer: Customer) -> int: ...
async def fetch_credit_history(customer: Customer) -> list: ...
async def enrich_profile(customer: Customer, verified: bool, risk: int, credit: list) -> dict: ...


@workflow.defn
class Onboarding:
    @workflow.run
    async def run(self, req: dict) -> dict:
        customer = await workflow.execute_activity(
            create_customer, req, start_to_close_timeout=TEN_SECONDS, retry_policy=RetryPolicy(maximum_attempts=5)
        )
        verified, risk, credit = await asyncio.gather(
            workflow.execute_activity(verify_identity, customer, start_to_close_timeout=TEN_SECONDS),
            workflow.execute_activity(score_risk, customer, start_to_close_timeout=TEN_SECONDS),
            workflow.execute_activity(fetch_credit_history, customer, start_to_close_timeout=TEN_SECONDS),
        )
        profile = await workflow.execute_activity(
            enrich_profile, args=[customer, verified, risk, credit], start_to_close_timeout=TEN_SECONDS
        )
        await workflow.execute_activity("notify_customer", profile, schedule_to_close_timeout=timedelta(minutes=5))
        await workflow.sleep(timedelta(seconds=1))
        return {"customer_id": customer.id, "profile": profile}


REQUEST = {"email": "ada@example.com"}
PROFILE = {"tier": "gold"}


@dataclasses.dataclass
class OnboardingHistory:
    history: _History
    workflow_tasks: list[int]  # WorkflowTaskStarted event ids, in order

    @property
    def scheduled(self) -> dict[str, int]:
        return self.history.scheduled


def _onboarding_history() -> OnboardingHistory:
    """A completed Onboarding run, as the server records it."""
    h = _History()
    tasks: list[int] = []
    h.started("Onboarding", REQUEST)
    tasks.append(h.completed_workflow_task())
    h.activity_completed(h.activity_scheduled("1", "create_customer"), {"id": "c-1", "email": "ada@example.com"})
    tasks.append(h.completed_workflow_task())
    verify = h.activity_scheduled("2", "verify_identity")
    score = h.activity_scheduled("3", "score-risk")
    fetch = h.activity_scheduled("4", "fetch_credit_history")
    # Completions in another order than scheduled: gather still returns them by position.
    h.activity_completed(fetch, ["loan-2019"])
    h.activity_completed(verify, True)
    h.activity_completed(score, 42)
    tasks.append(h.completed_workflow_task())
    h.activity_completed(h.activity_scheduled("5", "enrich_profile"), PROFILE)
    tasks.append(h.completed_workflow_task())
    h.activity_completed(h.activity_scheduled("6", "notify_customer"), None)
    tasks.append(h.completed_workflow_task())
    h.timer_started("1", 1.0)
    h.timer_fired("1")
    tasks.append(h.completed_workflow_task())
    h.add("WorkflowExecutionCompleted", result=_payloads({"customer_id": "c-1", "profile": PROFILE}))
    return OnboardingHistory(h, tasks)


def test_a_new_run_schedules_its_first_activity_with_id_1_and_the_encoded_input() -> None:
    h = _History()
    h.started("Onboarding", REQUEST)
    h.workflow_task()

    commands = _instance(Onboarding).activate(h.events)

    assert _kinds(commands) == ["schedule_activity_task"]
    schedule = commands[0].schedule_activity_task
    assert schedule.activity_type == "create_customer"
    assert schedule.activity_id == "1"
    assert default_converter.from_payloads(schedule.input) == [REQUEST]
    assert schedule.start_to_close_timeout.ToTimedelta() == TEN_SECONDS
    assert schedule.retry_policy == RetryPolicy(maximum_attempts=5).to_proto()
    assert schedule.cancellation_type == common_pb2.ACTIVITY_CANCELLATION_TYPE_TRY_CANCEL
    assert list(schedule.depends_on_activity_ids) == []


def test_replaying_a_completed_run_matches_every_recorded_command() -> None:
    recorded = _onboarding_history()

    assert _instance(Onboarding).activate(recorded.history.events) == []


def test_gather_fans_out_three_activities_in_one_workflow_task() -> None:
    recorded = _onboarding_history()
    second_task = recorded.workflow_tasks[1]

    commands = _instance(Onboarding).activate(recorded.history.until(second_task))

    assert _schedules(commands) == [
        ("2", "verify_identity", ["1"]),
        ("3", "score-risk", ["1"]),
        ("4", "fetch_credit_history", ["1"]),
    ]
    assert [default_converter.from_payloads(c.schedule_activity_task.input) for c in commands] == [
        [{"id": "c-1", "email": "ada@example.com"}]
    ] * 3


def test_each_workflow_task_of_the_onboarding_run_produces_its_dag_edges_and_result() -> None:
    recorded = _onboarding_history()
    commands_by_task = [
        _instance(Onboarding).activate(recorded.history.until(started)) for started in recorded.workflow_tasks
    ]

    assert [_schedules(commands) for commands in commands_by_task[:4]] == [
        [("1", "create_customer", [])],
        [("2", "verify_identity", ["1"]), ("3", "score-risk", ["1"]), ("4", "fetch_credit_history", ["1"])],
        [("5", "enrich_profile", ["2", "3", "4"])],
        [("6", "notify_customer", ["5"])],
    ]
    timer_commands = commands_by_task[4]
    assert _kinds(timer_commands) == ["start_timer"]
    assert timer_commands[0].start_timer.timer_id == "1"
    assert timer_commands[0].start_timer.start_to_fire_timeout.ToTimedelta() == timedelta(seconds=1)
    (complete,) = commands_by_task[5]
    assert _result(complete) == {"customer_id": "c-1", "profile": PROFILE}


def test_activity_arguments_and_results_are_decoded_with_type_hints() -> None:
    recorded = _onboarding_history()
    third_task = recorded.workflow_tasks[2]

    (enrich,) = _instance(Onboarding).activate(recorded.history.until(third_task))

    # The run method's req hint is dict; create_customer's result was rebuilt as a
    # Customer (customer.id worked) and re-encoded as an object.
    assert default_converter.from_payloads(enrich.schedule_activity_task.input) == [
        {"id": "c-1", "email": "ada@example.com"},
        True,
        42,
        ["loan-2019"],
    ]


@workflow.defn
class TwoBranches:
    @workflow.run
    async def run(self) -> str:
        async def branch(name: str) -> str:
            first = await workflow.execute_activity(f"{name}_first", start_to_close_timeout=TEN_SECONDS)
            return await workflow.execute_activity(f"{name}_second", first, start_to_close_timeout=TEN_SECONDS)

        a, b = await asyncio.gather(branch("a"), branch("b"))
        return await workflow.execute_activity("join", args=[a, b], start_to_close_timeout=TEN_SECONDS)


def test_dag_edges_follow_the_results_each_branch_observed() -> None:
    h = _History()
    h.started("TwoBranches")
    h.workflow_task()
    instance = _instance(TwoBranches)

    firsts = instance.activate(h.events)
    assert _schedules(firsts) == [("1", "a_first", []), ("2", "b_first", [])]

    h.record(firsts)
    h.activity_completed(h.scheduled["1"], "a1")
    h.activity_completed(h.scheduled["2"], "b1")
    h.workflow_task()
    seconds = instance.activate(h.events)
    assert _schedules(seconds) == [("3", "a_second", ["1"]), ("4", "b_second", ["2"])]

    h.record(seconds)
    h.activity_completed(h.scheduled["3"], "a2")
    h.activity_completed(h.scheduled["4"], "b2")
    h.workflow_task()
    join = instance.activate(h.events)
    assert _schedules(join) == [("5", "join", ["3", "4"])]


@workflow.defn
class HandlesJoin:
    @workflow.run
    async def run(self) -> list:
        left = workflow.start_activity("left", start_to_close_timeout=TEN_SECONDS)
        right = workflow.start_activity("right", start_to_close_timeout=TEN_SECONDS)
        results = [await left, await right]
        await workflow.execute_activity("after_both", start_to_close_timeout=TEN_SECONDS)
        return [left.activity_id, right.activity_type, isinstance(left, asyncio.Task), *results]


def test_started_activities_are_tasks_and_awaiting_them_makes_dependencies() -> None:
    h = _History()
    h.started("HandlesJoin")
    h.workflow_task()
    instance = _instance(HandlesJoin)
    h.record(instance.activate(h.events))
    h.activity_completed(h.scheduled["2"], "R")
    h.activity_completed(h.scheduled["1"], "L")
    h.workflow_task()

    after_both = instance.activate(h.events)
    assert _schedules(after_both) == [("3", "after_both", ["1", "2"])]

    h.record(after_both)
    h.activity_completed(h.scheduled["3"], None)
    h.workflow_task()
    (complete,) = instance.activate(h.events)
    assert _result(complete) == ["1", "right", True, "L", "R"]


# --------------------------------------------------------------------------- nondeterminism


@workflow.defn(name="Onboarding")
class OnboardingReordered:
    """Onboarding after a change that swapped two activities of the fan-out."""

    @workflow.run
    async def run(self, req: dict) -> dict:
        customer = await workflow.execute_activity(create_customer, req, start_to_close_timeout=TEN_SECONDS)
        await asyncio.gather(
            workflow.execute_activity(score_risk, customer, start_to_close_timeout=TEN_SECONDS),
            workflow.execute_activity(verify_identity, customer, start_to_close_timeout=TEN_SECONDS),
            workflow.execute_activity(fetch_credit_history, customer, start_to_close_timeout=TEN_SECONDS),
        )
        return {}


def test_reordered_activities_raise_non_determinism_naming_the_event_and_the_command() -> None:
    recorded = _onboarding_history()

    with pytest.raises(NonDeterminismError) as raised:
        _instance(OnboardingReordered).activate(recorded.history.events)

    assert str(raised.value) == (
        f"history event {recorded.scheduled['2']} ActivityTaskScheduled(activity_type='verify_identity', "
        "activity_id='2') does not match the command the workflow produced: "
        "ScheduleActivityTask(activity_type='score-risk', activity_id='2')"
    )


def _fan_out_workflow(width: int) -> type:
    @workflow.defn(name="Onboarding")
    class OnboardingFanOut:
        @workflow.run
        async def run(self, req: dict) -> dict:
            customer = await workflow.execute_activity(create_customer, req, start_to_close_timeout=TEN_SECONDS)
            checks = [verify_identity, score_risk, fetch_credit_history, "check_sanctions"][:width]
            await asyncio.gather(
                *(workflow.execute_activity(check, customer, start_to_close_timeout=TEN_SECONDS) for check in checks)
            )
            return {}

    return OnboardingFanOut


def test_code_producing_fewer_commands_than_history_raises_non_determinism() -> None:
    recorded = _onboarding_history()

    with pytest.raises(NonDeterminismError) as raised:
        _instance(_fan_out_workflow(2)).activate(recorded.history.events)

    assert str(raised.value) == (
        f"history event {recorded.scheduled['4']} ActivityTaskScheduled(activity_type='fetch_credit_history', "
        "activity_id='4') has no matching command: the workflow produced no further command in the "
        f"workflow task started at event {recorded.workflow_tasks[1]}"
    )


def test_code_producing_more_commands_than_history_raises_non_determinism() -> None:
    recorded = _onboarding_history()

    with pytest.raises(NonDeterminismError) as raised:
        _instance(_fan_out_workflow(4)).activate(recorded.history.events)

    assert str(raised.value) == (
        "the workflow produced ScheduleActivityTask(activity_type='check_sanctions', activity_id='5') in "
        f"the workflow task started at event {recorded.workflow_tasks[1]}, but history records no event "
        "for it: the task's recorded commands end before it"
    )


@workflow.defn(name="Onboarding")
class OnboardingThatReturnsAtOnce:
    @workflow.run
    async def run(self, req: dict) -> dict:
        return {}


def test_a_close_command_where_history_recorded_an_activity_raises_non_determinism() -> None:
    recorded = _onboarding_history()

    with pytest.raises(NonDeterminismError) as raised:
        _instance(OnboardingThatReturnsAtOnce).activate(recorded.history.events)

    assert str(raised.value) == (
        f"history event {recorded.scheduled['1']} ActivityTaskScheduled(activity_type='create_customer', "
        "activity_id='1') does not match the command the workflow produced: CompleteWorkflowExecution"
    )


# --------------------------------------------------------------------------- batches and workflow time


@workflow.defn
class Greeter:
    @workflow.run
    async def run(self, name: str) -> dict:
        asked_at = workflow.now()
        greeting = await workflow.execute_activity("compose_greeting", name, start_to_close_timeout=TEN_SECONDS)
        return {
            "greeting": greeting,
            "asked_at": asked_at.isoformat(),
            "answered_at": workflow.now().isoformat(),
            "loop_time": asyncio.get_running_loop().time(),
        }


def test_workflow_time_is_the_start_time_of_the_running_workflow_task() -> None:
    h = _History()
    h.started("Greeter", "Ada")
    first_task = h.completed_workflow_task()
    h.activity_completed(h.activity_scheduled("1", "compose_greeting"), "Hello, Ada")
    current_task = h.workflow_task()

    (complete,) = _instance(Greeter).activate(h.events)

    assert _result(complete) == {
        "greeting": "Hello, Ada",
        "asked_at": h.time_of(first_task).isoformat(),
        "answered_at": h.time_of(current_task).isoformat(),
        "loop_time": h.time_of(current_task).timestamp(),
    }


@pytest.mark.parametrize("closing_event_type", ["WorkflowTaskFailed", "WorkflowTaskTimedOut"])
def test_workflow_tasks_that_did_not_complete_are_skipped_and_their_events_delivered_with_the_next(
    closing_event_type: str,
) -> None:
    h = _History()
    h.started("Greeter", "Ada")
    h.failed_workflow_task(closing_event_type)
    first_completed_task = h.completed_workflow_task()
    h.activity_completed(h.activity_scheduled("1", "compose_greeting"), "Hello, Ada")
    h.failed_workflow_task(closing_event_type)
    current_task = h.workflow_task()

    (complete,) = _instance(Greeter).activate(h.events)

    assert _result(complete)["asked_at"] == h.time_of(first_completed_task).isoformat()
    assert _result(complete)["answered_at"] == h.time_of(current_task).isoformat()


@workflow.defn(name="InfoReporter")
class ReportsInfo:
    @workflow.run
    async def run(self) -> dict:
        return dataclasses.asdict(workflow.info())


def test_info_describes_the_execution() -> None:
    h = _History()
    h.started("InfoReporter")
    h.workflow_task()

    (complete,) = _instance(ReportsInfo).activate(h.events)

    assert _result(complete) == {
        "workflow_id": WORKFLOW_ID,
        "run_id": RUN_ID,
        "workflow_type": "InfoReporter",
        "task_queue": TASK_QUEUE,
        "namespace": "default",
        "attempt": 1,
        "start_time": h.time_of(1).isoformat(),
        "search_attributes": {},
        "parent": None,
        "continued_run_id": None,
        "cron_schedule": "",
    }


# --------------------------------------------------------------------------- failures


@workflow.defn
class Charge:
    @workflow.run
    async def run(self, amount: int) -> dict:
        if amount <= 0:
            raise ApplicationError("amount must be positive", amount, type="InvalidAmount", non_retryable=True)
        try:
            await workflow.execute_activity("charge_card", amount, start_to_close_timeout=TEN_SECONDS)
        except ActivityError as error:
            if amount > 1000:
                raise  # big amounts fail the workflow; small ones are written off
            cause = error.cause
            return {
                "activity_type": error.activity_type,
                "activity_id": error.activity_id,
                "scheduled_event_id": error.scheduled_event_id,
                "retry_state": error.retry_state.name,
                "cause": [type(cause).__name__, cause.type, cause.message, cause.non_retryable],  # type: ignore[union-attr]
            }
        return {"charged": amount}


def _declined_charge_history(amount: int) -> _History:
    h = _History()
    h.started("Charge", amount)
    h.completed_workflow_task()
    declined = ApplicationError("card declined", type="CardDeclined", non_retryable=True)
    h.activity_failed(h.activity_scheduled("1", "charge_card"), declined, retry_state="NON_RETRYABLE_FAILURE")
    h.workflow_task()
    return h


def test_a_failed_activity_raises_activity_error_caused_by_the_application_error() -> None:
    h = _declined_charge_history(amount=20)

    (complete,) = _instance(Charge).activate(h.events)

    assert _result(complete) == {
        "activity_type": "charge_card",
        "activity_id": "1",
        "scheduled_event_id": h.scheduled["1"],
        "retry_state": "NON_RETRYABLE_FAILURE",
        "cause": ["ApplicationError", "CardDeclined", "card declined", True],
    }


def test_an_uncaught_application_error_fails_the_workflow() -> None:
    h = _History()
    h.started("Charge", -5)
    h.workflow_task()

    commands = _instance(Charge).activate(h.events)

    assert _kinds(commands) == ["fail_workflow_execution"]
    failure = commands[0].fail_workflow_execution.failure
    assert (failure.message, failure.type, failure.non_retryable) == ("amount must be positive", "InvalidAmount", True)
    assert default_converter.from_payloads(failure.details) == [-5]


def test_an_uncaught_activity_error_fails_the_workflow_with_its_cause() -> None:
    h = _declined_charge_history(amount=5000)

    commands = _instance(Charge).activate(h.events)

    assert _kinds(commands) == ["fail_workflow_execution"]
    failure = commands[0].fail_workflow_execution.failure
    assert (failure.type, failure.message) == ("ActivityError", "activity 'charge_card' (id 1) failed")
    assert (failure.cause.type, failure.cause.message) == ("CardDeclined", "card declined")


@workflow.defn
class Misconfigured:
    @workflow.run
    async def run(self) -> None:
        raise ValueError("region 'mars-1' is not configured")


def test_any_other_exception_fails_the_workflow_task_and_spends_the_instance() -> None:
    h = _History()
    h.started("Misconfigured")
    h.workflow_task()
    instance = _instance(Misconfigured)

    with pytest.raises(ValueError, match="region 'mars-1' is not configured"):
        instance.activate(h.events)
    with pytest.raises(HistoryContinuityError, match="failed an earlier activation"):
        instance.activate(h.events)


@workflow.defn
class ForgetsTimeouts:
    @workflow.run
    async def run(self) -> None:
        await workflow.execute_activity("crunch", 1)


def test_an_activity_without_start_to_close_or_schedule_to_close_timeout_is_refused() -> None:
    h = _History()
    h.started("ForgetsTimeouts")
    h.workflow_task()

    with pytest.raises(ValueError, match="'crunch' needs start_to_close_timeout or schedule_to_close_timeout"):
        _instance(ForgetsTimeouts).activate(h.events)


# --------------------------------------------------------------------------- timers


@workflow.defn
class Sleeper:
    @workflow.run
    async def run(self) -> str:
        await workflow.sleep(timedelta(minutes=30))
        await asyncio.sleep(90)
        return "rested"


def test_workflow_sleep_and_asyncio_sleep_start_durable_timers_and_resume_when_they_fire() -> None:
    h = _History()
    h.started("Sleeper")
    h.workflow_task()
    instance = _instance(Sleeper)

    first = instance.activate(h.events)
    assert _kinds(first) == ["start_timer"]
    assert first[0].start_timer.timer_id == "1"
    assert first[0].start_timer.start_to_fire_timeout.ToTimedelta() == timedelta(minutes=30)

    h.record(first)
    h.timer_fired("1")
    h.workflow_task()
    second = instance.activate(h.events)
    assert _kinds(second) == ["start_timer"]
    assert second[0].start_timer.timer_id == "2"
    assert second[0].start_timer.start_to_fire_timeout.ToTimedelta() == timedelta(seconds=90)

    h.record(second)
    h.timer_fired("2")
    h.workflow_task()
    (complete,) = instance.activate(h.events)
    assert _result(complete) == "rested"


@workflow.defn
class QuoteWithDeadline:
    @workflow.run
    async def run(self) -> str:
        try:
            return await asyncio.wait_for(
                workflow.execute_activity("fetch_quote", start_to_close_timeout=TEN_SECONDS), timeout=60
            )
        except TimeoutError:
            return "no quote"


def _quote_history() -> tuple[_History, WorkflowInstance]:
    h = _History()
    h.started("QuoteWithDeadline")
    h.workflow_task()
    instance = _instance(QuoteWithDeadline)
    first = instance.activate(h.events)
    assert _kinds(first) == ["start_timer", "schedule_activity_task"]
    h.record(first)
    return h, instance


def test_asyncio_wait_for_cancels_its_durable_timer_when_the_activity_wins() -> None:
    h, instance = _quote_history()
    h.activity_completed(h.scheduled["1"], "quote-1")
    h.workflow_task()

    commands = instance.activate(h.events)

    assert _kinds(commands) == ["cancel_timer", "complete_workflow_execution"]
    assert commands[0].cancel_timer.timer_id == "1"
    assert _result(commands[1]) == "quote-1"


def test_asyncio_wait_for_cancels_the_activity_when_its_durable_timer_fires() -> None:
    h, instance = _quote_history()
    h.timer_fired("1")
    h.workflow_task()

    commands = instance.activate(h.events)

    assert _kinds(commands) == ["request_cancel_activity_task", "complete_workflow_execution"]
    assert commands[0].request_cancel_activity_task.activity_id == "1"
    assert _result(commands[1]) == "no quote"


@workflow.defn
class Approval:
    def __init__(self) -> None:
        self.approved = False

    @workflow.run
    async def run(self) -> str:
        asking = asyncio.create_task(self._ask_manager())
        try:
            await workflow.wait_condition(lambda: self.approved, timeout=timedelta(hours=1))
        except TimeoutError:
            asking.cancel()
            return "escalated"
        return "approved"

    async def _ask_manager(self) -> None:
        await workflow.execute_activity("ask_manager", start_to_close_timeout=TEN_SECONDS)
        self.approved = True


def _approval_history() -> tuple[_History, WorkflowInstance]:
    h = _History()
    h.started("Approval")
    h.workflow_task()
    instance = _instance(Approval)
    first = instance.activate(h.events)
    assert _kinds(first) == ["start_timer", "schedule_activity_task"]
    h.record(first)
    return h, instance


def test_wait_condition_returns_once_the_condition_holds() -> None:
    h, instance = _approval_history()
    h.activity_completed(h.scheduled["1"], None)
    h.workflow_task()

    commands = instance.activate(h.events)

    assert _kinds(commands) == ["cancel_timer", "complete_workflow_execution"]
    assert _result(commands[1]) == "approved"


def test_wait_condition_times_out_on_a_durable_timer() -> None:
    h, instance = _approval_history()
    h.timer_fired("1")
    h.workflow_task()

    commands = instance.activate(h.events)

    assert _kinds(commands) == ["request_cancel_activity_task", "complete_workflow_execution"]
    assert _result(commands[1]) == "escalated"


# --------------------------------------------------------------------------- cancellation


@workflow.defn
class LongJob:
    @workflow.run
    async def run(self, cancellation_type: str) -> None:
        await workflow.execute_activity(
            "crunch",
            start_to_close_timeout=timedelta(hours=1),
            cancellation_type=workflow.ActivityCancellationType[cancellation_type],
        )


def _cancelled_long_job_history(cancellation_type: str) -> _History:
    h = _History()
    h.started("LongJob", cancellation_type)
    h.completed_workflow_task()
    h.activity_scheduled("1", "crunch")
    h.add("WorkflowExecutionCancelRequested", reason="customer left", identity="ops")
    h.workflow_task()
    return h


@pytest.mark.parametrize(
    ("cancellation_type", "expected_kinds"),
    [
        ("TRY_CANCEL", ["request_cancel_activity_task", "cancel_workflow_execution"]),
        ("ABANDON", ["cancel_workflow_execution"]),
        ("WAIT_CANCELLATION_COMPLETED", ["request_cancel_activity_task"]),
    ],
)
def test_cancelling_the_workflow_cancels_the_awaited_activity_as_its_cancellation_type_says(
    cancellation_type: str, expected_kinds: list[str]
) -> None:
    h = _cancelled_long_job_history(cancellation_type)

    assert _kinds(_instance(LongJob).activate(h.events)) == expected_kinds


def test_wait_cancellation_completed_waits_for_the_activity_to_acknowledge() -> None:
    h = _cancelled_long_job_history("WAIT_CANCELLATION_COMPLETED")
    instance = _instance(LongJob)
    h.record(instance.activate(h.events))
    h.activity_canceled(h.scheduled["1"])
    h.workflow_task()

    assert _kinds(instance.activate(h.events)) == ["cancel_workflow_execution"]


@workflow.defn
class CatchesCancellation:
    @workflow.run
    async def run(self, cancellation_type: str) -> str:
        try:
            return await workflow.execute_activity(
                "crunch",
                start_to_close_timeout=timedelta(hours=1),
                cancellation_type=workflow.ActivityCancellationType[cancellation_type],
            )
        except asyncio.CancelledError:
            return "cancelled"


@pytest.mark.parametrize("cancellation_type", ["TRY_CANCEL", "ABANDON", "WAIT_CANCELLATION_COMPLETED"])
def test_every_cancellation_type_ends_the_await_with_asyncio_cancelled_error(cancellation_type: str) -> None:
    h = _History()
    h.started("CatchesCancellation", cancellation_type)
    h.completed_workflow_task()
    h.activity_scheduled("1", "crunch")
    h.add("WorkflowExecutionCancelRequested", reason="customer left", identity="ops")
    h.workflow_task()
    instance = _instance(CatchesCancellation)
    commands = instance.activate(h.events)
    if cancellation_type == "WAIT_CANCELLATION_COMPLETED":
        assert _kinds(commands) == ["request_cancel_activity_task"]  # still awaiting the acknowledgement
        h.record(commands)
        h.activity_canceled(h.scheduled["1"])
        h.workflow_task()
        commands = instance.activate(h.events)
    assert _kinds(commands)[-1] == "complete_workflow_execution"
    assert _result(commands[-1]) == "cancelled"


def test_wait_cancellation_completed_returns_the_result_of_an_activity_that_completed_first() -> None:
    h = _History()
    h.started("CatchesCancellation", "WAIT_CANCELLATION_COMPLETED")
    h.completed_workflow_task()
    h.activity_scheduled("1", "crunch")
    h.add("WorkflowExecutionCancelRequested", reason="customer left", identity="ops")
    h.workflow_task()
    instance = _instance(CatchesCancellation)
    h.record(instance.activate(h.events))
    h.activity_completed(h.scheduled["1"], "crunched anyway")
    h.workflow_task()

    commands = instance.activate(h.events)
    assert _kinds(commands) == ["complete_workflow_execution"]
    assert _result(commands[0]) == "crunched anyway"


@workflow.defn
class CleansUp:
    @workflow.run
    async def run(self) -> str:
        try:
            await workflow.sleep(timedelta(days=1))
        except asyncio.CancelledError:
            await workflow.execute_activity("release_resources", start_to_close_timeout=TEN_SECONDS)
            raise
        return "slept"


def test_a_cancelled_workflow_can_clean_up_before_it_is_cancelled() -> None:
    h = _History()
    h.started("CleansUp")
    h.workflow_task()
    instance = _instance(CleansUp)
    h.record(instance.activate(h.events))
    h.add("WorkflowExecutionCancelRequested", reason="no longer needed")
    h.workflow_task()

    cleanup = instance.activate(h.events)
    assert _kinds(cleanup) == ["cancel_timer", "schedule_activity_task"]
    assert _schedules(cleanup) == [("1", "release_resources", [])]

    h.record(cleanup)
    h.activity_completed(h.scheduled["1"], None)
    h.workflow_task()
    assert _kinds(instance.activate(h.events)) == ["cancel_workflow_execution"]


# --------------------------------------------------------------------------- the determinism guard


@workflow.defn
class ReadsClock:
    @workflow.run
    async def run(self) -> float:
        return time.time()  # nondeterministic: clock


@workflow.defn
class ReadsDatetime:
    @workflow.run
    async def run(self) -> str:
        return datetime.now().isoformat()  # nondeterministic: datetime


@workflow.defn
class DrawsRandom:
    @workflow.run
    async def run(self) -> float:
        return random.random()  # nondeterministic: random


@workflow.defn
class RollsDice:
    @workflow.run
    async def run(self) -> int:
        return random.randint(1, 6)  # nondeterministic: randint


@workflow.defn
class MakesUuid:
    @workflow.run
    async def run(self) -> str:
        return str(uuid.uuid4())  # nondeterministic: uuid


@workflow.defn
class ReadsFile:
    @workflow.run
    async def run(self) -> str:
        return Path(__file__).read_text()[:10]  # nondeterministic: file


def _line_of(marker: str) -> int:
    lines = Path(__file__).read_text().splitlines()
    return next(number for number, line in enumerate(lines, start=1) if line.endswith(f"# nondeterministic: {marker}"))


@pytest.mark.parametrize(
    ("workflow_cls", "marker", "called", "advice"),
    [
        (ReadsClock, "clock", "time.time()", "use workflow.now() for the current time"),
        (ReadsDatetime, "datetime", "datetime.datetime.now()", "use workflow.now() for the current time"),
        (DrawsRandom, "random", "random.random()", "use workflow.random()"),
        (RollsDice, "randint", "random.randint() (which calls random.getrandbits())", "use workflow.random()"),
        (MakesUuid, "uuid", "uuid.uuid4()", "use workflow.uuid4()"),
        (ReadsFile, "file", "pathlib.Path.read_text() (which calls open())", "do I/O in an activity"),
    ],
)
def test_nondeterministic_calls_in_workflow_code_are_caught_and_named(
    workflow_cls: type, marker: str, called: str, advice: str
) -> None:
    h = _History()
    h.started(workflow._Definition.from_class(workflow_cls).name)
    h.workflow_task()

    with pytest.raises(NonDeterminismError) as raised:
        _instance(workflow_cls).activate(h.events)

    assert str(raised.value) == (
        f"workflow code called {called} at {Path(__file__).name}:{_line_of(marker)} in "
        f"{workflow_cls.__qualname__}.run; workflow code must be deterministic: {advice}"
    )


@workflow.defn
class CollectsGarbage:
    @workflow.run
    async def run(self) -> bool:
        gc.collect()  # as an allocation may, at any line of workflow code
        return True


def test_a_garbage_collection_callback_may_read_the_clock() -> None:
    # Hypothesis times every collection with time.perf_counter() from gc.callbacks;
    # a collection that starts inside workflow code runs those callbacks there (this
    # failed a workflow task in CI). The workflow's own clock reads are still caught.
    stamps: list[float] = []

    def timing(_phase: str, _info: dict[str, int]) -> None:
        stamps.append(time.perf_counter())

    gc.callbacks.append(timing)
    try:
        h = _History()
        h.started("CollectsGarbage")
        h.workflow_task()
        (complete,) = _instance(CollectsGarbage).activate(h.events)
        assert _result(complete) is True
        assert len(stamps) >= 2  # the collection's start and stop, both in the activation
        h = _History()
        h.started(workflow._Definition.from_class(ReadsClock).name)
        h.workflow_task()
        with pytest.raises(NonDeterminismError, match=r"time\.time\(\)"):
            _instance(ReadsClock).activate(h.events)
    finally:
        gc.callbacks.remove(timing)
    assert timing not in gc.callbacks and len(gc.callbacks) == len(set(map(id, gc.callbacks)))


class _ClockStampingHandler(logging.Handler):
    """A log handler that reads the wall clock, as log shippers do."""

    def __init__(self) -> None:
        super().__init__()
        self.stamps: list[float] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.stamps.append(time.time())


@workflow.defn
class Diagnoses:
    @workflow.run
    async def run(self) -> bool:
        workflow.logger.info("diagnosing")
        return "Diagnoses.run" in "".join(traceback.format_stack())


def test_log_handlers_and_tracebacks_may_read_the_clock_and_source_files(caplog: pytest.LogCaptureFixture) -> None:
    h = _History()
    h.started("Diagnoses")
    h.workflow_task()
    caplog.set_level(logging.INFO, logger="flowforge.workflow")
    handler = _ClockStampingHandler()
    logging.getLogger("flowforge.workflow").addHandler(handler)
    linecache.clearcache()  # so that formatting the stack opens the source files
    try:
        (complete,) = _instance(Diagnoses).activate(h.events)
    finally:
        logging.getLogger("flowforge.workflow").removeHandler(handler)

    assert _result(complete) is True
    assert len(handler.stamps) == 1


@workflow.defn
class Lottery:
    @workflow.run
    async def run(self) -> dict:
        workflow.logger.info("drawing for %s", workflow.info().workflow_id)
        ticket = workflow.uuid4()
        return {"ticket": str(ticket), "version": ticket.version, "number": workflow.random().randint(1, 10**9)}


def test_workflow_random_and_uuid4_are_the_same_on_every_replay_of_a_run() -> None:
    h = _History()
    h.started("Lottery")
    h.workflow_task()

    first = _result(_instance(Lottery).activate(h.events)[0])
    second = _result(_instance(Lottery).activate(h.events)[0])
    other_run = _result(_instance(Lottery, run_id="run-other").activate(h.events)[0])

    assert first == second
    assert first["version"] == 4
    assert other_run["ticket"] != first["ticket"]


async def test_an_activation_restores_the_callers_event_loop_and_profile_function() -> None:
    h = _History()
    h.started("Lottery")
    h.workflow_task()
    running_loop = asyncio.get_running_loop()
    profiled_events: list[str] = []

    def profile(frame: Any, event: str, arg: Any) -> None:
        profiled_events.append(event)

    sys.setprofile(profile)
    try:
        _instance(Lottery).activate(h.events)
        assert sys.getprofile() is profile
    finally:
        sys.setprofile(None)
    assert asyncio.get_running_loop() is running_loop


@workflow.defn
class Chatty:
    @workflow.run
    async def run(self) -> None:
        workflow.logger.info("asking for a greeting")
        await workflow.execute_activity("compose_greeting", "Ada", start_to_close_timeout=TEN_SECONDS)
        workflow.logger.info("got %d%% of a greeting", 100)


def test_the_workflow_logger_is_silent_while_replaying_and_tags_records_with_the_execution(
    caplog: pytest.LogCaptureFixture,
) -> None:
    h = _History()
    h.started("Chatty")
    h.completed_workflow_task()
    h.activity_completed(h.activity_scheduled("1", "compose_greeting"), "Hello, Ada")
    h.workflow_task()
    caplog.set_level(logging.INFO, logger="flowforge.workflow")

    _instance(Chatty).activate(h.events)

    (record,) = caplog.records
    assert record.getMessage() == f"got 100% of a greeting (Chatty workflow_id={WORKFLOW_ID} run_id={RUN_ID})"
    assert (record.workflow_id, record.run_id) == (WORKFLOW_ID, RUN_ID)  # type: ignore[attr-defined]
    assert record.filename == Path(__file__).name


# --------------------------------------------------------------------------- worker cache


def test_a_cached_instance_continuing_with_new_events_gives_the_commands_of_a_fresh_replay() -> None:
    recorded = _onboarding_history()
    cached = _instance(Onboarding)

    for started in recorded.workflow_tasks:
        history = recorded.history.until(started)
        assert cached.activate(history) == _instance(Onboarding).activate(history)
        assert cached.last_event_id == started


def test_a_cached_instance_accepts_only_the_events_it_has_not_seen() -> None:
    recorded = _onboarding_history()
    first_task, second_task = recorded.workflow_tasks[:2]
    cached = _instance(Onboarding)
    cached.activate(recorded.history.until(first_task))

    commands = cached.activate(recorded.history.events[first_task:second_task])

    assert commands == _instance(Onboarding).activate(recorded.history.until(second_task))


def test_a_cached_instance_refuses_a_history_that_does_not_extend_what_it_processed() -> None:
    recorded = _onboarding_history()
    first_task = recorded.workflow_tasks[0]
    cached = _instance(Onboarding)
    cached.activate(recorded.history.until(first_task))

    with pytest.raises(HistoryContinuityError, match=f"no event after event {first_task}"):
        cached.activate(recorded.history.until(first_task))


def test_a_cached_instance_refuses_to_continue_after_its_workflow_task_failed() -> None:
    h = _History()
    h.started("Onboarding", REQUEST)
    started = h.workflow_task()
    cached = _instance(Onboarding)
    cached.activate(h.events)
    failed = h.add("WorkflowTaskFailed", scheduled_event_id=started - 1, started_event_id=started)
    h.workflow_task()

    with pytest.raises(HistoryContinuityError, match=f"ended with event {failed} WorkflowTaskFailed"):
        cached.activate(h.events)


def test_a_new_instance_needs_the_history_from_event_1() -> None:
    recorded = _onboarding_history()

    with pytest.raises(HistoryContinuityError, match="continues with event 4, but this instance needs event 1"):
        _instance(Onboarding).activate(recorded.history.events[3:])


# --------------------------------------------------------------------------- Replayer


@dataclasses.dataclass
class _RecordedEvent:
    """Stands in for flowforge.client's HistoryEvent: exposes to_proto()."""

    proto: common_pb2.HistoryEvent

    def to_proto(self) -> common_pb2.HistoryEvent:
        return self.proto


@dataclasses.dataclass
class _RecordedHistory:
    """Stands in for flowforge.client.WorkflowHistory."""

    events: list[_RecordedEvent]
    workflow_id: str = WORKFLOW_ID
    run_id: str = RUN_ID


async def test_replayer_accepts_a_history_the_code_reproduces() -> None:
    recorded = _onboarding_history()
    history = _RecordedHistory([_RecordedEvent(event) for event in recorded.history.events])

    await Replayer(workflows=[Onboarding, Greeter]).replay_workflow(history)
    await Replayer(workflows=[Onboarding]).replay_workflow(recorded.history.events)


async def test_replayer_raises_non_determinism_for_changed_code() -> None:
    recorded = _onboarding_history()

    with pytest.raises(NonDeterminismError, match=re.escape("ActivityTaskScheduled(activity_type='verify_identity'")):
        await Replayer(workflows=[OnboardingReordered]).replay_workflow(recorded.history.events)


async def test_replayer_refuses_a_history_of_a_workflow_it_was_not_given() -> None:
    recorded = _onboarding_history()

    with pytest.raises(
        ValueError, match=r"workflow type 'Onboarding', which is not among the replayer's workflows \(Greeter\)"
    ):
        await Replayer(workflows=[Greeter]).replay_workflow(recorded.history.events)
