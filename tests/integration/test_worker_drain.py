"""SIGTERM drains a worker: it stops polling, finishes what it holds, then exits."""

from __future__ import annotations

import time
from pathlib import Path

from flowforge import Client
from tests.integration._processes import ServerProcess, WorkerProcess, read_ledger, wait_until
from tests.integration._worker_app import OneStep


async def test_sigterm_lets_the_running_activity_finish_and_report_before_exit(
    client: Client, server_process: ServerProcess, ledger: Path, tmp_path: Path
) -> None:
    worker = WorkerProcess(server_process.address, "drain", ledger, tmp_path)
    try:
        handle = await client.start_workflow(OneStep.run, {"key": "drain", "seconds": 1.5, "start_to_close": 30},
                                             id="drain", task_queue="drain")
        await wait_until(lambda: any(e["event"] == "start" for e in read_ledger(ledger)),
                         timeout=30, what="the activity to start")
        worker.terminate()
        began = time.monotonic()
        await wait_until(lambda: worker.process.poll() is not None, timeout=30, what="the worker to exit")
        assert worker.process.returncode == 0
        assert time.monotonic() - began < 25
    finally:
        worker.stop()
    assert [(e["event"], e["attempt"]) for e in read_ledger(ledger)] == [("start", 1), ("done", 1)]
    history = await handle.fetch_history()
    completed = [e for e in history.events if e.event_type == "ActivityTaskCompleted"]
    assert len(completed) == 1
    started = next(e for e in history.events if e.event_type == "ActivityTaskStarted")
    assert started.attributes["attempt"] == 1
    # Nothing is left leased to the departed worker: its next workflow task waits for a poller.
    description = await handle.describe()
    assert description.pending_activities == []
    assert description.pending_workflow_task is not None and description.pending_workflow_task.state == "SCHEDULED"
