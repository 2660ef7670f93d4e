"""Raw gRPC helpers for tests that speak the wire protocol directly (no SDK)."""

from __future__ import annotations

import json
from typing import Any

import grpc
from google.protobuf import duration_pb2

from flowforge.api.v1 import command_pb2, common_pb2, workflow_service_pb2_grpc
from flowforge.api.v1 import workflow_service_pb2 as pb
from flowforge.converter import default_converter

NS = "default"


def seconds(value: float) -> duration_pb2.Duration:
    d = duration_pb2.Duration()
    d.FromMicroseconds(int(value * 1e6))
    return d


def schedule_activity(
    activity_id: str,
    activity_type: str = "act",
    *,
    start_to_close: float = 30.0,
    retry: common_pb2.RetryPolicy | None = None,
    **extra: Any,
) -> command_pb2.Command:
    attributes = command_pb2.ScheduleActivityTaskCommandAttributes(
        activity_id=activity_id,
        activity_type=activity_type,
        input=default_converter.to_payloads([activity_id]),
        start_to_close_timeout=seconds(start_to_close),
        **extra,
    )
    if retry is not None:
        attributes.retry_policy.CopyFrom(retry)
    return command_pb2.Command(schedule_activity_task=attributes)


def start_timer(timer_id: str, after: float) -> command_pb2.Command:
    return command_pb2.Command(
        start_timer=command_pb2.StartTimerCommandAttributes(timer_id=timer_id, start_to_fire_timeout=seconds(after))
    )


def complete_workflow(value: Any) -> command_pb2.Command:
    return command_pb2.Command(
        complete_workflow_execution=command_pb2.CompleteWorkflowExecutionCommandAttributes(
            result=default_converter.to_payloads([value])
        )
    )


class Wire:
    """A stub plus the calls tests make over and over."""

    def __init__(self, target: str) -> None:
        self.channel = grpc.aio.insecure_channel(
            target, options=[("grpc.max_send_message_length", 64 << 20), ("grpc.max_receive_message_length", 64 << 20)]
        )
        self.stub = workflow_service_pb2_grpc.WorkflowServiceStub(self.channel)

    async def close(self) -> None:
        await self.channel.close()

    async def start(self, workflow_id: str, task_queue: str = "q", **extra: Any) -> str:
        response = await self.stub.StartWorkflowExecution(
            pb.StartWorkflowExecutionRequest(
                namespace=NS,
                workflow_id=workflow_id,
                workflow_type="wf",
                task_queue=task_queue,
                input=default_converter.to_payloads([workflow_id]),
                **extra,
            )
        )
        return response.run_id

    async def poll_workflow_task(
        self, task_queue: str = "q", timeout: float = 10.0
    ) -> pb.PollWorkflowTaskQueueResponse:
        return await self.stub.PollWorkflowTaskQueue(
            pb.PollWorkflowTaskQueueRequest(
                namespace=NS, task_queue=task_queue, identity="test", poll_timeout=seconds(timeout)
            )
        )

    async def poll_activity_task(
        self, task_queue: str = "q", timeout: float = 10.0
    ) -> pb.PollActivityTaskQueueResponse:
        return await self.stub.PollActivityTaskQueue(
            pb.PollActivityTaskQueueRequest(
                namespace=NS, task_queue=task_queue, identity="test", poll_timeout=seconds(timeout)
            )
        )

    async def complete_workflow_task(
        self, token: bytes, *commands: command_pb2.Command, eager: int = 0
    ) -> pb.RespondWorkflowTaskCompletedResponse:
        return await self.stub.RespondWorkflowTaskCompleted(
            pb.RespondWorkflowTaskCompletedRequest(
                namespace=NS, task_token=token, commands=list(commands), identity="test", eager_activity_slots=eager
            )
        )

    async def complete_activity(self, token: bytes, value: Any) -> None:
        await self.stub.RespondActivityTaskCompleted(
            pb.RespondActivityTaskCompletedRequest(
                namespace=NS, task_token=token, result=default_converter.to_payloads([value]), identity="test"
            )
        )

    async def fail_activity(
        self, token: bytes, message: str, *, error_type: str = "Boom", non_retryable: bool = False
    ) -> None:
        await self.stub.RespondActivityTaskFailed(
            pb.RespondActivityTaskFailedRequest(
                namespace=NS,
                task_token=token,
                identity="test",
                failure=common_pb2.Failure(message=message, type=error_type, non_retryable=non_retryable),
            )
        )

    async def history(self, workflow_id: str) -> list[tuple[int, str, dict[str, Any]]]:
        response = await self.stub.GetWorkflowExecutionHistory(
            pb.GetWorkflowExecutionHistoryRequest(
                namespace=NS, execution=common_pb2.WorkflowExecution(workflow_id=workflow_id)
            )
        )
        return [(e.event_id, e.event_type, json.loads(e.attributes_json)) for e in response.events]

    async def describe(self, workflow_id: str) -> pb.DescribeWorkflowExecutionResponse:
        return await self.stub.DescribeWorkflowExecution(
            pb.DescribeWorkflowExecutionRequest(
                namespace=NS, execution=common_pb2.WorkflowExecution(workflow_id=workflow_id)
            )
        )


def event_types(history: list[tuple[int, str, dict[str, Any]]]) -> list[str]:
    return [event_type for _, event_type, _ in history]


def assert_gapless(history: list[tuple[int, str, dict[str, Any]]]) -> None:
    assert [event_id for event_id, _, _ in history] == list(range(1, len(history) + 1))
