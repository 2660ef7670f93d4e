"""Shows each chaos run's summary line at the end of the pytest run (even with -q).

The lines travel as user properties of the test's report, so they reach the terminal
summary also from pytest-xdist workers; ``tests/conftest.py`` prints them (a conftest here
is not loaded by xdist's controlling process).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.conftest import CHAOS_SUMMARY


@pytest.fixture
def chaos_summaries(request: pytest.FixtureRequest) -> Iterator[list[str]]:
    """Append a line here to have it printed in the "chaos" section of the terminal summary."""
    lines: list[str] = []
    yield lines
    request.node.user_properties.extend((CHAOS_SUMMARY, line) for line in lines)
