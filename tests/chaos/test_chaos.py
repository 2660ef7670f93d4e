"""Chaos: a mix of workflows while workers and the server are kill -9'd at random moments.

The default run is small (24 workflows, 5 kills, on SQLite and on PostgreSQL, with the
workers on their streams and on unary RPCs, each well under a minute). Environment knobs: ``FLOWFORGE_CHAOS_SEED`` (default: random, printed),
``FLOWFORGE_CHAOS_WORKFLOWS``, ``FLOWFORGE_CHAOS_KILLS``. Larger runs: see README.md here.

The checks themselves are tested below on hand-made histories and ledgers, so that a
green chaos run means "nothing was wrong", not "nothing was looked at".
"""

from __future__ import annotations

import dataclasses
import os
import random
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from flowforge import WorkflowExecutionStatus, activity
from flowforge.client import HistoryEvent, WorkflowHistory
from flowforge.converter import default_converter, message_to_json_dict
from tests.chaos._chaos_app import Ledger, attempt_fails, step_amount
from tests.chaos.driver import Execution, check, make_plan, run_chaos


@pytest.mark.chaos
async def test_every_execution_ends_as_its_input_implies_while_workers_and_server_are_killed(
    store_url: str, store_kind: str, tmp_path: Path, chaos_summaries: list[str], task_transport: str
) -> None:
    seed = int(os.environ.get("FLOWFORGE_CHAOS_SEED") or random.SystemRandom().randrange(1_000_000))
    report = await run_chaos(
        store_url,
        tmp_path,
        seed=seed,
        store_kind=store_kind,
        workflows=int(os.environ.get("FLOWFORGE_CHAOS_WORKFLOWS", "24")),
        kills=int(os.environ.get("FLOWFORGE_CHAOS_KILLS", "5")),
    )
    summary = f"{report.summary} (worker transport: {task_transport})"
    print(summary)
    chaos_summaries.append(summary)
    assert report.problems == [], (
        f"{len(report.problems)} problems (reproduce with: FLOWFORGE_TEST_TASK_TRANSPORT={task_transport} "
        f"python -m tests.chaos.driver --store {store_kind} "
        f"--seed {seed}; logs in {tmp_path}):\n" + "\n".join(report.problems)
    )
    assert report.counts["duplicates"] == 0
    assert report.counts["worker_kills"] >= 1 and report.counts["server_kills"] >= 1


def test_the_plan_is_a_function_of_the_seed_and_covers_every_kind() -> None:
    first, kills = make_plan(42, 24, 5, (1.0, 3.0))
    again, kills_again = make_plan(42, 24, 5, (1.0, 3.0))
    assert [(e.workflow_id, e.spec, e.start_at, e.cancel_after) for e in first] == [
        (e.workflow_id, e.spec, e.start_at, e.cancel_after) for e in again
    ]
    assert kills == kills_again
    assert {e.kind for e in first} == {
        "ChaosOnboarding",
        "TimerChain",
        "RetryUntilSuccess",
        "ExhaustRetries",
        "NonRetryable",
        "Compensate",
        "CancelLong",
        "CancelRace",
    }
    assert {"server"} <= {k.target for k in kills} and {k.target for k in kills} & {"worker", "workers"}


def test_attempt_failures_are_a_function_of_the_input() -> None:
    assert [attempt_fails({"key": "k", "fail_until": 3}, n) for n in (1, 2, 3, 4)] == [True, True, False, False]
    assert all(attempt_fails({"key": "k", "always_fail": True}, n) for n in range(1, 10))
    flaky = {"key": "wf/step", "flaky_pct": 50, "flaky_cap": 6}
    pattern = [attempt_fails(flaky, n) for n in range(1, 10)]
    assert pattern == [attempt_fails(flaky, n) for n in range(1, 10)]
    assert not any(pattern[5:])  # never past the cap: unlimited retries always end


# --------------------------------------------------------------------------- the checks catch what they must


def _payloads(value: Any) -> dict[str, Any]:
    return message_to_json_dict(default_converter.to_payloads([value]))


def _info(attempt: int, key: str = "idem-1", activity_id: str = "1") -> activity.Info:
    return activity.Info(
        activity_id=activity_id,
        activity_type="charge",
        attempt=attempt,
        idempotency_key=key,
        heartbeat_details=(),
        workflow_id="RetryUntilSuccess-0000",
        run_id="run-1",
        workflow_type="RetryUntilSuccess",
        namespace="default",
        task_queue="chaos",
        scheduled_time=None,
        started_time=None,
        start_to_close_timeout=None,
        heartbeat_timeout=None,
    )


