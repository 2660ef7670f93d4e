"""Declarative DAGs run by the server, on both stores: versions and aliases, the onboarding
DAG and a 200-task random DAG (dependencies respected, independent tasks overlapping,
results wired through expressions), failures, cancel and terminate, and a kill -9 mid-run."""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections import Counter
from typing import Any

import grpc
import pytest
import yaml

from flowforge import Client, WorkflowExecutionStatus, activity
from flowforge.api.v1 import dag_pb2
from flowforge.dag import load_dag
from flowforge.exceptions import RPCError, WorkflowFailureError
from flowforge.worker import Worker
from samples.dag_onboarding.activities import ACTIVITIES, DEFINITION, TASK_QUEUE
from tests.integration._processes import ServerProcess
from tests.integration._protocol import Wire
from testsupport.waiting import wait_until

REQUEST = {"name": "Ada Lovelace", "email": "ada@example.com", "work_seconds": 0.3}


def _task(task_id: str, activity_type: str, deps: list[str], task_input: Any, **extra: Any) -> dict[str, Any]:
    return {
        "id": task_id,
        "activity": activity_type,
        "depends_on": deps,
        "input": task_input,
        "start_to_close_timeout": "30s",
        **extra,
    }


@activity.defn
async def dag_node(request: dict) -> dict:
    """A random DAG's task: its value is its own number plus its parents' values."""
    started = time.time()
    await asyncio.sleep(request.get("sleep", 0.01))
    value = request["n"] + sum(parent["value"] for parent in request["parents"])
    return {"id": request["id"], "value": value, "started_at": started, "finished_at": time.time()}


@activity.defn
async def always_fails(request: dict) -> dict:
    raise RuntimeError(f"refused {request}")


@activity.defn
async def slow_step(request: dict) -> dict:
    await asyncio.sleep(0.3)
    return {"step": request["step"], "at": time.time()}


def _random_dag(size: int, seed: int) -> tuple[dict[str, Any], dict[str, list[str]]]:
    rng = random.Random(seed)
    ids = [f"t{i}" for i in range(size)]
    deps = {ids[i]: sorted(rng.sample(ids[max(0, i - 30) : i], min(i, rng.randint(0, 3)))) for i in range(size)}
    tasks = [
        _task(
            task_id,
            "dag_node",
            parents,
            {
                "id": task_id,
                "n": int(task_id[1:]),
                "parents": [f"$.tasks.{p}.output" for p in parents],
                "sleep": "$.input.sleep",
            },
        )
        for task_id, parents in deps.items()
    ]
    rng.shuffle(tasks)  # order in the file carries no meaning
    document = {"name": f"random-{seed}", "task_queue": "random-dag", "tasks": tasks}
    document["output"] = {task_id: f"$.tasks.{task_id}.output" for task_id in ids}
    return document, deps


def _expected_values(deps: dict[str, list[str]]) -> dict[str, int]:
    values: dict[str, int] = {}
    for task_id in sorted(deps, key=lambda t: int(t[1:])):
        values[task_id] = int(task_id[1:]) + sum(values[p] for p in deps[task_id])
    return values


def _assert_gapless_without_workflow_tasks(events: list[Any]) -> None:
    assert [e.event_id for e in events] == list(range(1, len(events) + 1))
    assert not [e for e in events if e.event_type.startswith("WorkflowTask")]


async def test_the_onboarding_dag_runs_on_the_server_with_parallel_checks(sdk_client: Client) -> None:
    spec = load_dag(DEFINITION)
    digest = await sdk_client.publish_dag(DEFINITION, alias="prod")
    assert digest == spec.digest
    async with Worker(sdk_client, task_queue=TASK_QUEUE, activities=ACTIVITIES):
        handle = await sdk_client.start_dag("onboarding", REQUEST, id="dag-onb", task_queue=TASK_QUEUE, alias="prod")
        result = await handle.result()
    customer = result["customer"]
    assert customer["email"] == "ada@example.com" and customer["tier"] in ("gold", "standard")
    assert result["notification"]["sent_to"] == "ada@example.com"
    assert isinstance(result["risk_score"], int)  # $.tasks.score_risk.output.score
    history = (await handle.fetch_history()).events
    _assert_gapless_without_workflow_tasks(history)
    assert history[0].attributes["dag"] == {"name": "onboarding", "digest": digest}
    assert history[-1].event_type == "WorkflowExecutionCompleted"
    counts = Counter(e.event_type for e in history)
    assert counts["ActivityTaskScheduled"] == counts["ActivityTaskCompleted"] == 6
    # Each task was scheduled only after every one of its dependencies completed.
    completed_at: dict[str, int] = {}
    scheduled_ids = {
        e.event_id: e.attributes["activity_id"] for e in history if e.event_type == "ActivityTaskScheduled"
    }
    for event in history:
        if event.event_type == "ActivityTaskCompleted":
            completed_at[scheduled_ids[event.attributes["scheduled_event_id"]]] = event.event_id
        if event.event_type == "ActivityTaskScheduled":
            for dependency in spec.task(event.attributes["activity_id"]).depends_on:
                assert completed_at[dependency] < event.event_id
    # The three checks were in flight together: all three scheduled before any completed.
    checks = {"verify_identity", "score_risk", "fetch_credit_file"}
    check_scheduled = [e.event_id for e in history if e.attributes.get("activity_id") in checks]
    assert max(check_scheduled) < min(completed_at[c] for c in checks)
    description = await handle.describe()
    assert description.status == WorkflowExecutionStatus.COMPLETED
    assert {node.activity_id: sorted(node.depends_on) for node in description.dag}["enrich_customer"] == sorted(checks)
    listed = [e async for e in sdk_client.list_workflows()]
    assert [(e.workflow_id, e.workflow_type) for e in listed] == [("dag-onb", "onboarding")]


