"""Temporal-compatible features under kill -9 of the worker and the server: exactly once."""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest

from flowforge import Client
from flowforge.api.schema import payloads_from_json
from flowforge.client import HistoryEvent, WorkflowUpdateStage
from flowforge.converter import default_converter
from flowforge.exceptions import RPCError
from tests.integration._compat_app import AsyncApproval, Tally
from tests.integration._processes import ServerProcess, WorkerProcess, read_ledger
from testsupport.waiting import wait_until

APP = "tests.integration._compat_app"


def update_markers(events: list[HistoryEvent], update_id: str) -> list[str]:
    """The stages the workflow recorded for ``update_id``, in history order."""
    stages = []
    for event in events:
        if event.event_type == "MarkerRecorded" and event.attributes["marker_name"] == "update":
            details = {key: payloads_from_json(value) for key, value in event.attributes["details"].items()}
            if default_converter.from_payloads(details["update_id"])[0] == update_id:
                stages.append(default_converter.from_payloads(details["stage"])[0])
    return stages


async def test_updates_survive_kill_9_of_worker_and_server_exactly_once(
    client: Client, server_process: ServerProcess, ledger: Path, tmp_path: Path
) -> None:
    worker = WorkerProcess(server_process.address, "compat-crash", ledger, tmp_path, name="first", app=APP)
    try:
        handle = await client.start_workflow(Tally.run, id="tally", task_queue="compat-crash")
        # Accepted: the handler is in flight, waiting on its timer, when everything dies.
        await handle.start_update(Tally.add, 5, id="add-5", wait_for_stage=WorkflowUpdateStage.ACCEPTED)
        # Admitted only: recorded by the server, not yet seen by any worker.
        worker.kill9()
        await handle.start_update(Tally.add, 7, id="add-7", wait_for_stage=WorkflowUpdateStage.ADMITTED)
    finally:
        worker.stop()
    server_process.kill9()
    server_process.start()

    survivor = WorkerProcess(server_process.address, "compat-crash", ledger, tmp_path, name="survivor", app=APP)
    try:
        assert await handle.get_update_handle("add-5", result_type=int).result() == 5
        assert await handle.get_update_handle("add-7", result_type=int).result() == 12
        # Sent again with the same ids (a client retrying after the crash): the first outcomes.
        assert await handle.execute_update(Tally.add, 5, id="add-5") == 5
        assert await handle.execute_update(Tally.add, 7, id="add-7") == 12
        await handle.signal(Tally.finish)
        assert await handle.result() == 12
    finally:
        survivor.stop()

    events = (await handle.fetch_history()).events
    assert update_markers(events, "add-5") == ["accepted", "completed"]
    assert update_markers(events, "add-7") == ["accepted", "completed"]


async def test_async_completion_survives_kill_9_of_worker_and_server_exactly_once(
    client: Client, server_process: ServerProcess, ledger: Path, tmp_path: Path
) -> None:
    worker = WorkerProcess(server_process.address, "compat-async", ledger, tmp_path, name="first", app=APP)
    try:
        handle = await client.start_workflow(
            AsyncApproval.run, "loan-1", id="async-approval", task_queue="compat-async"
        )
        asked = await wait_until(
            lambda: next((e for e in read_ledger(ledger) if e["event"] == "asked"), None),
            timeout=30,
            what="the activity to hand out its task token",
        )
        worker.kill9()
    finally:
        worker.stop()
    server_process.kill9()
    server_process.start()

    # Nothing runs the activity now; its lease survived both processes. Heartbeat by token,
    # complete by id (the token of the running attempt, looked up by the server).
    await client.get_async_activity_handle(task_token=bytes.fromhex(asked["task_token"])).heartbeat("still here")
    by_id = client.get_async_activity_handle(workflow_id="async-approval", activity_id="1")
    await by_id.complete("approved")
    with pytest.raises(RPCError) as again:
        await by_id.complete("approved again")
    assert again.value.status in (grpc.StatusCode.NOT_FOUND, grpc.StatusCode.FAILED_PRECONDITION)

    survivor = WorkerProcess(server_process.address, "compat-async", ledger, tmp_path, name="survivor", app=APP)
    try:
        assert await handle.result() == "approved"
    finally:
        survivor.stop()
    events = (await handle.fetch_history()).events
    assert [e.event_type for e in events].count("ActivityTaskCompleted") == 1
    assert [e["event"] for e in read_ledger(ledger)] == ["asked"]
