"""The flowforge command line against a real server process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from flowforge import Client
from flowforge.client import WorkflowHistory
from flowforge.testing import Replayer
from flowforge.worker import Worker
from tests.integration._processes import ServerProcess, _env
from tests.integration._worker_app import ACTIVITIES, WORKFLOWS, OneStep


def flowforge(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "flowforge.cli", *args], capture_output=True, text=True, timeout=60, env=_env()
    )


async def test_start_list_and_show_json_that_the_replayer_accepts(
    client: Client, server_process: ServerProcess, ledger: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FLOWFORGE_TEST_LEDGER", str(ledger))
    address = ["--address", server_process.address]
    started = flowforge(
        "workflow",
        "start",
        "--type",
        "OneStep",
        "--task-queue",
        "cli",
        "--workflow-id",
        "cli-1",
        "--input",
        json.dumps({"key": "from-cli"}),
        *address,
    )
    assert started.returncode == 0, started.stderr
    run_id = started.stdout.strip()
    async with Worker(client, task_queue="cli", workflows=WORKFLOWS, activities=ACTIVITIES, build_id="cli-build-7"):
        assert await client.get_workflow_handle("cli-1").result() == {"key": "from-cli", "attempt": 1}

    listed = flowforge("workflow", "list", "--output", "json", *address)
    assert listed.returncode == 0, listed.stderr
    [row] = [r for r in json.loads(listed.stdout) if r["workflow_id"] == "cli-1"]
    assert (row["run_id"], row["status"], row["workflow_type"]) == (run_id, "COMPLETED", "OneStep")

    shown = flowforge("workflow", "show", "--workflow-id", "cli-1", "--output", "json", *address)
    assert shown.returncode == 0, shown.stderr
    history = WorkflowHistory.from_json(shown.stdout)
    assert history.events[-1].event_type == "WorkflowExecutionCompleted"
    await Replayer(workflows=[OneStep]).replay_workflow(history)

    text = flowforge("workflow", "show", "--workflow-id", "cli-1", *address)
    assert "WorkflowExecutionCompleted" in text.stdout and "ledger_step" in text.stdout
    assert "COMPLETED  build cli-build-7" in text.stdout.splitlines()[0]


def test_errors_are_reported_with_their_status_and_a_nonzero_exit(server_process: ServerProcess) -> None:
    shown = flowforge("workflow", "show", "--workflow-id", "missing", "--address", server_process.address)
    assert shown.returncode == 1
    assert "NOT_FOUND" in shown.stderr and "missing" in shown.stderr
