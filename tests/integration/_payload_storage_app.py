"""A worker process whose uploads to payload storage can be slowed down to be killed mid-upload.

python -m tests.integration._payload_storage_app ADDRESS TASK_QUEUE BLOB_DIR UPLOAD_STARTED_MARKER
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from datetime import timedelta
from pathlib import Path

from flowforge import Client, RetryPolicy, activity, workflow
from flowforge.converter import DataConverter
from flowforge.storage import FileSystemPayloadStorage
from flowforge.worker import Worker
from testsupport.large_payloads import make_value


@activity.defn
async def make_bytes(size: int) -> bytes:
    return make_value(size)


@workflow.defn
class Produce:
    """An activity whose large result is uploaded by the worker that ran it."""

    @workflow.run
    async def run(self, size: int) -> bytes:
        return await workflow.execute_activity(
            make_bytes,
            size,
            start_to_close_timeout=timedelta(seconds=3),
            retry_policy=RetryPolicy(initial_interval=timedelta(milliseconds=100)),
        )


class SlowUploads(FileSystemPayloadStorage):
    """Writes one chunk, says so in a marker file, then crawls: a worker to kill mid-upload."""

    def __init__(self, path: str, marker: Path) -> None:
        super().__init__(path)
        self._marker = marker

    def _write_chunks(self, fd: int, data: memoryview) -> None:
        os.write(fd, data[: 64 * 1024])
        self._marker.touch()
        time.sleep(3600)  # killed here


async def _main(address: str, task_queue: str, blob_dir: str, marker: str) -> None:
    converter = DataConverter(payload_storage=SlowUploads(blob_dir, Path(marker)))
    client = await Client.connect(address, data_converter=converter)
    async with Worker(client, task_queue=task_queue, workflows=[Produce], activities=[make_bytes]):
        await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(_main(*sys.argv[1:5]))
