"""Bad input gets a clear error, changes nothing, and the server keeps serving."""

from __future__ import annotations

from datetime import timedelta

import grpc
import pytest

from flowforge import Client, WorkflowExecutionStatus
from flowforge.exceptions import RPCError
from flowforge.worker import Worker
from tests.integration._processes import ServerProcess
from tests.integration._worker_app import ACTIVITIES, WORKFLOWS, OneStep
from testsupport.waiting import wait_until


async def test_an_unknown_workflow_type_fails_the_workflow_task_visibly_and_is_not_lost(client: Client) -> None:
    handle = await client.start_workflow("NotDeployedYet", {"key": "later"}, id="unknown-type", task_queue="bad-input")
    async with Worker(client, task_queue="bad-input", workflows=WORKFLOWS, activities=ACTIVITIES):

        async def failing_task():
            description = await handle.describe()
            task = description.pending_workflow_task
            return description if task is not None and task.last_failure else None

        description = await wait_until(failing_task, timeout=30, what="the workflow task failure in describe()")
    assert description.status == WorkflowExecutionStatus.RUNNING
    assert "NotDeployedYet" in description.pending_workflow_task.last_failure
    assert "not registered" in description.pending_workflow_task.last_failure
    history = await handle.fetch_history()
    failed = [e for e in history.events if e.event_type == "WorkflowTaskFailed"]
    assert len(failed) == 1 and failed[0].attributes["cause"] == "UNKNOWN_WORKFLOW_TYPE"

    # The fix is deployed: a worker that knows the type picks the execution up.
    @__import__("flowforge").workflow.defn(name="NotDeployedYet")
    class NowDeployed:
        @__import__("flowforge").workflow.run
        async def run(self, params: dict) -> str:
            return f"handled {params['key']}"

    async with Worker(client, task_queue="bad-input", workflows=[NowDeployed]):
        assert await handle.result() == "handled later"


async def test_an_unknown_namespace_is_not_found(server_process: ServerProcess) -> None:
    other = await Client.connect(server_process.address, namespace="no-such-namespace")
    try:
        with pytest.raises(RPCError) as error:
            await other.start_workflow(OneStep.run, {"key": "x"}, id="ns", task_queue="q")
        assert error.value.status == grpc.StatusCode.NOT_FOUND
        assert "no-such-namespace" in error.value.message
    finally:
        await other.close()


async def test_a_payload_over_the_limit_is_refused_and_nothing_is_created(client: Client) -> None:
    with pytest.raises(RPCError) as error:
        await client.start_workflow(OneStep.run, {"key": "x" * (2 * 1024 * 1024 + 10)}, id="huge", task_queue="q")
    assert error.value.status == grpc.StatusCode.INVALID_ARGUMENT
    assert "payload limit" in error.value.message
    with pytest.raises(RPCError) as missing:
        await client.get_workflow_handle("huge").describe()
    assert missing.value.status == grpc.StatusCode.NOT_FOUND
    handle = await client.start_workflow(OneStep.run, {"key": "small"}, id="after-huge", task_queue="q")
    assert (await handle.describe()).status == WorkflowExecutionStatus.RUNNING


async def test_a_second_start_of_a_running_workflow_id_is_already_exists(client: Client) -> None:
    await client.start_workflow(OneStep.run, {"key": "a"}, id="dup", task_queue="q")
    with pytest.raises(RPCError) as error:
        await client.start_workflow(OneStep.run, {"key": "b"}, id="dup", task_queue="q")
    assert error.value.status == grpc.StatusCode.ALREADY_EXISTS


async def test_an_activity_result_over_the_limit_fails_the_attempt_not_the_server(client: Client) -> None:
    from flowforge import activity, workflow

    @activity.defn(name="huge_result")
    async def huge_result() -> str:
        return "y" * (2 * 1024 * 1024 + 10)

    @workflow.defn(name="HugeResult")
    class HugeResult:
        @workflow.run
        async def run(self) -> str:
            from flowforge import RetryPolicy
            from flowforge.exceptions import ActivityError

            try:
                return await workflow.execute_activity(
                    huge_result,
                    start_to_close_timeout=timedelta(seconds=5),
                    retry_policy=RetryPolicy(maximum_attempts=2, initial_interval=timedelta(milliseconds=50)),
                )
            except ActivityError as error:
                return f"refused: {error.cause}"

    async with Worker(client, task_queue="huge", workflows=[HugeResult], activities=[huge_result]):
        handle = await client.start_workflow(HugeResult.run, id="huge-result", task_queue="huge")
        outcome = await handle.result()
    assert outcome.startswith("refused:") and "payload limit" in outcome
