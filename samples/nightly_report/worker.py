"""Runs the report worker: ``python -m samples.nightly_report.worker`` (SIGTERM drains)."""

from __future__ import annotations

import asyncio

from flowforge import Client
from flowforge.worker import Worker
from samples import server_address
from samples.nightly_report.workflows import ACTIVITIES, TASK_QUEUE, NightlyReport


async def main(address: str) -> None:
    client = await Client.connect(address)
    await Worker(client, task_queue=TASK_QUEUE, workflows=[NightlyReport], activities=ACTIVITIES).run()


if __name__ == "__main__":
    asyncio.run(main(server_address()))
