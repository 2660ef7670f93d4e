"""Temporal-compatible features under kill -9 of the worker and the server: exactly once."""

from __future__ import annotations

from pathlib import Path

from flowforge import Client
from flowforge.api.schema import payloads_from_json
from flowforge.client import HistoryEvent, WorkflowUpdateStage
from flowforge.converter import default_converter
from tests.integration._compat_app import Tally
from tests.integration._processes import ServerProcess, WorkerProcess

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
