"""A large value's round trip, inline vs. stored by reference (docs/payloads.md, "Costs").

    python -m benchmarks.payload_storage [--size-mib 5] [--runs 5]

Runs :class:`testsupport.large_payloads.RoundTrip` (the value as workflow input,
activity input, activity output and result) on an in-process server with an
embedded SQLite store, once with the value inline (the server's payload limit raised
to let it through) and once with ``FileSystemPayloadStorage``. Prints one JSON line
per mode: the first, median and best wall time of a round trip (every run sends the
same value, so with storage only the first uploads: identical payloads are stored
once) and how much the store and the blob directory grew.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from benchmarks.onboarding import load_average, machine
from flowforge import Client
from flowforge.converter import DataConverter
from flowforge.server import FlowForgeServer, ServerConfig
from flowforge.server.history import EngineConfig
from flowforge.storage import FileSystemPayloadStorage
from flowforge.worker import Worker
from testsupport.large_payloads import TASK_QUEUE, RoundTrip, make_value, reverse_bytes

MiB = 1024 * 1024


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.is_dir() else 0


def _store_size(db: Path) -> int:
    return sum(Path(f"{db}{suffix}").stat().st_size for suffix in ("", "-wal") if Path(f"{db}{suffix}").exists())


async def measure(mode: str, size: int, runs: int) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as tmp:
        db, blobs = Path(tmp) / "bench.db", Path(tmp) / "blobs"
        # Inline, the value must pass the server's limit (a request carries it once).
        engine = EngineConfig(max_payload_bytes=2 * size)
        server = FlowForgeServer(ServerConfig(store=str(db), port=0, engine=engine))
        await server.start()
        try:
            storage = FileSystemPayloadStorage(blobs) if mode == "stored" else None
            converter = DataConverter(payload_storage=storage)
            async with await Client.connect(f"127.0.0.1:{server.port}", data_converter=converter) as client:
                async with Worker(client, task_queue=TASK_QUEUE, workflows=[RoundTrip], activities=[reverse_bytes]):
                    value = make_value(size)
                    store_before = _store_size(db)
                    timings = []
                    for run in range(runs):
                        started = time.perf_counter()
                        handle = await client.start_workflow(
                            RoundTrip.run, value, id=f"{mode}-{run}", task_queue=TASK_QUEUE
                        )
                        assert await handle.result() == value
                        timings.append(time.perf_counter() - started)
                    store_growth = _store_size(db) - store_before
        finally:
            await server.stop()
        return {
            "benchmark": "payload_storage",
            "mode": mode,
            "value_mib": size / MiB,
            "runs": runs,
            "first_s": round(timings[0], 3),  # stored: the only run that uploads (the rest find the blobs)
            "median_s": round(statistics.median(timings), 3),
            "best_s": round(min(timings), 3),
            "store_growth_kib_per_run": round(store_growth / runs / 1024),
            "blob_kib": round(_size(blobs) / 1024),
            "machine": machine(),
            "load_average": load_average(),
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mib", type=float, default=5)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    for mode in ("inline", "stored"):
        result = asyncio.run(measure(mode, int(args.size_mib * MiB), args.runs))
        print(json.dumps({**result, "commit": commit}), flush=True)


if __name__ == "__main__":
    main()
