"""The worker stream (``StreamWorkerTasks``, docs/worker-stream.md) through a raw gRPC
client on a real server, each store in turn: tasks only against credits, reports
answered by id exactly as their unary RPCs answer, protocol errors ending the stream
with a readable INVALID_ARGUMENT, and leases that follow the rules when a stream
breaks or hands tasks back."""

from __future__ import annotations

import asyncio
import collections
import json
import random
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from flowforge import Client
from flowforge.api.v1 import access_pb2, common_pb2
from flowforge.api.v1 import workflow_service_pb2 as pb
from flowforge.converter import default_converter
from flowforge.server import FlowForgeServer
from tests.integration._processes import ADMIN_KEY_FILE, ServerProcess
from tests.integration._protocol import NS, Wire, complete_workflow, event_types, schedule_activity, seconds
from tests.integration._stream_client import ACTIVITY, WORKFLOW, RawWorkerStream, credit
from testsupport.counting import StoreCounters
from testsupport.fuzz_messages import random_message
from testsupport.waiting import wait_until


@pytest.fixture
def queue() -> str:
    return f"ws-{uuid.uuid4().hex[:8]}"


@pytest.fixture
async def stream(wire: Wire) -> AsyncIterator[RawWorkerStream]:
    opened = RawWorkerStream(wire.channel)
    yield opened
    opened.cancel()


async def _start(wire: Wire, queue: str, count: int) -> list[str]:
    ids = [f"{queue}-{i}" for i in range(count)]
    for workflow_id in ids:
        await wire.start(workflow_id, task_queue=queue)
    return ids


def _completed(token: bytes, *commands: object, **extra: object) -> pb.RespondWorkflowTaskCompletedRequest:
    return pb.RespondWorkflowTaskCompletedRequest(task_token=token, commands=list(commands), **extra)  # type: ignore[arg-type]


async def test_tasks_are_pushed_only_against_credits(wire: Wire, stream: RawWorkerStream, queue: str) -> None:
    await _start(wire, queue, 5)
    await stream.hello(NS, credit(queue, WORKFLOW, 2))
    first = await stream.tasks(2)
    assert {t.task_queue for t in first} == {queue}
    assert all(t.WhichOneof("task") == "workflow_task" and t.workflow_task.task_token for t in first)
    # Three tasks wait, but no credit is left: nothing more arrives until one is granted.
    with pytest.raises(asyncio.TimeoutError):
        await stream.receive(timeout=1.0)
    await stream.send(credits=[credit(queue, WORKFLOW, 1)])
    assert len(await stream.tasks(1)) == 1
    with pytest.raises(asyncio.TimeoutError):
        await stream.receive(timeout=0.5)
    backlog = await wire.stub.DescribeTaskQueue(pb.DescribeTaskQueueRequest(namespace=NS, task_queue=queue))
    assert [b.ready_tasks for b in backlog.backlogs if b.task_queue_type == WORKFLOW] == [2]


