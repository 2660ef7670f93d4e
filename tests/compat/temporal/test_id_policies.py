"""Workflow id reuse and conflict policies on start, as Temporal code sets them."""

from __future__ import annotations

import uuid

import pytest
from temporalio import workflow
from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.worker import Worker


@workflow.defn
class Parked:
    def __init__(self) -> None:
        self.release = False

    @workflow.run
    async def run(self, label: str) -> str:
        await workflow.wait_condition(lambda: self.release)
        return label

    @workflow.signal
    def go(self) -> None:
        self.release = True


async def test_conflict_policies(client: Client) -> None:
    task_queue = f"ids-{uuid.uuid4()}"
    workflow_id = f"parked-{uuid.uuid4()}"
    async with Worker(client, task_queue=task_queue, workflows=[Parked]):
        first = await client.start_workflow(Parked.run, "first", id=workflow_id, task_queue=task_queue)
        with pytest.raises(WorkflowAlreadyStartedError):
            await client.start_workflow(Parked.run, "again", id=workflow_id, task_queue=task_queue)
        existing = await client.start_workflow(
            Parked.run,
            "again",
            id=workflow_id,
            task_queue=task_queue,
            id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
        )
        assert existing.run_id == first.run_id
        replacement = await client.start_workflow(
            Parked.run,
            "second",
            id=workflow_id,
            task_queue=task_queue,
            id_conflict_policy=WorkflowIDConflictPolicy.TERMINATE_EXISTING,
        )
        assert replacement.run_id != first.run_id
        assert (await first.describe()).status == WorkflowExecutionStatus.TERMINATED
        await replacement.signal(Parked.go)
        assert await replacement.result() == "second"


async def test_reuse_policies(client: Client) -> None:
    task_queue = f"ids-{uuid.uuid4()}"
    workflow_id = f"parked-{uuid.uuid4()}"
    async with Worker(client, task_queue=task_queue, workflows=[Parked]):
        done = await client.start_workflow(Parked.run, "done", id=workflow_id, task_queue=task_queue)
        await done.signal(Parked.go)
        await done.result()
        for policy in (WorkflowIDReusePolicy.REJECT_DUPLICATE, WorkflowIDReusePolicy.ALLOW_DUPLICATE_FAILED_ONLY):
            with pytest.raises(WorkflowAlreadyStartedError):
                await client.start_workflow(
                    Parked.run, "no", id=workflow_id, task_queue=task_queue, id_reuse_policy=policy
                )
        again = await client.start_workflow(
            Parked.run,
            "yes",
            id=workflow_id,
            task_queue=task_queue,
            id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
        )
        await again.signal(Parked.go)
        assert await again.result() == "yes"
