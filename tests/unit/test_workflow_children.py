"""The runtime's side of child workflows and continue-as-new, on hand-written histories
(the server's side is in tests/integration/test_child_workflows.py and
test_continue_as_new.py)."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from flowforge import workflow
from flowforge.api.v1 import command_pb2
from flowforge.converter import default_converter, error_to_failure, failure_to_error
from flowforge.exceptions import ApplicationError, ChildWorkflowError, RetryState, TerminatedError
from tests.unit.test_workflow_replay import _History, _instance, _payloads

CHILD_ID = "child-1"


@workflow.defn
class Child:
    @workflow.run
    async def run(self, value: int) -> int:
        return value * 2


@workflow.defn
class AwaitsChild:
    @workflow.run
    async def run(self) -> int:
        return await workflow.execute_child_workflow(Child.run, 21, id=CHILD_ID, run_timeout=timedelta(minutes=5))


@workflow.defn
class CancelsBeforeStarting:
    @workflow.run
    async def run(self) -> str:
        start = asyncio.ensure_future(workflow.start_child_workflow(Child.run, 1, id=CHILD_ID))
        await asyncio.sleep(0)  # the start command is produced, not sent
        start.cancel()
        try:
            await start
        except asyncio.CancelledError:
            return "dropped"
        return "started"


@workflow.defn
class ContinuesDespiteExceptHandler:
    @workflow.run
    async def run(self, n: int) -> None:
        try:
            workflow.continue_as_new(n + 1, run_timeout=timedelta(minutes=1))
        except Exception:
            raise AssertionError("continue_as_new was swallowed") from None


def _history_with_started_child(parent_type: str) -> tuple[_History, int]:
    """The parent started, its first task started the child: (history, initiated event id)."""
    h = _History()
    h.started(parent_type)
    h.completed_workflow_task()
    initiated = h.add("StartChildWorkflowExecutionInitiated", workflow_id=CHILD_ID, workflow_type="Child")
    h.add("ChildWorkflowExecutionStarted", initiated_event_id=initiated, workflow_id=CHILD_ID, run_id="c-run")
    return h, initiated


def _kinds(commands: list[command_pb2.Command]) -> list[str]:
    return [command.WhichOneof("attributes") for command in commands]


def test_a_child_start_is_a_command_and_its_result_resumes_the_parent() -> None:
    h = _History()
    h.started("AwaitsChild")
    h.workflow_task()
    (command,) = _instance(AwaitsChild).activate(h.events)
    attributes = command.start_child_workflow_execution
    assert (attributes.workflow_id, attributes.workflow_type) == (CHILD_ID, "Child")
    assert attributes.workflow_run_timeout.ToTimedelta() == timedelta(minutes=5)
    assert attributes.parent_close_policy == workflow.ParentClosePolicy.TERMINATE
    assert default_converter.from_payloads(attributes.input) == [21]

    h.add("WorkflowTaskCompleted", scheduled_event_id=2, started_event_id=3)
    initiated = h.add("StartChildWorkflowExecutionInitiated", workflow_id=CHILD_ID, workflow_type="Child")
    h.add("ChildWorkflowExecutionStarted", initiated_event_id=initiated, workflow_id=CHILD_ID, run_id="c-run")
    h.completed_workflow_task()
    h.add(
        "ChildWorkflowExecutionCompleted",
        initiated_event_id=initiated,
        workflow_id=CHILD_ID,
        run_id="c-run",
        result=_payloads(42),
    )
    h.workflow_task()
    (complete,) = _instance(AwaitsChild).activate(h.events)
    assert default_converter.from_payloads(complete.complete_workflow_execution.result) == [42]


def test_a_terminated_child_fails_the_parent_with_child_workflow_error_caused_by_terminated_error() -> None:
    h, initiated = _history_with_started_child("AwaitsChild")
    h.completed_workflow_task()
    h.add(
        "ChildWorkflowExecutionTerminated",
        initiated_event_id=initiated,
        workflow_id=CHILD_ID,
        run_id="c-run",
        reason="ops",
    )
    h.workflow_task()

    (fail,) = _instance(AwaitsChild).activate(h.events)

    error = failure_to_error(fail.fail_workflow_execution.failure)
    assert isinstance(error, ChildWorkflowError)
    assert (error.workflow_id, error.run_id, error.initiated_event_id) == (CHILD_ID, "c-run", initiated)
    assert isinstance(error.cause, TerminatedError) and error.cause.message == "ops"


def test_cancelling_a_start_that_was_not_sent_drops_it() -> None:
    h = _History()
    h.started("CancelsBeforeStarting")
    h.workflow_task()
    (complete,) = _instance(CancelsBeforeStarting).activate(h.events)
    assert default_converter.from_payloads(complete.complete_workflow_execution.result) == ["dropped"]


def test_continue_as_new_is_not_swallowed_by_except_exception_and_carries_its_input() -> None:
    h = _History()
    h.started("ContinuesDespiteExceptHandler", 7)
    h.workflow_task()
    (command,) = _instance(ContinuesDespiteExceptHandler).activate(h.events)
    assert _kinds([command]) == ["continue_as_new_workflow_execution"]
    attributes = command.continue_as_new_workflow_execution
    assert attributes.workflow_type == "ContinuesDespiteExceptHandler"
    assert default_converter.from_payloads(attributes.input) == [8]
    assert attributes.workflow_run_timeout.ToTimedelta() == timedelta(minutes=1)


def test_child_workflow_error_survives_a_failure_round_trip_with_its_cause() -> None:
    error = ChildWorkflowError(
        "child workflow 'Child' (id child-1) failed",
        namespace="default",
        workflow_id=CHILD_ID,
        run_id="c-run",
        workflow_type="Child",
        initiated_event_id=5,
        started_event_id=6,
        retry_state=RetryState.NON_RETRYABLE_FAILURE,
    )
    error.__cause__ = ApplicationError("card declined", type="CardDeclined")
    rebuilt = failure_to_error(error_to_failure(error))
    assert isinstance(rebuilt, ChildWorkflowError)
    assert (
        rebuilt.workflow_id,
        rebuilt.run_id,
        rebuilt.workflow_type,
        rebuilt.initiated_event_id,
        rebuilt.started_event_id,
        rebuilt.retry_state,
    ) == (CHILD_ID, "c-run", "Child", 5, 6, RetryState.NON_RETRYABLE_FAILURE)
    assert isinstance(rebuilt.cause, ApplicationError) and rebuilt.cause.type == "CardDeclined"


@workflow.defn
class SignalsChild:
    @workflow.run
    async def run(self) -> str:
        child = await workflow.start_child_workflow(Child.run, 1, id=CHILD_ID)
        await child.signal("nudge", {"n": 1})
        return "signalled"


def test_signalling_a_child_is_a_command_and_its_delivery_resumes_the_parent() -> None:
    h, _ = _history_with_started_child("SignalsChild")
    h.workflow_task()
    (command,) = _instance(SignalsChild).activate(h.events)
    signal = command.signal_external_workflow_execution
    assert (signal.workflow_id, signal.signal_name, signal.child_workflow_only) == (CHILD_ID, "nudge", True)
    assert default_converter.from_payloads(signal.input) == [{"n": 1}]

    h.add("WorkflowTaskCompleted", scheduled_event_id=h.events[-2].event_id, started_event_id=h.events[-1].event_id)
    sent = h.add("SignalExternalWorkflowExecutionInitiated", workflow_id=CHILD_ID, signal_name="nudge")
    h.add("ExternalWorkflowExecutionSignaled", initiated_event_id=sent, workflow_id=CHILD_ID, run_id="c-run")
    h.workflow_task()
    (complete,) = _instance(SignalsChild).activate(h.events)
    assert default_converter.from_payloads(complete.complete_workflow_execution.result) == ["signalled"]
