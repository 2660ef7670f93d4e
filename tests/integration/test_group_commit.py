"""Group commit: reports that arrive together share one transaction.

Over the wire, both stores: many runs' activity completions sent at once commit in
fewer transactions than there are completions, each recorded exactly once; a stale
report among them is refused alone (FAILED_PRECONDITION) while the others are
recorded; and a completion with nothing under way still commits alone at once.
Workflow task completions group the same way, with activity completions in the
same group, and each still gets its eager activity leases and the next workflow
task it asked for; a stale one is refused alone.
"""

from __future__ import annotations

import asyncio
from typing import Any

import grpc
import pytest

from flowforge.api.v1 import command_pb2, common_pb2
from flowforge.api.v1 import workflow_service_pb2 as pb
from flowforge.converter import default_converter
from flowforge.server import FlowForgeServer
from flowforge.server.history.group_commit import GroupCommit
from tests.integration._protocol import (
    NS,
    Wire,
    assert_gapless,
    complete_workflow,
    event_types,
    schedule_activity,
    start_timer,
)
from testsupport.counting import StoreCounters
from testsupport.waiting import wait_until

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


async def _runs_with_a_workflow_task(wire: Wire, prefix: str, count: int) -> dict[str, bytes]:
    """Starts ``count`` runs and leases each one's first workflow task; workflow id -> token."""
    for i in range(count):
        await wire.start(f"{prefix}-{i}")
    tokens = {}
    for _ in range(count):
        task = await wire.poll_workflow_task()
        tokens[task.workflow_execution.workflow_id] = task.task_token
    return tokens


def _complete_workflow_task(
    wire: Wire, token: bytes, *commands: command_pb2.Command, eager: int = 0, return_new: bool = False
) -> asyncio.Future[pb.RespondWorkflowTaskCompletedResponse]:
    return asyncio.ensure_future(
        wire.stub.RespondWorkflowTaskCompleted(
            pb.RespondWorkflowTaskCompletedRequest(
                namespace=NS,
                task_token=token,
                commands=list(commands),
                identity="group",
                eager_activity_slots=eager,
                return_new_workflow_task=return_new,
            )
        )
    )


async def test_workflow_task_completions_that_arrive_together_commit_together_with_their_eager_leases(
    server: FlowForgeServer, wire: Wire
) -> None:
    tokens = await _runs_with_a_workflow_task(wire, "wft", RUNS)
    store = StoreCounters(server.store)
    responses = await asyncio.gather(
        *(_complete_workflow_task(wire, token, schedule_activity("a"), eager=1) for token in tokens.values())
    )
    assert store.counts["write_transactions"] < RUNS, dict(store.counts)
    # Each got its own activity leased in the group's transaction: its token completes it.
    assert all(len(response.activity_tasks) == 1 for response in responses), responses
    await asyncio.gather(*(_complete(wire, r.activity_tasks[0].task_token, i) for i, r in enumerate(responses)))
    for workflow_id in tokens:
        history = await wire.history(workflow_id)
        assert event_types(history).count("WorkflowTaskCompleted") == 1
        assert event_types(history).count("ActivityTaskCompleted") == 1
        assert_gapless(history)


async def test_workflow_task_and_activity_completions_share_a_group_and_each_gets_its_next_task(
    server: FlowForgeServer, wire: Wire, monkeypatch: pytest.MonkeyPatch
) -> None:
    activity_tokens = await _runs_with_an_activity(wire, "mixed-a", RUNS // 2)
    workflow_tokens = await _runs_with_a_workflow_task(wire, "mixed-w", RUNS // 2)
    # A signal while each workflow task runs: its completion schedules the next one at once.
    for workflow_id in workflow_tokens:
        await wire.stub.SignalWorkflowExecution(
            pb.SignalWorkflowExecutionRequest(
                namespace=NS, execution=common_pb2.WorkflowExecution(workflow_id=workflow_id), signal_name="s"
            )
        )
    # The transactions that begin hold until every report has reached group commit, so
    # the grouping does not depend on how fast the RPCs arrive (on PostgreSQL several
    # report transactions run at once: reports that trickle in one by one on a loaded
    # machine would each find one free).
    arrived, gate = [0], asyncio.Event()
    run = GroupCommit.run

    async def held_run(self: GroupCommit, run_id: str, body: Any, **kwargs: Any) -> Any:
        arrived[0] += 1

        async def held_body(tx: Any) -> Any:
            await gate.wait()
            return await body(tx)

        return await run(self, run_id, held_body, **kwargs)

    monkeypatch.setattr(GroupCommit, "run", held_run)
    store = StoreCounters(server.store)
    reports = [
        *(_complete(wire, token, i) for i, token in enumerate(activity_tokens)),
        *(_complete_workflow_task(wire, token, return_new=True) for token in workflow_tokens.values()),
    ]
    await wait_until(lambda: arrived[0] >= RUNS, timeout=60, what="every report to reach group commit")
    gate.set()
    responses = await asyncio.gather(*reports)
    monkeypatch.undo()
    # Half as many as the workflow task completions alone would take, were they not grouped.
    assert store.counts["write_transactions"] <= RUNS // 2, dict(store.counts)
    for i in range(RUNS // 2):
        assert event_types(await wire.history(f"mixed-a-{i}")).count("ActivityTaskCompleted") == 1
    following = [r for r in responses if isinstance(r, pb.RespondWorkflowTaskCompletedResponse)]
    assert len(following) == RUNS // 2 and all(r.workflow_task.task_token for r in following), following
    # The task handed back is leased to the caller: its token closes the run.
    await asyncio.gather(
        *(_complete_workflow_task(wire, r.workflow_task.task_token, complete_workflow("ok")) for r in following)
    )
    for workflow_id in workflow_tokens:
        history = await wire.history(workflow_id)
        assert event_types(history).count("WorkflowExecutionSignaled") == 1
        assert event_types(history)[-1] == "WorkflowExecutionCompleted"
        assert_gapless(history)


async def test_a_stale_workflow_task_completion_in_a_group_is_refused_alone(
    server: FlowForgeServer, wire: Wire
) -> None:
    tokens = await _runs_with_a_workflow_task(wire, "wft-stale", RUNS)
    # In the middle, so it arrives while the first report's transaction runs: in a group.
    ids = list(tokens)
    doomed = ids[RUNS // 2]
    await _complete_workflow_task(wire, tokens[doomed], start_timer("t", 3600))
    store = StoreCounters(server.store)
    results = await asyncio.gather(
        *(_complete_workflow_task(wire, tokens[i], complete_workflow(i)) for i in ids), return_exceptions=True
    )
    stale = results.pop(RUNS // 2)
    assert isinstance(stale, grpc.aio.AioRpcError) and stale.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert not [r for r in results if isinstance(r, BaseException)], results
    assert store.counts["write_transactions"] > store.counts["write_transactions_that_changed_rows"]
    for workflow_id in ids:
        types = event_types(await wire.history(workflow_id))
        assert types[-1] == ("TimerStarted" if workflow_id == doomed else "WorkflowExecutionCompleted"), types
