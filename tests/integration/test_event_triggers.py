"""Event triggers: a published event starts one workflow per matching trigger, once
per (namespace, source, id) within the dedupe window, over gRPC and ``POST /events``
(docs/events.md). Every test runs on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import grpc
import pytest

from flowforge import Client, WorkflowExecutionStatus, workflow
from flowforge.api.v1 import event_pb2
from flowforge.exceptions import RPCError
from flowforge.server import FlowForgeServer, ServerConfig
from flowforge.server.clock import ManualClock
from flowforge.server.webhook import SIGNATURE_HEADER, TIMESTAMP_HEADER, sign
from flowforge.worker import Worker
from tests.integration._processes import ServerProcess, _env
from testsupport.waiting import wait_until

SECRET = "webhook-secret-for-tests"
SHOP = "https://shop.example.com"


@workflow.defn(name="OrderPaid")
class OrderPaid:
    @workflow.run
    async def run(self, order_id: str, amount: int, subject: str) -> str:
        return f"order {order_id} paid {amount} ({subject})"


@pytest.fixture
async def server(store_url: str) -> AsyncIterator[FlowForgeServer]:
    """A server with the webhook on a free port; namespace 'default' needs signatures."""
    instance = FlowForgeServer(
        ServerConfig(
            store=store_url, port=0, http_port=0, poll_recheck_interval_s=0.2, webhook_secrets={"default": SECRET}
        )
    )
    await instance.start()
    yield instance
    await instance.stop()


async def _post(
    server: FlowForgeServer,
    body: bytes,
    *,
    signature: str | None = "valid",
    namespace: str = "default",
    timestamp: int | None = None,
) -> tuple[int, Any]:
    # Signed now, not at import: in a long suite run the module is imported far more than the
    # allowed five minutes of skew before its tests run.
    now = int(time.time()) if timestamp is None else timestamp
    headers = {"Content-Type": "application/cloudevents+json", TIMESTAMP_HEADER: str(now)}
    if signature == "valid":
        headers[SIGNATURE_HEADER] = sign(SECRET, body, namespace=namespace, timestamp=now)
    elif signature is not None:
        headers[SIGNATURE_HEADER] = signature
    async with aiohttp.ClientSession() as http:
        async with http.post(
            f"http://127.0.0.1:{server.http_port}/events?namespace={namespace}", data=body, headers=headers
        ) as response:
            return response.status, await response.json()


def _cloudevent(event_id: str, data: Any, *, type: str = "order.paid") -> bytes:
    return json.dumps(
        {"specversion": "1.0", "id": event_id, "source": SHOP, "type": type, "subject": "web", "data": data}
    ).encode()


async def _executions(sdk_client: Client) -> list[Any]:
    return [e async for e in sdk_client.list_workflows()]


async def _order_trigger(sdk_client: Client, trigger_id: str = "orders", **options: Any) -> None:
    await sdk_client.create_trigger(
        trigger_id,
        event_type="order.paid",
        workflow=OrderPaid.run,
        task_queue="orders",
        input_paths=["data.order_id", "data.amount", "subject"],
        **options,
    )


async def test_an_event_published_twice_starts_one_execution(sdk_client: Client) -> None:
    await _order_trigger(sdk_client)
    first = await sdk_client.publish_event(id="evt-1", source=SHOP, type="order.paid", data={"order_id": "o-1"})
    again = await sdk_client.publish_event(id="evt-1", source=SHOP, type="order.paid", data={"order_id": "o-1"})
    assert not first.duplicate and [w.started for w in first.workflows] == [True]
    assert again.duplicate and again.workflows == first.workflows
    # The same id from another source is another event.
    other = await sdk_client.publish_event(id="evt-1", source="https://crm.example.com", type="order.paid")
    assert not other.duplicate and other.workflows[0].workflow_id != first.workflows[0].workflow_id
    assert sorted(e.run_id for e in await _executions(sdk_client)) == sorted(
        [first.workflows[0].run_id, other.workflows[0].run_id]
    )


async def test_concurrent_publishes_of_one_event_start_one_execution(sdk_client: Client) -> None:
    await _order_trigger(sdk_client)
    results = await asyncio.gather(
        *(
            sdk_client.publish_event(id="evt-race", source=SHOP, type="order.paid", data={"order_id": "o-9"})
            for _ in range(16)
        )
    )
    assert sum(not r.duplicate for r in results) == 1
    assert len({r.workflows[0].run_id for r in results}) == 1
    assert len(await _executions(sdk_client)) == 1


async def test_the_webhook_dedupes_with_grpc_and_answers_202(server: FlowForgeServer, sdk_client: Client) -> None:
    await _order_trigger(sdk_client)
    body = _cloudevent("evt-web", {"order_id": "o-2", "amount": 5})
    status, first = await _post(server, body)
    assert status == 202 and first["duplicate"] is False and first["workflows"][0]["started"] is True
    status, again = await _post(server, body)
    assert status == 202 and again == {**first, "duplicate": True}
    over_grpc = await sdk_client.publish_event(id="evt-web", source=SHOP, type="order.paid")
    assert over_grpc.duplicate and over_grpc.workflows[0].run_id == first["workflows"][0]["run_id"]
    assert [e.run_id for e in await _executions(sdk_client)] == [first["workflows"][0]["run_id"]]


async def test_a_badly_signed_webhook_is_401_and_starts_nothing(server: FlowForgeServer, sdk_client: Client) -> None:
    await _order_trigger(sdk_client)
    body = _cloudevent("evt-signed", {"order_id": "o-3"})
    other_body = _cloudevent("evt-other", {"order_id": "o-3"})
    now = int(time.time())
    for signature in (
        None,
        "sha256=" + "0" * 64,
        sign("wrong-secret", body, namespace="default", timestamp=now),
        sign(SECRET, other_body, namespace="default", timestamp=now),
        sign(SECRET, body, namespace="default", timestamp=now).removeprefix("sha256="),
        sign(SECRET, body, namespace="open", timestamp=now),  # signed for another namespace
        sign(SECRET, body, namespace="default", timestamp=now - 1),  # for another time
        "garbage",
    ):
        status, answer = await _post(server, body, signature=signature, timestamp=now)
        assert status == 401, signature
        assert SIGNATURE_HEADER in answer["error"] and SECRET not in answer["error"]
    assert await _executions(sdk_client) == []
    assert SECRET not in repr(server.config)
    # Nothing was recorded either: the same event, signed, is not a duplicate.
    status, answer = await _post(server, body)
    assert status == 202 and answer["duplicate"] is False and len(answer["workflows"]) == 1


async def test_a_namespace_without_a_secret_accepts_unsigned_events(
    server: FlowForgeServer, sdk_client: Client
) -> None:
    await sdk_client.register_namespace("open")
    async with await Client.connect(f"127.0.0.1:{server.port}", namespace="open") as open_client:
        await _order_trigger(open_client)
        status, answer = await _post(server, _cloudevent("evt-open", {}), signature=None, namespace="open")
        assert status == 202 and answer["workflows"][0]["started"] is True
        assert len(await _executions(open_client)) == 1
    assert await _executions(sdk_client) == []


_MALFORMED_BODIES = [
    (b"{not json", "not JSON"),
    (b"[]", "must be a JSON object"),
    (json.dumps({"source": SHOP, "type": "order.paid"}).encode(), "event.id is required"),
    (json.dumps({"id": "x", "type": "order.paid"}).encode(), "event.source is required"),
    (json.dumps({"id": "x", "source": SHOP}).encode(), "event.type is required"),
    (json.dumps({"id": 7, "source": SHOP, "type": "t"}).encode(), "'id' must be a string"),
    (json.dumps({"id": "x", "source": SHOP, "type": "t", "time": "yesterday"}).encode(), "RFC 3339"),
    (json.dumps({"id": "x", "source": SHOP, "type": "t", "specversion": "0.3"}).encode(), "specversion"),
    (json.dumps({"id": "x", "source": SHOP, "type": "t", "data_base64": "AA=="}).encode(), "data_base64"),
    (json.dumps({"id": "x", "source": SHOP, "type": "t", "datacontenttype": "text/xml"}).encode(), "not JSON"),
]


async def test_a_malformed_webhook_body_is_400_and_changes_nothing(server: FlowForgeServer, sdk_client: Client) -> None:
    await _order_trigger(sdk_client)
    for body, message in _MALFORMED_BODIES:
        status, answer = await _post(server, body)
        assert (status, message in answer["error"]) == (400, True), (body, answer)
    assert await _executions(sdk_client) == []
    status, answer = await _post(server, _cloudevent("x", {}))  # nothing of "x" was recorded
    assert status == 202 and answer["duplicate"] is False


async def test_a_filtered_out_event_starts_nothing(sdk_client: Client) -> None:
    await _order_trigger(sdk_client, filter=['data.currency == "EUR"', "data.amount != 0"])
    for event_id, data in [
        ("usd", {"currency": "USD", "amount": 5}),
        ("zero", {"currency": "EUR", "amount": 0}),
        ("none", None),
    ]:
        result = await sdk_client.publish_event(id=event_id, source=SHOP, type="order.paid", data=data)
        assert result == type(result)(duplicate=False, workflows=[])
    other_type = await sdk_client.publish_event(
        id="refund", source=SHOP, type="order.refunded", data={"currency": "EUR", "amount": 5}
    )
    assert other_type.workflows == []
    assert await _executions(sdk_client) == []
    matching = await sdk_client.publish_event(
        id="eur", source=SHOP, type="order.paid", data={"currency": "EUR", "amount": 5}
    )
    assert [w.trigger_id for w in matching.workflows] == ["orders"]


async def test_an_event_matching_two_triggers_starts_two(sdk_client: Client) -> None:
    await _order_trigger(sdk_client, "billing", id_prefix="bill-")
    await _order_trigger(sdk_client, "shipping", filter=["data.express in [true]"])
    await _order_trigger(sdk_client, "refunds-only", filter=["data.express == false"])
    result = await sdk_client.publish_event(
        id="evt-two", source=SHOP, type="order.paid", data={"order_id": "o-5", "express": True}
    )
    assert sorted(w.trigger_id for w in result.workflows) == ["billing", "shipping"]
    by_trigger = {w.trigger_id: w for w in result.workflows}
    assert by_trigger["billing"].workflow_id.startswith("bill-")
    assert by_trigger["shipping"].workflow_id.startswith("shipping-")
    assert sorted(e.workflow_id for e in await _executions(sdk_client)) == sorted(
        w.workflow_id for w in result.workflows
    )


async def test_the_input_mapping_delivers_event_fields_to_a_running_workflow(sdk_client: Client) -> None:
    await _order_trigger(sdk_client)
    result = await sdk_client.publish_event(
        id="evt-run", source=SHOP, type="order.paid", subject="checkout", data={"order_id": "o-7", "amount": 42}
    )
    (started,) = result.workflows
    async with Worker(sdk_client, task_queue="orders", workflows=[OrderPaid]):
        handle = sdk_client.get_workflow_handle(started.workflow_id, run_id=started.run_id)
        assert await handle.result() == "order o-7 paid 42 (checkout)"
    history = await handle.fetch_history()
    attributes = history.events[0].attributes
    assert attributes["origin"] == {"kind": "event", "trigger": "orders", "event_source": SHOP, "event_id": "evt-run"}
    assert (await handle.describe()).status == WorkflowExecutionStatus.COMPLETED


async def test_a_missing_input_path_gives_none(sdk_client: Client) -> None:
    @workflow.defn(name="Echo")
    class Echo:
        @workflow.run
        async def run(self, first: Any, second: Any) -> list:
            return [first, second]

    await sdk_client.create_trigger(
        "echo", event_type="ping", workflow="Echo", task_queue="echo", input_paths=["data.absent", "data"]
    )
    result = await sdk_client.publish_event(id="p-1", source=SHOP, type="ping", data=[1, 2])
    async with Worker(sdk_client, task_queue="echo", workflows=[Echo]):
        assert await sdk_client.get_workflow_handle(result.workflows[0].workflow_id).result() == [None, [1, 2]]


async def test_triggers_are_created_listed_described_and_deleted(sdk_client: Client) -> None:
    created = await sdk_client.create_trigger(
        "t-a",
        event_type="order.paid",
        workflow=OrderPaid.run,
        task_queue="orders",
        filter=['data.region  in ["eu","us"]'],
        input_paths=["data.order_id"],
    )
    assert created.filter == ['data.region in ["eu", "us"]'] and created.workflow_id_prefix == "t-a-"
    assert created.workflow_type == "OrderPaid" and created.create_time is not None
    for trigger_id in ("t-c", "t-b"):
        await sdk_client.create_trigger(trigger_id, event_type="x", workflow="W", task_queue="q")
    assert [t.trigger_id async for t in sdk_client.list_triggers(page_size=2)] == ["t-a", "t-b", "t-c"]
    assert await sdk_client.describe_trigger("t-a") == created
    with pytest.raises(RPCError) as error:
        await sdk_client.create_trigger("t-a", event_type="y", workflow="W", task_queue="q")
    assert error.value.status == grpc.StatusCode.ALREADY_EXISTS and "t-a" in error.value.message
    assert (await sdk_client.describe_trigger("t-a")).event_type == "order.paid"  # unchanged
    await sdk_client.delete_trigger("t-b")
    assert [t.trigger_id async for t in sdk_client.list_triggers()] == ["t-a", "t-c"]
    for call in (sdk_client.delete_trigger("t-b"), sdk_client.describe_trigger("t-b")):
        with pytest.raises(RPCError) as error:
            await call
        assert error.value.status == grpc.StatusCode.NOT_FOUND and "t-b" in error.value.message
    # Deleting a trigger stops it: its events start nothing.
    result = await sdk_client.publish_event(id="after-delete", source=SHOP, type="x")
    assert [w.trigger_id for w in result.workflows] == ["t-c"]


_VALID_TRIGGER = dict(trigger_id="ok", event_type="e", workflow_type="W", task_queue="q")
_VALID_EVENT = dict(id="e-1", source="s", type="e")


_BAD_REQUESTS = [
    (
        "CreateEventTrigger",
        event_pb2.CreateEventTriggerRequest(
            namespace="default", trigger=event_pb2.EventTrigger(**{**_VALID_TRIGGER, "trigger_id": ""})
        ),
        grpc.StatusCode.INVALID_ARGUMENT,
        "trigger.trigger_id is required",
    ),
    (
        "CreateEventTrigger",
        event_pb2.CreateEventTriggerRequest(
            namespace="default", trigger=event_pb2.EventTrigger(**{**_VALID_TRIGGER, "event_type": ""})
        ),
        grpc.StatusCode.INVALID_ARGUMENT,
        "trigger.event_type is required",
    ),
    (
        "CreateEventTrigger",
        event_pb2.CreateEventTriggerRequest(
            namespace="default", trigger=event_pb2.EventTrigger(**{**_VALID_TRIGGER, "task_queue": ""})
        ),
        grpc.StatusCode.INVALID_ARGUMENT,
        "trigger.task_queue is required",
    ),
    (
        "CreateEventTrigger",
        event_pb2.CreateEventTriggerRequest(
            namespace="default", trigger=event_pb2.EventTrigger(**_VALID_TRIGGER, filter=["data.x === 1"])
        ),
        grpc.StatusCode.INVALID_ARGUMENT,
        "filter condition 'data.x === 1'",
    ),
    (
        "CreateEventTrigger",
        event_pb2.CreateEventTriggerRequest(
            namespace="default", trigger=event_pb2.EventTrigger(**_VALID_TRIGGER, input_paths=["headers.x"])
        ),
        grpc.StatusCode.INVALID_ARGUMENT,
        "input path 'headers.x'",
    ),
    (
        "CreateEventTrigger",
        event_pb2.CreateEventTriggerRequest(
            namespace="default", trigger=event_pb2.EventTrigger(**_VALID_TRIGGER, workflow_run_timeout={"seconds": -1})
        ),
        grpc.StatusCode.INVALID_ARGUMENT,
        "trigger.workflow_run_timeout must not be negative",
    ),
    (
        "CreateEventTrigger",
        event_pb2.CreateEventTriggerRequest(namespace="nowhere", trigger=event_pb2.EventTrigger(**_VALID_TRIGGER)),
        grpc.StatusCode.NOT_FOUND,
        "namespace 'nowhere' does not exist",
    ),
    (
        "DescribeEventTrigger",
        event_pb2.DescribeEventTriggerRequest(namespace="default"),
        grpc.StatusCode.INVALID_ARGUMENT,
        "trigger_id is required",
    ),
    (
        "DeleteEventTrigger",
        event_pb2.DeleteEventTriggerRequest(namespace="default", trigger_id="a\x01"),
        grpc.StatusCode.INVALID_ARGUMENT,
        "trigger_id must not contain control characters",
    ),
    (
        "ListEventTriggers",
        event_pb2.ListEventTriggersRequest(namespace="default", page_size=5000),
        grpc.StatusCode.INVALID_ARGUMENT,
        "page_size must be between 1 and 1000",
    ),
    (
        "ListEventTriggers",
        event_pb2.ListEventTriggersRequest(namespace="default", next_page_token=b"\xff"),
        grpc.StatusCode.INVALID_ARGUMENT,
        "next_page_token is malformed",
    ),
    (
        "ListEventTriggers",
        event_pb2.ListEventTriggersRequest(namespace="default", next_page_token=b"a\x00b"),
        grpc.StatusCode.INVALID_ARGUMENT,
        "next_page_token is malformed",
    ),
    (
        "PublishEvent",
        event_pb2.PublishEventRequest(namespace="default", event=event_pb2.CloudEvent(**{**_VALID_EVENT, "id": ""})),
        grpc.StatusCode.INVALID_ARGUMENT,
        "event.id is required",
    ),
    (
        "PublishEvent",
        event_pb2.PublishEventRequest(
            namespace="default", event=event_pb2.CloudEvent(**{**_VALID_EVENT, "source": ""})
        ),
        grpc.StatusCode.INVALID_ARGUMENT,
        "event.source is required",
    ),
    (
        "PublishEvent",
        event_pb2.PublishEventRequest(namespace="default", event=event_pb2.CloudEvent(**_VALID_EVENT, data=b"{oops")),
        grpc.StatusCode.INVALID_ARGUMENT,
        "event.data must be UTF-8 JSON",
    ),
    (
        "PublishEvent",
        event_pb2.PublishEventRequest(
            namespace="default", event=event_pb2.CloudEvent(**_VALID_EVENT, data=b"1" * (3 * 1024 * 1024))
        ),
        grpc.StatusCode.INVALID_ARGUMENT,
        "over the server's payload limit",
    ),
    (
        "PublishEvent",
        event_pb2.PublishEventRequest(
            namespace="default", event=event_pb2.CloudEvent(**_VALID_EVENT, time={"seconds": 10**12})
        ),
        grpc.StatusCode.INVALID_ARGUMENT,
        "event.time",
    ),
    (
        "PublishEvent",
        event_pb2.PublishEventRequest(namespace="nowhere", event=event_pb2.CloudEvent(**_VALID_EVENT)),
        grpc.StatusCode.NOT_FOUND,
        "namespace 'nowhere' does not exist",
    ),
]


async def test_bad_input_on_every_trigger_rpc_is_refused_and_changes_nothing(sdk_client: Client) -> None:
    await sdk_client.create_trigger("existing", event_type="e", workflow="W", task_queue="q")
    for rpc, request_message, status, message in _BAD_REQUESTS:
        with pytest.raises(RPCError) as error:
            await sdk_client.workflow_service.call(rpc, request_message, retry=False)
        assert (error.value.status, message in error.value.message) == (status, True), (rpc, error.value.message)
    assert [t.trigger_id async for t in sdk_client.list_triggers()] == ["existing"]
    assert await _executions(sdk_client) == []
    # The event was not recorded: publishing it properly now starts its workflow.
    result = await sdk_client.publish_event(id="e-1", source="s", type="e")
    assert not result.duplicate and len(result.workflows) == 1


async def test_dedupe_rows_expire_after_the_window_and_are_swept(store_url: str) -> None:
    clock = ManualClock()
    server = FlowForgeServer(
        ServerConfig(store=store_url, port=0, clock=clock, event_dedupe_window_s=60, event_dedupe_sweep_interval_s=0.05)
    )
    await server.start()
    try:
        async with await Client.connect(f"127.0.0.1:{server.port}") as sdk_client:
            await _order_trigger(sdk_client)
            first = await sdk_client.publish_event(id="evt-old", source=SHOP, type="order.paid")
            clock.advance(59 * 1_000_000)
            assert (await sdk_client.publish_event(id="evt-old", source=SHOP, type="order.paid")).duplicate

            async def dedupe_row() -> Any:
                return await server.engine.read(lambda tx: tx.get_event_dedupe("default", SHOP, "evt-old"))

            assert await dedupe_row() is not None
            clock.advance(1_000_000)  # the window has ended: the sweeper deletes the row
            await wait_until(lambda: _is_none(dedupe_row()), timeout=30, what="the sweeper to delete the row")

            # After the window the event counts as new; its workflow id is still running,
            # so nothing new starts (the workflow id is the second guard) ...
            again = await sdk_client.publish_event(id="evt-old", source=SHOP, type="order.paid")
            assert not again.duplicate and again.workflows[0].started is False
            assert again.workflows[0].run_id == first.workflows[0].run_id
            # ... and once that run has closed, a new run of the same id starts.
            await sdk_client.get_workflow_handle(first.workflows[0].workflow_id).terminate(reason="test")
            clock.advance(61 * 1_000_000)
            third = await sdk_client.publish_event(id="evt-old", source=SHOP, type="order.paid")
            assert third.workflows[0].started and third.workflows[0].workflow_id == first.workflows[0].workflow_id
            assert third.workflows[0].run_id != first.workflows[0].run_id
    finally:
        await server.stop()


async def _is_none(value: Any) -> bool:
    return (await value) is None


async def _flowforge(*args: str) -> tuple[int, str, str]:
    """The CLI in a child process; the loop keeps serving the in-process server meanwhile."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "flowforge.cli",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=_env(),
    )
    stdout, stderr = await asyncio.wait_for(process.communicate(), 60)
    return process.returncode or 0, stdout.decode(), stderr.decode()


