"""Visibility end to end: search attributes, memo, list queries, count, pagination.

- Custom search attributes are registered per namespace with a type; an execution
  gets values at start (``search_attributes=``) and from workflow code
  (``workflow.upsert_search_attributes``), which writes an
  ``UpsertWorkflowSearchAttributes`` event and the visible values in one transaction.
- ``describe()`` and ``list_workflows()`` show the current values and the memo.
- ``list_workflows(query)`` selects exactly the runs the query says, operator by
  operator, with AND binding tighter than OR; pages never repeat or lose a run,
  even while new runs start; bad queries are INVALID_ARGUMENT naming the position;
  values never reach the SQL text, so an injection attempt is just a string.

Every test runs against SQLite and PostgreSQL (the in-process ``server`` fixture).
"""

from __future__ import annotations

import asyncio
import base64
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import grpc
import pytest

from flowforge import Client, WorkflowExecutionStatus, activity, workflow
from flowforge.api.v1 import workflow_service_pb2 as pb
from flowforge.client import (
    Schedule,
    ScheduleActionStartWorkflow,
    ScheduleIntervalSpec,
    ScheduleSpec,
    WorkflowHandle,
)
from flowforge.common import SearchAttributeIndexedValueType as IndexedType
from flowforge.exceptions import NonDeterminismError, RPCError
from flowforge.server import FlowForgeServer, ServerConfig
from flowforge.testing import Replayer
from tests.integration._processes import ServerProcess
from tests.integration._reliability import DEADLINE_S, events, fast_worker, of_type
from tests.integration.test_cli import flowforge
from testsupport.waiting import wait_until

IDLE_QUEUE = "visibility-idle"  # no worker polls it: runs stay RUNNING until terminated
QUEUE = "visibility"
T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)

ATTRIBUTES = {
    "Region": IndexedType.KEYWORD,
    "Amount": IndexedType.INT,
    "Score": IndexedType.DOUBLE,
    "Vip": IndexedType.BOOL,
    "DueAt": IndexedType.DATETIME,
}


async def ids(client: Client, query: str, **options: Any) -> set[str]:
    return {e.workflow_id async for e in client.list_workflows(query, **options)}


async def start_idle(client: Client, workflow_id: str, workflow_type: str, **options: Any) -> WorkflowHandle:
    return await client.start_workflow(workflow_type, id=workflow_id, task_queue=IDLE_QUEUE, **options)


async def rejection(call: Any) -> RPCError:
    with pytest.raises(RPCError) as caught:
        await call
    return caught.value


async def list_all(client: Client, query: str) -> list[Any]:
    return [e async for e in client.list_workflows(query)]


# ----------------------------------------------------------------------------- start, describe, list


async def test_start_with_search_attributes_and_memo_shows_them_in_describe_and_list(sdk_client: Client) -> None:
    await sdk_client.add_search_attributes(ATTRIBUTES)
    await sdk_client.add_search_attributes({"Region": IndexedType.KEYWORD})  # again, same type: a no-op
    assert await sdk_client.list_search_attributes() == dict(sorted(ATTRIBUTES.items()))

    handle = await start_idle(
        sdk_client,
        "order-1",
        "Order",
        search_attributes={"Region": "eu", "Amount": 120, "Score": 4.5, "Vip": True, "DueAt": T0},
        memo={"note": "gift wrap", "lines": [{"sku": "A-1", "qty": 2}]},
    )
    expected = {"Amount": 120, "DueAt": T0, "Region": "eu", "Score": 4.5, "Vip": True}
    description = await handle.describe()
    assert description.search_attributes == expected
    assert description.memo == {"lines": [{"sku": "A-1", "qty": 2}], "note": "gift wrap"}

    [listed] = await list_all(sdk_client, "WorkflowId = 'order-1'")
    assert (listed.run_id, listed.workflow_type, listed.status) == (
        handle.run_id,
        "Order",
        WorkflowExecutionStatus.RUNNING,
    )
    assert listed.search_attributes == expected and listed.memo == description.memo
    assert listed.start_time is not None and listed.close_time is None

    started = of_type(await events(handle), "WorkflowExecutionStarted")[0].attributes
    assert started["search_attributes"]["indexed_fields"]["Region"] == {"keyword_value": "eu"}
    assert set(started["memo"]["fields"]) == {"note", "lines"}


