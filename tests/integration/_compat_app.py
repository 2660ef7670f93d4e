"""Workflows of the Temporal-compatibility crash tests, run in worker processes (kill -9 at will).

python -m tests.integration._compat_app ADDRESS TASK_QUEUE
"""

from __future__ import annotations

import asyncio
import logging
import sys
from datetime import timedelta

from flowforge import Client, activity, workflow
from flowforge.worker import Worker
from tests.integration._processes import record


@activity.defn
async def ask_approval(request: str) -> str:
    """Hands its task token to the ledger and leaves the activity to be completed from outside."""
    record(event="asked", request=request, task_token=activity.info().task_token.hex())
    activity.raise_complete_async()


@workflow.defn
class AsyncApproval:
    """One activity completed asynchronously; the attempt's lease outlives any worker."""

    @workflow.run
    async def run(self, request: str) -> str:
        return await workflow.execute_activity(ask_approval, request, start_to_close_timeout=timedelta(minutes=2))


@workflow.defn
class Tally:
    """A running total changed only by the ``add`` update, whose handler waits on a durable timer."""

    def __init__(self) -> None:
        self.total = 0
        self.done = False

    @workflow.run
    async def run(self) -> int:
        await workflow.wait_condition(lambda: self.done)
        await workflow.wait_condition(workflow.all_handlers_finished)
        return self.total

    @workflow.update
    async def add(self, amount: int) -> int:
        await workflow.sleep(timedelta(seconds=1))
        self.total += amount
        return self.total

    @add.validator
    def check_amount(self, amount: int) -> None:
        if amount <= 0:
            raise ValueError("only positive amounts")

    @workflow.signal
    def finish(self) -> None:
        self.done = True


async def main(address: str, task_queue: str) -> None:
    client = await Client.connect(address)
    await Worker(client, task_queue=task_queue, workflows=[Tally, AsyncApproval], activities=[ask_approval]).run()


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    asyncio.run(main(sys.argv[1], sys.argv[2]))
