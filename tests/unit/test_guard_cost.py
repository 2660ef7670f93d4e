"""The calls workflow code makes under the determinism guard's profile hook, held to
budgets per workflow task (issue 20). Each call costs the hook two events, each with a
frame object made and the frame's locals copied out and back, so a change that adds calls
on the activation path shows here as a count, not as a slower figure in a benchmark.
Measured with CPython 3.11 (``python -m benchmarks.replay`` reports the same counts): one
activity 78.5 calls per workflow task (121.5 before the cuts of issue 20), the onboarding
DAG 172.2 (264.8). Lower a count: tighten its budget."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from testsupport.activations import Run, calls_per_task, onboarding_run, one_activity_run


@pytest.mark.parametrize(("make_run", "budget"), [(one_activity_run, 79), (onboarding_run, 173)])
def test_workflow_tasks_stay_within_their_budget_of_calls_under_the_guard(
    make_run: Callable[[], Run], budget: float
) -> None:
    run = make_run()
    run.whole_run()  # first-use work (imports, caches) is not a workflow task's
    assert 0 < calls_per_task(run) <= budget