async def test_unregistered_or_mistyped_attributes_are_refused_and_change_nothing(sdk_client: Client) -> None:
    await sdk_client.add_search_attributes({"Amount": IndexedType.INT})
    unknown = await rejection(start_idle(sdk_client, "bad-1", "Order", search_attributes={"Colour": "red"}))
    assert unknown.status == grpc.StatusCode.INVALID_ARGUMENT
    assert "'Colour' is not registered" in unknown.message and "flowforge search-attribute create" in unknown.message
    mistyped = await rejection(start_idle(sdk_client, "bad-2", "Order", search_attributes={"Amount": "ten"}))
    assert mistyped.status == grpc.StatusCode.INVALID_ARGUMENT
    assert "registered as Int, but the value given is a Keyword" in mistyped.message
    reserved = await rejection(start_idle(sdk_client, "bad-3", "Order", search_attributes={"WorkflowType": "x"}))
    assert reserved.status == grpc.StatusCode.INVALID_ARGUMENT and "built in" in reserved.message
    retyped = await rejection(sdk_client.add_search_attributes({"Amount": IndexedType.KEYWORD}))
    assert retyped.status == grpc.StatusCode.ALREADY_EXISTS and "already registered" in retyped.message
    bad_name = await rejection(sdk_client.add_search_attributes({"order id": IndexedType.KEYWORD}))
    assert bad_name.status == grpc.StatusCode.INVALID_ARGUMENT and "letters, digits or underscores" in bad_name.message
    too_many = await rejection(sdk_client.add_search_attributes({f"A{n}": IndexedType.INT for n in range(100)}))
    assert too_many.status == grpc.StatusCode.FAILED_PRECONDITION and "the limit is 100" in too_many.message
    with pytest.raises(ValueError, match="naive datetime"):
        await start_idle(sdk_client, "bad-4", "Order", search_attributes={"Amount": datetime(2024, 1, 1)})

    assert await list_all(sdk_client, "") == []  # nothing was started
    assert await sdk_client.list_search_attributes() == {"Amount": IndexedType.INT}


# ----------------------------------------------------------------------------- the query language


async def start_known_set(client: Client) -> dict[str, WorkflowHandle]:
    """Six runs with known attributes; o2 and r1 terminated."""
    await client.add_search_attributes(ATTRIBUTES)
    runs = {
        "o1": ("Order", {"Region": "eu", "Amount": 10, "Score": 1.5, "Vip": True, "DueAt": T0}),
        "o2": ("Order", {"Region": "us", "Amount": 20, "Score": 2.5, "Vip": False, "DueAt": T0 + timedelta(days=1)}),
        "o3": ("Order", {"Region": "eu-west", "Amount": 30, "DueAt": T0 + timedelta(days=2)}),
        "r1": ("Refund", {"Region": "us", "Amount": 40, "Score": 0.5}),
        "r2": ("Refund", {}),
        "s1": ("Shipment", {"Region": "it's", "Amount": -5}),
    }
    handles = {}
    for workflow_id, (workflow_type, attributes) in runs.items():
        handles[workflow_id] = await start_idle(client, workflow_id, workflow_type, search_attributes=attributes)
    for workflow_id in ("o2", "r1"):
        await handles[workflow_id].terminate(reason="test")
    return handles