async def test_a_workflow_runs_on_reports_answered_by_id(wire: Wire, stream: RawWorkerStream, queue: str) -> None:
    (workflow_id,) = await _start(wire, queue, 1)
    await stream.hello(NS, credit(queue, WORKFLOW, 1), credit(queue, ACTIVITY, 1))
    (task,) = await stream.tasks(1)
    schedule = stream.report(workflow_task_completed=_completed(task.workflow_task.task_token, schedule_activity("a1")))
    await stream.send(reports=[schedule])
    answered = await stream.results(1)
    assert answered[schedule.id].status_code == 0, answered
    (activity,) = await stream.tasks(1)
    assert activity.activity_task.activity_id == "a1"
    done = stream.report(
        activity_task_completed=pb.RespondActivityTaskCompletedRequest(
            task_token=activity.activity_task.task_token, result=default_converter.to_payloads(["ok"])
        )
    )
    beat = stream.report(
        activity_task_heartbeat=pb.RecordActivityTaskHeartbeatRequest(task_token=activity.activity_task.task_token)
    )
    await stream.send(reports=[beat, done], credits=[credit(queue, WORKFLOW, 1)])
    message = await stream.receive()
    assert message is not None
    results = {r.id: r for r in message.results}
    while len(results) < 2 or not message.tasks:
        more = await stream.receive()
        assert more is not None
        results.update({r.id: r for r in more.results})
        message.tasks.extend(more.tasks)
    assert results[done.id].status_code == 0 and results[done.id].WhichOneof("response") == "activity_task_completed"
    # Sent before the completion in the same message, so applied before it (docs/worker-stream.md).
    assert results[beat.id].status_code == 0 and results[beat.id].WhichOneof("response") == "activity_task_heartbeat"
    (next_task,) = message.tasks
    finish = stream.report(
        workflow_task_completed=_completed(next_task.workflow_task.task_token, complete_workflow("done"))
    )
    await stream.send(reports=[finish])
    assert (await stream.results(1))[finish.id].status_code == 0
    assert (await wire.describe(workflow_id)).status == common_pb2.WORKFLOW_EXECUTION_STATUS_COMPLETED
    await stream.call.done_writing()
    assert (await stream.status())[0] == grpc.StatusCode.OK


async def test_the_reports_of_one_message_commit_in_one_transaction_and_are_answered_in_one_message(
    server: FlowForgeServer, wire: Wire, stream: RawWorkerStream, queue: str
) -> None:
    runs = 6
    await _start(wire, queue, runs)
    await stream.hello(NS, credit(queue, WORKFLOW, runs))
    scheduling = [
        stream.report(
            workflow_task_completed=_completed(
                task.workflow_task.task_token, schedule_activity("a"), eager_activity_slots=1
            )
        )
        for task in await stream.tasks(runs)
    ]
    await stream.send(reports=scheduling)
    scheduled = await stream.results(runs)
    tokens = [t.task_token for r in scheduled.values() for t in r.workflow_task_completed.activity_tasks]
    assert len(tokens) == runs, scheduled
    store = StoreCounters(server.store)
    received = stream.received
    completions = [
        stream.report(
            activity_task_completed=pb.RespondActivityTaskCompletedRequest(
                task_token=token, result=default_converter.to_payloads(["ok"])
            )
        )
        for token in tokens
    ]
    await stream.send(reports=completions)
    answered = await stream.results(runs)
    assert all(result.status_code == 0 for result in answered.values()), answered
    # Started in one turn of the server's event loop, so none commits alone before the rest.
    assert store.counts["write_transactions"] == 1, dict(store.counts)
    assert stream.received == received + 1


async def test_reports_of_one_task_are_applied_in_the_order_they_were_sent(
    wire: Wire, stream: RawWorkerStream, queue: str
) -> None:
    await _start(wire, queue, 1)
    await stream.hello(NS, credit(queue, WORKFLOW, 1), credit(queue, ACTIVITY, 1))
    (task,) = await stream.tasks(1)
    schedule = stream.report(workflow_task_completed=_completed(task.workflow_task.task_token, schedule_activity("a1")))
    await stream.send(reports=[schedule])
    assert (await stream.results(1))[schedule.id].status_code == 0
    (activity,) = await stream.tasks(1)
    token = activity.activity_task.task_token
    beats_before = [
        stream.report(activity_task_heartbeat=pb.RecordActivityTaskHeartbeatRequest(task_token=token)) for _ in range(4)
    ]
    done = stream.report(activity_task_completed=pb.RespondActivityTaskCompletedRequest(task_token=token))
    beats_after = [
        stream.report(activity_task_heartbeat=pb.RecordActivityTaskHeartbeatRequest(task_token=token)) for _ in range(2)
    ]
    await stream.send(reports=[*beats_before, done, *beats_after])
    results = await stream.results(7)
    # Each heartbeat sees the lease as the completion left it: held before, ended after.
    assert {r.id: _code(r.status_code) for r in results.values()} == {
        **{beat.id: grpc.StatusCode.OK for beat in beats_before},
        done.id: grpc.StatusCode.OK,
        **{beat.id: grpc.StatusCode.FAILED_PRECONDITION for beat in beats_after},
    }


