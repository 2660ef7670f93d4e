"""Recorded histories of the sample replay against today's code; changed code is caught."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path

import pytest

from flowforge import workflow
from flowforge.client import WorkflowHistory
from flowforge.exceptions import NonDeterminismError
from flowforge.testing import Replayer, replay_histories_in
from samples.approval.workflows import ExpenseApproval, ExpenseRequest, notify_approvers
from samples.onboarding.workflows import (
    Onboarding,
    create_customer,
    enrich_customer,
    fetch_credit_file,
    score_risk,
    send_notification,
    verify_identity,
)
from samples.order_tracking.workflows import OrderFulfillment
from samples.saga import workflows as saga
from tests.replay import batches, remediation, shipping

HISTORY_FOLDER = Path(__file__).parent / "histories"
ONBOARDING_HISTORIES = sorted(HISTORY_FOLDER.glob("onboarding-*.json"))
TIMEOUT = timedelta(seconds=30)


def load(path: Path) -> WorkflowHistory:
    return WorkflowHistory.from_json(path.read_text())


@workflow.defn(name="Onboarding")
class OnboardingWithChecksReordered:
    """What a well-meaning refactor might do: run the risk score first."""

    @workflow.run
    async def run(self, request: dict) -> dict:
        customer = await workflow.execute_activity(create_customer, request, start_to_close_timeout=TIMEOUT)
        checks = await asyncio.gather(
            workflow.execute_activity(score_risk, customer, start_to_close_timeout=TIMEOUT),
            workflow.execute_activity(verify_identity, customer, start_to_close_timeout=TIMEOUT),
            workflow.execute_activity(fetch_credit_file, customer, start_to_close_timeout=TIMEOUT),
        )
        enriched = await workflow.execute_activity(
            enrich_customer, args=[customer, list(checks)], start_to_close_timeout=TIMEOUT
        )
        return {
            "customer": enriched,
            "notification": await workflow.execute_activity(
                send_notification, enriched, start_to_close_timeout=TIMEOUT
            ),
        }


@workflow.defn(name="Onboarding")
class OnboardingReadingTheClock:
    @workflow.run
    async def run(self, request: dict) -> dict:
        import time

        request = {**request, "requested_at": time.time()}
        return await workflow.execute_activity(create_customer, request, start_to_close_timeout=TIMEOUT)


# One test per committed history: every history replays against today's code.
test_recorded_history_replays_against_the_current_code = replay_histories_in(
    HISTORY_FOLDER,
    workflows=[
        Onboarding,
        shipping.Shipping,
        OrderFulfillment,
        *saga.WORKFLOWS,
        ExpenseApproval,
        batches.DrainQueue,
        remediation.Reconcile,
    ],
)


def test_histories_were_recorded() -> None:
    assert len(ONBOARDING_HISTORIES) >= 2


@pytest.mark.parametrize("path", ONBOARDING_HISTORIES, ids=lambda p: p.stem)
async def test_reordered_activities_raise_non_determinism_naming_command_and_event(path: Path) -> None:
    with pytest.raises(NonDeterminismError) as error:
        await Replayer(workflows=[OnboardingWithChecksReordered]).replay_workflow(load(path))
    message = str(error.value)
    assert "ActivityTaskScheduled" in message and "verify_identity" in message and "score_risk" in message


async def test_reading_the_wall_clock_is_named_in_the_error() -> None:
    with pytest.raises(NonDeterminismError) as error:
        await Replayer(workflows=[OnboardingReadingTheClock]).replay_workflow(load(ONBOARDING_HISTORIES[0]))
    assert "time.time()" in str(error.value) and "workflow.now()" in str(error.value)


def test_a_history_survives_a_json_round_trip_exactly() -> None:
    original = load(ONBOARDING_HISTORIES[0])
    assert WorkflowHistory.from_json(original.to_json()) == original
    assert [e.event_id for e in original.events] == list(range(1, len(original.events) + 1))


@workflow.defn(name="BookGroupTrip")
class BookGroupTripInReverse:
    """A refactor that starts the travellers' child workflows in the other order."""

    @workflow.run
    async def run(self, requests: list) -> dict:
        group = workflow.info().workflow_id
        await asyncio.gather(
            *(
                workflow.execute_child_workflow(saga.BookTrip.run, request, id=f"{group}-{request['traveller']}")
                for request in reversed(requests)
            ),
            return_exceptions=True,
        )
        return {}


async def test_a_history_with_child_workflows_replays_and_reordered_children_are_named() -> None:
    history = load(HISTORY_FOLDER / "saga-group-children.json")
    types = [e.event_type for e in history.events]
    assert types.count("StartChildWorkflowExecutionInitiated") == 2
    assert {"ChildWorkflowExecutionCompleted", "ChildWorkflowExecutionFailed"} <= set(types)
    await Replayer(workflows=saga.WORKFLOWS).replay_workflow(history)
    with pytest.raises(NonDeterminismError) as error:
        await Replayer(workflows=[BookGroupTripInReverse]).replay_workflow(history)
    message = str(error.value)
    assert "StartChildWorkflowExecutionInitiated" in message and "StartChildWorkflowExecution(" in message
    assert "saga-group-children-alan" in message and "saga-group-children-edsger" in message


@workflow.defn(name="ExpenseApproval")
class ExpenseApprovalWithoutDeadline(ExpenseApproval):
    """A change that drops the approval deadline: histories with its timer no longer match."""

    @workflow.run
    async def run(self, request: ExpenseRequest) -> object:
        await workflow.execute_activity(notify_approvers, request, start_to_close_timeout=TIMEOUT)
        await workflow.wait_condition(lambda: self._status.decision is not None)
        return self._status


def test_the_approved_history_holds_the_signals_it_was_recorded_with() -> None:
    paid = load(HISTORY_FOLDER / "approval-paid.json")
    signals = [e.attributes["signal_name"] for e in paid.events if e.event_type == "WorkflowExecutionSignaled"]
    assert signals == ["approve", "reject"]


async def test_dropping_the_approval_deadline_raises_non_determinism_naming_the_timer() -> None:
    with pytest.raises(NonDeterminismError) as error:
        await Replayer(workflows=[ExpenseApprovalWithoutDeadline]).replay_workflow(
            load(HISTORY_FOLDER / "approval-paid.json")
        )
    assert "history event 11 TimerStarted" in str(error.value) and "no matching command" in str(error.value)


async def test_each_run_of_a_continue_as_new_chain_replays_and_dropping_the_continuation_is_named() -> None:
    runs = [load(HISTORY_FOLDER / f"batches-run-{number}.json") for number in (1, 2, 3)]
    assert [run.events[-1].event_type for run in runs] == [
        "WorkflowExecutionContinuedAsNew",
        "WorkflowExecutionContinuedAsNew",
        "WorkflowExecutionCompleted",
    ]
    first_run_id = runs[0].events[0].attributes["run_id"]
    assert runs[1].events[0].attributes["continued_execution_run_id"] == first_run_id
    assert runs[2].events[0].attributes["first_execution_run_id"] == first_run_id
    for run in runs:
        await Replayer(workflows=[batches.DrainQueue]).replay_workflow(run)
    with pytest.raises(NonDeterminismError) as error:
        await Replayer(workflows=[batches.DrainQueueInOneRun]).replay_workflow(runs[0])
    message = str(error.value)
    assert "WorkflowExecutionContinuedAsNew" in message and "ScheduleActivityTask" in message
