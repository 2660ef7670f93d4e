"""Errors as Temporal code raises and inspects them."""

from __future__ import annotations

import logging
import time
import uuid
from datetime import timedelta

import pytest
from temporalio import activity, workflow
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowFailureError
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError, ApplicationErrorCategory
from temporalio.worker import Worker

attempts: dict[str, int] = {}


@activity.defn
async def wait_until_ready(key: str) -> int:
    attempts[key] = attempts.get(key, 0) + 1
    if attempts[key] < 3:
        raise ApplicationError(
            "not ready yet",
            category=ApplicationErrorCategory.BENIGN,
            next_retry_delay=timedelta(milliseconds=50),
        )
    return attempts[key]


@activity.defn
async def charge_card(amount: int) -> None:
    raise ApplicationError("card declined", {"amount": amount}, type="CardDeclined", non_retryable=True)


@workflow.defn
class PollUntilReady:
    @workflow.run
    async def run(self, key: str) -> int:
        return await workflow.execute_activity(
            wait_until_ready,
            key,
            start_to_close_timeout=timedelta(seconds=10),
            # Without next_retry_delay the second attempt would wait a minute.
            retry_policy=RetryPolicy(initial_interval=timedelta(minutes=1)),
        )


@workflow.defn
class Charge:
    @workflow.run
    async def run(self, amount: int) -> None:
        await workflow.execute_activity(charge_card, amount, start_to_close_timeout=timedelta(seconds=10))


async def test_next_retry_delay_and_a_benign_category_are_honoured(
    client: Client, caplog: pytest.LogCaptureFixture
) -> None:
    task_queue = f"errors-{uuid.uuid4()}"
    key = str(uuid.uuid4())
    caplog.set_level(logging.DEBUG)
    async with Worker(client, task_queue=task_queue, workflows=[PollUntilReady], activities=[wait_until_ready]):
        began = time.monotonic()
        result = await client.execute_workflow(PollUntilReady.run, key, id=f"poll-{key}", task_queue=task_queue)
    assert result == 3
    assert time.monotonic() - began < 30
    failed_logs = [r for r in caplog.records if "failed" in r.getMessage() and "wait_until_ready" in r.getMessage()]
    assert len(failed_logs) == 2
    assert {r.levelno for r in failed_logs} == {logging.DEBUG}


async def test_failure_carries_the_remote_stack_trace_and_describe_uses_temporal_names(client: Client) -> None:
    task_queue = f"errors-{uuid.uuid4()}"
    async with Worker(client, task_queue=task_queue, workflows=[Charge], activities=[charge_card]):
        handle = await client.start_workflow(Charge.run, 42, id=f"charge-{uuid.uuid4()}", task_queue=task_queue)
        with pytest.raises(WorkflowFailureError) as raised:
            await handle.result()
    activity_error = raised.value.cause
    assert isinstance(activity_error, ActivityError)
    declined = activity_error.cause
    assert isinstance(declined, ApplicationError)
    assert (declined.type, declined.non_retryable, list(declined.details)) == ("CardDeclined", True, [{"amount": 42}])
    assert declined.category == ApplicationErrorCategory.UNSPECIFIED
    assert declined.failure is not None
    assert "in charge_card" in declined.failure.stack_trace
    assert 'raise ApplicationError("card declined"' in declined.failure.stack_trace

    description = await handle.describe()
    assert (description.id, description.run_id, description.parent_id) == (handle.id, handle.run_id, None)
    assert description.status == WorkflowExecutionStatus.FAILED
    assert description.raw_description is not None
    async for execution in client.list_workflows(f"WorkflowId = '{handle.id}'"):
        assert (execution.id, execution.raw_info.execution.run_id) == (handle.id, handle.run_id)
