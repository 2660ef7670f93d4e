"""Child workflows, end to end against a real server on SQLite and PostgreSQL.

- ``workflow.execute_child_workflow`` returns the child's result; a child that fails
  surfaces in the parent as ``ChildWorkflowError`` whose cause is the child's failure.
- The child's run is created in the transaction that records
  ``StartChildWorkflowExecutionInitiated`` in the parent; its close delivers
  ``ChildWorkflowExecution*`` to the parent in the transaction that closes it.
- When the parent closes, each pending child gets its parent close policy:
  TERMINATE (default), ABANDON or REQUEST_CANCEL.
- Cancelling the task awaiting a child asks the child to cancel.
- A child id that already has a running execution gives ``StartChildWorkflowExecutionFailed``
  and a ``ChildWorkflowError`` naming the id; malformed commands are ``INVALID_ARGUMENT``.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from datetime import timedelta

import grpc
import pytest

from flowforge import Client, RetryPolicy, WorkflowExecutionStatus, activity, workflow
from flowforge.api.v1 import command_pb2
from flowforge.exceptions import ApplicationError, ChildWorkflowError, RetryState, WorkflowFailureError
from flowforge.server import FlowForgeServer
from flowforge.workflow import ParentClosePolicy
from tests.integration._processes import ServerProcess
from tests.integration._protocol import Wire, seconds
from tests.integration._reliability import DEADLINE_S, assert_gapless, events, fast_worker, of_type
from testsupport.waiting import wait_until

QUEUE = "children"


@workflow.defn
class Greeter:
    @workflow.run
    async def run(self, name: str) -> dict:
        info = workflow.info()
        return {"greeting": f"hello {name}", "parent": info.parent.workflow_id if info.parent else None}


@workflow.defn
class Declines:
    @workflow.run
    async def run(self, amount: int) -> None:
        raise ApplicationError(f"card declined for {amount}", "insufficient funds", type="CardDeclined")


@workflow.defn
class WaitsForever:
    """Waits until cancelled; returns how it ended when it is."""

    @workflow.run
    async def run(self) -> str:
        await workflow.wait_condition(lambda: False)
        return "unreachable"


@workflow.defn
class AwaitsSignal:
    def __init__(self) -> None:
        self.received: list[str] = []

    @workflow.signal
    def go(self, value: str) -> None:
        self.received.append(value)

    @workflow.run
    async def run(self) -> list:
        await workflow.wait_condition(lambda: bool(self.received))
        return self.received


@workflow.defn
class FlakyUntilThirdAttempt:
    @workflow.run
    async def run(self) -> int:
        info = workflow.info()
        if info.attempt >= 3:
            return info.attempt
        raise ApplicationError(f"attempt {info.attempt} failed", type="Flaky")


@workflow.defn
class RetriesChildren:
    @workflow.run
    async def run(self, maximum_attempts: int) -> dict:
        policy = RetryPolicy(initial_interval=timedelta(seconds=0.1), maximum_attempts=maximum_attempts)
        child_id = f"{workflow.info().workflow_id}-child"
        try:
            return {
                "attempt": await workflow.execute_child_workflow(
                    FlakyUntilThirdAttempt.run, id=child_id, retry_policy=policy
                )
            }
        except ChildWorkflowError as error:
            return {"error": error.cause.message, "retry_state": error.retry_state.name}


@workflow.defn
class Parent:
    @workflow.run
    async def run(self, request: dict) -> dict:
        if request["mode"] == "greet":
            result = await workflow.execute_child_workflow(Greeter.run, "ada", id=f"{request['id']}-child")
            return {"child": result}
        if request["mode"] == "fail":
            await workflow.execute_child_workflow(Declines.run, 42, id=f"{request['id']}-child")
            return {}
        if request["mode"] == "collide":
            try:
                await workflow.execute_child_workflow(Greeter.run, "me", id=workflow.info().workflow_id)
            except ChildWorkflowError as error:
                return {"error": str(error), "cause": str(error.cause), "cause_type": error.cause.type}
            return {}
        if request["mode"] == "cancel-child":
            child = await workflow.start_child_workflow(WaitsForever.run, id=f"{request['id']}-child")
            child.cancel()
            try:
                await child
            except asyncio.CancelledError as cancelled:
                return {"child": "cancelled", "run_id": child.first_execution_run_id, "cause": str(cancelled.__cause__)}
            return {}
        if request["mode"] == "signal-child":
            child = await workflow.start_child_workflow(AwaitsSignal.run, id=f"{request['id']}-child")
            await child.signal(AwaitsSignal.go, "go ahead")
            received = await child
            try:
                await child.signal("go", "too late")
            except ApplicationError as error:
                return {"received": received, "late": error.type, "message": str(error)}
            return {}
        # "policies": start one child per policy, then wait to be terminated.
        for policy in ParentClosePolicy:
            await workflow.start_child_workflow(
                WaitsForever.run, id=f"{request['id']}-{policy.name.lower()}", parent_close_policy=policy
            )
        await workflow.wait_condition(lambda: False)
        return {}


WORKFLOWS = [Parent, Greeter, Declines, WaitsForever, AwaitsSignal, FlakyUntilThirdAttempt, RetriesChildren]


async def test_a_child_result_returns_to_the_parent_and_each_knows_the_other(sdk_client: Client) -> None:
    async with fast_worker(sdk_client, QUEUE, workflows=WORKFLOWS):
        handle = await sdk_client.start_workflow(Parent.run, {"mode": "greet", "id": "p1"}, id="p1", task_queue=QUEUE)
        assert await handle.result() == {"child": {"greeting": "hello ada", "parent": "p1"}}

    history = await events(handle)
    assert_gapless(history)
    initiated, started, completed = of_type(
        history,
        "StartChildWorkflowExecutionInitiated",
        "ChildWorkflowExecutionStarted",
        "ChildWorkflowExecutionCompleted",
    )
    assert initiated.attributes["workflow_id"] == "p1-child" and initiated.attributes["workflow_type"] == "Greeter"
    assert initiated.attributes["parent_close_policy"] == "TERMINATE"
    assert started.attributes["initiated_event_id"] == completed.attributes["initiated_event_id"] == initiated.event_id
    child = await sdk_client.get_workflow_handle("p1-child").describe()
    assert child.status is WorkflowExecutionStatus.COMPLETED
    assert (child.parent_workflow_id, child.parent_run_id) == ("p1", handle.run_id)
    assert started.attributes["run_id"] == completed.attributes["run_id"] == child.run_id
    assert (await sdk_client.get_workflow_handle("p1").describe()).pending_children == []


async def test_a_child_failure_surfaces_in_the_parent_as_child_workflow_error_with_its_cause(
    sdk_client: Client,
) -> None:
    async with fast_worker(sdk_client, QUEUE, workflows=WORKFLOWS):
        handle = await sdk_client.start_workflow(Parent.run, {"mode": "fail", "id": "p2"}, id="p2", task_queue=QUEUE)
        with pytest.raises(WorkflowFailureError) as failure:
            await handle.result()

    error = failure.value.cause
    assert isinstance(error, ChildWorkflowError)
    assert (error.workflow_id, error.workflow_type) == ("p2-child", "Declines")
    assert "failed" in str(error)
    cause = error.cause
    assert isinstance(cause, ApplicationError)
    assert (cause.message, cause.type, list(cause.details)) == (
        "card declined for 42",
        "CardDeclined",
        ["insufficient funds"],
    )
    (failed,) = of_type(await events(handle), "ChildWorkflowExecutionFailed")
    assert failed.attributes["failure"]["message"] == "card declined for 42"
    child = await sdk_client.get_workflow_handle("p2-child").describe()
    assert child.status is WorkflowExecutionStatus.FAILED


async def test_each_parent_close_policy_is_applied_when_the_parent_closes(sdk_client: Client) -> None:
    async with fast_worker(sdk_client, QUEUE, workflows=WORKFLOWS):
        handle = await sdk_client.start_workflow(
            Parent.run, {"mode": "policies", "id": "p3"}, id="p3", task_queue=QUEUE
        )

        async def all_started() -> list:
            pending = (await handle.describe()).pending_children
            return pending if len(pending) == 3 else []

        pending = await wait_until(all_started, timeout=DEADLINE_S, what="three pending children")
        assert {(c.workflow_id, c.parent_close_policy) for c in pending} == {
            ("p3-terminate", ParentClosePolicy.TERMINATE),
            ("p3-abandon", ParentClosePolicy.ABANDON),
            ("p3-request_cancel", ParentClosePolicy.REQUEST_CANCEL),
        }
        await handle.terminate("enough")

        async def status(workflow_id: str) -> WorkflowExecutionStatus:
            return (await sdk_client.get_workflow_handle(workflow_id).describe()).status

        assert await status("p3-terminate") is WorkflowExecutionStatus.TERMINATED
        # The cancel request is delivered at once; the child's code then ends it.
        await wait_until(
            lambda: _is(status("p3-request_cancel"), WorkflowExecutionStatus.CANCELED),
            timeout=DEADLINE_S,
            what="the REQUEST_CANCEL child to cancel",
        )
        assert await status("p3-abandon") is WorkflowExecutionStatus.RUNNING
        terminated = of_type(
            await events(sdk_client.get_workflow_handle("p3-terminate")), "WorkflowExecutionTerminated"
        )
        assert "parent p3 closed" in terminated[0].attributes["reason"]
        assert (await handle.describe()).pending_children == []
        await sdk_client.get_workflow_handle("p3-abandon").terminate("cleanup")


async def _is(value, expected) -> bool:  # type: ignore[no-untyped-def]
    return (await value) is expected


async def test_cancelling_the_task_awaiting_a_child_cancels_the_child(sdk_client: Client) -> None:
    async with fast_worker(sdk_client, QUEUE, workflows=WORKFLOWS):
        handle = await sdk_client.start_workflow(
            Parent.run, {"mode": "cancel-child", "id": "p4"}, id="p4", task_queue=QUEUE
        )
        result = await handle.result()
    child = await sdk_client.get_workflow_handle("p4-child").describe()
    assert child.status is WorkflowExecutionStatus.CANCELED
    assert result["child"] == "cancelled" and result["run_id"] == child.run_id
    assert "was cancelled" in result["cause"]
    history = await events(handle)
    assert [
        e.event_type
        for e in of_type(history, "RequestCancelExternalWorkflowExecutionInitiated", "ChildWorkflowExecutionCanceled")
    ] == ["RequestCancelExternalWorkflowExecutionInitiated", "ChildWorkflowExecutionCanceled"]


async def test_a_parent_signals_its_child_and_a_closed_child_cannot_be_signalled(sdk_client: Client) -> None:
    async with fast_worker(sdk_client, QUEUE, workflows=WORKFLOWS):
        handle = await sdk_client.start_workflow(
            Parent.run, {"mode": "signal-child", "id": "p6"}, id="p6", task_queue=QUEUE
        )
        result = await handle.result()
    assert result["received"] == ["go ahead"]
    assert result["late"] == "ExternalWorkflowExecutionNotFound" and "'p6-child'" in result["message"]
    history = await events(handle)
    assert [
        e.event_type
        for e in of_type(
            history,
            "SignalExternalWorkflowExecutionInitiated",
            "ExternalWorkflowExecutionSignaled",
            "SignalExternalWorkflowExecutionFailed",
        )
    ] == [
        "SignalExternalWorkflowExecutionInitiated",
        "ExternalWorkflowExecutionSignaled",
        "SignalExternalWorkflowExecutionInitiated",
        "SignalExternalWorkflowExecutionFailed",
    ]
    (signaled,) = of_type(await events(sdk_client.get_workflow_handle("p6-child")), "WorkflowExecutionSignaled")
    assert signaled.attributes["signal_name"] == "go" and signaled.attributes["identity"] == "parent p6"


async def test_a_child_with_a_retry_policy_runs_again_until_it_succeeds_or_the_attempts_run_out(
    sdk_client: Client,
) -> None:
    async with fast_worker(sdk_client, QUEUE, workflows=WORKFLOWS):
        enough = await sdk_client.start_workflow(RetriesChildren.run, 5, id="r1", task_queue=QUEUE)
        too_few = await sdk_client.start_workflow(RetriesChildren.run, 2, id="r2", task_queue=QUEUE)
        assert await enough.result() == {"attempt": 3}
        assert await too_few.result() == {"error": "attempt 2 failed", "retry_state": "MAXIMUM_ATTEMPTS_REACHED"}

    runs = sorted([r async for r in sdk_client.list_workflows(workflow_id="r1-child")], key=lambda r: r.start_time)
    assert [r.status.name for r in runs] == ["FAILED", "FAILED", "COMPLETED"]
    third = (await events(sdk_client.get_workflow_handle("r1-child", run_id=runs[2].run_id)))[0].attributes
    assert (third["attempt"], third["continued_execution_run_id"], third["parent_workflow_id"]) == (
        3,
        runs[1].run_id,
        "r1",
    )
    # The parent saw one start and one outcome, whatever the number of attempts.
    history = await events(enough)
    assert len(of_type(history, "ChildWorkflowExecutionStarted")) == 1
    (completed,) = of_type(history, "ChildWorkflowExecutionCompleted")
    assert completed.attributes["run_id"] == runs[2].run_id
    (failed,) = of_type(await events(too_few), "ChildWorkflowExecutionFailed")
    assert failed.attributes["retry_state"] == RetryState.MAXIMUM_ATTEMPTS_REACHED.name


async def test_a_child_id_that_is_already_running_gives_a_clear_child_workflow_error(sdk_client: Client) -> None:
    async with fast_worker(sdk_client, QUEUE, workflows=WORKFLOWS):
        handle = await sdk_client.start_workflow(Parent.run, {"mode": "collide", "id": "p5"}, id="p5", task_queue=QUEUE)
        result = await handle.result()
    assert result["cause_type"] == "WorkflowAlreadyStartedError"
    assert "'p5' already has a running execution" in result["cause"]
    assert "could not start" in result["error"]
    (failed,) = of_type(await events(handle), "StartChildWorkflowExecutionFailed")
    assert failed.attributes["cause"] == "WORKFLOW_ALREADY_EXISTS"
    executions = [e async for e in sdk_client.list_workflows(workflow_id="p5")]
    assert len(executions) == 1  # nothing was created for the refused child


@pytest.mark.parametrize(
    ("command", "message"),
    [
        (command_pb2.StartChildWorkflowExecutionCommandAttributes(workflow_type="Child"), "workflow_id is required"),
        (command_pb2.StartChildWorkflowExecutionCommandAttributes(workflow_id="c"), "workflow_type is required"),
        (
            command_pb2.StartChildWorkflowExecutionCommandAttributes(
                workflow_id="c", workflow_type="Child", parent_close_policy=9
            ),
            "parent_close_policy",
        ),
        (
            command_pb2.StartChildWorkflowExecutionCommandAttributes(
                workflow_id="c", workflow_type="Child", workflow_run_timeout=seconds(-1)
            ),
            "must not be negative",
        ),
        (command_pb2.RequestCancelExternalWorkflowExecutionCommandAttributes(workflow_id="c"), "own children"),
        (
            command_pb2.SignalExternalWorkflowExecutionCommandAttributes(workflow_id="c", child_workflow_only=True),
            "signal_name is required",
        ),
        (
            command_pb2.SignalExternalWorkflowExecutionCommandAttributes(workflow_id="c", signal_name="s"),
            "own children",
        ),
        (
            command_pb2.ContinueAsNewWorkflowExecutionCommandAttributes(workflow_task_timeout=seconds(-1)),
            "workflow_task_timeout must not be negative",
        ),
        (command_pb2.ContinueAsNewWorkflowExecutionCommandAttributes(task_queue="q\n"), "control characters"),
    ],
    ids=[
        "no-id",
        "no-type",
        "bad-policy",
        "negative-timeout",
        "not-child-only",
        "signal-no-name",
        "signal-not-child-only",
        "continue-negative-timeout",
        "continue-bad-queue",
    ],
)
async def test_malformed_child_commands_are_invalid_argument_and_change_nothing(
    server: FlowForgeServer, command: object, message: str
) -> None:
    wire = Wire(f"127.0.0.1:{server.port}")
    try:
        await wire.start("bad-child")
        task = await wire.poll_workflow_task()
        field = {
            command_pb2.StartChildWorkflowExecutionCommandAttributes: "start_child_workflow_execution",
            command_pb2.RequestCancelExternalWorkflowExecutionCommandAttributes: "request_cancel_external_workflow_execution",
            command_pb2.SignalExternalWorkflowExecutionCommandAttributes: "signal_external_workflow_execution",
            command_pb2.ContinueAsNewWorkflowExecutionCommandAttributes: "continue_as_new_workflow_execution",
        }[type(command)]
        with pytest.raises(grpc.aio.AioRpcError) as error:
            await wire.complete_workflow_task(task.task_token, command_pb2.Command(**{field: command}))
        assert error.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert message in error.value.details()
        history = await wire.history("bad-child")
        assert [t for _, t, _ in history] == [
            "WorkflowExecutionStarted",
            "WorkflowTaskScheduled",
            "WorkflowTaskStarted",
        ]
        assert (await wire.describe("bad-child")).status == 1  # still RUNNING: nothing changed
    finally:
        await wire.close()


# ---- kill -9 of the server while children run

ran: Counter[str] = Counter()
# A workflow task leased when the server died is handed out again after this.
WFT_TIMEOUT = timedelta(seconds=2)


@activity.defn
async def charge(key: str) -> str:
    await asyncio.sleep(0.3)
    ran[key] += 1
    return f"charged {key}"


@workflow.defn
class ChargeOne:
    @workflow.run
    async def run(self, key: str) -> str:
        return await workflow.execute_activity(charge, key, start_to_close_timeout=timedelta(seconds=10))


@workflow.defn
class ChargeMany:
    @workflow.run
    async def run(self, count: int) -> list:
        info = workflow.info()
        return list(
            await asyncio.gather(
                *(
                    workflow.execute_child_workflow(
                        ChargeOne.run, f"{info.workflow_id}-{i}", id=f"{info.workflow_id}-{i}", task_timeout=WFT_TIMEOUT
                    )
                    for i in range(count)
                )
            )
        )


async def test_a_server_killed_while_children_run_completes_everything_exactly_once(
    server_process: ServerProcess,
) -> None:
    ran.clear()
    client = await Client.connect(server_process.address)
    try:
        async with fast_worker(client, QUEUE, workflows=[ChargeMany, ChargeOne], activities=[charge]):
            handles = [
                await client.start_workflow(
                    ChargeMany.run, 4, id=f"many-{n}", task_queue=QUEUE, task_timeout=WFT_TIMEOUT
                )
                for n in range(3)
            ]
            await wait_until(lambda: sum(ran.values()) >= 3, timeout=60, what="some children to charge")
            server_process.kill9()
            server_process.start()
            results = [await handle.result() for handle in handles]
        assert results == [[f"charged many-{n}-{i}" for i in range(4)] for n in range(3)]
        for n, handle in enumerate(handles):
            history = await events(handle)
            assert_gapless(history)
            types = Counter(e.event_type for e in history)
            assert types["StartChildWorkflowExecutionInitiated"] == types["ChildWorkflowExecutionStarted"] == 4
            assert types["ChildWorkflowExecutionCompleted"] == 4
            for i in range(4):
                child_history = await events(client.get_workflow_handle(f"many-{n}-{i}"))
                child_types = Counter(e.event_type for e in child_history)
                assert child_types["WorkflowExecutionStarted"] == child_types["WorkflowExecutionCompleted"] == 1
        # A charge may run twice only if the kill cut its report short; never more.
        assert set(ran) == {f"many-{n}-{i}" for n in range(3) for i in range(4)}
        assert max(ran.values()) <= 2
        assert len([e async for e in client.list_workflows()]) == 3 + 12
    finally:
        await client.close()
