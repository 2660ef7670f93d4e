"""A workflow that moves a large value through every payload path, and a worker
process for it whose uploads can be slowed down to be killed mid-upload.

    python -m tests.integration._payload_storage_app ADDRESS TASK_QUEUE BLOB_DIR UPLOAD_STARTED_MARKER
"""

from __future__ import annotations

import asyncio
import os
import random
import sys
import time
from datetime import timedelta
from pathlib import Path

from flowforge import Client, RetryPolicy, activity, workflow
from flowforge.converter import DataConverter
from flowforge.storage import FileSystemPayloadStorage
from flowforge.worker import Worker


def make_value(size: int, seed: int = 7) -> bytes:
    """``size`` incompressible bytes, the same for the same seed in any process."""
    return random.Random(seed).randbytes(size)


@activity.defn
async def reverse_bytes(data: bytes) -> bytes:
    return data[::-1]


@activity.defn
async def make_bytes(size: int) -> bytes:
    return make_value(size)


@workflow.defn
class RoundTrip:
    """Input -> activity input -> activity output -> result, the value large all the way."""

    @workflow.run
    async def run(self, data: bytes) -> bytes:
        reversed_data = await workflow.execute_activity(
            reverse_bytes, data, start_to_close_timeout=timedelta(seconds=120)
        )
        return reversed_data[::-1]  # the input again: stored once


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
