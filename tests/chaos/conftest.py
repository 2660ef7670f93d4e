"""Shows each chaos run's summary line at the end of the pytest run (even with -q)."""

from __future__ import annotations

from typing import Any

import pytest

_SUMMARIES = pytest.StashKey[list[str]]()


@pytest.fixture
def chaos_summaries(request: pytest.FixtureRequest) -> list[str]:
    """Append a line here to have it printed in the "chaos" section of the terminal summary."""
    return request.config.stash.setdefault(_SUMMARIES, [])


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    lines = config.stash.get(_SUMMARIES, [])
    if lines:
        terminalreporter.section("chaos")
        for line in lines:
            terminalreporter.write_line(line)