async def test_a_stale_or_forged_token_is_answered_as_the_unary_rpc_answers(
    wire: Wire, stream: RawWorkerStream, queue: str
) -> None:
    await _start(wire, queue, 1)
    await stream.hello(NS, credit(queue, WORKFLOW, 1))
    (task,) = await stream.tasks(1)
    token = task.workflow_task.task_token
    first = stream.report(workflow_task_completed=_completed(token, complete_workflow(1)))
    await stream.send(reports=[first])
    assert (await stream.results(1))[first.id].status_code == 0
    stale = stream.report(workflow_task_completed=_completed(token, complete_workflow(2)))
    forged = stream.report(
        activity_task_completed=pb.RespondActivityTaskCompletedRequest(task_token=token[:-3] + b"AAA")
    )
    empty = stream.report()
    await stream.send(reports=[stale, forged, empty])
    results = await stream.results(3)
    unary: dict[int, grpc.StatusCode] = {}
    for report, call in (
        (stale, wire.stub.RespondWorkflowTaskCompleted(_completed(token, complete_workflow(2)))),
        (forged, wire.stub.RespondActivityTaskCompleted(forged.activity_task_completed)),
    ):
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await call
        unary[report.id] = refused.value.code()
        assert results[report.id].status_message == refused.value.details()
    assert unary == {stale.id: grpc.StatusCode.FAILED_PRECONDITION, forged.id: grpc.StatusCode.INVALID_ARGUMENT}
    assert {i: _code(r.status_code) for i, r in results.items()} == {
        **unary,
        empty.id: grpc.StatusCode.INVALID_ARGUMENT,
    }
    assert "carries no request" in results[empty.id].status_message
    # The stream outlived its refused reports.
    await stream.send(credits=[credit(queue, WORKFLOW, 1)])
    await stream.call.done_writing()
    assert (await stream.status())[0] == grpc.StatusCode.OK


def _code(number: int) -> grpc.StatusCode:
    return next(c for c in grpc.StatusCode if c.value[0] == number)


@pytest.mark.parametrize(
    ("first", "later", "says"),
    [
        (pb.WorkerStreamRequest(), None, "must carry hello"),
        (pb.WorkerStreamRequest(credits=[credit("q", WORKFLOW)]), None, "must carry hello"),
        (pb.WorkerStreamRequest(hello=pb.WorkerStreamHello(namespace="")), None, "hello.namespace is required"),
        (
            pb.WorkerStreamRequest(hello=pb.WorkerStreamHello(namespace=NS), credits=[credit("q", WORKFLOW, 0)]),
            None,
            "between 1 and 10000",
        ),
        (
            pb.WorkerStreamRequest(hello=pb.WorkerStreamHello(namespace=NS), credits=[credit("q", WORKFLOW, 10_001)]),
            None,
            "between 1 and 10000",
        ),
        (
            pb.WorkerStreamRequest(hello=pb.WorkerStreamHello(namespace=NS), credits=[credit("q", 0)]),
            None,
            "task_queue_type",
        ),
        (
            pb.WorkerStreamRequest(hello=pb.WorkerStreamHello(namespace=NS), credits=[credit("", ACTIVITY)]),
            None,
            "credits.task_queue is required",
        ),
        (
            pb.WorkerStreamRequest(hello=pb.WorkerStreamHello(namespace=NS), credits=[credit("q", WORKFLOW, 6000)]),
            pb.WorkerStreamRequest(credits=[credit("r", ACTIVITY, 6000)]),
            "the limit is 10000",
        ),
        (
            pb.WorkerStreamRequest(hello=pb.WorkerStreamHello(namespace=NS)),
            pb.WorkerStreamRequest(hello=pb.WorkerStreamHello(namespace=NS)),
            "only in the first message",
        ),
        (
            pb.WorkerStreamRequest(hello=pb.WorkerStreamHello(namespace=NS), stop_tasks=True),
            pb.WorkerStreamRequest(credits=[credit("q", WORKFLOW)]),
            "after stop_tasks",
        ),
        (
            pb.WorkerStreamRequest(hello=pb.WorkerStreamHello(namespace=NS), returned_task_tokens=[b"ff2.0.junk.junk"]),
            None,
            "task token is malformed",
        ),
        (
            pb.WorkerStreamRequest(
                hello=pb.WorkerStreamHello(namespace=NS), returned_task_tokens=[b"ff2.0.junk.junk"] * 10_001
            ),
            None,
            "returned_task_tokens holds 10001 tokens; the limit is 10000 per message",
        ),
    ],
)
async def test_a_message_that_breaks_the_protocol_ends_the_stream_with_invalid_argument(
    wire: Wire, first: pb.WorkerStreamRequest, later: pb.WorkerStreamRequest | None, says: str
) -> None:
    stream = RawWorkerStream(wire.channel)
    await stream.call.write(first)
    if later is not None:
        await stream.call.write(later)
    code, details = await stream.status()
    assert code == grpc.StatusCode.INVALID_ARGUMENT and says in details, details
    assert "Traceback" not in details


