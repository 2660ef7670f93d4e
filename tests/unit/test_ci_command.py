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
    assert steps[-1] == ".venv/bin/pytest -q"
    assert {".venv/bin/ruff check .", ".venv/bin/ruff format --check .", ".venv/bin/mypy"} <= set(steps)
