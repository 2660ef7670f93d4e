"""The benchmarks' counts are refused at the command line when they are not a whole
number of at least 1, with a usage error instead of a traceback over no samples."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize(
    "module", ["one_activity", "onboarding", "compare_temporal", "compare_dbos", "profile", "replay"]
)
@pytest.mark.parametrize("count", ["0", "-5", "many", "1e9"])
def test_a_count_that_is_not_a_positive_whole_number_is_a_usage_error(module: str, count: str) -> None:
    finished = subprocess.run(
        [sys.executable, "-m", f"benchmarks.{module}", "-n", count], capture_output=True, text=True, timeout=60
    )
    assert finished.returncode == 2, finished.stderr
    assert "argument -n/--workflows" in finished.stderr
    assert "Traceback" not in finished.stderr


@pytest.mark.parametrize("count", ["0", "two"])
def test_compare_dbos_server_processes_that_are_not_a_positive_whole_number_are_a_usage_error(count: str) -> None:
    finished = subprocess.run(
        [sys.executable, "-m", "benchmarks.compare_dbos", "--server-processes", count],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert finished.returncode == 2, finished.stderr
    assert "argument --server-processes" in finished.stderr
    assert "Traceback" not in finished.stderr
