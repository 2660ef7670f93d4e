"""The history server's wire protocol, spoken raw: what each report does to history.

These run a real FlowForgeServer (real gRPC, real store) in-process and drive it
with bare stubs, so they pin the server's behaviour independently of the SDK.
"""

from __future__ import annotations

import asyncio

import grpc
import pytest

from flowforge.api.v1 import common_pb2
from flowforge.api.v1 import workflow_service_pb2 as pb
from tests.integration._protocol import (
    NS,
    Wire,
    assert_gapless,
    complete_workflow,
    event_types,
    schedule_activity,
    seconds,
    start_timer,
)


async def test_start_is_idempotent_by_request_id_and_refuses_a_second_running_execution(wire: Wire) -> None:
    first = await wire.stub.StartWorkflowExecution(
        pb.StartWorkflowExecutionRequest(
            namespace=NS, workflow_id="idem", workflow_type="wf", task_queue="q", request_id="req-1"
        )
    )
    again = await wire.stub.StartWorkflowExecution(
        pb.StartWorkflowExecutionRequest(
            namespace=NS, workflow_id="idem", workflow_type="wf", task_queue="q", request_id="req-1"
        )
    )
    assert (again.run_id, again.started) == (first.run_id, False)
    with pytest.raises(grpc.aio.AioRpcError) as error:
        await wire.start("idem", request_id="req-2")
    assert error.value.code() == grpc.StatusCode.ALREADY_EXISTS
    assert first.run_id in error.value.details()
    assert event_types(await wire.history("idem")) == ["WorkflowExecutionStarted", "WorkflowTaskScheduled"]


async def test_an_activity_round_trip_appends_the_events_in_order(wire: Wire) -> None:
    await wire.start("round-trip")
    task = await wire.poll_workflow_task()
    assert [e.event_type for e in task.history] == [
        "WorkflowExecutionStarted",
        "WorkflowTaskScheduled",
        "WorkflowTaskStarted",
    ]
    await wire.complete_workflow_task(task.task_token, schedule_activity("1", "charge"))
    activity = await wire.poll_activity_task()
    assert (activity.activity_type, activity.attempt) == ("charge", 1)
    await wire.complete_activity(activity.task_token, "charged")
    task = await wire.poll_workflow_task()
    await wire.complete_workflow_task(task.task_token, complete_workflow("done"))
    history = await wire.history("round-trip")
    assert_gapless(history)
    assert event_types(history) == [
        "WorkflowExecutionStarted",
        "WorkflowTaskScheduled",
        "WorkflowTaskStarted",
        "WorkflowTaskCompleted",
        "ActivityTaskScheduled",
        "ActivityTaskStarted",
        "ActivityTaskCompleted",
        "WorkflowTaskScheduled",
        "WorkflowTaskStarted",
        "WorkflowTaskCompleted",
        "WorkflowExecutionCompleted",
    ]
    assert history[6][2]["started_event_id"] == 6 and history[6][2]["scheduled_event_id"] == 5
    assert (await wire.describe("round-trip")).status == common_pb2.WORKFLOW_EXECUTION_STATUS_COMPLETED


async def test_a_second_completion_of_the_same_lease_is_refused_and_changes_nothing(wire: Wire) -> None:
    await wire.start("twice")
    task = await wire.poll_workflow_task()
    await wire.complete_workflow_task(task.task_token, schedule_activity("1"))
    activity = await wire.poll_activity_task()
    await wire.complete_activity(activity.task_token, "first")
    before = await wire.history("twice")
    with pytest.raises(grpc.aio.AioRpcError) as error:
        await wire.complete_activity(activity.task_token, "second")
    assert error.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert await wire.history("twice") == before


@pytest.mark.parametrize("token", [b"", b"garbage", b"ff1.eyJ4IjoxfQ.AAAA"])
async def test_malformed_or_forged_tokens_are_invalid_arguments(wire: Wire, token: bytes) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as error:
        await wire.complete_activity(token, "x")
    assert error.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "task token" in error.value.details()


async def test_an_edited_token_claiming_a_newer_lease_is_rejected_as_forged(wire: Wire) -> None:
    await wire.start("edited")
    task = await wire.poll_workflow_task()
    await wire.complete_workflow_task(task.task_token, schedule_activity("1"))
    activity = await wire.poll_activity_task()
    prefix, key_id, body, mac = activity.task_token.split(b".")
    import base64
    import json

    fields = json.loads(base64.urlsafe_b64decode(body + b"=" * (-len(body) % 4)))
    fields[2] += 1  # the fencing token
    edited_body = base64.urlsafe_b64encode(json.dumps(fields, separators=(",", ":")).encode()).rstrip(b"=")
    with pytest.raises(grpc.aio.AioRpcError) as error:
        await wire.complete_activity(b".".join([prefix, key_id, edited_body, mac]), "x")
    assert error.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    await wire.complete_activity(activity.task_token, "genuine")


