"""Worker interceptors under Temporal's interface."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

from temporalio import activity, workflow
from temporalio.client import Client
from temporalio.worker import (
    ActivityInboundInterceptor,
    ExecuteActivityInput,
    ExecuteWorkflowInput,
    Interceptor,
    Worker,
    WorkflowInboundInterceptor,
    WorkflowInterceptorClassInput,
)

observed: list[str] = []


class Auditing(Interceptor):
    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return AuditingActivity(next)

    def workflow_interceptor_class(self, input: WorkflowInterceptorClassInput) -> type[WorkflowInboundInterceptor]:
        return AuditingWorkflow


class AuditingActivity(ActivityInboundInterceptor):
    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        observed.append(f"activity {input.args[0]}")
        return await super().execute_activity(input)


class AuditingWorkflow(WorkflowInboundInterceptor):
    async def execute_workflow(self, input: ExecuteWorkflowInput) -> Any:
        if not workflow.unsafe.is_replaying():
            observed.append(f"workflow {input.args[0]}")
        return await super().execute_workflow(input)


@activity.defn
async def shout(text: str) -> str:
    return text.upper()


@workflow.defn
class Shouter:
    @workflow.run
    async def run(self, text: str) -> str:
        return await workflow.execute_activity(shout, text, start_to_close_timeout=timedelta(seconds=10))


async def test_worker_interceptors_see_workflows_and_activities(client: Client) -> None:
    observed.clear()
    task_queue = f"intercepted-{uuid.uuid4()}"
    async with Worker(
        client, task_queue=task_queue, workflows=[Shouter], activities=[shout], interceptors=[Auditing()]
    ):
        assert (
            await client.execute_workflow(Shouter.run, "hi", id=f"shout-{uuid.uuid4()}", task_queue=task_queue) == "HI"
        )
    assert observed == ["workflow hi", "activity hi"]
