"""Reset (Temporal's) end to end, on SQLite and PostgreSQL: to the first and to the last
workflow task of a failed and of a running execution. The new run keeps the history up
to that task and runs it again; signals received after that point are re-delivered;
the running run is terminated; both runs are linked; ``get_workflow_handle(W)`` follows
the new run; what is before the point is not run again; the new run keeps the
base run's priority."""

from __future__ import annotations

import asyncio
import collections
import uuid
from datetime import timedelta

import grpc
import pytest

from flowforge import Client, Priority, activity, workflow
from flowforge.api.schema import TaskKind
from flowforge.client import WorkflowExecutionStatus, WorkflowHandle
from flowforge.exceptions import ApplicationError, RPCError, WorkflowFailureError
from flowforge.server import FlowForgeServer
from tests.integration._protocol import NS, Wire
from tests.integration._reliability import DEADLINE_S, assert_gapless, events, fast_worker, of_type
from testsupport.waiting import wait_until

QUEUE = "reset"
#: Workflow ids whose code has "the bug": it fails after the first signal.
BUGGY: set[str] = set()
RUNS: collections.Counter[str] = collections.Counter()


@activity.defn
async def step(key: str) -> str:
    RUNS[key] += 1
    return f"{key} done"


@workflow.defn
class Steps:
    def __init__(self) -> None:
        self.signals: list[str] = []

    @workflow.run
    async def run(self, key: str) -> dict[str, object]:
        first = await workflow.execute_activity(step, f"{key}/1", start_to_close_timeout=timedelta(seconds=10))
        await workflow.wait_condition(lambda: "a" in self.signals)
        if key in BUGGY:  # stands for the code before the fix was deployed
            raise ApplicationError("a bug in the workflow code", non_retryable=True)
        second = await workflow.execute_activity(step, f"{key}/2", start_to_close_timeout=timedelta(seconds=10))
        await workflow.wait_condition(lambda: "b" in self.signals)
        return {"steps": [first, second], "signals": self.signals}

    @workflow.signal
    def add(self, value: str) -> None:
        self.signals.append(value)


async def _started(client: Client, key: str, *, buggy: bool) -> WorkflowHandle:
    if buggy:
        BUGGY.add(key)
    handle = await client.start_workflow(Steps.run, key, id=key, task_queue=QUEUE)
    await wait_until(lambda: RUNS[f"{key}/1"] == 1, timeout=DEADLINE_S, what="the first step")
    await handle.signal(Steps.add, "a")
    if buggy:
        with pytest.raises(WorkflowFailureError):
            await asyncio.wait_for(handle.result(), DEADLINE_S)
        BUGGY.discard(key)  # the fix is deployed
    else:
        await wait_until(lambda: RUNS[f"{key}/2"] == 1, timeout=DEADLINE_S, what="the second step")
        # The activity ran, but its result is history only once reported and the workflow
        # task after it completed; before that, "last" would be the task that scheduled it.
        await wait_until(
            lambda: _result_of_second_step_recorded(handle), timeout=DEADLINE_S, what="the second step's result"
        )
    return handle


async def _result_of_second_step_recorded(handle: WorkflowHandle) -> bool:
    history = await events(handle)
    completed = of_type(history, "ActivityTaskCompleted")
    return len(completed) == 2 and any(
        e.event_id > completed[1].event_id for e in of_type(history, "WorkflowTaskCompleted")
    )


