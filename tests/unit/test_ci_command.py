"""CI runs exactly the test command the README gives, so a check added to one is in both."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _readme_test_command() -> str:
    lines = (ROOT / "README.md").read_text().splitlines()
    commands = [line for line in lines if line.startswith("python3 -m venv .venv") and ".venv/bin/pytest" in line]
    assert len(commands) == 1, f"the README should give one test command, found {commands}"
    return commands[0]


def _ci_command() -> str:
    lines = (ROOT / ".ci" / "run").read_text().splitlines()
    commands = [line for line in lines if line.startswith("python3 -m venv .venv")]
    assert len(commands) == 1, f".ci/run should run one test command, found {commands}"
    return commands[0]


def test_ci_runs_the_readme_test_command() -> None:
    assert _ci_command() == _readme_test_command()


def test_the_test_command_runs_the_static_checks_before_the_tests() -> None:
    steps = _readme_test_command().split(" && ")
    assert steps[-1].startswith(".venv/bin/pytest -q")
    assert {".venv/bin/ruff check .", ".venv/bin/ruff format --check .", ".venv/bin/mypy"} <= set(steps)


def test_the_test_command_runs_every_test_in_parallel_workers_one_file_per_worker() -> None:
    # The suite waits more than it computes, so worker processes (pytest-xdist, in the test
    # extra) shorten it; a whole file stays on one worker, in order, with its module fixtures,
    # and files go out in collection order (files with slow tests first, tests/conftest.py).
    # No -k, -m or path: the command runs the whole suite.
    pytest_step = _readme_test_command().split(" && ")[-1]
    assert pytest_step.split() == [
        ".venv/bin/pytest",
        "-q",
        "-n",
        "3",
        "--dist",
        "loadfile",
        "--no-loadscope-reorder",
    ]
    extras = (ROOT / "pyproject.toml").read_text()
    assert '"pytest-xdist>=' in extras
