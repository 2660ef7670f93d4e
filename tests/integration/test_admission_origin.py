"""One admission path: whatever starts a run (a client, a schedule, an event) goes
through ``HistoryEngine.start_workflow``, which records what started it."""

from __future__ import annotations

from flowforge import Client
from flowforge.api.v1 import common_pb2
from flowforge.server import FlowForgeServer


async def _start(server: FlowForgeServer, workflow_id: str, origin: dict | None) -> str:
    run_id, started = await server.engine.start_workflow(
        namespace="default",
        workflow_id=workflow_id,
        workflow_type="Report",
        task_queue="q",
        input=common_pb2.Payloads(),
        request_id=f"req-{workflow_id}",
        identity="test",
        execution_timeout_s=0,
        run_timeout_s=0,
        task_timeout_s=0,
        origin=origin,
    )
    assert started
    return run_id


async def test_the_origin_of_a_run_is_in_its_started_event_and_in_describe(server: FlowForgeServer) -> None:
    origin = {"kind": "schedule", "schedule_id": "nightly", "nominal_time": "2026-03-29T02:30:00+02:00"}
    await _start(server, "from-schedule", origin)
    await _start(server, "direct", None)
    async with await Client.connect(f"127.0.0.1:{server.port}") as client:
        scheduled = client.get_workflow_handle("from-schedule")
        assert (await scheduled.describe()).origin == origin
        started = (await scheduled.fetch_history()).events[0]
        assert started.event_type == "WorkflowExecutionStarted"
        assert started.attributes["origin"] == origin

        direct = client.get_workflow_handle("direct")
        assert (await direct.describe()).origin is None
        assert "origin" not in (await direct.fetch_history()).events[0].attributes
