"""``ORDER BY`` in list queries, end to end on SQLite and PostgreSQL: every orderable
attribute in both directions gives exactly the order its key says (the attribute, then
StartTime, then the run id, in the same direction; runs without a CloseTime last), page
after page; keyset pages never repeat or lose a run while runs start and close between
them; a page token only works for the order it came from; count ignores the order and a
batch refuses it."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from datetime import datetime
from typing import Any

import grpc
import pytest

from flowforge import Client
from flowforge.api.v1 import workflow_service_pb2 as pb
from flowforge.client import WorkflowExecution
from flowforge.exceptions import RPCError

IDLE_QUEUE = "order-idle"  # no worker polls it: runs stay RUNNING until terminated
# (workflow id, type): ids in another order than the starts, types with ties.
RUNS = [
    ("m-07", "Beta"),
    ("c-02", "Alpha"),
    ("x-11", "Gamma"),
    ("a-01", "Beta"),
    ("q-09", "Alpha"),
    ("e-04", "Beta"),
    ("z-12", "Alpha"),
    ("g-05", "Gamma"),
    ("k-06", "Beta"),
    ("b-03", "Alpha"),
]
TERMINATED = ["x-11", "a-01", "z-12", "c-02"]  # closed in this order: CloseTime differs from StartTime


def _key(attribute: str) -> Callable[[WorkflowExecution], tuple[Any, ...]]:
    """The documented sort key of a run for ``ORDER BY attribute`` (ascending)."""

    def start(e: WorkflowExecution) -> tuple[datetime, str]:
        assert e.start_time is not None
        return e.start_time, e.run_id

    values: dict[str, Callable[[WorkflowExecution], Any]] = {
        "WorkflowId": lambda e: e.workflow_id,
        "WorkflowType": lambda e: e.workflow_type,
        "ExecutionStatus": lambda e: e.status.name,
    }
    if attribute == "StartTime":
        return start
    if attribute == "CloseTime":
        return lambda e: (e.close_time, *start(e))
    return lambda e: (values[attribute](e), *start(e))


def expected_order(runs: list[WorkflowExecution], attribute: str, descending: bool) -> list[str]:
    key = _key(attribute)
    if attribute == "CloseTime":  # runs without a close time come last either way
        closed = sorted((e for e in runs if e.close_time), key=key, reverse=descending)
        running = sorted((e for e in runs if not e.close_time), key=lambda e: key(e)[1:], reverse=descending)
        return [e.run_id for e in closed + running]
    return [e.run_id for e in sorted(runs, key=key, reverse=descending)]


async def started_runs(client: Client) -> list[WorkflowExecution]:
    for workflow_id, workflow_type in RUNS:
        await client.start_workflow(workflow_type, id=workflow_id, task_queue=IDLE_QUEUE)
    for workflow_id in TERMINATED:
        await client.get_workflow_handle(workflow_id).terminate("order test")
    return [e async for e in client.list_workflows(page_size=100)]


async def listed(client: Client, query: str, page_size: int = 3) -> list[str]:
    return [e.run_id async for e in client.list_workflows(query, page_size=page_size)]


@pytest.mark.parametrize("attribute", ["StartTime", "CloseTime", "WorkflowId", "WorkflowType", "ExecutionStatus"])
async def test_each_order_pages_through_exactly_its_key(sdk_client: Client, attribute: str) -> None:
    runs = await started_runs(sdk_client)
    assert len(runs) == len(RUNS)
    for direction, descending in (("ASC", False), ("DESC", True), ("", True)):
        query = f"ORDER BY {attribute} {direction}".strip()
        assert await listed(sdk_client, query) == expected_order(runs, attribute, descending), query
    # With a condition, and the words in any case.
    betas = [e for e in runs if e.workflow_type == "Beta"]
    query = f"WorkflowType = 'Beta' order by {attribute} asc"
    assert await listed(sdk_client, query, page_size=2) == expected_order(betas, attribute, False)


async def test_pages_in_another_order_never_repeat_or_lose_a_run_while_runs_start_and_close(
    sdk_client: Client,
) -> None:
    runs = await started_runs(sdk_client)
    seen: list[WorkflowExecution] = []
    added: list[str] = []
    async for execution in sdk_client.list_workflows("ORDER BY WorkflowId ASC", page_size=3):
        seen.append(execution)
        if len(seen) % 2 == 0:  # between and within pages: one run before the cursor, one after
            for prefix in ("a", "z"):
                workflow_id = f"{prefix}-late-{len(added)}"
                await sdk_client.start_workflow("Late", id=workflow_id, task_queue=IDLE_QUEUE)
                added.append(workflow_id)
            if len(seen) == 2:
                await sdk_client.get_workflow_handle("k-06").terminate("closed while listing")
    ids = [e.workflow_id for e in seen]
    assert len(ids) == len(set(ids)), f"a run came twice: {ids}"
    assert {e.workflow_id for e in runs} <= set(ids), "a run went missing"
    assert ids == sorted(ids)
    # The runs started after the cursor had passed their place are in; those before it are not.
    assert all(workflow_id.startswith("z-") for workflow_id in set(ids) & set(added))


async def test_a_page_token_only_continues_its_own_order(sdk_client: Client) -> None:
    await started_runs(sdk_client)
    first = await list_page(sdk_client, "ORDER BY WorkflowId ASC")
    assert [e.execution.workflow_id for e in first.executions] == ["a-01", "b-03", "c-02"]
    second = await list_page(sdk_client, "ORDER BY WorkflowId ASC", first.next_page_token)
    assert [e.execution.workflow_id for e in second.executions] == ["e-04", "g-05", "k-06"]
    for query in ("", "ORDER BY WorkflowId DESC", "ORDER BY WorkflowType ASC"):
        error = await rejection(list_page(sdk_client, query, first.next_page_token))
        assert error.status == grpc.StatusCode.INVALID_ARGUMENT
        assert "next_page_token belongs to a list ordered by WorkflowId ASC" in error.message
    # A token that claims the order but holds values of the wrong kinds.
    forged = base64.urlsafe_b64encode(json.dumps({"order": "CloseTime ASC", "after": ["x", 1, "r"]}).encode())
    error = await rejection(list_page(sdk_client, "ORDER BY CloseTime ASC", forged))
    assert error.status == grpc.StatusCode.INVALID_ARGUMENT
    assert error.message == "next_page_token is malformed; pass back the one the last page returned"


async def test_bad_orders_are_invalid_argument_and_count_and_batch_know_of_order(sdk_client: Client) -> None:
    runs = await started_runs(sdk_client)
    for query, message in (
        ("ORDER BY TaskQueue", "cannot order by 'TaskQueue': ORDER BY takes one of StartTime, CloseTime"),
        ("ORDER BY Nope DESC", "cannot order by 'Nope'"),
        ("ORDER BY StartTime, WorkflowId", "ORDER BY takes one attribute"),
        ("ORDER BY StartTime UP", "expected the end of the query, found 'UP'"),
        ("ORDER BY", "expected an attribute name after ORDER BY, found the end of the query"),
        ("WorkflowType = 'Beta' ORDER BY StartTime AND WorkflowId = 'x'", "expected the end of the query"),
    ):
        error = await rejection(list_page(sdk_client, query))
        assert error.status == grpc.StatusCode.INVALID_ARGUMENT, query
        assert message in error.message, (query, error.message)
    assert (await sdk_client.count_workflows("WorkflowType = 'Beta' ORDER BY CloseTime")).count == sum(
        1 for e in runs if e.workflow_type == "Beta"
    )
    error = await rejection(
        sdk_client.start_batch_operation("terminate", query="ORDER BY WorkflowId", reason="order test")
    )
    assert error.status == grpc.StatusCode.INVALID_ARGUMENT and "remove the ORDER BY" in error.message


async def list_page(client: Client, query: str, token: bytes = b"") -> pb.ListWorkflowExecutionsResponse:
    request = pb.ListWorkflowExecutionsRequest(namespace="default", query=query, page_size=3, next_page_token=token)
    response: pb.ListWorkflowExecutionsResponse = await client.workflow_service.call("ListWorkflowExecutions", request)
    return response


async def rejection(call: Any) -> RPCError:
    with pytest.raises(RPCError) as caught:
        await call
    return caught.value
