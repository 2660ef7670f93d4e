"""New run ids are version 7 UUIDs: the time in milliseconds first, then random bits."""

from __future__ import annotations

import uuid

import pytest

from flowforge.server.history import run_ids
from flowforge.server.history.run_ids import time_ordered_run_id

MS = 1_764_650_000_123


def test_a_run_id_is_a_version_7_uuid_that_starts_with_the_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(run_ids.time, "time_ns", lambda: MS * 1_000_000 + 999_999)
    run_id = time_ordered_run_id()
    parsed = uuid.UUID(run_id)
    assert str(parsed) == run_id  # the standard text form
    assert parsed.version == 7
    assert parsed.variant == uuid.RFC_4122
    assert parsed.int >> 80 == MS


def test_run_ids_sort_by_time_and_differ_within_a_millisecond(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [MS]
    monkeypatch.setattr(run_ids.time, "time_ns", lambda: now[0] * 1_000_000)
    earlier = [time_ordered_run_id() for _ in range(1000)]
    now[0] += 1
    later = [time_ordered_run_id() for _ in range(1000)]
    assert len(set(earlier)) == 1000
    assert max(earlier) < min(later)
