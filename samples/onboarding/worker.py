"""Runs an onboarding worker until SIGTERM/SIGINT: python -m samples.onboarding.worker [ADDRESS]"""

from __future__ import annotations

import asyncio
import logging

from flowforge import Client
from flowforge.worker import Worker
from samples import server_address
from samples.onboarding.workflows import ACTIVITIES, TASK_QUEUE, Onboarding


async def main(address: str) -> None:
    client = await Client.connect(address)
    worker = Worker(client, task_queue=TASK_QUEUE, workflows=[Onboarding], activities=ACTIVITIES)
    await worker.run()


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    asyncio.run(main(server_address()))
