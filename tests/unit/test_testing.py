"""flowforge.testing without a server: the Replayer's batch form, the pytest replay
helper, and ActivityEnvironment."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from flowforge import activity
from flowforge.client import WorkflowHistory
from flowforge.exceptions import CancelledError, NonDeterminismError
from flowforge.testing import ActivityEnvironment, Replayer, replay_histories_in
from samples.onboarding.workflows import Onboarding

HISTORY_FOLDER = Path(__file__).parents[1] / "replay" / "histories"
ONBOARDING_HISTORIES = sorted(HISTORY_FOLDER.glob("onboarding-*.json"))
REPO_ROOT = Path(__file__).parents[2]


def tampered(path: Path) -> str:
    """The history at ``path`` as if an older code version had called another activity first."""
    document = json.loads(path.read_text())
    scheduled = next(e for e in document["events"] if e["event_type"] == "ActivityTaskScheduled")
    scheduled["attributes"]["activity_type"] = "create_customer_v0"
    return json.dumps(document)


# ------------------------------------------------------------------ Replayer


async def test_replay_workflows_reports_each_history_and_collects_failures_by_run_id() -> None:
    good = WorkflowHistory.from_json(ONBOARDING_HISTORIES[0].read_text())
    bad = WorkflowHistory.from_json(tampered(ONBOARDING_HISTORIES[1]))

    results = await Replayer(workflows=[Onboarding]).replay_workflows([good, bad], raise_on_failure=False)

    assert [r.history for r in results.results] == [good, bad]
    assert results.results[0].replay_failure is None
    assert isinstance(results.results[1].replay_failure, NonDeterminismError)
    assert "create_customer_v0" in str(results.results[1].replay_failure)
    bad_run_id = bad.events[0].attributes["run_id"]
    assert list(results.replay_failures) == [bad_run_id]


async def test_replay_workflows_raises_the_first_failure_by_default() -> None:
    async def histories():  # an async iterable works too, e.g. one that fetches them
        for path in ONBOARDING_HISTORIES:
            yield WorkflowHistory.from_json(tampered(path))

    with pytest.raises(NonDeterminismError, match="create_customer_v0"):
        await Replayer(workflows=[Onboarding]).replay_workflows(histories())


async def test_replay_workflow_can_return_the_failure_instead_of_raising() -> None:
    history = WorkflowHistory.from_json(ONBOARDING_HISTORIES[0].read_text())
    result = await Replayer(workflows=[]).replay_workflow(history, raise_on_failure=False)
    assert isinstance(result.replay_failure, ValueError)
    assert "Onboarding" in str(result.replay_failure)
    assert result.run_id == history.events[0].attributes["run_id"]


def test_replay_helper_fails_the_test_of_a_history_the_code_does_not_reproduce(tmp_path: Path) -> None:
    histories = tmp_path / "histories"
    histories.mkdir()
    (histories / "still-good.json").write_text(ONBOARDING_HISTORIES[0].read_text())
    (histories / "from-old-code.json").write_text(tampered(ONBOARDING_HISTORIES[0]))
    (tmp_path / "test_histories.py").write_text(
        "from pathlib import Path\n"
        "from flowforge.testing import replay_histories_in\n"
        "from samples.onboarding.workflows import Onboarding\n"
        "test_replay = replay_histories_in(Path(__file__).parent / 'histories', workflows=[Onboarding])\n"
    )

    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "--rootdir",
            str(tmp_path),
            str(tmp_path / "test_histories.py"),
        ],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(REPO_ROOT), "PATH": "/usr/bin:/bin"},
    )

    assert "1 failed, 1 passed" in run.stdout, run.stdout + run.stderr
    assert "test_replay[from-old-code]" in run.stdout
    assert "NonDeterminismError" in run.stdout and "create_customer_v0" in run.stdout


def test_replay_helper_refuses_a_folder_without_histories(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no history files"):
        replay_histories_in(tmp_path, workflows=[Onboarding])


# ------------------------------------------------------- ActivityEnvironment


@activity.defn(name="charge-card")
async def charge_card(amount: int) -> str:
    info = activity.info()
    for step in range(3):
        activity.heartbeat(step)
        await asyncio.sleep(0)
    return f"charged {amount} on attempt {info.attempt} as {info.activity_type} of {info.workflow_id}"


async def test_an_async_activity_sees_test_info_and_its_heartbeats_are_captured() -> None:
    env = ActivityEnvironment()
    beats: list[tuple] = []
    env.on_heartbeat = lambda *details: beats.append(details)

    result = await env.run(charge_card, 40)

    assert result == "charged 40 on attempt 1 as charge-card of test"
    assert beats == [(0,), (1,), (2,)]


async def test_info_can_be_replaced_to_test_a_retry_resuming_from_heartbeat_details() -> None:
    @activity.defn
    async def resume() -> tuple:
        info = activity.info()
        return info.attempt, tuple(info.heartbeat_details), info.activity_type

    env = ActivityEnvironment()
    env.info = dataclasses.replace(env.info, attempt=3, heartbeat_details=(7,), activity_type="resume")
    assert await env.run(resume) == (3, (7,), "resume")


async def test_cancelling_an_async_activity_interrupts_it_and_sets_is_cancelled() -> None:
    started = asyncio.Event()
    seen: list[bool] = []

    @activity.defn
    async def wait_forever() -> None:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            seen.append(activity.is_cancelled())
            raise CancelledError("stopped on request", "cleanup done") from None

    env = ActivityEnvironment()
    running = asyncio.create_task(env.run(wait_forever))
    await asyncio.wait_for(started.wait(), 5)
    env.cancel()

    with pytest.raises(CancelledError) as error:
        await asyncio.wait_for(running, 5)
    assert seen == [True]
    assert error.value.details == ("cleanup done",)


def test_a_sync_activity_polls_is_cancelled_after_a_heartbeat_cancels_it() -> None:
    @activity.defn
    def copy_rows(rows: int) -> int:
        copied = 0
        while copied < rows and not activity.is_cancelled():
            copied += 1
            activity.heartbeat(copied)
        return copied

    env = ActivityEnvironment()
    beats: list[int] = []

    def on_heartbeat(copied: int) -> None:
        beats.append(copied)
        if copied == 5:
            env.cancel()

    env.on_heartbeat = on_heartbeat
    assert env.run(copy_rows, 1000) == 5
    assert beats == [1, 2, 3, 4, 5]


def test_a_sync_activity_can_be_cancelled_from_another_thread() -> None:
    @activity.defn
    def wait_for_cancel() -> str:
        deadline = time.monotonic() + 10
        while not activity.is_cancelled():
            if time.monotonic() > deadline:
                return "never cancelled"
            time.sleep(0.005)
        return "cancelled"

    env = ActivityEnvironment()
    canceller = threading.Timer(0.05, env.cancel)
    canceller.start()
    assert env.run(wait_for_cancel) == "cancelled"
    canceller.join()


def test_a_heartbeat_detail_that_cannot_be_encoded_fails_like_on_a_worker() -> None:
    @activity.defn
    def bad_heartbeat() -> None:
        activity.heartbeat(object())

    with pytest.raises(TypeError):
        ActivityEnvironment().run(bad_heartbeat)


def test_outside_run_activity_functions_still_refuse_to_work() -> None:
    ActivityEnvironment().run(lambda: activity.info())
    with pytest.raises(RuntimeError, match="not in an activity"):
        activity.info()
