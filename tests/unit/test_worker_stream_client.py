"""The worker's side of the worker stream (worker/_stream.py) against a scripted
in-process servicer over real gRPC: batching, credits within free slots, reconnects,
graceful stop and the fall-back to unary RPCs on a server without the stream."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from datetime import timedelta
from typing import Any

import grpc
import pytest

from flowforge.api.v1 import common_pb2, workflow_service_pb2_grpc
from flowforge.api.v1 import workflow_service_pb2 as pb
from flowforge.client import Client, RPCRetryConfig
from flowforge.exceptions import RPCError
from flowforge.worker import _stream
from flowforge.worker._stream import WorkerStream, poll_task
from testsupport.waiting import wait_until

ACTIVITY = pb.TASK_QUEUE_TYPE_ACTIVITY
QUEUE = "q"


def _activity_task(token: bytes) -> pb.PushedTask:
    return pb.PushedTask(
        task_queue=QUEUE,
        activity_task=pb.PollActivityTaskQueueResponse(
            task_token=token,
            activity_type="noop",
            activity_id=token.decode(),
            workflow_execution=common_pb2.WorkflowExecution(workflow_id="w", run_id="r"),
        ),
    )


def _ok(report: pb.WorkerReport) -> pb.WorkerReportResult:
    result = pb.WorkerReportResult(id=report.id)
    field = report.WhichOneof("report")
    assert field is not None
    getattr(result, field).SetInParent()
    return result


class ScriptedStream(workflow_service_pb2_grpc.WorkflowServiceServicer):
    """Pushes queued tasks against the credits it is given and answers reports with
    ``answer`` (OK by default). ``break_first_stream_on_report`` aborts the first stream
    with UNAVAILABLE when a report arrives, unanswered; ``push_on_stop`` is pushed
    after stop_tasks, before tasks_stopped (a task already under way)."""

    def __init__(self) -> None:
        self.messages: list[tuple[int, pb.WorkerStreamRequest]] = []  # (stream number, message)
        self.streams = 0
        self.ended_by_worker = 0
        self.tasks: list[pb.PushedTask] = []
        self.answer: Callable[[pb.WorkerReport], pb.WorkerReportResult] = _ok
        self.break_first_stream_on_report = False
        self.push_on_stop: pb.PushedTask | None = None
        self.silent = False  # reads everything, answers nothing (a server that hangs)

    async def StreamWorkerTasks(
        self, request_iterator: AsyncIterator[pb.WorkerStreamRequest], context: Any
    ) -> AsyncIterator[pb.WorkerStreamResponse]:
        self.streams += 1
        number = self.streams
        credits = 0
        stopped = False
        async for request in request_iterator:
            self.messages.append((number, request))
            if request.credits and stopped:
                await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "credits came after stop_tasks")
            stopped = stopped or request.stop_tasks
            credits += sum(credit.count for credit in request.credits)
            response = pb.WorkerStreamResponse()
            if self.silent:
                continue
            if request.reports and self.break_first_stream_on_report and number == 1:
                await context.abort(grpc.StatusCode.UNAVAILABLE, "replica going away")
            response.results.extend(self.answer(report) for report in request.reports)
            while credits and self.tasks:
                credits -= 1
                response.tasks.append(self.tasks.pop(0))
            if request.stop_tasks:
                if self.push_on_stop is not None:
                    response.tasks.append(self.push_on_stop)
                response.tasks_stopped = True
            if response.ByteSize():
                yield response
        self.ended_by_worker += 1

    def reports(self) -> list[pb.WorkerReport]:
        return [report for _, message in self.messages for report in message.reports]


class WithoutStream(workflow_service_pb2_grpc.WorkflowServiceServicer):
    """A server from before the stream: only the unary poll."""

    async def PollActivityTaskQueue(self, request: Any, context: Any) -> pb.PollActivityTaskQueueResponse:
        return _activity_task(b"polled").activity_task


@pytest.fixture
async def connect(serve_fake: Any) -> AsyncIterator[Callable[[Any], Any]]:
    clients: list[Client] = []

    async def open_client(servicer: Any, **options: Any) -> Client:
        client = await Client.connect(await serve_fake(servicer), namespace="payments", **options)
        clients.append(client)
        return client

    yield open_client
    for client in clients:
        await client.close()


def _open(client: Client) -> WorkerStream:
    stream = WorkerStream(client.workflow_service, namespace="payments", identity="w-1", build_id="b-1")
    stream.start()
    return stream


def _completed(token: bytes) -> pb.RespondActivityTaskCompletedRequest:
    return pb.RespondActivityTaskCompletedRequest(namespace="payments", task_token=token)


async def test_a_credit_per_waiting_poller_brings_its_pushed_task(connect: Any) -> None:
    fake = ScriptedStream()
    fake.tasks = [_activity_task(b"t-1"), _activity_task(b"t-2")]
    stream = _open(await connect(fake))

    task = await asyncio.wait_for(stream.next_task(QUEUE, ACTIVITY), 10)

    assert task.task_token == b"t-1"
    first = fake.messages[0][1]
    assert first.hello == pb.WorkerStreamHello(namespace="payments", identity="w-1", worker_build_id="b-1")
    # One poller, one credit: t-2 waits on the server for the next one.
    assert [(c.task_queue, c.task_queue_type, c.count) for c in first.credits] == [(QUEUE, ACTIVITY, 1)]
    assert fake.tasks == [_activity_task(b"t-2")]
    await stream.close()
    assert fake.ended_by_worker == 1


async def test_reports_ready_together_share_a_message_and_errors_keep_their_status(connect: Any) -> None:
    fake = ScriptedStream()

    def answer(report: pb.WorkerReport) -> pb.WorkerReportResult:
        if report.activity_task_completed.task_token == b"stale":
            return pb.WorkerReportResult(
                id=report.id,
                status_code=grpc.StatusCode.FAILED_PRECONDITION.value[0],
                status_message="task lease expired",
            )
        return _ok(report)

    fake.answer = answer
    client = await connect(fake)
    stream = _open(client)
    await wait_until(lambda: fake.messages, timeout=10, what="the hello")

    outcomes = await asyncio.wait_for(
        asyncio.gather(
            stream.report("RespondActivityTaskCompleted", _completed(b"a")),
            stream.report("RespondActivityTaskCompleted", _completed(b"stale")),
            stream.report("RespondActivityTaskCompleted", _completed(b"b")),
            return_exceptions=True,
        ),
        10,
    )

    assert isinstance(outcomes[0], pb.RespondActivityTaskCompletedResponse)
    assert isinstance(outcomes[2], pb.RespondActivityTaskCompletedResponse)
    error = outcomes[1]
    assert isinstance(error, RPCError)
    assert (error.status, error.message) == (grpc.StatusCode.FAILED_PRECONDITION, "task lease expired")
    batches = [len(message.reports) for _, message in fake.messages if message.reports]
    assert batches == [3]
    await stream.close()


async def test_reports_ready_together_beyond_the_batch_size_leave_in_several_messages_in_order(
    connect: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_stream, "_BATCH_BYTES", 2500)
    fake = ScriptedStream()
    stream = _open(await connect(fake))
    await wait_until(lambda: fake.messages, timeout=10, what="the hello")

    def big(token: bytes) -> pb.RespondActivityTaskCompletedRequest:
        request = _completed(token)
        request.result.payloads.add(data=b"x" * 1000)
        return request

    tokens = [b"a", b"b", b"c", b"d", b"e"]
    await asyncio.wait_for(
        asyncio.gather(*(stream.report("RespondActivityTaskCompleted", big(token)) for token in tokens)), 10
    )

    sent = [message for _, message in fake.messages if message.reports]
    # Two ~1 kB reports fit in 2,500 bytes, a third does not: 2 + 2 + 1, in the order reported.
    assert [len(message.reports) for message in sent] == [2, 2, 1]
    assert all(message.ByteSize() <= 2500 for message in sent)
    assert [r.activity_task_completed.task_token for r in fake.reports()] == tokens
    await stream.close()


async def test_the_tasks_of_one_message_report_in_one_message_and_a_lone_report_is_not_held(
    connect: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A linger far past the test: only the flush policy, never the clock, ends a wait.
    monkeypatch.setattr(_stream, "_LINGER_S", 600.0)
    fake = ScriptedStream()
    fake.tasks = [_activity_task(b"t-1"), _activity_task(b"t-2"), _activity_task(b"t-3")]
    stream = _open(await connect(fake))
    tasks = await asyncio.wait_for(asyncio.gather(*(stream.next_task(QUEUE, ACTIVITY) for _ in range(3))), 10)
    assert sorted(task.task_token for task in tasks) == [b"t-1", b"t-2", b"t-3"]

    reports = []
    for task in tasks:  # each in a turn of the event loop of its own, as tasks finish
        reports.append(
            asyncio.ensure_future(stream.report("RespondActivityTaskCompleted", _completed(task.task_token)))
        )
        for _ in range(3):
            await asyncio.sleep(0)
    await asyncio.wait_for(asyncio.gather(*reports), 10)
    assert [len(message.reports) for _, message in fake.messages if message.reports] == [3]

    # Nothing else in hand: the report leaves at once, not after the linger.
    fake.tasks = [_activity_task(b"t-4")]
    (task,) = await asyncio.wait_for(asyncio.gather(stream.next_task(QUEUE, ACTIVITY)), 10)
    await asyncio.wait_for(stream.report("RespondActivityTaskCompleted", _completed(task.task_token)), 10)
    assert [len(message.reports) for _, message in fake.messages if message.reports] == [3, 1]
    await stream.close()


async def test_a_credit_the_server_does_not_need_at_once_rides_with_the_next_report(
    connect: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_stream, "_CREDIT_LINGER_S", 600.0)
    fake = ScriptedStream()
    fake.tasks = [_activity_task(b"t-1")]
    stream = _open(await connect(fake))

    def granted() -> int:
        return sum(credit.count for _, message in fake.messages for credit in message.credits)

    task = await asyncio.wait_for(stream.next_task(QUEUE, ACTIVITY), 10)
    # The server holds none: this poller's credit goes at once.
    waiting = [asyncio.ensure_future(stream.next_task(QUEUE, ACTIVITY))]
    await wait_until(lambda: granted() == 2, timeout=10, what="the second poller's credit")
    # The server holds one: the third poller's credit waits for the report.
    waiting.append(asyncio.ensure_future(stream.next_task(QUEUE, ACTIVITY)))
    messages_before = len(fake.messages)
    for _ in range(10):  # the writer's turns: a credit sent at once would leave alone now
        await asyncio.sleep(0)
    await asyncio.wait_for(stream.report("RespondActivityTaskCompleted", _completed(task.task_token)), 10)
    (message,) = [message for _, message in fake.messages[messages_before:]]
    assert len(message.reports) == 1
    assert [(c.task_queue, c.task_queue_type, c.count) for c in message.credits] == [(QUEUE, ACTIVITY, 1)]
    for poller in waiting:
        poller.cancel()
    await stream.close()


async def test_a_broken_stream_reconnects_and_sends_unanswered_reports_again(
    connect: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_stream, "retry_delay", lambda failures: 0.01)
    fake = ScriptedStream()
    fake.break_first_stream_on_report = True
    stream = _open(await connect(fake))
    poller = asyncio.create_task(stream.next_task(QUEUE, ACTIVITY))
    await wait_until(lambda: fake.messages, timeout=10, what="the first stream")

    completed, heartbeat = await asyncio.wait_for(
        asyncio.gather(
            stream.report("RespondActivityTaskCompleted", _completed(b"a")),
            stream.report(
                "RecordActivityTaskHeartbeat",
                pb.RecordActivityTaskHeartbeatRequest(namespace="payments", task_token=b"a"),
                retry=False,
            ),
            return_exceptions=True,
        ),
        10,
    )

    # The completion went again on the second stream; the heartbeat is left to the next round.
    assert isinstance(completed, pb.RespondActivityTaskCompletedResponse)
    assert isinstance(heartbeat, RPCError) and heartbeat.status == grpc.StatusCode.UNAVAILABLE
    assert fake.streams == 2
    second = [message for number, message in fake.messages if number == 2]
    assert second[0].hello.namespace == "payments"
    # The waiting poller's credit is granted again: the server forgot the first stream's.
    assert [(c.task_queue, c.count) for c in second[0].credits] == [(QUEUE, 1)]
    assert [r.WhichOneof("report") for r in fake.reports()] == [
        "activity_task_completed",
        "activity_task_heartbeat",
        "activity_task_completed",
    ]
    fake.tasks = [_activity_task(b"after")]
    # The next message on the new stream lets the fake push against the re-granted credit.
    await stream.report("RespondActivityTaskCompleted", _completed(b"c"))
    assert (await asyncio.wait_for(poller, 10)).task_token == b"after"
    await stream.close()


async def test_a_stream_that_stops_answering_is_opened_again_and_the_report_fails_after_the_unary_deadlines(
    connect: Any,
) -> None:
    fake = ScriptedStream()
    fake.silent = True  # as over a connection that died without a reset
    retry = RPCRetryConfig(rpc_timeout=timedelta(milliseconds=200), maximum_elapsed=timedelta(seconds=1))
    stream = _open(await connect(fake, rpc_retry=retry))

    with pytest.raises(RPCError) as error:
        await asyncio.wait_for(stream.report("RespondActivityTaskCompleted", _completed(b"a")), 10)

    assert error.value.status == grpc.StatusCode.DEADLINE_EXCEEDED
    # Unanswered for longer than one call's deadline: a new stream, the report sent again on it.
    assert fake.streams >= 2
    assert len({number for number, message in fake.messages if message.reports}) >= 2
    await stream.close()


async def test_an_idle_stream_is_renewed_and_its_poller_keeps_its_credit(
    connect: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_stream, "_IDLE_RENEW_S", 0.2)
    fake = ScriptedStream()
    stream = _open(await connect(fake))
    poller = asyncio.create_task(stream.next_task(QUEUE, ACTIVITY))

    await wait_until(lambda: fake.streams >= 2, timeout=10, what="the idle stream to be renewed")
    fake.tasks = [_activity_task(b"after-renewal")]

    assert (await asyncio.wait_for(poller, 10)).task_token == b"after-renewal"
    first = [message for number, message in fake.messages if number == 1]
    # Renewed the polite way: the server confirmed stop_tasks before the new stream opened.
    assert [m.stop_tasks for m in first] == [False, True]
    assert all(m.hello.namespace == "payments" and m.credits for n, m in fake.messages if m.HasField("hello"))
    await stream.close()


async def test_an_idle_stream_whose_server_does_not_confirm_stop_tasks_is_replaced(
    connect: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_stream, "_IDLE_RENEW_S", 0.2)
    monkeypatch.setattr(_stream, "_STOP_TIMEOUT_S", 0.2)
    monkeypatch.setattr(_stream, "retry_delay", lambda failures: 0.01)
    fake = ScriptedStream()
    fake.silent = True  # as over a connection that died without a reset
    stream = _open(await connect(fake))
    poller = asyncio.create_task(stream.next_task(QUEUE, ACTIVITY))

    await wait_until(lambda: fake.streams >= 2, timeout=10, what="a new stream")

    assert any(message.stop_tasks for number, message in fake.messages if number == 1)
    poller.cancel()
    await stream.close()


async def test_stop_tasks_waits_for_the_server_and_gives_back_a_task_pushed_meanwhile(connect: Any) -> None:
    fake = ScriptedStream()
    fake.push_on_stop = _activity_task(b"late")
    stream = _open(await connect(fake))
    poller = asyncio.create_task(stream.next_task(QUEUE, ACTIVITY))
    await wait_until(lambda: fake.messages, timeout=10, what="the credit")

    await asyncio.wait_for(stream.stop_tasks(), 10)
    poller.cancel()
    await wait_until(
        lambda: any(message.returned_task_tokens for _, message in fake.messages),
        timeout=10,
        what="the late task to be given back",
    )
    await stream.close()

    assert [list(m.returned_task_tokens) for _, m in fake.messages if m.returned_task_tokens] == [[b"late"]]
    assert [m.stop_tasks for _, m in fake.messages].count(True) == 1
    assert fake.ended_by_worker == 1


async def test_a_server_without_the_stream_is_polled_with_unary_calls(connect: Any) -> None:
    client = await connect(WithoutStream())
    stream = _open(client)

    async def never_undecodable(task: Any, error: Any) -> None:
        raise AssertionError("nothing to fail")

    task = await asyncio.wait_for(
        poll_task(
            client.workflow_service,
            stream,
            "PollActivityTaskQueue",
            pb.PollActivityTaskQueueRequest(namespace="payments", task_queue=QUEUE),
            pb.PollActivityTaskQueueResponse,
            never_undecodable,
        ),
        10,
    )

    assert task.task_token == b"polled"
    assert not stream.supported
    await stream.close()


def test_the_tasks_a_folded_workflow_tasks_answer_hands_over_are_awaited_like_any_eager_task() -> None:
    # The flush lingers for the reports of tasks handed over moments ago: those a fold's
    # answer carries (its workflow task's eager activities, a next task) count too.
    folded = pb.RespondActivityTaskCompletedResponse(
        workflow_task_folded=True,
        folded_workflow_task_completed=pb.RespondWorkflowTaskCompletedResponse(
            activity_tasks=[pb.PollActivityTaskQueueResponse(task_token=b"a1")],
            workflow_task=pb.PollWorkflowTaskQueueResponse(task_token=b"w2"),
        ),
    )
    assert _stream._eager_tokens(folded) == [b"a1", b"w2"]
    ignored = pb.RespondActivityTaskCompletedResponse(workflow_task=pb.PollWorkflowTaskQueueResponse(task_token=b"w1"))
    assert _stream._eager_tokens(ignored) == [b"w1"]