async def test_each_operator_and_and_or_precedence_select_exactly_the_expected_runs(sdk_client: Client) -> None:
    handles = await start_known_set(sdk_client)
    start = {workflow_id: (await h.describe()).start_time for workflow_id, h in handles.items()}
    stamp = {workflow_id: moment.isoformat() for workflow_id, moment in start.items() if moment}
    running = {"o1", "o3", "r2", "s1"}
    everything = running | {"o2", "r1"}
    cases = {
        "": everything,
        "WorkflowType = 'Order'": {"o1", "o2", "o3"},
        "WorkflowType != 'Order'": {"r1", "r2", "s1"},
        "WorkflowType <> 'Order'": {"r1", "r2", "s1"},
        "WorkflowType IN ('Refund', 'Shipment')": {"r1", "r2", "s1"},
        "WorkflowId = 'o1'": {"o1"},
        f"RunId = '{handles['o3'].run_id}'": {"o3"},
        f"TaskQueue = '{IDLE_QUEUE}'": everything,
        "WorkflowId STARTS_WITH 'r'": {"r1", "r2"},
        "Region = 'eu'": {"o1"},
        "Region != 'eu'": {"o2", "o3", "r1", "s1"},  # a run without the attribute matches neither
        "Region IN ('us', 'eu')": {"o1", "o2", "r1"},
        "Region NOT IN ('us')": {"o1", "o3", "s1"},
        "Region STARTS_WITH 'eu'": {"o1", "o3"},
        "Region = 'it''s'": {"s1"},
        'Region = "it\'s"': {"s1"},
        "Region = 'it\\'s'": {"s1"},
        "Amount = 30": {"o3"},
        "Amount > 20": {"o3", "r1"},
        "Amount >= 20": {"o2", "o3", "r1"},
        "Amount < 20": {"o1", "s1"},
        "Amount <= 10": {"o1", "s1"},
        "Amount BETWEEN 10 AND 30": {"o1", "o2", "o3"},
        "Amount NOT BETWEEN 10 AND 30": {"r1", "s1"},
        "Amount IN (-5, 40)": {"r1", "s1"},
        "Score > 1.0": {"o1", "o2"},
        "Score < 1": {"r1"},
        "Score IS NULL": {"o3", "r2", "s1"},
        "Score IS NOT NULL": {"o1", "o2", "r1"},
        "Vip = TRUE": {"o1"},
        "Vip = false": {"o2"},
        "Vip != true": {"o2"},
        f"DueAt > '{(T0 + timedelta(hours=12)).isoformat()}'": {"o2", "o3"},
        "DueAt <= '2024-05-01T14:00:00+02:00'": {"o1"},  # the same instant as T0
        "DueAt BETWEEN '2024-05-01T12:00:00Z' AND '2024-05-02T12:00:00Z'": {"o1", "o2"},
        "ExecutionStatus = 'Terminated'": {"o2", "r1"},
        "ExecutionStatus = 'Running'": running,
        "ExecutionStatus = 'RUNNING'": running,
        "ExecutionStatus != 'Running'": {"o2", "r1"},
        "CloseTime IS NULL": running,
        "CloseTime > '2000-01-01T00:00:00Z'": {"o2", "r1"},
        "NOT CloseTime > '2000-01-01T00:00:00Z'": running,  # two-valued: NOT of "no close time" is true
        f"StartTime >= '{stamp['o3']}'": {"o3", "r1", "r2", "s1"},
        f"StartTime < '{stamp['o2']}'": {"o1"},
        f"StartTime BETWEEN '{stamp['o2']}' AND '{stamp['r1']}'": {"o2", "o3", "r1"},
        # AND binds tighter than OR; parentheses override it.
        "WorkflowType = 'Refund' OR WorkflowType = 'Order' AND Region = 'us'": {"r1", "r2", "o2"},
        "(WorkflowType = 'Refund' OR WorkflowType = 'Order') AND Region = 'us'": {"o2", "r1"},
        "Region = 'us' AND WorkflowType = 'Order' OR Amount < 0": {"o2", "s1"},
        "Region = 'us' AND (WorkflowType = 'Order' OR Amount < 0)": {"o2"},
        "NOT (WorkflowType = 'Order' OR Amount < 0)": {"r1", "r2"},
        "NOT WorkflowType = 'Order' AND ExecutionStatus = 'Running'": {"r2", "s1"},
        "workflowtype = 'Order'": None,  # names are case-sensitive: an error, see below
        "WorkflowType = 'Order' and Amount > 10 or WorkflowId = 'r2'": {"o2", "o3", "r2"},  # keywords: any case
    }
    for query, expected in cases.items():
        if expected is None:
            error = await rejection(ids(sdk_client, query))
            assert "did you mean 'WorkflowType'" in error.message, query
            continue
        assert await ids(sdk_client, query) == expected, query
        assert (await sdk_client.count_workflows(query)).count == len(expected), query

    # Plain filters are ANDed with the query.
    assert await ids(
        sdk_client, "Region = 'us'", status=WorkflowExecutionStatus.TERMINATED, workflow_type="Refund"
    ) == {"r1"}