async def test_an_undecodable_message_or_a_reused_report_id_ends_the_stream(wire: Wire, queue: str) -> None:
    raw = wire.channel.stream_stream(
        "/flowforge.api.v1.WorkflowService/StreamWorkerTasks", request_serializer=None, response_deserializer=None
    )
    call = raw()
    await call.write(pb.WorkerStreamRequest(hello=pb.WorkerStreamHello(namespace=NS)).SerializeToString())
    await call.write(b"\xff\xff\xff\xff")
    assert await call.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "not a valid protobuf message" in await call.details()

    await _start(wire, queue, 1)
    stream = RawWorkerStream(wire.channel)
    await stream.hello(NS, credit(queue, WORKFLOW))
    (task,) = await stream.tasks(1)
    beat = pb.RespondWorkflowTaskFailedRequest(task_token=task.workflow_task.task_token)
    await stream.send(reports=[pb.WorkerReport(id=7, workflow_task_failed=beat)] * 2)
    code, details = await stream.status()
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "report id 7 is already used" in details


async def test_a_namespace_that_does_not_exist_is_not_found(wire: Wire) -> None:
    stream = RawWorkerStream(wire.channel)
    await stream.hello("no-such-namespace")
    code, details = await stream.status()
    assert code == grpc.StatusCode.NOT_FOUND and "no-such-namespace" in details


async def _activity_task(wire: Wire, stream: RawWorkerStream, queue: str, start_to_close: float) -> pb.PushedTask:
    """Starts a workflow that schedules one activity, and takes that activity on ``stream``."""
    (workflow_id,) = await _start(wire, queue, 1)
    polled = await wire.poll_workflow_task(queue)
    await wire.complete_workflow_task(polled.task_token, schedule_activity("a1", start_to_close=start_to_close))
    await stream.hello(NS, credit(queue, ACTIVITY))
    (task,) = await stream.tasks(1)
    assert task.activity_task.workflow_execution.workflow_id == workflow_id
    return task


async def test_a_task_held_by_a_stream_that_breaks_comes_back_when_its_lease_expires(wire: Wire, queue: str) -> None:
    held = RawWorkerStream(wire.channel)
    task = await _activity_task(wire, held, queue, start_to_close=1.0)
    assert task.activity_task.attempt == 1
    held.cancel()
    other = RawWorkerStream(wire.channel)
    try:
        await other.hello(NS, credit(queue, ACTIVITY))
        (again,) = await other.tasks(1, timeout=20.0)
        assert again.activity_task.activity_id == "a1" and again.activity_task.attempt == 2
    finally:
        other.cancel()