async def test_failed_attempts_are_retried_by_the_server_with_backoff_recorded(wire: Wire) -> None:
    await wire.start("retry")
    task = await wire.poll_workflow_task()
    policy = common_pb2.RetryPolicy(initial_interval=seconds(0.05), backoff_coefficient=2.0, maximum_attempts=3)
    await wire.complete_workflow_task(task.task_token, schedule_activity("1", retry=policy))
    for attempt in (1, 2):
        activity = await wire.poll_activity_task()
        assert activity.attempt == attempt
        assert activity.idempotency_key.endswith("/1")
        await wire.fail_activity(activity.task_token, f"attempt {attempt} failed")
    activity = await wire.poll_activity_task()
    assert activity.attempt == 3
    await wire.fail_activity(activity.task_token, "attempt 3 failed")
    task = await wire.poll_workflow_task()
    history = await wire.history("retry")
    started = next(a for _, t, a in history if t == "ActivityTaskStarted")
    failed = next(a for _, t, a in history if t == "ActivityTaskFailed")
    assert started["attempt"] == 3
    assert started["retry_delays"] == [0.05, 0.1]
    assert failed["retry_state"] == "MAXIMUM_ATTEMPTS_REACHED"
    assert failed["failure"]["message"] == "attempt 3 failed"
    assert event_types(history).count("ActivityTaskFailed") == 1


async def test_a_non_retryable_failure_is_final_at_once(wire: Wire) -> None:
    await wire.start("non-retryable")
    task = await wire.poll_workflow_task()
    await wire.complete_workflow_task(task.task_token, schedule_activity("1"))
    activity = await wire.poll_activity_task()
    await wire.fail_activity(activity.task_token, "card declined", non_retryable=True)
    await wire.poll_workflow_task()
    failed = [a for _, t, a in await wire.history("non-retryable") if t == "ActivityTaskFailed"]
    assert [f["retry_state"] for f in failed] == ["NON_RETRYABLE_FAILURE"]


async def test_start_to_close_expiry_gives_the_task_to_a_new_attempt_and_fences_the_old_one(wire: Wire) -> None:
    await wire.start("expiry")
    task = await wire.poll_workflow_task()
    policy = common_pb2.RetryPolicy(initial_interval=seconds(0.01))
    await wire.complete_workflow_task(task.task_token, schedule_activity("1", start_to_close=0.3, retry=policy))
    first = await wire.poll_activity_task()
    second = await wire.poll_activity_task(timeout=15)
    assert (second.attempt, second.idempotency_key) == (2, first.idempotency_key)
    with pytest.raises(grpc.aio.AioRpcError) as error:
        await wire.complete_activity(first.task_token, "late")
    assert error.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    await wire.complete_activity(second.task_token, "on time")
    history = await wire.history("expiry")
    completed = [a for _, t, a in history if t == "ActivityTaskCompleted"]
    assert len(completed) == 1
    started = next(a for _, t, a in history if t == "ActivityTaskStarted")
    assert started["last_failure"]["timeout_type"] == "TIMEOUT_TYPE_START_TO_CLOSE"


async def test_events_arriving_during_a_workflow_task_are_buffered_until_it_closes(wire: Wire) -> None:
    await wire.start("buffered")
    task = await wire.poll_workflow_task()
    await wire.complete_workflow_task(task.task_token, schedule_activity("1"), schedule_activity("2"))
    one, two = await wire.poll_activity_task(), await wire.poll_activity_task()
    await wire.complete_activity(one.task_token, 1)
    task = await wire.poll_workflow_task()  # started: sees activity 1 only
    await wire.complete_activity(two.task_token, 2)
    assert event_types(await wire.history("buffered"))[-1] == "WorkflowTaskStarted"
    await wire.complete_workflow_task(task.task_token)
    types = event_types(await wire.history("buffered"))
    assert types[-5:] == [
        "WorkflowTaskStarted",
        "WorkflowTaskCompleted",
        "ActivityTaskStarted",
        "ActivityTaskCompleted",
        "WorkflowTaskScheduled",
    ]
    next_task = await wire.poll_workflow_task()
    assert next_task.history[-1].event_type == "WorkflowTaskStarted"


async def test_a_failing_workflow_task_is_retried_without_growing_history(wire: Wire) -> None:
    await wire.start("wft-retry", workflow_task_timeout=seconds(30))
    for attempt in (1, 2, 3):
        task = await wire.poll_workflow_task(timeout=20)
        assert task.attempt == attempt
        await wire.stub.RespondWorkflowTaskFailed(
            pb.RespondWorkflowTaskFailedRequest(
                namespace=NS,
                task_token=task.task_token,
                identity="test",
                cause=pb.WORKFLOW_TASK_FAILED_CAUSE_UNKNOWN_WORKFLOW_TYPE,
                failure=common_pb2.Failure(message=f"workflow type 'wf' is not registered (attempt {attempt})"),
            )
        )
    described = await wire.describe("wft-retry")
    assert described.status == common_pb2.WORKFLOW_EXECUTION_STATUS_RUNNING
    assert described.pending_workflow_task.attempt == 4
    assert "not registered (attempt 3)" in described.pending_workflow_task.last_failure.message
    assert event_types(await wire.history("wft-retry")) == [
        "WorkflowExecutionStarted",
        "WorkflowTaskScheduled",
        "WorkflowTaskStarted",
        "WorkflowTaskFailed",
    ]
    task = await wire.poll_workflow_task(timeout=20)
    assert [e.event_id for e in task.history] == [1, 2, 3, 4, 5, 6]
    await wire.complete_workflow_task(task.task_token, complete_workflow("fixed"))
    history = await wire.history("wft-retry")
    assert_gapless(history)
    assert event_types(history)[4:] == [
        "WorkflowTaskScheduled",
        "WorkflowTaskStarted",
        "WorkflowTaskCompleted",
        "WorkflowExecutionCompleted",
    ]


