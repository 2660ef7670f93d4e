"""Records the sample's histories into tests/replay/histories (run by hand when the
sample changes on purpose; the replay tests then pin the new behaviour):

    python -m tests.replay.record
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from flowforge import Client
from flowforge.server import FlowForgeServer, ServerConfig
from flowforge.worker import Worker
from samples.onboarding.workflows import ACTIVITIES, TASK_QUEUE, Onboarding

HISTORIES = Path(__file__).parent / "histories"
REQUESTS = {
    "onboarding-ada": {"name": "Ada Lovelace", "email": "ada@example.com", "work_seconds": 0.05,
                       "cooling_off_seconds": 0.1},
    "onboarding-grace": {"name": "Grace Hopper", "email": "grace@example.com", "work_seconds": 0.0,
                         "cooling_off_seconds": 0},
}


async def record() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        server = FlowForgeServer(ServerConfig(store=str(Path(tmp) / "record.db"), port=0))
        await server.start()
        try:
            client = await Client.connect(f"127.0.0.1:{server.port}")
            async with Worker(client, task_queue=TASK_QUEUE, workflows=[Onboarding], activities=ACTIVITIES):
                for workflow_id, request in REQUESTS.items():
                    handle = await client.start_workflow(Onboarding.run, request, id=workflow_id, task_queue=TASK_QUEUE)
                    await handle.result()
                    history = await handle.fetch_history()
                    (HISTORIES / f"{workflow_id}.json").write_text(history.to_json() + "\n")
            await client.close()
        finally:
            await server.stop()


if __name__ == "__main__":
    asyncio.run(record())