async def test_a_returned_task_is_offered_again_at_once(wire: Wire, queue: str) -> None:
    held = RawWorkerStream(wire.channel)
    task = await _activity_task(wire, held, queue, start_to_close=3600.0)
    other = RawWorkerStream(wire.channel)
    try:
        await other.hello(NS, credit(queue, ACTIVITY))
        await held.send(returned_task_tokens=[task.activity_task.task_token])
        (again,) = await other.tasks(1, timeout=5.0)  # far sooner than the hour the lease had left
        # Handed back unrun: the same attempt, and the old token no longer reports it.
        assert again.activity_task.activity_id == "a1" and again.activity_task.attempt == 1
        late = held.report(
            activity_task_completed=pb.RespondActivityTaskCompletedRequest(task_token=task.activity_task.task_token)
        )
        await held.send(reports=[late])
        assert (await held.results(1))[late.id].status_code == grpc.StatusCode.FAILED_PRECONDITION.value[0]
    finally:
        held.cancel()
        other.cancel()


async def test_stop_tasks_is_answered_and_nothing_is_pushed_after_it(
    wire: Wire, stream: RawWorkerStream, queue: str, server: FlowForgeServer
) -> None:
    await stream.hello(NS, credit(queue, WORKFLOW, 3))
    await wait_until(
        lambda: (server.engine.metrics.registry.get_sample_value("flowforge_worker_streams") or 0) >= 1,
        timeout=5.0,
        what="the stream to open",
    )
    await stream.send(stop_tasks=True)
    message = await stream.receive()
    assert message is not None and message.tasks_stopped and not message.tasks
    await _start(wire, queue, 2)
    with pytest.raises(asyncio.TimeoutError):
        await stream.receive(timeout=1.0)
    # The tasks wait for another worker, not leased to this stream.
    polled = await wire.poll_workflow_task(queue, timeout=5.0)
    assert polled.task_token
    await stream.call.done_writing()
    assert (await stream.status())[0] == grpc.StatusCode.OK


async def test_authorization_is_the_polls_for_the_stream_and_each_reports_own(
    auth_server_process: ServerProcess, tmp_path: Path
) -> None:
    admin_key = (tmp_path / ADMIN_KEY_FILE).read_text().strip()
    admin = await Client.connect(auth_server_process.address, api_key=admin_key)
    keys: dict[tuple[str, str], str] = {}
    for namespace in ("alpha", "beta"):
        await admin.workflow_service.call("RegisterNamespace", pb.RegisterNamespaceRequest(name=namespace))
        for role in ("reader", "worker"):
            created = await admin.workflow_service.call(
                "CreateApiKey",
                access_pb2.CreateApiKeyRequest(namespace=namespace, role=role, name=f"{namespace}-{role}"),
            )
            keys[namespace, role] = created.key
    channel = grpc.aio.insecure_channel(auth_server_process.address)

    def opened(key: str | None) -> RawWorkerStream:
        return RawWorkerStream(channel, (("authorization", f"Bearer {key}"),) if key else ())

    try:
        for key, namespace, expected in (
            (None, "alpha", grpc.StatusCode.UNAUTHENTICATED),
            (keys["alpha", "reader"], "alpha", grpc.StatusCode.PERMISSION_DENIED),
            (keys["alpha", "worker"], "beta", grpc.StatusCode.PERMISSION_DENIED),
        ):
            refused = opened(key)
            # Without a key the stream is refused as it opens, so nothing is sent: a write
            # racing that refusal can fail in the client library, which then reports
            # INTERNAL ("Internal error from Core") instead of the server's status. A
            # key's role and namespace are checked on the first message, which must go.
            if key is not None:
                try:
                    await refused.hello(namespace, credit("q", WORKFLOW))
                except (asyncio.InvalidStateError, grpc.aio.AioRpcError):
                    pass  # refused before the message went
            code, details = await refused.status()
            assert code == expected, (code, details)
        # beta's real task token, reported on alpha's stream: refused as the unary RPC refuses it.
        writer = await admin.workflow_service.call(
            "StartWorkflowExecution",
            pb.StartWorkflowExecutionRequest(namespace="beta", workflow_id="w", workflow_type="wf", task_queue="q"),
        )
        assert writer.run_id
        beta_stream = opened(keys["beta", "worker"])
        await beta_stream.hello("beta", credit("q", WORKFLOW), identity="claims-to-be-root")
        (task,) = await beta_stream.tasks(1)
        alpha_stream = opened(keys["alpha", "worker"])
        await alpha_stream.hello("alpha")
        steal = alpha_stream.report(
            workflow_task_completed=_completed(task.workflow_task.task_token, complete_workflow("stolen"))
        )
        await alpha_stream.send(reports=[steal])
        refused_report = (await alpha_stream.results(1))[steal.id]
        assert _code(refused_report.status_code) == grpc.StatusCode.PERMISSION_DENIED, refused_report
        done = beta_stream.report(
            workflow_task_completed=_completed(task.workflow_task.task_token, complete_workflow("ok"))
        )
        await beta_stream.send(reports=[done])
        assert (await beta_stream.results(1))[done.id].status_code == 0
        history = await admin.workflow_service.call(
            "GetWorkflowExecutionHistory",
            pb.GetWorkflowExecutionHistoryRequest(namespace="beta", execution={"workflow_id": "w"}),
        )
        started = [json.loads(e.attributes_json) for e in history.events if e.event_type == "WorkflowTaskStarted"]
        # Who polled is the key (the claim kept after it), as on the unary path.
        assert started[0]["identity"].startswith("apikey:") and "(claims-to-be-root)" in started[0]["identity"]
        assert history.events[-1].event_type == "WorkflowExecutionCompleted"
        for stream in (alpha_stream, beta_stream):
            await stream.call.done_writing()
            assert (await stream.status())[0] == grpc.StatusCode.OK
    finally:
        await channel.close()
        await admin.close()


