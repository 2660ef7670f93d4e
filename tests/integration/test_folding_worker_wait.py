"""A completion waiting on a fold of its run whose answer is late goes unfolded, in time.

Two activities of one run complete; the first folds and the answer to its fold is held (the
server applied it; the worker gets it late, as from a busy server or a slow connection). The
second completion waits for that answer only a short bound (worker/_fold.py ``_FOLD_WAIT_S``,
a share of its lease), then goes unfolded: it lands while the answer is still held, within its
lease, so the activity runs once and the run ends right (both stores, both transports).
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections import Counter
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from flowforge import Client, workflow
from flowforge.worker import _fold
from tests.integration._processes import read_ledger
from tests.integration._reliability import DEADLINE_S, assert_gapless, fast_worker
from tests.integration._worker_app import ledger_step
from tests.integration.test_folding_worker import Folds
from testsupport.waiting import wait_until

# Nothing extends a waiting completion's lease: without the bound it outlives this one.
LEASE = timedelta(seconds=4)


@workflow.defn
class TwoAtOnce:
    """Two activities at once; their results."""

    @workflow.run
    async def run(self, key: str) -> list[dict[str, Any]]:
        steps = [
            workflow.execute_activity(ledger_step, {"key": f"{key}/{i}"}, start_to_close_timeout=LEASE)
            for i in range(2)
        ]
        return list(await asyncio.gather(*steps))


async def test_a_completion_waiting_on_a_late_fold_answer_goes_unfolded_and_its_activity_runs_once(
    sdk_client: Client, task_transport: str, ledger: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FLOWFORGE_TEST_LEDGER", str(ledger))
    folds = Folds()
    queue = f"fold-wait-{uuid.uuid4().hex[:8]}"
    handle = sdk_client.get_workflow_handle(f"{queue}-1")
    send_report = _fold.send_report
    held: list[bool] = []  # per fold answer held: whether the other completion landed meanwhile

    async def both_completed() -> bool:
        events = (await handle.fetch_history()).events
        return [e.event_type for e in events].count("ActivityTaskCompleted") == 2

    async def hold_the_first_fold_answer(service: Any, stream: Any, rpc: str, request: Any, **options: Any) -> Any:
        answer = await send_report(service, stream, rpc, request, **options)
        if request.HasField("folded_workflow_task") and not held:
            held.append(False)
            # Held until the other completion landed (not before, however long it waits for this answer).
            with contextlib.suppress(AssertionError):  # it never did: the assertions below say so
                await wait_until(both_completed, timeout=2 * LEASE.total_seconds(), what="the other completion")
                held[0] = True
        return answer

    monkeypatch.setattr(_fold, "send_report", hold_the_first_fold_answer)
    async with fast_worker(
        sdk_client,
        queue,
        workflows=[TwoAtOnce],
        activities=[ledger_step],
        meter=folds.meter,
        task_transport=task_transport,
    ):
        await sdk_client.start_workflow(TwoAtOnce.run, "two", id=handle.id, task_queue=queue)
        result = await asyncio.wait_for(handle.result(), DEADLINE_S)
    assert held == [True], "the other completion landed while the first fold's answer was held"
    assert sorted(r["key"] for r in result) == ["two/0", "two/1"] and {r["attempt"] for r in result} == {1}
    assert folds.count("applied") == 1  # the first; the waiting one went unfolded
    starts = Counter(e["key"] for e in read_ledger(ledger) if e["event"] == "start")
    assert starts == {"two/0": 1, "two/1": 1}
    events = (await handle.fetch_history()).events
    assert_gapless(events)
    types = Counter(e.event_type for e in events)
    assert types["ActivityTaskCompleted"] == 2 and types["ActivityTaskTimedOut"] == 0
