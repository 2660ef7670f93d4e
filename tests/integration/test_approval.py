"""samples/approval end to end: a server process, a real worker, signals, the status
query and the approval timeout; and the one-command demo."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import subprocess
import sys

from flowforge import Client
from flowforge.worker import Worker
from samples.approval.demo import wait_for_stage
from samples.approval.workflows import (
    ACTIVITIES,
    TASK_QUEUE,
    ApprovalStatus,
    ExpenseApproval,
    ExpenseRequest,
)
from tests.integration._processes import ServerProcess, _env
from tests.integration._reliability import DEADLINE_S, events, of_type
from testsupport.waiting import wait_until


def _activities_run(history: list) -> list[str]:
    return [e.attributes["activity_type"] for e in of_type(history, "ActivityTaskScheduled")]


async def test_an_approval_signal_pays_out_and_the_first_decision_wins(client: Client) -> None:
    async with Worker(client, task_queue=TASK_QUEUE, workflows=[ExpenseApproval], activities=ACTIVITIES):
        handle = await client.start_workflow(
            ExpenseApproval.run,
            ExpenseRequest("r-1", "ada", 120.0, "conference"),
            id="approval-paid",
            task_queue=TASK_QUEUE,
        )

        async def awaiting() -> bool:
            return (await handle.query(ExpenseApproval.status)).stage == "awaiting decision"

        await wait_until(awaiting, timeout=DEADLINE_S, what="the request to await a decision")
        await handle.signal(ExpenseApproval.approve, "grace")
        await handle.signal(ExpenseApproval.reject, args=["alan", "too late"])  # ignored: decided already
        result = await asyncio.wait_for(handle.result(), DEADLINE_S)
    assert dataclasses.asdict(result) == {
        "stage": "paid",
        "decision": {"approved": True, "by": "grace", "reason": ""},
        "payment_id": "pay_r-1",
    }
    history = await events(handle)
    assert _activities_run(history) == ["notify_approvers", "pay_out", "notify_requester"]
    assert [e.attributes["signal_name"] for e in of_type(history, "WorkflowExecutionSignaled")] == ["approve", "reject"]
    assert len(of_type(history, "TimerCanceled")) == 1  # the approval deadline, no longer needed


async def test_a_rejection_pays_nothing_and_a_silent_approver_lets_the_request_expire(client: Client) -> None:
    async with Worker(client, task_queue=TASK_QUEUE, workflows=[ExpenseApproval], activities=ACTIVITIES):
        rejected = await client.start_workflow(
            ExpenseApproval.run,
            ExpenseRequest("r-2", "alan", 5000.0, "yacht"),
            id="approval-rejected",
            task_queue=TASK_QUEUE,
            start_signal=ExpenseApproval.reject,
            start_signal_args=["grace", "no yachts"],
        )
        expired = await client.start_workflow(
            ExpenseApproval.run,
            ExpenseRequest("r-3", "ada", 9.5, "taxi", approval_timeout_seconds=0.5),
            id="approval-expired",
            task_queue=TASK_QUEUE,
        )
        assert dataclasses.asdict(await asyncio.wait_for(rejected.result(), DEADLINE_S)) == {
            "stage": "rejected",
            "decision": {"approved": False, "by": "grace", "reason": "no yachts"},
            "payment_id": "",
        }
        assert await asyncio.wait_for(expired.result(), DEADLINE_S) == ApprovalStatus(stage="expired")
        # Closed requests still answer the status query.
        assert (await expired.query(ExpenseApproval.status)).stage == "expired"
    assert _activities_run(await events(rejected)) == ["notify_approvers", "notify_requester"]
    expired_history = await events(expired)
    assert _activities_run(expired_history) == ["notify_approvers", "notify_requester"]
    assert len(of_type(expired_history, "TimerFired")) == 1


def test_the_demo_runs_with_one_command() -> None:
    demo = subprocess.run(
        [sys.executable, "-m", "samples.approval.demo"], capture_output=True, text=True, timeout=120, env=_env()
    )
    assert demo.returncode == 0, demo.stderr
    assert '"stage": "awaiting decision"' in demo.stdout
    assert 'exp-1 result: {"stage": "paid"' in demo.stdout
    assert 'exp-2 result: {"stage": "expired"' in demo.stdout
    assert "WorkflowExecutionSignaled" in demo.stdout


async def test_the_cli_signals_and_queries_a_request(client: Client, server_process: ServerProcess) -> None:
    address = ["--address", server_process.address]
    async with Worker(client, task_queue=TASK_QUEUE, workflows=[ExpenseApproval], activities=ACTIVITIES):
        handle = await client.start_workflow(
            ExpenseApproval.run,
            ExpenseRequest("r-4", "ada", 30.0, "books"),
            id="approval-cli",
            task_queue=TASK_QUEUE,
        )
        await wait_for_stage(handle, "awaiting decision")
        queried = await _flowforge("workflow", "query", "--workflow-id", "approval-cli", "--name", "status", *address)
        assert queried.returncode == 0, queried.stderr
        assert json.loads(queried.stdout) == {"stage": "awaiting decision", "decision": None, "payment_id": ""}
        signalled = await _flowforge(
            "workflow", "signal", "--workflow-id", "approval-cli", "--name", "approve", "--input", '"grace"', *address
        )
        assert signalled.returncode == 0, signalled.stderr
        assert (await asyncio.wait_for(handle.result(), DEADLINE_S)).stage == "paid"
        unknown = await _flowforge("workflow", "query", "--workflow-id", "approval-cli", "--name", "nope", *address)
        assert unknown.returncode == 1 and "INVALID_ARGUMENT" in unknown.stderr and "status" in unknown.stderr


async def _flowforge(*args: str) -> subprocess.CompletedProcess[str]:
    """Runs the CLI in a thread: the worker answering it runs on this event loop."""
    return await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "flowforge.cli", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=_env(),
    )