async def test_open_streams_and_their_messages_are_counted(wire: Wire, server: FlowForgeServer, queue: str) -> None:
    metrics = server.engine.metrics.registry

    def sample(name: str, **labels: str) -> float:
        return metrics.get_sample_value(name, labels) or 0.0

    before = {d: sample("flowforge_worker_stream_messages_total", direction=d) for d in ("received", "sent")}
    assert sample("flowforge_worker_streams") == 0
    stream = RawWorkerStream(wire.channel)
    await stream.hello(NS, credit(queue, WORKFLOW, 2))
    await wait_until(lambda: sample("flowforge_worker_streams") == 1, timeout=5.0, what="the gauge to count the stream")
    # A report counts as its unary RPC, so the RPC panels read the same on either path.
    refused = {"method": "RespondActivityTaskCompleted", "code": "INVALID_ARGUMENT"}
    refused_before = sample("flowforge_rpc_requests_total", **refused)
    forged = stream.report(activity_task_completed=pb.RespondActivityTaskCompletedRequest(task_token=b"ff2.0.x.y"))
    await stream.send(reports=[forged])
    assert (await stream.results(1))[forged.id].status_code == grpc.StatusCode.INVALID_ARGUMENT.value[0]
    assert sample("flowforge_rpc_requests_total", **refused) - refused_before == 1
    await stream.send(stop_tasks=True)
    message = await stream.receive()
    assert message is not None and message.tasks_stopped
    await stream.call.done_writing()
    assert (await stream.status())[0] == grpc.StatusCode.OK
    assert sample("flowforge_worker_streams") == 0
    assert sample("flowforge_worker_stream_messages_total", direction="received") - before["received"] == 3
    assert sample("flowforge_worker_stream_messages_total", direction="sent") - before["sent"] == 2