async def test_bad_queries_are_invalid_argument_naming_the_position(sdk_client: Client) -> None:
    await sdk_client.add_search_attributes(ATTRIBUTES)
    cases = {
        "WorkflowType = ": (16, "expected a value"),
        "WorkflowType == 'x'": (15, "expected a value"),
        "Amount > 'ten'": (10, "'Amount' is a Int attribute: expected an integer, found the string 'ten'"),
        "Nope = 'x'": (1, "unknown search attribute 'Nope'"),
        "(WorkflowType = 'x'": (20, "expected ')' to close the '(' at position 1"),
        "Region > 'a'": (1, "'Region' is a Keyword attribute: > needs an Int, Double or Datetime one"),
        "StartTime > '2024-01-01'": (13, "has no UTC offset"),
        "StartTime > 'yesterday'": (13, "expected an RFC 3339 time"),
        "WorkflowType = 'x' AND": (23, "expected an attribute name or '('"),
        "WorkflowType = 'x' Region = 'y'": (20, "expected AND, OR or the end of the query, found 'Region'"),
        "ExecutionStatus = 'Done'": (19, "'Done' is not an execution status; use one of 'Running'"),
        "Region = 'open": (10, "the string starting here is not closed"),
        "Amount BETWEEN 1 OR 2": (18, "expected AND between the bounds of BETWEEN"),
        "Vip = 1": (7, "expected TRUE or FALSE"),
        "Amount = 1.5": (10, "expected an integer"),
        "Region ; DROP TABLE executions": (8, "unexpected character ';'"),
    }
    for query, (position, expected) in cases.items():
        error = await rejection(ids(sdk_client, query))
        assert error.status == grpc.StatusCode.INVALID_ARGUMENT, query
        assert f"invalid query at position {position}: " in error.message, (query, error.message)
        assert expected in error.message, (query, error.message)
    counted = await rejection(sdk_client.count_workflows("Amount >"))
    assert counted.status == grpc.StatusCode.INVALID_ARGUMENT and "position 9" in counted.message
    for token in (b"garbage", base64.urlsafe_b64encode(b'[99999999999999999999999, "r"]')):
        forged = await rejection(
            sdk_client.workflow_service.call(
                "ListWorkflowExecutions", pb.ListWorkflowExecutionsRequest(namespace="default", next_page_token=token)
            )
        )
        assert forged.status == grpc.StatusCode.INVALID_ARGUMENT and "next_page_token is malformed" in forged.message
    # The server kept serving.
    await start_idle(sdk_client, "still-serving", "Order")
    assert await ids(sdk_client, "WorkflowType = 'Order'") == {"still-serving"}


async def test_an_injection_attempt_is_only_a_string(sdk_client: Client) -> None:
    await start_known_set(sdk_client)
    assert await ids(sdk_client, "WorkflowId = 'x'' OR ''1''=''1'") == set()
    assert await ids(sdk_client, 'WorkflowId = "o1\'; DROP TABLE executions; --"') == set()
    assert await ids(sdk_client, "Region = 'eu\\' OR 1=1 --'") == set()
    for attempt in ("WorkflowId = 'o1' OR 1=1", "`Region = 'x' OR 1=1 --` = 'a'", "WorkflowId = 'o1' --"):
        error = await rejection(ids(sdk_client, attempt))
        assert error.status == grpc.StatusCode.INVALID_ARGUMENT, attempt
    assert len(await list_all(sdk_client, "")) == 6  # every table intact


