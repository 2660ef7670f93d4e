"""What visibility costs: starts with search attributes and a memo, and list queries.

    python -m benchmarks.visibility [--store sqlite|postgresql|both] [--runs 500]

Against an in-process server on a fresh store: ``--runs`` plain starts, then as many
starts with three search attributes (Keyword, Int, Datetime) and a memo (one client,
one start at a time: the latency of a start), then each list query below paged through
with ``page_size=100``. Prints one JSON line per store.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from datetime import UTC, datetime
from typing import Any

from benchmarks.onboarding import load_average, machine
from flowforge import Client
from flowforge.common import SearchAttributeIndexedValueType
from flowforge.server import FlowForgeServer, ServerConfig

QUERIES = [
    "",
    "WorkflowType = 'Tagged'",
    "Customer = 'c-7'",
    "Amount BETWEEN 100 AND 300 AND ExecutionStatus = 'Running'",
]


async def _measure(store: str, runs: int) -> dict[str, Any]:
    server = FlowForgeServer(ServerConfig(store=store, port=0))
    await server.start()
    client = await Client.connect(f"127.0.0.1:{server.port}")
    try:
        await client.add_search_attributes(
            {
                "Customer": SearchAttributeIndexedValueType.KEYWORD,
                "Amount": SearchAttributeIndexedValueType.INT,
                "DueAt": SearchAttributeIndexedValueType.DATETIME,
            }
        )
        began = time.perf_counter()
        for n in range(runs):
            await client.start_workflow("Plain", id=f"plain-{n}", task_queue="idle")
        plain_ms = (time.perf_counter() - began) * 1000 / runs
        began = time.perf_counter()
        for n in range(runs):
            await client.start_workflow(
                "Tagged",
                id=f"tagged-{n}",
                task_queue="idle",
                memo={"n": n},
                search_attributes={"Customer": f"c-{n % 50}", "Amount": n, "DueAt": datetime.now(UTC)},
            )
        tagged_ms = (time.perf_counter() - began) * 1000 / runs
        listings = {}
        for query in QUERIES:
            began = time.perf_counter()
            count = len([e async for e in client.list_workflows(query, page_size=100)])
            listings[query or "(all)"] = {"runs": count, "ms": round((time.perf_counter() - began) * 1000, 1)}
        return {"start_ms": round(plain_ms, 2), "start_with_visibility_ms": round(tagged_ms, 2), "list": listings}
    finally:
        await client.close()
        await server.stop()


async def _main(stores: list[str], runs: int) -> None:
    for store in stores:
        if store == "sqlite":
            with tempfile.TemporaryDirectory() as tmp:
                figures = await _measure(f"{tmp}/visibility.db", runs)
        else:
            from testsupport.postgres import start_postgres

            postgres = start_postgres()
            try:
                async with postgres.database() as dsn:
                    figures = await _measure(dsn, runs)
            finally:
                postgres.stop()
        print(
            json.dumps({"store": store, "runs": runs, **figures, "load_average": load_average(), "machine": machine()})
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", choices=("sqlite", "postgresql", "both"), default="both")
    parser.add_argument("--runs", type=int, default=500)
    args = parser.parse_args()
    asyncio.run(_main(["sqlite", "postgresql"] if args.store == "both" else [args.store], args.runs))


if __name__ == "__main__":
    main()