@dataclasses.dataclass
class _Case:
    """A good RetryUntilSuccess run (attempt 1 fails on purpose, attempt 2 completes) to break."""

    tmp_path: Path
    events: list[tuple[str, dict[str, Any]]] = dataclasses.field(default_factory=list)
    status: str = "COMPLETED"

    def __post_init__(self) -> None:
        self.params = {"key": "RetryUntilSuccess-0000/flaky", "fail_until": 2, "work": 0.1}
        self.ledger = Ledger(self.tmp_path / "ledger.db")
        self.ledger.create()
        self.ledger.mark(self.ledger.record_attempt(_info(1), self.params["key"]), "raised")
        row = self.ledger.record_attempt(_info(2), self.params["key"])
        self.effect = self.ledger.apply_effect(_info(2), self.params["key"], step_amount(self.params["key"]), row)
        self.events = [
            ("WorkflowExecutionStarted", {"run_id": "run-1"}),
            ("WorkflowTaskScheduled", {}),
            ("WorkflowTaskStarted", {"scheduled_event_id": 2}),
            ("WorkflowTaskCompleted", {"scheduled_event_id": 2, "started_event_id": 3}),
            ("ActivityTaskScheduled", {"activity_id": "1", "activity_type": "charge", "input": _payloads(self.params)}),
            ("ActivityTaskStarted", {"scheduled_event_id": 5, "attempt": 2}),
            (
                "ActivityTaskCompleted",
                {"scheduled_event_id": 5, "started_event_id": 6, "result": _payloads(self.effect)},
            ),
            ("WorkflowTaskScheduled", {}),
            ("WorkflowTaskStarted", {"scheduled_event_id": 8}),
            ("WorkflowTaskCompleted", {"scheduled_event_id": 8, "started_event_id": 9}),
            ("WorkflowExecutionCompleted", {"result": _payloads({"effects": [self.effect]})}),
        ]

    def check(self, ids: list[int] | None = None) -> tuple[list[str], dict[str, Any]]:
        now = datetime.now(UTC)
        ids = ids or list(range(1, len(self.events) + 1))
        history = WorkflowHistory(
            "RetryUntilSuccess-0000",
            [
                HistoryEvent(event_id, event_type, now, attributes)
                for event_id, (event_type, attributes) in zip(ids, self.events, strict=False)
            ],
        )
        execution = Execution("RetryUntilSuccess-0000", "RetryUntilSuccess", {"steps": [self.params]}, 0.0, None)
        listing = {
            execution.workflow_id: [SimpleNamespace(run_id="run-1", status=WorkflowExecutionStatus[self.status])]
        }
        problems: list[str] = []
        counts = check(
            [execution],
            {execution.workflow_id: history},
            {execution.workflow_id: self.status},
            listing,
            self.ledger,
            problems.append,
        )
        return problems, counts


def test_the_checks_pass_a_good_run(tmp_path: Path) -> None:
    problems, counts = _Case(tmp_path).check()
    assert problems == []
    assert counts["statuses"] == {"COMPLETED": 1} and counts["effects"] == 1 and counts["duplicates"] == 0


def test_the_checks_catch_a_gap_in_history(tmp_path: Path) -> None:
    case = _Case(tmp_path)
    problems, _ = case.check(ids=[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12])
    assert any("event ids are not 1..11" in p for p in problems)


def test_the_checks_catch_a_duplicate_outcome_and_a_duplicate_close(tmp_path: Path) -> None:
    case = _Case(tmp_path)
    case.events.insert(7, case.events[6])
    case.events.append(case.events[-1])
    problems, counts = case.check()
    assert any("1 started and 2 outcome events" in p for p in problems)
    assert any("expected one close event" in p for p in problems)
    assert counts["duplicates"] >= 2


def test_the_checks_catch_an_idempotency_key_that_changes_between_attempts(tmp_path: Path) -> None:
    case = _Case(tmp_path)
    row = case.ledger.record_attempt(_info(3, key="idem-2"), case.params["key"])
    case.ledger.apply_effect(_info(3, key="idem-2"), case.params["key"], step_amount(case.params["key"]), row)
    problems, _ = case.check()
    assert any("ran under 2 idempotency keys" in p for p in problems)
    assert any("belongs to no activity" in p or "applied an effect" in p or "balance" in p for p in problems)


def test_the_checks_catch_a_lost_effect_and_a_result_that_is_not_the_effect(tmp_path: Path) -> None:
    case = _Case(tmp_path)
    case.events[6] = (
        "ActivityTaskCompleted",
        {"scheduled_event_id": 5, "started_event_id": 6, "result": _payloads({**case.effect, "effect_attempt": 9})},
    )
    problems, _ = case.check()
    assert any("the ledger holds" in p for p in problems)


def test_the_checks_catch_a_completion_by_an_attempt_that_must_fail(tmp_path: Path) -> None:
    case = _Case(tmp_path)
    case.events[5] = ("ActivityTaskStarted", {"scheduled_event_id": 5, "attempt": 1})
    problems, _ = case.check()
    assert any("which its input says must fail" in p for p in problems)


def test_the_checks_catch_a_wrong_terminal_status(tmp_path: Path) -> None:
    case = _Case(tmp_path)
    case.events[-1] = ("WorkflowExecutionFailed", {"failure": {"message": "boom"}})
    case.status = "FAILED"
    problems, _ = case.check()
    assert any("FAILED, expected COMPLETED" in p for p in problems)


def test_the_checks_catch_two_runs_of_one_workflow_id(tmp_path: Path) -> None:
    case = _Case(tmp_path)
    problems, _ = case.check()
    assert problems == []
    now = datetime.now(UTC)
    history = WorkflowHistory(
        "RetryUntilSuccess-0000", [HistoryEvent(i, t, now, a) for i, (t, a) in enumerate(case.events, 1)]
    )
    execution = Execution("RetryUntilSuccess-0000", "RetryUntilSuccess", {"steps": [case.params]}, 0.0, None)
    runs = [SimpleNamespace(run_id=r, status=WorkflowExecutionStatus.COMPLETED) for r in ("run-1", "run-2")]
    found: list[str] = []
    check(
        [execution],
        {execution.workflow_id: history},
        {execution.workflow_id: "COMPLETED"},
        {execution.workflow_id: runs},
        case.ledger,
        found.append,
    )
    assert any("2 runs listed" in p for p in found)
