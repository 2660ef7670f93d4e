"""The approval sample in one command: starts the embedded dev server, runs a worker,
and walks two expense requests through it — one a manager approves by signal while
the status query watches, one nobody decides on, which expires on its timeout.

    python -m samples.approval.demo
"""

from __future__ import annotations

import asyncio
import dataclasses
import json

from flowforge import Client
from flowforge.client import WorkflowHandle
from flowforge.worker import Worker
from samples._dev_server import run_with_dev_server
from samples.approval.workflows import ACTIVITIES, TASK_QUEUE, ApprovalStatus, ExpenseApproval, ExpenseRequest


async def wait_for_stage(handle: WorkflowHandle, stage: str) -> ApprovalStatus:
    """Polls the status query until the request reaches ``stage`` (at most 30 s)."""
    for _ in range(300):
        status = await handle.query(ExpenseApproval.status)
        if status.stage == stage:
            return status
        await asyncio.sleep(0.1)
    raise TimeoutError(f"{handle.id} never reached stage {stage!r}")


def _show(label: str, status: ApprovalStatus) -> None:
    print(f"{label}: {json.dumps(dataclasses.asdict(status))}")


async def run(address: str) -> None:
    client = await Client.connect(address)
    async with Worker(client, task_queue=TASK_QUEUE, workflows=[ExpenseApproval], activities=ACTIVITIES):
        approved = await client.start_workflow(
            ExpenseApproval.run,
            ExpenseRequest("exp-1", "ada", 120.0, "conference ticket"),
            id="expense-exp-1",
            task_queue=TASK_QUEUE,
        )
        _show("exp-1 status (query)", await wait_for_stage(approved, "awaiting decision"))
        await approved.signal(ExpenseApproval.approve, "grace")
        print("exp-1 approved by grace (signal)")
        _show("exp-1 result", await approved.result())
        _show("exp-1 status after close (query)", await approved.query(ExpenseApproval.status))

        expired = await client.start_workflow(
            ExpenseApproval.run,
            ExpenseRequest("exp-2", "alan", 9.5, "taxi", approval_timeout_seconds=2),
            id="expense-exp-2",
            task_queue=TASK_QUEUE,
        )
        print("exp-2 waits for a decision nobody makes (2 s timeout)...")
        _show("exp-2 result", await expired.result())
    history = await approved.fetch_history()
    print(f"\nexp-1 history ({len(history.events)} events):")
    for event in history.events:
        print(f"  {event.event_id:>3}  {event.event_type}")
    await client.close()


def main() -> None:
    run_with_dev_server(run)


if __name__ == "__main__":
    main()
