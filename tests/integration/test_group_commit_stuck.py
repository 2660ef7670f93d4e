"""Group commit on PostgreSQL (which writes in parallel): reports behind a report
transaction that cannot finish (a row lock held from outside, standing in for round
trips slowed down by a loaded machine) are not all held up behind it.

Other reports commit in other transactions while the stuck one still waits; when the
lock goes, every report is recorded exactly once. With one report transaction at a
time per server process (as before 824d8c9), nothing committed until the lock went:
on a loaded machine that one pipeline capped a process's throughput while its CPU
idled, which is what stalled the scale curve (docs/performance.md, scale curve).
"""

from __future__ import annotations

import asyncio

import asyncpg
import pytest

from tests.integration._protocol import Wire, assert_gapless, event_types
from tests.integration.test_group_commit import _complete, _runs_with_an_activity
from testsupport.waiting import wait_until

pytestmark = pytest.mark.postgres

DEADLINE_S = 30.0
# More than the report transactions a server runs at once, so some queue behind the stuck one.
REPORTS = 16


@pytest.fixture
def store_kind() -> str:
    """PostgreSQL only (``server`` and ``wire`` come from conftest): SQLite has one writer."""
    return "postgresql"


async def test_reports_commit_while_another_report_transaction_is_stuck(wire: Wire, store_url: str) -> None:
    tokens = await _runs_with_an_activity(wire, "stuck", REPORTS)
    blocker = await asyncpg.connect(store_url)
    try:
        holding = blocker.transaction()
        await holding.start()
        await blocker.execute("SELECT 1 FROM executions WHERE workflow_id = 'stuck-0' FOR UPDATE")
        stuck = _complete(wire, tokens[0], 0)

        async def waiting_on_the_lock() -> bool:
            return bool(await blocker.fetchval("SELECT count(*) FROM pg_locks WHERE NOT granted"))

        await wait_until(waiting_on_the_lock, timeout=DEADLINE_S, what="the first completion to wait on the row lock")
        others = [_complete(wire, token, i) for i, token in enumerate(tokens) if i]
        await wait_until(
            lambda: any(report.done() for report in others),
            timeout=DEADLINE_S,
            what="a completion to commit while the first report transaction is stuck",
        )
        assert not stuck.done()
        finished = [report for report in others if report.done()]
        assert all(report.exception() is None for report in finished), finished
        await holding.rollback()
    finally:
        await blocker.close()
    await asyncio.wait_for(asyncio.gather(stuck, *others), DEADLINE_S)
    for i in range(len(tokens)):
        history = await wire.history(f"stuck-{i}")
        assert event_types(history).count("ActivityTaskCompleted") == 1
        assert_gapless(history)
