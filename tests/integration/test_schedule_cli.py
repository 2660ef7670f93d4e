"""``flowforge schedule ...`` against a real server process."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.integration._processes import ServerProcess, _env
from testsupport.waiting import wait_until


def flowforge(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "flowforge.cli", *args], capture_output=True, text=True, timeout=60, env=_env()
    )


async def test_create_list_describe_pause_trigger_backfill_delete_and_status(server_process: ServerProcess) -> None:
    address = ("--address", server_process.address)
    created = flowforge(
        "schedule",
        "create",
        "--schedule-id",
        "nightly",
        "--workflow-type",
        "Report",
        "--task-queue",
        "reports",
        "--workflow-id",
        "nightly",
        "--cron",
        "30 2 * * *",
        "--time-zone",
        "America/New_York",
        "--input",
        '"sales"',
        "--overlap",
        "ALLOW_ALL",
        *address,
    )
    assert created.returncode == 0, created.stderr
    assert created.stdout.strip() == "schedule nightly created"

    listed = json.loads(flowforge("schedule", "list", "--output", "json", *address).stdout)
    assert [(d["schedule_id"], d["cron_expressions"], d["time_zone"], d["args"]) for d in listed] == [
        ("nightly", ["30 2 * * *"], "America/New_York", ["sales"])
    ]
    described = json.loads(
        flowforge("schedule", "describe", "--schedule-id", "nightly", "--output", "json", *address).stdout
    )
    # 02:30 in New York is 06:30 or 07:30 UTC, depending on DST.
    assert described["next_action_times"] and all(
        t[11:16] in ("06:30", "07:30") for t in described["next_action_times"]
    )

    paused = flowforge("schedule", "pause", "--schedule-id", "nightly", "--note", "quarter close", *address)
    assert paused.returncode == 0, paused.stderr
    assert flowforge("schedule", "trigger", "--schedule-id", "nightly", *address).returncode == 0
    backfill = flowforge(
        "schedule",
        "backfill",
        "--schedule-id",
        "nightly",
        "--start",
        "2026-03-07T00:00:00+00:00",
        "--end",
        "2026-03-09T00:00:00+00:00",
        *address,
    )
    assert backfill.returncode == 0, backfill.stderr

    def fired() -> dict:
        state = json.loads(
            flowforge("schedule", "describe", "--schedule-id", "nightly", "--output", "json", *address).stdout
        )
        return state if state["actions"] == 3 else {}

    state = await wait_until(fired, timeout=20, what="the trigger and two backfilled nights to start")
    assert (state["paused"], state["note"]) == (True, "quarter close")
    # The spring-forward night (8 March) fires when the clocks jump: 03:00 EDT = 07:00 UTC.
    assert sorted(a["nominal_time"] for a in state["recent_actions"] if a["trigger"] == "backfill") == [
        "2026-03-07T07:30:00+00:00",
        "2026-03-08T07:00:00+00:00",
    ]

    status = flowforge("schedule", "status", *address)
    assert status.returncode == 0, status.stderr
    assert "fencing token 1" in status.stdout and "leader: yes" in status.stdout

    deleted = flowforge("schedule", "delete", "--schedule-id", "nightly", *address)
    assert (
        deleted.returncode == 0 and json.loads(flowforge("schedule", "list", "--output", "json", *address).stdout) == []
    )


async def test_bad_input_is_an_error_that_names_the_problem(server_process: ServerProcess) -> None:
    address = ("--address", server_process.address)
    bad = flowforge(
        "schedule",
        "create",
        "--schedule-id",
        "x",
        "--workflow-type",
        "Report",
        "--task-queue",
        "q",
        "--workflow-id",
        "x",
        "--cron",
        "0 25 * * *",
        *address,
    )
    assert bad.returncode == 1 and "INVALID_ARGUMENT" in bad.stderr and "invalid cron expression" in bad.stderr
    unknown = flowforge("schedule", "pause", "--schedule-id", "missing", *address)
    assert (
        unknown.returncode == 1 and "NOT_FOUND" in unknown.stderr and "schedule 'missing' not found" in unknown.stderr
    )
