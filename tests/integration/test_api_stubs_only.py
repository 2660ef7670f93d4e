"""A whole workflow through the generated gRPC stubs alone, as a client in another
language (Go, TypeScript) would drive the API: start, poll the workflow task and
answer it with a ScheduleActivityTask command, poll and complete the activity, poll
the next workflow task and complete the run, then read the result from history.
Nothing of the SDK is used: only ``flowforge.api.v1`` (generated from proto/) and grpc.
Runs against SQLite and PostgreSQL."""

from __future__ import annotations

import base64
import json
import uuid

import grpc
from google.protobuf import duration_pb2

from flowforge.api.v1 import command_pb2, common_pb2, workflow_service_pb2, workflow_service_pb2_grpc
from flowforge.server import FlowForgeServer

NAMESPACE, QUEUE = "default", "stubs-only"


def json_payloads(*values: object) -> common_pb2.Payloads:
    """Values the way every FlowForge SDK encodes them: one json/plain payload each."""
    return common_pb2.Payloads(
        payloads=[common_pb2.Payload(metadata={"encoding": b"json/plain"}, data=json.dumps(v).encode()) for v in values]
    )


def value(payloads: common_pb2.Payloads) -> object:
    (payload,) = payloads.payloads
    assert payload.metadata["encoding"] == b"json/plain"
    return json.loads(payload.data)


async def test_a_whole_workflow_through_the_generated_stubs(server: FlowForgeServer) -> None:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
        api = workflow_service_pb2_grpc.WorkflowServiceStub(channel)  # type: ignore[no-untyped-call]
        poll_timeout = duration_pb2.Duration(seconds=10)

        started = await api.StartWorkflowExecution(
            workflow_service_pb2.StartWorkflowExecutionRequest(
                namespace=NAMESPACE,
                workflow_id="greeting-1",
                workflow_type="Greeting",
                task_queue=QUEUE,
                input=json_payloads("world"),
                request_id=str(uuid.uuid4()),
                identity="stubs-client",
            )
        )
        assert started.started and started.run_id

        # The first workflow task: the workflow decides to run one activity.
        task = await api.PollWorkflowTaskQueue(
            workflow_service_pb2.PollWorkflowTaskQueueRequest(
                namespace=NAMESPACE, task_queue=QUEUE, identity="stubs-worker", poll_timeout=poll_timeout
            )
        )
        assert task.task_token and task.workflow_type == "Greeting"
        assert [e.event_type for e in task.history] == [
            "WorkflowExecutionStarted",
            "WorkflowTaskScheduled",
            "WorkflowTaskStarted",
        ]
        started_attributes = json.loads(task.history[0].attributes_json)
        assert started_attributes["workflow_type"] == "Greeting"
        schedule = command_pb2.Command(
            schedule_activity_task=command_pb2.ScheduleActivityTaskCommandAttributes(
                activity_id="1",
                activity_type="greet",
                task_queue=QUEUE,
                input=json_payloads("world"),
                start_to_close_timeout=duration_pb2.Duration(seconds=10),
            )
        )
        await api.RespondWorkflowTaskCompleted(
            workflow_service_pb2.RespondWorkflowTaskCompletedRequest(
                namespace=NAMESPACE, task_token=task.task_token, commands=[schedule], identity="stubs-worker"
            )
        )

        # The activity.
        activity_task = await api.PollActivityTaskQueue(
            workflow_service_pb2.PollActivityTaskQueueRequest(
                namespace=NAMESPACE, task_queue=QUEUE, identity="stubs-worker", poll_timeout=poll_timeout
            )
        )
        assert activity_task.activity_type == "greet" and activity_task.attempt == 1
        greeting = f"hello {value(activity_task.input)}"
        await api.RespondActivityTaskCompleted(
            workflow_service_pb2.RespondActivityTaskCompletedRequest(
                namespace=NAMESPACE,
                task_token=activity_task.task_token,
                result=json_payloads(greeting),
                identity="stubs-worker",
            )
        )

        # The second workflow task sees the result and completes the run with it.
        task = await api.PollWorkflowTaskQueue(
            workflow_service_pb2.PollWorkflowTaskQueueRequest(
                namespace=NAMESPACE, task_queue=QUEUE, identity="stubs-worker", poll_timeout=poll_timeout
            )
        )
        completed = [e for e in task.history if e.event_type == "ActivityTaskCompleted"]
        assert len(completed) == 1
        result = json.loads(completed[0].attributes_json)["result"]
        complete = command_pb2.Command(
            complete_workflow_execution=command_pb2.CompleteWorkflowExecutionCommandAttributes(
                result=json_payloads(f"{greeting}!")
            )
        )
        await api.RespondWorkflowTaskCompleted(
            workflow_service_pb2.RespondWorkflowTaskCompletedRequest(
                namespace=NAMESPACE, task_token=task.task_token, commands=[complete], identity="stubs-worker"
            )
        )

        # The result, from the run's history and its description.
        execution = common_pb2.WorkflowExecution(workflow_id="greeting-1", run_id=started.run_id)
        history = await api.GetWorkflowExecutionHistory(
            workflow_service_pb2.GetWorkflowExecutionHistoryRequest(namespace=NAMESPACE, execution=execution)
        )
        events = list(history.events)
        assert [e.event_id for e in events] == list(range(1, len(events) + 1))
        assert events[-1].event_type == "WorkflowExecutionCompleted"
        described = await api.DescribeWorkflowExecution(
            workflow_service_pb2.DescribeWorkflowExecutionRequest(namespace=NAMESPACE, execution=execution)
        )
        assert described.status == common_pb2.WORKFLOW_EXECUTION_STATUS_COMPLETED
    closing = json.loads(events[-1].attributes_json)
    assert result and closing["result"]
    (payload,) = closing["result"]["payloads"]
    assert json.loads(base64_data(payload)) == "hello world!"


def base64_data(payload_json: dict[str, str]) -> bytes:
    """A payload's data from its protobuf-JSON form (history attributes are JSON)."""
    return base64.b64decode(payload_json["data"])
