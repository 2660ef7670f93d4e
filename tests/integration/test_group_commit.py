"""Group commit: activity completions that arrive together share one transaction.

Over the wire, both stores: many runs' activity completions sent at once commit in
fewer transactions than there are completions, each recorded exactly once; a stale
report among them is refused alone (FAILED_PRECONDITION) while the others are
recorded; and a completion with nothing under way still commits alone at once.
"""

from __future__ import annotations

import asyncio

import grpc

from flowforge.api.v1 import workflow_service_pb2 as pb
from flowforge.converter import default_converter
from flowforge.server import FlowForgeServer
from tests.integration._protocol import NS, Wire, assert_gapless, event_types, schedule_activity
from testsupport.counting import StoreCounters

RUNS = 24


async def _runs_with_an_activity(wire: Wire, prefix: str, count: int) -> list[bytes]:
    """Starts ``count`` runs, each with one activity leased eagerly; their tokens."""
    tokens = []
    for i in range(count):
        await wire.start(f"{prefix}-{i}")
        task = await wire.poll_workflow_task()
        response = await wire.complete_workflow_task(task.task_token, schedule_activity("a"), eager=1)
        tokens.append(response.activity_tasks[0].task_token)
    return tokens


def _complete(wire: Wire, token: bytes, value: int) -> asyncio.Future[pb.RespondActivityTaskCompletedResponse]:
    return asyncio.ensure_future(
        wire.stub.RespondActivityTaskCompleted(
            pb.RespondActivityTaskCompletedRequest(
                namespace=NS, task_token=token, result=default_converter.to_payloads([value]), identity="group"
            )
        )
    )


async def test_completions_that_arrive_together_commit_together_once_each(server: FlowForgeServer, wire: Wire) -> None:
    tokens = await _runs_with_an_activity(wire, "together", RUNS)
    store = StoreCounters(server.store)
    await asyncio.gather(*(_complete(wire, token, i) for i, token in enumerate(tokens)))
    assert store.counts["write_transactions"] < RUNS, dict(store.counts)
    for i in range(RUNS):
        history = await wire.history(f"together-{i}")
        assert event_types(history).count("ActivityTaskCompleted") == 1
        assert_gapless(history)


async def test_a_stale_report_in_a_group_is_refused_alone_and_the_others_are_recorded(
    server: FlowForgeServer, wire: Wire
) -> None:
    tokens = await _runs_with_an_activity(wire, "stale", RUNS)
    # In the middle, so it arrives while the first report's transaction runs: in a group.
    doomed = RUNS // 2
    await _complete(wire, tokens[doomed], doomed)
    store = StoreCounters(server.store)
    results = await asyncio.gather(*(_complete(wire, t, i) for i, t in enumerate(tokens)), return_exceptions=True)
    stale = results.pop(doomed)
    assert isinstance(stale, grpc.aio.AioRpcError) and stale.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert not [r for r in results if isinstance(r, BaseException)], results
    # The group with the stale report rolled back and its reports ran alone.
    assert store.counts["write_transactions"] > store.counts["write_transactions_that_changed_rows"]
    for i in range(RUNS):
        assert event_types(await wire.history(f"stale-{i}")).count("ActivityTaskCompleted") == 1


async def test_a_lone_completion_commits_at_once_in_its_own_transaction(server: FlowForgeServer, wire: Wire) -> None:
    (token,) = await _runs_with_an_activity(wire, "lone", 1)
    store = StoreCounters(server.store)
    await _complete(wire, token, 7)
    assert store.counts["write_transactions"] == 1, dict(store.counts)
