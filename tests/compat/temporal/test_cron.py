"""Cron on start, as Temporal's older API does it, under a time-skipping test environment."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from temporalio import activity, workflow
from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.service import RPCError
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

runs: list[str] = []


@activity.defn
async def record_run(what: str) -> None:
    runs.append(what)


@workflow.defn
class Heartbeat:
    @workflow.run
    async def run(self, label: str) -> int:
        assert workflow.info().cron_schedule == "*/5 * * * *"
        assert workflow.get_last_failure() is None
        previous = workflow.get_last_completion_result(int) or 0
        await workflow.execute_activity(record_run, f"{label} {previous}", start_to_close_timeout=timedelta(seconds=10))
        return previous + 1


async def test_cron_schedule_runs_each_time_with_the_same_id_and_input() -> None:
    runs.clear()
    async with await WorkflowEnvironment.start_time_skipping() as env:
        task_queue = f"cron-{uuid.uuid4()}"
        async with Worker(env.client, task_queue=task_queue, workflows=[Heartbeat], activities=[record_run]):
            handle = await env.client.start_workflow(
                Heartbeat.run, "beat", id=f"cron-{uuid.uuid4()}", task_queue=task_queue, cron_schedule="*/5 * * * *"
            )
            await env.sleep(timedelta(minutes=16))
            # The latest run of the chain (the handle names the first one).
            await env.client.get_workflow_handle(handle.id).terminate(reason="enough")
        # Each run saw the previous run's result: 0, 1, 2, ...
        assert len(runs) >= 3 and runs == [f"beat {count}" for count in range(len(runs))]
        executions = [e async for e in env.client.list_workflows(f"WorkflowId = '{handle.id}'")]
        statuses = sorted(e.status for e in executions)
        assert statuses.count(WorkflowExecutionStatus.CONTINUED_AS_NEW) >= 3
        assert statuses.count(WorkflowExecutionStatus.TERMINATED) == 1
        # Each run that ended ran its first workflow task on a five-minute boundary.
        for execution in executions:
            if execution.status != WorkflowExecutionStatus.CONTINUED_AS_NEW:
                continue
            history = await env.client.get_workflow_handle(handle.id, run_id=execution.run_id).fetch_history()
            first_task = next(e for e in history.events if e.event_type == "WorkflowTaskStarted")
            assert first_task.event_time.minute % 5 == 0 and first_task.event_time.second == 0


async def test_a_bad_cron_schedule_is_refused(client: Client) -> None:
    with pytest.raises(RPCError) as refused:
        await client.start_workflow(
            Heartbeat.run, "x", id=f"cron-{uuid.uuid4()}", task_queue="none", cron_schedule="often"
        )
    assert "five-field cron expression" in str(refused.value)
