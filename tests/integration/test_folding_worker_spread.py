"""Folded workflow tasks when a run's activities run on several workers (both stores, both transports).

A fold applies only if nothing moved the run before it lands; another worker's completion of
one of the run's activities does, and the server then ignores the fold and hands the run's
next workflow task back with its whole history (the worker advanced its instance past the
run), so each ignored fold costs a replay from event 1. A fan-out whose activities are spread
over workers would pay that for most of its completions: O(N^2) for N activities. The worker
folds only when every activity the run awaits is its own (worker/_fold.py ``HeldActivities``).
"""

from __future__ import annotations

import asyncio
import uuid

from flowforge import Client
from tests.integration._reliability import DEADLINE_S, fast_worker
from tests.integration.test_flow_control import RatedFanOut, rated_call
from tests.integration.test_folding_worker import Folds, _checked_history

CACHE = "flowforge_worker_cache_lookups"
WORKERS = 3
RUNS = 4
ACTIVITIES_PER_RUN = 30


async def test_a_fan_out_over_several_workers_sends_no_fold_the_server_ignores(
    sdk_client: Client, task_transport: str
) -> None:
    folds = Folds()
    queue = f"fold-spread-{uuid.uuid4().hex[:8]}"
    # A queue rate limit hands the activities out one at a time, to whichever worker polls:
    # each run's activities end up spread over the workers.
    await sdk_client.set_rate_limit(150.0, task_queue=queue, reason="spread the leases")
    workers = [
        fast_worker(
            sdk_client,
            queue,
            workflows=[RatedFanOut],
            activities=[rated_call],
            max_concurrent_activities=10,
            identity=f"spread-worker-{i}",
            meter=folds.meter,
            task_transport=task_transport,
        )
        for i in range(WORKERS)
    ]
    async with workers[0], workers[1], workers[2]:
        handles = [
            await sdk_client.start_workflow(RatedFanOut.run, ACTIVITIES_PER_RUN, id=f"{queue}-{i}", task_queue=queue)
            for i in range(RUNS)
        ]
        for handle in handles:
            assert await asyncio.wait_for(handle.result(), DEADLINE_S) == sum(range(ACTIVITIES_PER_RUN))
    await sdk_client.set_rate_limit(0, task_queue=queue)
    completers = set()
    for handle in handles:
        history = await _checked_history(handle, RatedFanOut)
        completers |= {e.attributes["identity"] for e in history.events if e.event_type == "ActivityTaskCompleted"}
    assert len(completers) >= 2, f"the activities all ran on {completers}: nothing shows the spread"
    counts = {result: folds.count(result) for result in ("applied", "ignored", "not_attempted_other_workers")}
    replays = folds.count("miss", CACHE)
    # The server ignored no fold (nothing but activities moves these runs: no signal, timer or child)...
    assert counts["ignored"] == 0, f"folds {counts}, replays from event 1: {replays}"
    # ...so a worker replayed a run from event 1 only for its first task of the run, never
    # because a fold of its was ignored (on a spoiled instance, handed the whole history).
    assert replays <= WORKERS * RUNS, f"folds {counts}, replays from event 1: {replays}"
    # Completions of a cached run whose other activities ran elsewhere went unfolded.
    assert counts["not_attempted_other_workers"] > 0, f"folds {counts}"