@pytest.mark.parametrize(("buggy", "reset_type"), [(True, "last"), (True, "first"), (False, "last"), (False, "first")])
async def test_reset_starts_a_linked_run_from_the_workflow_task_and_redelivers_later_signals(
    sdk_client: Client, store_kind: str, buggy: bool, reset_type: str
) -> None:
    key = f"reset-{store_kind}-{'failed' if buggy else 'running'}-{reset_type}-{uuid.uuid4().hex[:6]}"
    async with fast_worker(sdk_client, QUEUE, workflows=[Steps], activities=[step]):
        base = await _started(sdk_client, key, buggy=buggy)
        new_run_id = await sdk_client.reset_workflow(key, reset_type=reset_type, reason="fix deployed")
        assert new_run_id != base.run_id
        latest = sdk_client.get_workflow_handle(key)
        assert (await latest.describe()).run_id == new_run_id
        if buggy or reset_type == "first":  # (running, last: the task waits for "b", nothing to run again)
            await wait_until(lambda: RUNS[f"{key}/2"] >= 1, timeout=DEADLINE_S, what="the second step")
        await latest.signal(Steps.add, "b")
        result = await asyncio.wait_for(latest.result(), DEADLINE_S)

    assert result == {"steps": [f"{key}/1 done", f"{key}/2 done"], "signals": ["a", "b"]}
    # Before the point nothing runs again; from the first task on, everything does.
    assert RUNS[f"{key}/1"] == (2 if reset_type == "first" else 1)
    assert RUNS[f"{key}/2"] == (2 if reset_type == "first" and not buggy else 1)

    old = await base.describe()
    assert old.status == (WorkflowExecutionStatus.FAILED if buggy else WorkflowExecutionStatus.TERMINATED)
    old_history = await events(base)
    if not buggy:
        (terminated,) = of_type(old_history, "WorkflowExecutionTerminated")
        assert new_run_id in terminated.attributes["reason"] and "fix deployed" in terminated.attributes["reason"]
    new_history = await events(latest)
    assert_gapless(new_history)
    (reset,) = [e for e in new_history if e.attributes.get("cause") == "RESET_WORKFLOW"]
    assert reset.attributes["base_run_id"] == base.run_id and reset.attributes["new_run_id"] == new_run_id
    # The kept history is the base run's, event for event, up to the reset task.
    assert [(e.event_id, e.event_type) for e in new_history[: reset.event_id - 1]] == [
        (e.event_id, e.event_type) for e in old_history[: reset.event_id - 1]
    ]
    assert new_history[reset.event_id - 2].event_type == "WorkflowTaskStarted"
    # The signal received after the point is re-delivered (once), "b" came to the new run.
    signals = [e.attributes["input"] for e in of_type(new_history, "WorkflowExecutionSignaled")]
    assert len(signals) == 2


async def test_bad_resets_are_refused_and_change_nothing(sdk_client: Client, store_kind: str) -> None:
    key = f"reset-bad-{store_kind}-{uuid.uuid4().hex[:6]}"
    async with fast_worker(sdk_client, QUEUE, workflows=[Steps], activities=[step]):
        handle = await _started(sdk_client, key, buggy=False)

        async def waiting_for_b() -> list[object] | None:
            history = await events(handle)
            done = len(of_type(history, "ActivityTaskCompleted")) == 2
            return history if done and history[-1].event_type == "WorkflowTaskCompleted" else None

        history = await wait_until(waiting_for_b, timeout=DEADLINE_S, what="the run to wait for 'b'")
        for kwargs, status in (
            ({"event_id": 1}, grpc.StatusCode.INVALID_ARGUMENT),  # WorkflowExecutionStarted
            ({"reset_type": "middle"}, grpc.StatusCode.INVALID_ARGUMENT),
            ({"event_id": 3, "reset_type": "last"}, grpc.StatusCode.INVALID_ARGUMENT),
            ({}, grpc.StatusCode.INVALID_ARGUMENT),
        ):
            with pytest.raises(RPCError) as error:
                await sdk_client.reset_workflow(key, reason="bad", **kwargs)  # type: ignore[arg-type]
            assert error.value.status == status, kwargs
        with pytest.raises(RPCError) as error:
            await sdk_client.reset_workflow(key, reason="", reset_type="first")
        assert error.value.status == grpc.StatusCode.INVALID_ARGUMENT and "reason" in error.value.message
        with pytest.raises(RPCError) as error:
            await sdk_client.reset_workflow("nobody-has-this-id", reason="x", reset_type="first")
        assert error.value.status == grpc.StatusCode.NOT_FOUND
        assert (await handle.describe()).status == WorkflowExecutionStatus.RUNNING
        assert len(await events(handle)) == len(history)
        await handle.terminate(reason="test over")


async def test_the_new_run_keeps_the_reset_runs_priority(
    sdk_client: Client, wire: Wire, server: FlowForgeServer, store_kind: str
) -> None:
    key = f"reset-priority-{store_kind}-{uuid.uuid4().hex[:6]}"
    queue = f"{QUEUE}-priority-{key}"
    priority = Priority(priority_key=1, fairness_key="tenant-a", fairness_weight=2.5)
    await sdk_client.start_workflow(Steps.run, key, id=key, task_queue=queue, priority=priority)
    await wire.poll_workflow_task(queue)  # its first workflow task starts: a point to reset to

    new_run_id = await sdk_client.reset_workflow(key, reset_type="first", reason="rerun")

    async with server.store.transaction() as tx:
        run = await tx.get_execution(NS, new_run_id)
        tasks = await tx.list_run_tasks(NS, new_run_id)
    assert run is not None
    assert (run.priority_key, run.fairness_key, run.fairness_weight) == (1, "tenant-a", 2.5)
    # The workflow task that runs the reset point again is dispatched in the run's turn.
    assert [(t.kind, t.priority_key, t.fairness_key, t.fairness_weight) for t in tasks] == [
        (TaskKind.WORKFLOW, 1, "tenant-a", 2.5)
    ]
