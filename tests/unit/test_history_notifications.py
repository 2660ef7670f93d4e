"""Every change of a run's history goes through the one place that notifies its waiters.

History long-polls have no periodic re-check (docs/console.md, "How it works"): they
sleep until the run's notifier channel is woken. ``_Mutation.save_all`` wakes it for every
run whose events it appends, and the close channel for every run it closes; so no other
code may append events or update execution rows. This test holds that line for the
engine's code, and :mod:`tests.integration.test_history_wakeups` shows each kind of
change (signal, timer, activity, cancel, pause, terminate, completion, continue-as-new,
reset, batch, another replica) waking a parked wait.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from flowforge.server.history import mutation
from flowforge.server.history.quiet_runs import QuietRuns

ROOT = Path(__file__).resolve().parents[2]
# The transaction methods that write history events or execution rows.
_WRITERS = re.compile(r"\.(append_run_events|append_events|update_execution|update_executions)\(")
# SQL that writes the same tables directly.
_SQL_WRITES = re.compile(r"(INSERT INTO|UPDATE|DELETE FROM)\s+(history_events|executions)\b", re.IGNORECASE)


def _server_sources() -> dict[str, str]:
    return {
        str(path.relative_to(ROOT)): path.read_text()
        for path in (ROOT / "server").rglob("*.py")
        if "stores" not in path.relative_to(ROOT / "server").parts
    }


def test_only_save_all_writes_events_or_execution_rows() -> None:
    callers = {path for path, text in _server_sources().items() if _WRITERS.search(text)}
    assert callers == {"server/history/mutation.py"}, callers
    source = Path(mutation.__file__).read_text()
    save_all = source[source.index("    async def save_all(") : source.index("\ndef activity_task_row(")]
    assert len(_WRITERS.findall(source)) == len(_WRITERS.findall(save_all)) == 3
    assert "tx.notify_after_commit(run_channel(m.row.run_id))" in save_all
    assert "tx.notify_after_commit(close_channel(run_id))" in save_all


def test_no_engine_code_writes_those_tables_in_sql() -> None:
    writers = {path for path, text in _server_sources().items() if _SQL_WRITES.search(text)}
    assert not writers, writers


def test_quiet_runs_trusts_only_the_unset_event_taken_before_the_read() -> None:
    quiet = QuietRuns(capacity=2)
    events = {"run-1": asyncio.Event()}
    key = ("default", "w", "", False)
    quiet.remember(key, events["run-1"], "run-1", 5)
    assert quiet.unchanged(key, 5, events.__getitem__) == ("run-1", events["run-1"])
    assert quiet.unchanged(key, 4, events.__getitem__) is None  # the caller has not seen event 5
    events["run-1"].set()  # a commit notified the channel
    assert quiet.unchanged(key, 5, events.__getitem__) is None
    assert len(quiet) == 0
    quiet.remember(key, events["run-1"], "run-1", 5)
    events["run-1"] = asyncio.Event()  # notified and popped: listen() hands out a new event
    assert quiet.unchanged(key, 5, events.__getitem__) is None
    for n in range(3):
        quiet.remember(("default", f"w{n}", "", False), asyncio.Event(), f"run-{n}", 1)
    assert len(quiet) == 2
