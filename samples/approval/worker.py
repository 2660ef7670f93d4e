"""Runs an expense-approval worker until SIGTERM/SIGINT: python -m samples.approval.worker [ADDRESS]

Start requests and decide them with the CLI (README "Everyday use")::

    flowforge workflow start --type ExpenseApproval --task-queue approval --workflow-id expense-7 \\
        --input '{"request_id": "exp-7", "requester": "ada", "amount": 120.0, "description": "ticket"}'
    flowforge workflow signal --workflow-id expense-7 --name approve --input '"grace"'
"""

from __future__ import annotations

import asyncio
import logging

from flowforge import Client
from flowforge.worker import Worker
from samples import server_address
from samples.approval.workflows import ACTIVITIES, TASK_QUEUE, ExpenseApproval


async def main(address: str) -> None:
    client = await Client.connect(address)
    await Worker(client, task_queue=TASK_QUEUE, workflows=[ExpenseApproval], activities=ACTIVITIES).run()


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    asyncio.run(main(server_address()))