async def test_the_cli_creates_lists_and_deletes_triggers_and_publishes_events() -> None:
    # The CLI is a client of the RPCs above: one (in-memory SQLite) server suffices.
    server = FlowForgeServer(ServerConfig(store=":memory:", port=0))
    await server.start()
    try:
        async with await Client.connect(f"127.0.0.1:{server.port}") as sdk_client:
            await _cli_session(sdk_client, ["--address", f"127.0.0.1:{server.port}"])
    finally:
        await server.stop()


async def test_a_publish_is_all_or_nothing(sdk_client: Client, server: FlowForgeServer) -> None:
    # Triggers start in id order: "a-note" starts, then "b-twice" is refused (its input,
    # the data twice, is over the payload limit) and the whole publish rolls back.
    await sdk_client.create_trigger("a-note", event_type="big", workflow="W", task_queue="q", input_paths=["data.note"])
    await sdk_client.create_trigger(
        "b-twice", event_type="big", workflow="W", task_queue="q", input_paths=["data", "data"]
    )
    data = {"note": "hello", "blob": "x" * (1200 * 1024)}
    with pytest.raises(RPCError) as error:
        await sdk_client.publish_event(id="evt-big", source=SHOP, type="big", data=data)
    assert error.value.status == grpc.StatusCode.INVALID_ARGUMENT and "payload limit" in error.value.message
    assert await _executions(sdk_client) == []
    assert await server.engine.read(lambda tx: tx.get_event_dedupe("default", SHOP, "evt-big")) is None
    await sdk_client.delete_trigger("b-twice")
    result = await sdk_client.publish_event(id="evt-big", source=SHOP, type="big", data=data)
    assert not result.duplicate and [w.trigger_id for w in result.workflows] == ["a-note"]