async def test_pages_return_every_run_exactly_once_while_new_runs_start(sdk_client: Client) -> None:
    existing = {f"page-{n:02}" for n in range(23)}
    for workflow_id in sorted(existing):
        await start_idle(sdk_client, workflow_id, "Paged")
    seen: list[str] = []
    added = 0
    async for execution in sdk_client.list_workflows("WorkflowType = 'Paged'", page_size=4):
        seen.append(execution.workflow_id)
        if len(seen) % 3 == 0:  # a new run starts between (and within) pages
            await start_idle(sdk_client, f"late-{added}", "Paged")
            added += 1
    assert len(seen) == len(set(seen)), "a run came twice"
    assert existing <= set(seen), f"missing: {existing - set(seen)}"
    assert (await sdk_client.count_workflows("WorkflowType = 'Paged'")).count == len(existing) + added
    # Newest first, so runs started after the iteration began are not in it.
    assert not set(seen) - existing


# ----------------------------------------------------------------------------- upsert from workflow code

release_shipping = asyncio.Event()


@activity.defn
async def pack(order: str) -> str:
    await release_shipping.wait()
    return f"packed {order}"


@workflow.defn(name="Tracked")
class Tracked:
    @workflow.run
    async def run(self, order: str) -> dict:
        workflow.upsert_search_attributes({"Stage": "packing", "Progress": 1})
        await workflow.execute_activity(pack, order, start_to_close_timeout=timedelta(seconds=30))
        workflow.upsert_search_attributes({"Stage": "shipped", "Progress": None, "ShippedAt": workflow.now()})
        seen = {
            k: v.isoformat() if isinstance(v, datetime) else v for k, v in workflow.info().search_attributes.items()
        }
        return {
            "seen": seen,
            "memo": workflow.memo(),
            "note": workflow.memo_value("note", type_hint=str),
            "missing": workflow.memo_value("missing", "default"),
        }


@workflow.defn(name="Tracked")
class TrackedUpsertingAnotherAttribute:
    @workflow.run
    async def run(self, order: str) -> dict:
        workflow.upsert_search_attributes({"Phase": "packing"})
        await workflow.execute_activity(pack, order, start_to_close_timeout=timedelta(seconds=30))
        return {}


async def test_upserts_from_workflow_code_are_visible_while_running_and_after_close_and_replay(
    sdk_client: Client,
) -> None:
    await sdk_client.add_search_attributes(
        {
            "Customer": IndexedType.KEYWORD,
            "Stage": IndexedType.KEYWORD,
            "Progress": IndexedType.INT,
            "ShippedAt": IndexedType.DATETIME,
        }
    )
    release_shipping.clear()
    async with fast_worker(sdk_client, QUEUE, workflows=[Tracked], activities=[pack]):
        handle = await sdk_client.start_workflow(
            Tracked.run,
            "A-7",
            id="tracked-1",
            task_queue=QUEUE,
            search_attributes={"Customer": "ada"},
            memo={"note": "fragile"},
        )
        await wait_until(
            lambda: ids(sdk_client, "Stage = 'packing' AND Progress = 1 AND ExecutionStatus = 'Running'"),
            timeout=DEADLINE_S,
            what="the first upsert to be visible while the run is running",
        )
        assert (await handle.describe()).search_attributes == {"Customer": "ada", "Progress": 1, "Stage": "packing"}
        release_shipping.set()
        result = await handle.result()

    history = await events(handle)
    upserts = of_type(history, "UpsertWorkflowSearchAttributes")
    assert len(upserts) == 2
    shipped_at = upserts[1].attributes["search_attributes"]["indexed_fields"]["ShippedAt"]["datetime_value"]
    assert upserts[1].attributes["search_attributes"]["indexed_fields"]["Progress"] == {}  # removed
    for upsert in upserts:
        completed = history[upsert.attributes["workflow_task_completed_event_id"] - 1]
        assert completed.event_type == "WorkflowTaskCompleted"
    shipped = datetime.fromisoformat(shipped_at)
    assert result == {
        "seen": {"Customer": "ada", "ShippedAt": shipped.isoformat(), "Stage": "shipped"},
        "memo": {"note": "fragile"},
        "note": "fragile",
        "missing": "default",
    }
    query = "Stage = 'shipped' AND Progress IS NULL AND ExecutionStatus = 'Completed' AND Customer = 'ada'"
    [listed] = await list_all(sdk_client, query)
    assert listed.search_attributes == {"Customer": "ada", "ShippedAt": shipped, "Stage": "shipped"}
    assert listed.memo == {"note": "fragile"}
    assert await ids(sdk_client, f"ShippedAt = '{shipped_at}'") == {"tracked-1"}
    assert await ids(sdk_client, "Stage = 'packing'") == set()

    fetched = await handle.fetch_history()
    await Replayer(workflows=[Tracked]).replay_workflow(fetched)
    with pytest.raises(NonDeterminismError, match="UpsertWorkflowSearchAttributes"):
        await Replayer(workflows=[TrackedUpsertingAnotherAttribute]).replay_workflow(fetched)