async def test_durable_timer_fires_once_and_schedules_a_workflow_task(wire: Wire) -> None:
    await wire.start("timer")
    task = await wire.poll_workflow_task()
    await wire.complete_workflow_task(task.task_token, start_timer("1", 0.2))
    task = await wire.poll_workflow_task(timeout=15)
    assert [e.event_type for e in task.history][-4:] == [
        "TimerStarted",
        "TimerFired",
        "WorkflowTaskScheduled",
        "WorkflowTaskStarted",
    ]


async def test_eager_dispatch_hands_activity_tasks_back_with_the_completion(wire: Wire) -> None:
    await wire.start("eager")
    task = await wire.poll_workflow_task()
    response = await wire.complete_workflow_task(
        task.task_token, schedule_activity("1"), schedule_activity("2"), schedule_activity("3"), eager=2
    )
    assert [t.activity_id for t in response.activity_tasks] == ["1", "2"]
    polled = await wire.poll_activity_task()
    assert polled.activity_id == "3"
    for leased in (*response.activity_tasks, polled):
        await wire.complete_activity(leased.task_token, leased.activity_id)


async def test_bad_input_is_refused_with_a_clear_error_and_the_server_keeps_serving(wire: Wire) -> None:
    cases = [
        (
            pb.StartWorkflowExecutionRequest(namespace=NS, workflow_type="wf", task_queue="q"),
            grpc.StatusCode.INVALID_ARGUMENT,
            "workflow_id is required",
        ),
        (
            pb.StartWorkflowExecutionRequest(namespace="nope", workflow_id="x", workflow_type="wf", task_queue="q"),
            grpc.StatusCode.NOT_FOUND,
            "namespace 'nope' does not exist",
        ),
    ]
    for request, code, message in cases:
        with pytest.raises(grpc.aio.AioRpcError) as error:
            await wire.stub.StartWorkflowExecution(request)
        assert error.value.code() == code
        assert message in error.value.details()
    with pytest.raises(grpc.aio.AioRpcError) as error:
        await wire.stub.PollActivityTaskQueue(pb.PollActivityTaskQueueRequest(namespace="nope", task_queue="q"))
    assert error.value.code() == grpc.StatusCode.NOT_FOUND
    big = pb.StartWorkflowExecutionRequest(namespace=NS, workflow_id="big", workflow_type="wf", task_queue="q")
    big.input.payloads.add(data=b"x" * (2 * 1024 * 1024 + 1))
    with pytest.raises(grpc.aio.AioRpcError) as error:
        await wire.stub.StartWorkflowExecution(big)
    assert error.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "payload limit" in error.value.details()
    with pytest.raises(grpc.aio.AioRpcError) as error:
        await wire.describe("big")
    assert error.value.code() == grpc.StatusCode.NOT_FOUND
    await wire.start("still-serving")
    assert (await wire.poll_workflow_task()).workflow_execution.workflow_id == "still-serving"


async def test_an_empty_poll_returns_after_its_timeout(wire: Wire) -> None:
    loop = asyncio.get_running_loop()
    began = loop.time()
    response = await wire.poll_activity_task(task_queue="idle", timeout=0.5)
    assert response.task_token == b""
    assert loop.time() - began >= 0.45


async def test_terminate_closes_the_run_and_drops_its_tasks(wire: Wire) -> None:
    await wire.start("terminate")
    task = await wire.poll_workflow_task()
    await wire.complete_workflow_task(task.task_token, schedule_activity("1"))
    activity = await wire.poll_activity_task()
    await wire.stub.TerminateWorkflowExecution(
        pb.TerminateWorkflowExecutionRequest(
            namespace=NS, execution=common_pb2.WorkflowExecution(workflow_id="terminate"), reason="operator said so"
        )
    )
    history = await wire.history("terminate")
    assert history[-1][1:] == ("WorkflowExecutionTerminated", {"identity": "", "reason": "operator said so"})
    with pytest.raises(grpc.aio.AioRpcError) as error:
        await wire.complete_activity(activity.task_token, "too late")
    assert error.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert (await wire.describe("terminate")).status == common_pb2.WORKFLOW_EXECUTION_STATUS_TERMINATED