async def test_the_dedupe_record_survives_a_kill_9_of_the_server(server_process: ServerProcess) -> None:
    async with await Client.connect(server_process.address) as first_client:
        await _order_trigger(first_client)
        first = await first_client.publish_event(id="evt-durable", source=SHOP, type="order.paid")
    server_process.kill9()
    server_process.start()
    async with await Client.connect(server_process.address) as sdk_client:
        again = await sdk_client.publish_event(id="evt-durable", source=SHOP, type="order.paid")
        assert again.duplicate and again.workflows == first.workflows
        assert [e.run_id for e in await _executions(sdk_client)] == [first.workflows[0].run_id]


async def test_the_dev_server_serves_the_signed_webhook(tmp_path: Path) -> None:
    secrets = tmp_path / "webhook-secrets"
    secrets.write_text(f"# per namespace\n*={SECRET}\n")
    with socket.create_server(("127.0.0.1", 0)) as probe:
        http_port = probe.getsockname()[1]
    ready = tmp_path / "ready"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "flowforge.cli",
            "server",
            "start-dev",
            "--in-memory",
            "--port",
            "0",
            "--http-port",
            str(http_port),
            "--webhook-secrets-file",
            str(secrets),
            "--ready-file",
            str(ready),
            "--log-level",
            "INFO",
        ],
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        await wait_until(lambda: ready.exists() or process.poll() is not None, timeout=60, what="the dev server")
        assert process.poll() is None, process.stdout.read().decode() if process.stdout else ""
        async with await Client.connect(f"127.0.0.1:{ready.read_text()}") as sdk_client:
            await _order_trigger(sdk_client)
            body = _cloudevent("evt-dev", {"order_id": "o-1"})
            async with aiohttp.ClientSession() as http:
                url = f"http://127.0.0.1:{http_port}/events"
                async with http.post(url, data=body) as unsigned:
                    assert unsigned.status == 401
                now = int(time.time())
                headers = {
                    "Content-Type": "application/cloudevents+json",
                    TIMESTAMP_HEADER: str(now),
                    SIGNATURE_HEADER: sign(SECRET, body, namespace="default", timestamp=now),
                }
                async with http.post(url, data=body, headers=headers) as signed:
                    assert signed.status == 202 and (await signed.json())["workflows"][0]["started"] is True
            assert len(await _executions(sdk_client)) == 1
    finally:
        process.terminate()
        output, _ = process.communicate(timeout=30)
    assert f"event webhook listening on http://127.0.0.1:{http_port}/events" in output.decode()
    assert SECRET not in output.decode()