async def test_a_lease_attempt_cancelled_after_its_commit_hands_the_workflow_task_back(
    wire: Wire, server: FlowForgeServer, queue: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stream stopping cancels its lease attempts; one whose lease committed while its
    history is read gives the task back at once, not after the workflow task timeout."""
    await wire.start(f"{queue}-0", task_queue=queue, workflow_task_timeout=seconds(3600))
    engine = server.engine
    reading = asyncio.Event()
    hand_out = engine._hand_out_workflow_task

    async def stalled_hand_out(*args: Any, **kwargs: Any) -> Any:
        reading.set()
        await asyncio.Event().wait()  # until cancelled
        return await hand_out(*args, **kwargs)

    monkeypatch.setattr(engine, "_hand_out_workflow_task", stalled_hand_out)
    attempt = asyncio.create_task(engine.try_lease_workflow_task(NS, queue, "stopping"))
    await asyncio.wait_for(reading.wait(), 10)
    attempt.cancel()
    with pytest.raises(asyncio.CancelledError):
        await attempt
    monkeypatch.undo()
    polled = await wire.poll_workflow_task(queue, timeout=10.0)  # not the hour the lease had
    assert polled.task_token and polled.attempt == 2
    assert "WorkflowTaskTimedOut" in event_types(await wire.history(f"{queue}-0"))


async def test_random_messages_after_hello_never_end_a_stream_unclearly(
    wire: Wire, server: FlowForgeServer, queue: str
) -> None:
    """Seeded fuzz of what follows a valid hello: every stream ends with a clear status (never
    INTERNAL or UNKNOWN), every answer too, and none is left open."""
    rng = random.Random(20)
    unclear = {grpc.StatusCode.INTERNAL.value[0], grpc.StatusCode.UNKNOWN.value[0]}
    seen: collections.Counter[str] = collections.Counter()
    for index in range(60):
        stream = RawWorkerStream(wire.channel)
        await stream.hello(NS)
        message = random_message(pb.WorkerStreamRequest(), rng, 1.0 if index < 20 else 0.15)
        if rng.random() < 0.8:
            message.ClearField("hello")  # mostly past the first check, to reach the others
        try:
            await stream.call.write(message)
            await stream.call.done_writing()
        except (asyncio.InvalidStateError, grpc.aio.AioRpcError):
            pass  # ended already: the status says why
        while (answer := await stream.receive(timeout=30.0)) is not None:
            assert not unclear & {r.status_code for r in answer.results}, answer.results
        code, details = await stream.status(timeout=30.0)
        assert code not in (grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN), details
        seen[code.name] += 1
    assert seen["INVALID_ARGUMENT"] and len(seen) > 1, seen  # the fuzz reached past the checks
    await wait_until(
        lambda: (server.engine.metrics.registry.get_sample_value("flowforge_worker_streams") or 0) == 0,
        timeout=10.0,
        what="every fuzzed stream to close",
    )


async def test_a_query_lease_cancelled_after_its_commit_offers_the_query_again(
    wire: Wire, server: FlowForgeServer, queue: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As for workflow tasks: a query leased by an attempt cancelled while its history is read
    goes to the next poll at once, not when its 10 s lease runs out."""
    await wire.start(f"{queue}-q", task_queue=queue)
    engine = server.engine
    asked = wire.stub.QueryWorkflow(  # a call under way until answered or cancelled
        pb.QueryWorkflowRequest(
            namespace=NS,
            execution=common_pb2.WorkflowExecution(workflow_id=f"{queue}-q"),
            query=pb.WorkflowQuery(query_type="state"),
        ),
        timeout=30,
    )

    async def query_waits() -> bool:
        return (await engine.visible_workflow_work(NS, queue, 16))[0]

    await wait_until(query_waits, timeout=10.0, what="the query to wait for a worker")
    reading = asyncio.Event()

    async def stalled_read(*args: Any, **kwargs: Any) -> Any:
        reading.set()
        await asyncio.Event().wait()  # until cancelled

    monkeypatch.setattr(engine, "read", stalled_read)
    attempt = asyncio.create_task(engine.try_lease_query(NS, queue))
    await asyncio.wait_for(reading.wait(), 10)
    attempt.cancel()
    with pytest.raises(asyncio.CancelledError):
        await attempt
    monkeypatch.undo()
    polled = await wire.poll_workflow_task(queue, timeout=5.0)
    assert polled.HasField("query") and polled.query.query_type == "state"
    asked.cancel()
