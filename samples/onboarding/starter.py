"""Starts one onboarding and prints its result: python -m samples.onboarding.starter [ADDRESS] [WORKFLOW_ID]"""

from __future__ import annotations

import asyncio
import json
import sys
import uuid

from flowforge import Client
from samples import server_address
from samples.onboarding.workflows import TASK_QUEUE, Onboarding


async def main(address: str, workflow_id: str) -> None:
    client = await Client.connect(address)
    handle = await client.start_workflow(
        Onboarding.run, {"name": "Ada Lovelace", "email": "ada@example.com"}, id=workflow_id, task_queue=TASK_QUEUE
    )
    print(json.dumps(await handle.result(), indent=2))


if __name__ == "__main__":
    asyncio.run(
        main(
            server_address(),
            sys.argv[2] if len(sys.argv) > 2 else f"onboarding-{uuid.uuid4().hex[:8]}",
        )
    )