@workflow.defn(name="Labelled")
class Labelled:
    @workflow.run
    async def run(self) -> str:
        workflow.upsert_search_attributes({"Label": "ready"})
        return "done"


async def test_an_upsert_of_an_unregistered_attribute_fails_the_workflow_task_until_it_is_registered(
    sdk_client: Client,
) -> None:
    async with fast_worker(sdk_client, QUEUE, workflows=[Labelled]):
        handle = await sdk_client.start_workflow(Labelled.run, id="labelled-1", task_queue=QUEUE)

        async def failing_task() -> Any:
            task = (await handle.describe()).pending_workflow_task
            return task if task is not None and task.last_failure else None

        task = await wait_until(failing_task, timeout=DEADLINE_S, what="the workflow task to fail")
        assert "BAD_SEARCH_ATTRIBUTES" in task.last_failure and "'Label' is not registered" in task.last_failure
        assert await ids(sdk_client, "") == {"labelled-1"}
        failed = of_type(await events(handle), "WorkflowTaskFailed")
        assert failed and failed[0].attributes["cause"] == "BAD_SEARCH_ATTRIBUTES"

        await sdk_client.add_search_attributes({"Label": IndexedType.KEYWORD})
        assert await asyncio.wait_for(handle.result(), DEADLINE_S + 60) == "done"
    assert await ids(sdk_client, "Label = 'ready' AND ExecutionStatus = 'Completed'") == {"labelled-1"}


# ----------------------------------------------------------------------------- the command line


async def test_the_cli_registers_attributes_and_lists_and_counts_by_query(
    client: Client, server_process: ServerProcess
) -> None:
    address = ["--address", server_process.address]
    created = flowforge("search-attribute", "create", "--name", "Region", "--type", "keyword", *address)
    assert created.returncode == 0, created.stderr
    assert flowforge("search-attribute", "create", "--name", "DueAt", "--type", "Datetime", *address).returncode == 0
    listed_attributes = flowforge("search-attribute", "list", *address)
    assert listed_attributes.stdout.split() == ["NAME", "TYPE", "DueAt", "Datetime", "Region", "Keyword"]
    await start_idle(client, "cli-us", "Order", search_attributes={"Region": "us", "DueAt": T0}, memo={"who": "cli-us"})
    started = flowforge(
        "workflow",
        "start",
        "--type",
        "Order",
        "--task-queue",
        IDLE_QUEUE,
        "--workflow-id",
        "cli-eu",
        "--search-attribute",
        "Region=eu",
        "--search-attribute",
        "DueAt=2024-05-01T14:00:00+02:00",
        "--memo",
        'who="cli-eu"',
        *address,
    )
    assert started.returncode == 0, started.stderr
    unregistered = flowforge(
        "workflow",
        "start",
        "--type",
        "Order",
        "--task-queue",
        IDLE_QUEUE,
        "--workflow-id",
        "cli-x",
        "--search-attribute",
        "Colour=red",
        *address,
    )
    assert unregistered.returncode == 1 and "'Colour' is not registered" in unregistered.stderr

    listed = flowforge(
        "workflow", "list", "--query", "Region = 'eu' AND ExecutionStatus = 'Running'", "--output", "json", *address
    )
    assert listed.returncode == 0, listed.stderr
    [row] = json.loads(listed.stdout)
    assert row["workflow_id"] == "cli-eu" and row["status"] == "RUNNING"
    assert row["search_attributes"] == {"DueAt": "2024-05-01T12:00:00+00:00", "Region": "eu"}
    assert row["memo"] == {"who": "cli-eu"}
    counted = flowforge("workflow", "count", "-q", "WorkflowType = 'Order'", *address)
    assert (counted.returncode, counted.stdout.strip()) == (0, "2")
    shown = flowforge("workflow", "show", "--workflow-id", "cli-eu", *address)
    assert 'Search attributes:\n  DueAt = 2024-05-01T12:00:00+00:00\n  Region = "eu"\n' in shown.stdout
    assert 'Memo:\n  who = "cli-eu"\n' in shown.stdout

    bad = flowforge("workflow", "list", "--query", "Region = ", *address)
    assert bad.returncode == 1
    assert "INVALID_ARGUMENT" in bad.stderr and "invalid query at position 10" in bad.stderr


