"""Minimal reproductions of product bugs the chaos suite found.

SQLite store wedged by a cancelled transaction
---------------------------------------------
Seen in chaos runs as ``timekeeper pass failed ... SQLite: cannot start a transaction
within a transaction`` in server.log, lasting until the next kill -9 of the server. A
gRPC handler is cancelled when its client goes away (a killed worker, an expired
deadline). ``SQLiteStore.transaction()`` ran COMMIT on its commit thread and awaited it;
a cancellation arriving at that await raised ``CancelledError`` out of the block and
released the write lock, while the COMMIT was still queued (then cancelled with its
future: it never ran) or still running. The writer connection stayed inside the open
transaction, so every later ``BEGIN IMMEDIATE`` failed: every write of the server
answered UNAVAILABLE until a restart.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from flowforge.server.stores.sqlite import SQLiteStore


async def test_a_transaction_cancelled_at_any_point_leaves_the_sqlite_store_writable(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "flowforge.db")
    await store.open()
    try:

        async def write(key: str) -> None:
            async with store.transaction() as tx:
                await tx.set_metadata_if_absent(key, "written")

        for turns in range(12):  # cancel after 0, 1, 2, ... turns of the event loop: before, in, after COMMIT
            key = f"cancelled-after-{turns}"
            task = asyncio.create_task(write(key))
            for _ in range(turns):
                await asyncio.sleep(0)
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            # The next writer gets through (a COMMIT still running may delay it, not fail it).
            await asyncio.wait_for(write(f"next-after-{turns}"), timeout=10)
            async with store.read() as tx:
                assert await tx.get_metadata(f"next-after-{turns}") == "written"
                # The cancelled one happened entirely or not at all.
                assert await tx.get_metadata(key) in ("written", None)
    finally:
        await store.close()