@pytest.mark.slow
async def test_a_200_task_random_dag_respects_dependencies_overlaps_and_wires_results(sdk_client: Client) -> None:
    document, deps = _random_dag(200, seed=19)
    digest = await sdk_client.publish_dag(document)
    async with Worker(sdk_client, task_queue="random-dag", activities=[dag_node], max_concurrent_activities=20):
        handle = await sdk_client.start_dag(
            "random-19", {"sleep": 0.02}, id="dag-random", task_queue="random-dag", version=digest
        )
        result = await handle.result()
    expected = _expected_values(deps)
    assert {task_id: output["value"] for task_id, output in result.items()} == expected
    for task_id, parents in deps.items():
        for parent in parents:
            assert result[parent]["finished_at"] <= result[task_id]["started_at"], f"{task_id} before {parent}"
    overlapping = sum(
        1
        for a in result.values()
        for b in result.values()
        if a["id"] < b["id"] and a["started_at"] < b["finished_at"] and b["started_at"] < a["finished_at"]
    )
    assert overlapping > 0, "no two independent tasks ran at the same time"
    history = (await handle.fetch_history()).events
    _assert_gapless_without_workflow_tasks(history)
    counts = Counter(e.event_type for e in history)
    assert counts["ActivityTaskScheduled"] == counts["ActivityTaskCompleted"] == 200


async def test_one_spec_published_twice_however_formatted_is_one_version(sdk_client: Client, wire: Wire) -> None:
    text = DEFINITION.read_text()
    first = await sdk_client.publish_dag(text)
    as_json = json.dumps(yaml.safe_load(text), indent=3)
    assert await sdk_client.publish_dag(as_json) == first
    again = await wire.stub.PublishDag(dag_pb2.PublishDagRequest(namespace="default", definition=as_json))
    assert (again.version.digest, again.created) == (first, False)
    versions = await sdk_client.list_dags("onboarding")
    assert [(v.digest, v.task_count) for v in versions] == [(first, 6)]


async def test_the_server_revalidates_and_lists_every_violation(wire: Wire) -> None:
    document = {"name": "bad", "tasks": [_task("a", "x", ["b"], None), _task("b", "x", ["a"], "$.tasks.zz.output")]}
    with pytest.raises(grpc.aio.AioRpcError) as raised:
        await wire.stub.PublishDag(dag_pb2.PublishDagRequest(namespace="default", definition=json.dumps(document)))
    assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    details = raised.value.details() or ""
    assert "$.tasks[0].depends_on: cycle: a -> b -> a" in details
    assert "$.tasks[1].input: references unknown task 'zz'" in details


async def test_moving_an_alias_does_not_affect_runs_already_started(sdk_client: Client) -> None:
    def version(number: int) -> dict[str, Any]:
        return {
            "name": "aliased",
            "task_queue": "aliased",
            "tasks": [_task("step", "slow_step", [], {"step": number})],
            "output": {"version": number, "step": "$.tasks.step.output.step"},
        }

    v1 = await sdk_client.publish_dag(version(1), alias="prod")
    before = await sdk_client.start_dag("aliased", None, id="aliased-1", task_queue="aliased", alias="prod")
    v2 = await sdk_client.publish_dag(version(2))
    assert await sdk_client.set_dag_alias("aliased", "prod", v2, reason="release 2") == v1
    after = await sdk_client.start_dag("aliased", None, id="aliased-2", task_queue="aliased", alias="prod")
    async with Worker(sdk_client, task_queue="aliased", activities=[slow_step]):
        assert await before.result() == {"version": 1, "step": 1}
        assert await after.result() == {"version": 2, "step": 2}
    started = [(await h.fetch_history()).events[0].attributes["dag"]["digest"] for h in (before, after)]
    assert started == [v1, v2]
    assert {v.digest: v.aliases for v in await sdk_client.list_dags("aliased")} == {v1: (), v2: ("prod",)}


