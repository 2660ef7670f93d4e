"""Continue-as-new, end to end against a real server on SQLite and PostgreSQL.

``workflow.continue_as_new(arg)`` closes the run as CONTINUED_AS_NEW
(``WorkflowExecutionContinuedAsNew``) and starts the next run of the same workflow
id, with a fresh history, in the same transaction. ``handle.result()`` and
``client.get_workflow_handle(id)`` follow the chain to its last run. The run
timeout starts afresh with each run; the execution timeout spans the chain.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from flowforge import Client, WorkflowExecutionStatus, workflow
from flowforge.exceptions import NonDeterminismError, TimeoutError, WorkflowFailureError
from flowforge.testing import Replayer
from tests.integration._processes import ServerProcess
from tests.integration._reliability import assert_gapless, events, fast_worker
from testsupport.waiting import wait_until

QUEUE = "continue-as-new"
RUNS = 100
# WorkflowExecutionStarted, WorkflowTaskScheduled/Started/Completed and the close event.
EVENTS_PER_RUN = 5


@workflow.defn
class Countdown:
    @workflow.run
    async def run(self, state: dict) -> dict:
        if state["left"] == 0:
            return {"total": state["total"], "continued_from": workflow.info().continued_run_id is not None}
        workflow.continue_as_new({"left": state["left"] - 1, "total": state["total"] + state["left"]})


@workflow.defn(name="Countdown")
class CountdownThatNoLongerContinues:
    @workflow.run
    async def run(self, state: dict) -> dict:
        return state


@workflow.defn
class Steps:
    """Continues as new after each short timer until it has taken ``total`` steps."""

    @workflow.run
    async def run(self, state: dict) -> dict:
        await workflow.sleep(timedelta(seconds=0.05))
        if state["step"] == state["total"]:
            return state
        workflow.continue_as_new({**state, "step": state["step"] + 1})


@workflow.defn
class TicksForever:
    @workflow.run
    async def run(self, ticks: int) -> None:
        await workflow.sleep(timedelta(seconds=0.2))
        workflow.continue_as_new(ticks + 1)


async def test_continuing_as_new_100_times_keeps_each_history_small_and_result_follows_the_chain(
    sdk_client: Client,
) -> None:
    async with fast_worker(sdk_client, QUEUE, workflows=[Countdown]):
        handle = await sdk_client.start_workflow(
            Countdown.run, {"left": RUNS, "total": 0}, id="countdown", task_queue=QUEUE
        )
        # The handle names the first run; result() follows 100 continuations to the last.
        assert await handle.result() == {"total": RUNS * (RUNS + 1) // 2, "continued_from": True}

    runs = [run async for run in sdk_client.list_workflows(workflow_id="countdown")]
    assert len(runs) == RUNS + 1
    statuses = sorted(run.status.name for run in runs)
    assert statuses == ["COMPLETED"] + ["CONTINUED_AS_NEW"] * RUNS
    assert max(run.history_length for run in runs) <= EVENTS_PER_RUN

    # The latest run is what get_workflow_handle(id) finds; walk the chain back from it.
    latest = await sdk_client.get_workflow_handle("countdown").describe()
    assert latest.status is WorkflowExecutionStatus.COMPLETED
    chain = [latest.run_id]
    run_id = latest.continued_run_id
    while run_id is not None:
        chain.append(run_id)
        run_id = (await sdk_client.get_workflow_handle("countdown", run_id=run_id).describe()).continued_run_id
    assert chain[-1] == handle.run_id and len(chain) == RUNS + 1

    first = await events(sdk_client.get_workflow_handle("countdown", run_id=handle.run_id))
    assert_gapless(first)
    continued = first[-1]
    assert continued.event_type == "WorkflowExecutionContinuedAsNew"
    assert continued.attributes["new_execution_run_id"] == chain[-2]
    second = await events(sdk_client.get_workflow_handle("countdown", run_id=chain[-2]))
    started = second[0].attributes
    assert started["continued_execution_run_id"] == handle.run_id
    assert started["first_execution_run_id"] == handle.run_id

    # Each run's history replays on its own; code that stopped continuing is named.
    first_history = await sdk_client.get_workflow_handle("countdown", run_id=handle.run_id).fetch_history()
    await Replayer(workflows=[Countdown]).replay_workflow(first_history)
    with pytest.raises(NonDeterminismError) as error:
        await Replayer(workflows=[CountdownThatNoLongerContinues]).replay_workflow(first_history)
    assert "WorkflowExecutionContinuedAsNew" in str(error.value) and "CompleteWorkflowExecution" in str(error.value)


async def test_the_execution_timeout_spans_the_chain_while_the_run_timeout_restarts(sdk_client: Client) -> None:
    async with fast_worker(sdk_client, QUEUE, workflows=[TicksForever]):
        handle = await sdk_client.start_workflow(
            TicksForever.run,
            0,
            id="ticks",
            task_queue=QUEUE,
            execution_timeout=timedelta(seconds=6),
            run_timeout=timedelta(seconds=3),
        )
        with pytest.raises(WorkflowFailureError) as failure:
            await handle.result()
    assert isinstance(failure.value.cause, TimeoutError)
    assert "EXECUTION" in str(failure.value.cause)
    runs = [run async for run in sdk_client.list_workflows(workflow_id="ticks")]
    # Each run lives 0.2 s, well inside its 3 s run timeout even on a loaded machine (with
    # 1 s, runs there timed out: RUN); the chain ran out at 6 s, twice the run timeout.
    assert len(runs) >= 3
    assert sorted({run.status.name for run in runs}) == ["CONTINUED_AS_NEW", "TIMED_OUT"]
    first, last = min(runs, key=lambda r: r.start_time), max(runs, key=lambda r: r.start_time)
    assert last.close_time is not None and first.start_time is not None
    assert 5.8 <= (last.close_time - first.start_time).total_seconds() <= 18.0


async def test_a_server_killed_during_a_continue_as_new_chain_leaves_exactly_one_run_per_step(
    server_process: ServerProcess,
) -> None:
    total = 30
    client = await Client.connect(server_process.address)
    try:
        async with fast_worker(client, QUEUE, workflows=[Steps]):
            handle = await client.start_workflow(
                Steps.run,
                {"step": 0, "total": total},
                id="steps",
                task_queue=QUEUE,
                task_timeout=timedelta(seconds=2),
            )

            async def runs_so_far() -> int:
                return len([run async for run in client.list_workflows(workflow_id="steps")])

            await wait_until(lambda: _at_least(runs_so_far(), 8), timeout=60, what="a few continuations")
            server_process.kill9()
            server_process.start()
            assert await handle.result() == {"step": total, "total": total}
        runs = [run async for run in client.list_workflows(workflow_id="steps")]
        assert len(runs) == total + 1
        assert sorted(run.status.name for run in runs) == ["COMPLETED"] + ["CONTINUED_AS_NEW"] * total
        inputs = []
        for run in runs:
            history = await events(client.get_workflow_handle("steps", run_id=run.run_id))
            assert_gapless(history)
            inputs.append(history[0].attributes["input"])
        assert len({str(value) for value in inputs}) == total + 1  # every step started exactly once
    finally:
        await client.close()


async def _at_least(count, minimum: int) -> bool:  # type: ignore[no-untyped-def]
    return (await count) >= minimum
