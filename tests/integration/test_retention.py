"""Retention: exactly the closed runs past their namespace's retention are purged.

A server on a :class:`ManualClock` (each store in turn); runs are closed at chosen
times, the clock moves past the retention of some of them, and one sweep (in
batches of one, so the batching is exercised) purges exactly those: their
execution, history, memo and request id are gone, every other run (running, closed
more recently, or in a namespace with a longer retention) is untouched, and
namespace describe shows the pass and the count.
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest

from flowforge.api.v1 import common_pb2
from flowforge.api.v1 import workflow_service_pb2 as pb
from flowforge.server import FlowForgeServer, ServerConfig
from flowforge.server.clock import ManualClock
from flowforge.server.retention import RetentionSweeper
from flowforge.server.stores.base import Transaction
from tests.integration._protocol import Wire, seconds

NS = "short-lived"
RETENTION_S = 3600
HOUR_US = 3600 * 1_000_000


@pytest.fixture
async def clocked(store_url: str) -> AsyncIterator[tuple[FlowForgeServer, ManualClock, Wire]]:
    clock = ManualClock()
    server = FlowForgeServer(ServerConfig(store=store_url, port=0, clock=clock, retention_sweep_interval_s=3600))
    await server.start()
    wire = Wire(f"127.0.0.1:{server.port}")
    yield server, clock, wire
    await wire.close()
    await server.stop()


async def _start(wire: Wire, workflow_id: str, namespace: str = NS) -> str:
    response = await wire.stub.StartWorkflowExecution(
        pb.StartWorkflowExecutionRequest(
            namespace=namespace,
            workflow_id=workflow_id,
            workflow_type="wf",
            task_queue="q",
            request_id=f"req-{workflow_id}",
            memo=common_pb2.Memo(fields={"note": common_pb2.Payload(data=b'"kept"')}),
        )
    )
    return response.run_id


async def _terminate(wire: Wire, workflow_id: str, namespace: str = NS) -> None:
    await wire.stub.TerminateWorkflowExecution(
        pb.TerminateWorkflowExecutionRequest(namespace=namespace, execution={"workflow_id": workflow_id}, reason="done")
    )


async def _exists(wire: Wire, run_id: str, namespace: str = NS) -> bool:
    try:
        await wire.stub.DescribeWorkflowExecution(
            pb.DescribeWorkflowExecutionRequest(namespace=namespace, execution={"run_id": run_id})
        )
    except grpc.aio.AioRpcError as error:
        assert error.code() == grpc.StatusCode.NOT_FOUND, error.details()
        return False
    return True


async def test_exactly_the_closed_runs_past_retention_are_purged(
    clocked: tuple[FlowForgeServer, ManualClock, Wire],
) -> None:
    server, clock, wire = clocked
    await wire.stub.RegisterNamespace(pb.RegisterNamespaceRequest(name=NS, retention=seconds(RETENTION_S)))
    runs = {workflow_id: await _start(wire, workflow_id) for workflow_id in ("old-1", "old-2", "recent", "running")}
    runs["other-ns"] = await _start(wire, "other-ns", namespace="default")
    await _terminate(wire, "old-1")
    await _terminate(wire, "old-2")
    await _terminate(wire, "other-ns", namespace="default")  # retention 30 days
    clock.advance(HOUR_US // 2)
    await _terminate(wire, "recent")
    clock.advance(HOUR_US // 2 + 1_000_000)  # old-* closed 1h 1s ago, recent 30m 1s ago

    sweeper = RetentionSweeper(server.engine, batch=1, max_batches=10)
    assert await sweeper.sweep() == 2
    assert await sweeper.sweep() == 0

    assert not await _exists(wire, runs["old-1"]) and not await _exists(wire, runs["old-2"])
    assert await _exists(wire, runs["recent"]) and await _exists(wire, runs["running"])
    assert await _exists(wire, runs["other-ns"], namespace="default")

    async def leftovers(tx: Transaction) -> list[object]:
        purged = [runs["old-1"], runs["old-2"]]
        return [
            *[await tx.read_events(NS, run_id) for run_id in purged],
            await tx.get_memos(NS, purged),
            await tx.get_request_run_id(NS, "req-old-1"),
            await tx.list_run_tasks(NS, runs["old-1"]),
        ]

    assert await server.engine.read(leftovers) == [[], [], {}, None, []]
    assert await server.engine.read(lambda tx: tx.get_memos(NS, [runs["recent"]])) != {}

    described = (await wire.stub.DescribeNamespace(pb.DescribeNamespaceRequest(name=NS))).namespace
    assert described.purged_executions == 2
    assert described.last_purge_time.ToMicroseconds() == clock.now_us()

    # Later, the recent one passes its retention too; the running one never does.
    clock.advance(HOUR_US)
    assert await sweeper.sweep() == 1
    assert not await _exists(wire, runs["recent"]) and await _exists(wire, runs["running"])
    described = (await wire.stub.DescribeNamespace(pb.DescribeNamespaceRequest(name=NS))).namespace
    assert described.purged_executions == 3


def test_every_table_with_rows_of_a_run_is_purged_or_kept_on_purpose(tmp_path: Path) -> None:
    from flowforge.server.stores._sql.retention import KEPT_RUN_TABLES, PURGED_RUN_TABLES
    from flowforge.server.stores.migrations import apply_sqlite

    path = tmp_path / "schema.db"
    connection = sqlite3.connect(path)
    try:
        apply_sqlite(connection)
        tables = [r[0] for r in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        with_runs = {t for t in tables if any(c[1] == "run_id" for c in connection.execute(f"PRAGMA table_info({t})"))}
    finally:
        connection.close()
    assert with_runs == set(PURGED_RUN_TABLES) | set(KEPT_RUN_TABLES), (
        "a table holds rows of a run: add it to PURGED_RUN_TABLES (or KEPT_RUN_TABLES, saying why)"
    )