async def test_a_taken_http_port_fails_the_start_with_a_clear_message() -> None:
    first = FlowForgeServer(ServerConfig(store=":memory:", port=0, http_port=0))
    await first.start()
    try:
        second = FlowForgeServer(ServerConfig(store=":memory:", port=0, http_port=first.http_port))
        with pytest.raises(OSError, match=f"cannot listen on 127.0.0.1:{first.http_port} for POST /events"):
            await second.start()
        assert second.port is not None  # gRPC had started, and was stopped again: its port is free
        socket.create_server(("127.0.0.1", second.port)).close()
    finally:
        await first.stop()


async def _cli_session(sdk_client: Client, address: list[str]) -> None:
    code, out, err = await _flowforge(
        "trigger",
        "create",
        "--trigger-id",
        "cli-orders",
        "--event-type",
        "order.paid",
        "--workflow-type",
        "OrderPaid",
        "--task-queue",
        "orders",
        "--filter",
        'data.currency == "EUR"',
        "--input",
        "data.order_id",
        *address,
    )
    assert code == 0 and "trigger cli-orders created" in out, err
    code, out, err = await _flowforge("trigger", "list", "--output", "json", *address)
    assert code == 0, err
    [listed] = json.loads(out)
    assert listed["filter"] == ['data.currency == "EUR"'] and listed["input_paths"] == ["data.order_id"]
    publish = [
        "event",
        "publish",
        "--id",
        "cli-1",
        "--source",
        SHOP,
        "--type",
        "order.paid",
        "--data",
        '{"currency": "EUR", "order_id": "o-1"}',
        "--output",
        "json",
        *address,
    ]
    code, out, err = await _flowforge(*publish)
    assert code == 0 and json.loads(out)["duplicate"] is False, err
    code, out, err = await _flowforge(*publish)
    assert code == 0 and json.loads(out)["duplicate"] is True, err
    assert len(await _executions(sdk_client)) == 1
    code, out, err = await _flowforge(
        "trigger",
        "create",
        "--trigger-id",
        "bad",
        "--event-type",
        "e",
        "--workflow-type",
        "W",
        "--task-queue",
        "q",
        "--filter",
        "data.x = 1",
        *address,
    )
    assert code == 1 and "INVALID_ARGUMENT" in err and "data.x = 1" in err
    code, out, err = await _flowforge("trigger", "delete", "--trigger-id", "cli-orders", *address)
    assert code == 0 and [t async for t in sdk_client.list_triggers()] == []