# ----------------------------------------------------------------------------- continue-as-new


@workflow.defn(name="Rounds")
class Rounds:
    @workflow.run
    async def run(self, round_number: int) -> dict:
        seen = dict(workflow.info().search_attributes)
        workflow.upsert_search_attributes({"Round": round_number})
        if round_number < 3:
            workflow.continue_as_new(round_number + 1)
        return {"seen_at_start": seen, "memo": workflow.memo()}


async def test_continue_as_new_keeps_the_memo_and_the_current_search_attributes(sdk_client: Client) -> None:
    await sdk_client.add_search_attributes({"Customer": IndexedType.KEYWORD, "Round": IndexedType.INT})
    async with fast_worker(sdk_client, QUEUE, workflows=[Rounds]):
        handle = await sdk_client.start_workflow(
            Rounds.run, 1, id="rounds-1", task_queue=QUEUE, search_attributes={"Customer": "ada"}, memo={"plan": "gold"}
        )
        result = await asyncio.wait_for(handle.result(), DEADLINE_S)
    # The last run started with what the previous one had upserted.
    assert result == {"seen_at_start": {"Customer": "ada", "Round": 2}, "memo": {"plan": "gold"}}
    runs = await list_all(sdk_client, "Customer = 'ada'")
    assert [(r.status, r.search_attributes["Round"], r.memo) for r in runs] == [
        (WorkflowExecutionStatus.COMPLETED, 3, {"plan": "gold"}),
        (WorkflowExecutionStatus.CONTINUED_AS_NEW, 2, {"plan": "gold"}),
        (WorkflowExecutionStatus.CONTINUED_AS_NEW, 1, {"plan": "gold"}),
    ]
    assert await ids(sdk_client, "Round = 3 AND ExecutionStatus = 'Completed'") == {"rounds-1"}


# ----------------------------------------------------------------------------- child workflows


@workflow.defn(name="Invoice")
class Invoice:
    @workflow.run
    async def run(self) -> dict:
        return {"search_attributes": dict(workflow.info().search_attributes), "memo": workflow.memo()}


@workflow.defn(name="Billing")
class Billing:
    @workflow.run
    async def run(self) -> dict:
        return await workflow.execute_child_workflow(
            Invoice.run, id="invoice-1", search_attributes={"Customer": "ada", "Round": 7}, memo={"plan": "gold"}
        )


async def test_a_child_workflow_starts_with_its_own_search_attributes_and_memo(sdk_client: Client) -> None:
    await sdk_client.add_search_attributes({"Customer": IndexedType.KEYWORD, "Round": IndexedType.INT})
    async with fast_worker(sdk_client, QUEUE, workflows=[Billing, Invoice]):
        handle = await sdk_client.start_workflow(Billing.run, id="billing-1", task_queue=QUEUE)
        result = await asyncio.wait_for(handle.result(), DEADLINE_S)
    assert result == {"search_attributes": {"Customer": "ada", "Round": 7}, "memo": {"plan": "gold"}}
    [child] = await list_all(sdk_client, "Customer = 'ada' AND Round = 7")
    assert (child.workflow_id, child.workflow_type, child.memo) == ("invoice-1", "Invoice", {"plan": "gold"})
    assert (await handle.describe()).search_attributes == {}  # the parent has none


