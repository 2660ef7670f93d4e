"""LastEvents (server/history/folds.py): a run's last event as committed, kept for a
fold's check of its time; one entry per run, the run noted least recently forgotten first."""

from __future__ import annotations

from flowforge.server.history.folds import LastEvents
from flowforge.server.stores.base import HistoryEventRow


def _event(event_id: int, event_us: int) -> HistoryEventRow:
    return HistoryEventRow(event_id, "WorkflowTaskCompleted", event_us, "{}")


def test_only_the_last_event_noted_for_a_run_is_known() -> None:
    last_events = LastEvents()
    last_events.note("run", _event(5, 500))
    assert last_events.time_of("run", 5) == 500
    last_events.note("run", _event(9, 900))
    assert last_events.time_of("run", 9) == 900
    assert last_events.time_of("run", 5) is None  # no longer the run's last: read if asked
    assert last_events.time_of("other", 9) is None


def test_past_its_size_it_forgets_the_run_noted_least_recently() -> None:
    last_events = LastEvents(kept=2)
    last_events.note("a", _event(1, 10))
    last_events.note("b", _event(1, 20))
    last_events.note("a", _event(2, 30))  # "a" noted again: now the most recent
    last_events.note("c", _event(1, 40))
    assert last_events.time_of("b", 1) is None
    assert last_events.time_of("a", 2) == 30 and last_events.time_of("c", 1) == 40