async def test_a_version_of_a_running_execution_cannot_be_deleted(sdk_client: Client) -> None:
    document = {"name": "deletable", "task_queue": "nobody-polls", "tasks": [_task("a", "x", [], None)]}
    version = await sdk_client.publish_dag(document)
    handle = await sdk_client.start_dag("deletable", None, id="deletable-1", task_queue="q", version=version)
    with pytest.raises(RPCError) as raised:
        await sdk_client.delete_dag_version(version, reason="cleanup")
    assert raised.value.status == grpc.StatusCode.FAILED_PRECONDITION and "running execution" in raised.value.message
    await handle.terminate(reason="done with it")
    await sdk_client.delete_dag_version(version, reason="cleanup")
    assert await sdk_client.list_dags("deletable") == []


async def test_an_exhausted_task_fails_the_run_after_its_retries(sdk_client: Client) -> None:
    policy = {"initial_interval": "10ms", "maximum_attempts": 2}
    document = {
        "name": "failing",
        "task_queue": "failing",
        "tasks": [
            _task("first", "always_fails", [], "$.input", retry_policy=policy),
            _task("never", "x", ["first"], None),
        ],
    }
    await sdk_client.publish_dag(document, alias="latest")
    async with Worker(sdk_client, task_queue="failing", activities=[always_fails]):
        handle = await sdk_client.start_dag("failing", {"n": 1}, id="failing-1", task_queue="failing")
        with pytest.raises(WorkflowFailureError):
            await handle.result()
    history = (await handle.fetch_history()).events
    _assert_gapless_without_workflow_tasks(history)
    assert [e.event_type for e in history][-3:] == [
        "ActivityTaskStarted",
        "ActivityTaskFailed",
        "WorkflowExecutionFailed",
    ]
    assert history[-3].attributes["attempt"] == 2
    assert "task 'first' failed" in history[-1].attributes["failure"]["message"]
    assert (await handle.describe()).status == WorkflowExecutionStatus.FAILED


async def test_cancel_and_terminate_close_a_dag_run(sdk_client: Client) -> None:
    document = {"name": "idle", "task_queue": "nobody-polls", "tasks": [_task("a", "x", [], None)]}
    version = await sdk_client.publish_dag(document)
    canceled = await sdk_client.start_dag("idle", None, id="idle-cancel", task_queue="q", version=version)
    terminated = await sdk_client.start_dag("idle", None, id="idle-terminate", task_queue="q", version=version)
    with pytest.raises(RPCError) as raised:
        await canceled.query("status")
    assert raised.value.status == grpc.StatusCode.FAILED_PRECONDITION and "declarative DAG run" in raised.value.message
    await canceled.cancel()
    await terminated.terminate(reason="stop")
    assert (await canceled.describe()).status == WorkflowExecutionStatus.CANCELED
    assert (await terminated.describe()).status == WorkflowExecutionStatus.TERMINATED
    for handle in (canceled, terminated):
        _assert_gapless_without_workflow_tasks((await handle.fetch_history()).events)
    # The start's task queue wins over the definition's; without one, the definition's.
    defaulted = await sdk_client.start_dag("idle", None, id="idle-default", version=version)
    queues = [(await h.fetch_history()).events[1].attributes["task_queue"] for h in (canceled, defaulted)]
    assert queues == ["q", "nobody-polls"]


@pytest.mark.slow
async def test_a_killed_server_finishes_the_dag_with_each_task_completed_once(server_process: ServerProcess) -> None:
    steps = [_task(f"s{i}", "slow_step", [f"s{i - 1}"] if i % 3 else [], {"step": i}) for i in range(12)]
    document = {"name": "crashy", "task_queue": "crashy", "tasks": steps, "output": "$.tasks.s11.output.step"}
    client = await Client.connect(server_process.address)
    try:
        await client.publish_dag(document, alias="latest")
        async with Worker(client, task_queue="crashy", activities=[slow_step]):
            handle = await client.start_dag("crashy", None, id="crashy-1", task_queue="crashy")

            async def some_completed() -> bool:
                events = (await handle.fetch_history()).events
                return sum(e.event_type == "ActivityTaskCompleted" for e in events) >= 3

            await wait_until(some_completed, timeout=60, what="three tasks to complete")
            server_process.kill9()
            server_process.start()
            assert await handle.result() == 11
        history = (await handle.fetch_history()).events
    finally:
        await client.close()
    _assert_gapless_without_workflow_tasks(history)
    scheduled = Counter(e.attributes["activity_id"] for e in history if e.event_type == "ActivityTaskScheduled")
    assert scheduled == Counter({f"s{i}": 1 for i in range(12)})
    counts = Counter(e.event_type for e in history)
    assert counts["ActivityTaskCompleted"] == 12 and counts["WorkflowExecutionCompleted"] == 1