# ----------------------------------------------------------------------------- several replicas


@pytest.mark.postgres
async def test_an_attribute_registered_on_one_replica_is_usable_at_once_on_another(postgres_dsn: str) -> None:
    replicas = [FlowForgeServer(ServerConfig(store=postgres_dsn, port=0)) for _ in range(2)]
    for replica in replicas:
        await replica.start()
    first, second = [await Client.connect(f"127.0.0.1:{r.port}") for r in replicas]
    try:
        await first.add_search_attributes({"Region": IndexedType.KEYWORD})
        await start_idle(second, "r-1", "Order", search_attributes={"Region": "eu"})  # second caches the registry
        await first.add_search_attributes({"Tier": IndexedType.INT})
        await start_idle(second, "r-2", "Order", search_attributes={"Region": "us", "Tier": 2})
        assert await ids(first, "Tier = 2") == {"r-2"} and await ids(second, "Region = 'eu'") == {"r-1"}
    finally:
        for connection in (first, second):
            await connection.close()
        for replica in replicas:
            await replica.stop()


async def test_namespaces_have_their_own_attributes_and_runs(sdk_client: Client, server: FlowForgeServer) -> None:
    await sdk_client.register_namespace("tenant-b")
    other = await Client.connect(f"127.0.0.1:{server.port}", namespace="tenant-b")
    try:
        await sdk_client.add_search_attributes({"Region": IndexedType.KEYWORD})
        await other.add_search_attributes({"Region": IndexedType.INT})  # the same name, another type: fine
        await start_idle(sdk_client, "same-id", "Order", search_attributes={"Region": "eu"})
        await start_idle(other, "same-id", "Order", search_attributes={"Region": 7})
        assert [(e.workflow_id, e.search_attributes) for e in await list_all(other, "")] == [("same-id", {"Region": 7})]
        assert await ids(sdk_client, "Region = 'eu'") == {"same-id"}
        assert await ids(other, "Region = 7") == {"same-id"}
        mistyped = await rejection(ids(other, "Region = 'eu'"))
        assert "'Region' is a Int attribute" in mistyped.message
        assert (await other.count_workflows("")).count == 1 and (await sdk_client.count_workflows("")).count == 1
    finally:
        await other.close()


# ----------------------------------------------------------------------------- schedules


async def test_a_schedule_starts_its_runs_with_its_search_attributes_and_memo(
    sdk_client: Client, server: FlowForgeServer
) -> None:
    await sdk_client.add_search_attributes({"Customer": IndexedType.KEYWORD})
    hourly = ScheduleSpec(intervals=[ScheduleIntervalSpec(every=timedelta(hours=1))])

    def action(**visibility: Any) -> ScheduleActionStartWorkflow:
        return ScheduleActionStartWorkflow("Report", id="report", task_queue=IDLE_QUEUE, **visibility)

    refused = await rejection(
        sdk_client.create_schedule(
            "unregistered", Schedule(action=action(search_attributes={"Colour": "red"}), spec=hourly)
        )
    )
    assert refused.status == grpc.StatusCode.INVALID_ARGUMENT and "'Colour' is not registered" in refused.message
    handle = await sdk_client.create_schedule(
        "reports", Schedule(action=action(search_attributes={"Customer": "ada"}, memo={"plan": "gold"}), spec=hourly)
    )
    scheduled = (await handle.describe()).schedule.action
    assert (scheduled.search_attributes, scheduled.memo) == ({"Customer": "ada"}, {"plan": "gold"})
    await handle.trigger()
    await server.scheduler.tick()
    [run] = await wait_until(
        lambda: list_all(sdk_client, "Customer = 'ada'"),
        timeout=DEADLINE_S,
        what="the triggered run to be listed by its search attribute",
    )
    assert run.workflow_id.startswith("report-") and run.memo == {"plan": "gold"}
