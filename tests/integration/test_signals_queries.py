"""Signals, queries, wait_condition and signal-with-start, end to end.

- A signal is a ``WorkflowExecutionSignaled`` event: appended with a new workflow task
  in one transaction (or buffered while a task runs), so one sent before any worker
  runs is not lost, and several arrive in the order they were sent.
- Handlers (sync or async) run on the workflow's deterministic loop in history order;
  ``workflow.wait_condition`` wakes on their effects; with a timeout it is a durable
  timer and raises ``asyncio.TimeoutError``.
- A query is answered by a worker (its cached instance, or a replay) and adds nothing
  to history; it works on closed runs; an unknown name is INVALID_ARGUMENT naming the
  known ones; no worker is DEADLINE_EXCEEDED.
- Signal-with-start starts a fresh id with the signal as its first event, and only
  signals a running one.
- Bad input gets a clear status and changes nothing.

Every test runs against SQLite and PostgreSQL.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from datetime import timedelta
from typing import Any

import grpc
import pytest

from flowforge import Client, WorkflowExecutionStatus, activity, workflow
from flowforge.api.v1 import common_pb2
from flowforge.api.v1 import workflow_service_pb2 as pb
from flowforge.converter import default_converter, json_dict_to_message
from flowforge.exceptions import ApplicationError, RPCError, WorkflowFailureError
from flowforge.server import EngineConfig, FlowForgeServer, ServerConfig
from flowforge.testing import Replayer
from tests.integration._processes import ServerProcess
from tests.integration._protocol import NS, Wire
from tests.integration._reliability import DEADLINE_S, assert_gapless, events, fast_worker, of_type
from testsupport.waiting import wait_until

QUEUE = "signals"

released = asyncio.Event()


@activity.defn
async def wait_for_release(step: str) -> str:
    """Runs until the test releases it: a long activity to query during."""
    await released.wait()
    return f"{step} done"


@workflow.defn
class Collector:
    """Collects signalled items until it has ``expected`` of them."""

    def __init__(self) -> None:
        self.items: list[str] = []
        self.stage = "collecting"

    @workflow.run
    async def run(self, expected: int) -> list[str]:
        await workflow.wait_condition(lambda: len(self.items) >= expected)
        self.stage = "working"
        await workflow.execute_activity(wait_for_release, "work", start_to_close_timeout=timedelta(seconds=60))
        self.stage = "done"
        return self.items

    @workflow.signal
    def add(self, item: str) -> None:
        self.items.append(item)

    @workflow.signal(name="add-later")
    async def add_later(self, item: str) -> None:
        # Handlers start in history order; what an async one does after an await
        # interleaves with the others, as with any asyncio tasks.
        self.items.append(item)
        await asyncio.sleep(0)

    @workflow.signal
    def reject(self, reason: str) -> None:
        raise ApplicationError(f"rejected: {reason}", type="Rejected", non_retryable=True)

    @workflow.query
    def progress(self) -> dict:
        return {"stage": self.stage, "items": list(self.items)}

    @workflow.query
    def item(self, index: int) -> str:
        return self.items[index]


@workflow.defn
class Deadline:
    """Waits for approval with a timeout: wait_condition(timeout=...) is a durable timer."""

    def __init__(self) -> None:
        self.approved_by = ""

    @workflow.run
    async def run(self, seconds: float) -> str:
        try:
            await workflow.wait_condition(lambda: bool(self.approved_by), timeout=timedelta(seconds=seconds))
        except TimeoutError:
            return "timed out"
        return f"approved by {self.approved_by}"

    @workflow.signal
    def approve(self, who: str) -> None:
        self.approved_by = who


def _worker(client: Client) -> object:
    return fast_worker(client, QUEUE, workflows=[Collector, Deadline], activities=[wait_for_release])


@pytest.fixture(autouse=True)
def _reset_release() -> None:
    released.clear()


def _signal_items(history: list) -> list[tuple[str, list]]:
    """(signal name, arguments) of each WorkflowExecutionSignaled event, in order."""
    return [
        (
            e.attributes["signal_name"],
            default_converter.from_payloads(json_dict_to_message(e.attributes["input"], common_pb2.Payloads)),
        )
        for e in of_type(history, "WorkflowExecutionSignaled")
    ]


async def test_signals_sent_before_any_worker_runs_are_kept_and_delivered_in_order(sdk_client: Client) -> None:
    handle = await sdk_client.start_workflow(Collector.run, 5, id="collect-early", task_queue=QUEUE)
    for signal, item in [
        (Collector.add, "a"),
        ("add-later", "b"),
        (Collector.add, "c"),
        (Collector.add_later, "d"),
        ("add", "e"),
    ]:
        await handle.signal(signal, item)
    # No worker yet: all five are in history already, in the order they were sent.
    history = await events(handle)
    assert [(name, args) for name, args in _signal_items(history)] == [
        ("add", ["a"]),
        ("add-later", ["b"]),
        ("add", ["c"]),
        ("add-later", ["d"]),
        ("add", ["e"]),
    ]
    assert len(of_type(history, "WorkflowTaskScheduled")) == 1  # one task for all of them

    released.set()
    async with _worker(sdk_client):
        assert await asyncio.wait_for(handle.result(), DEADLINE_S) == ["a", "b", "c", "d", "e"]
    history = await events(handle)
    assert_gapless(history)
    assert len(of_type(history, "WorkflowExecutionSignaled")) == 5
    # The recorded history replays deterministically.
    await Replayer(workflows=[Collector]).replay_workflow(await handle.fetch_history())


async def test_a_query_during_a_long_activity_returns_current_state_and_adds_no_event(sdk_client: Client) -> None:
    async with _worker(sdk_client):
        handle = await sdk_client.start_workflow(Collector.run, 2, id="collect-query", task_queue=QUEUE)
        assert await handle.query(Collector.progress) == {"stage": "collecting", "items": []}
        await handle.signal(Collector.add, "x")
        await wait_until(lambda: _items_are(handle, ["x"]), timeout=DEADLINE_S, what="the first signal to be handled")
        await handle.signal(Collector.add, "y")
        # The activity now runs until released; the workflow waits on it and its
        # history stays as it is until then.
        await wait_until(
            lambda: _has_event(handle, "ActivityTaskScheduled"),
            timeout=DEADLINE_S,
            what="the workflow to schedule its activity",
        )
        length_before = len(await events(handle))
        assert await handle.query(Collector.progress) == {"stage": "working", "items": ["x", "y"]}
        assert await handle.query(Collector.item, 1) == "y"
        assert await handle.query("item", args=[0]) == "x"
        assert len(await events(handle)) == length_before  # queries never touch history
        released.set()
        assert await asyncio.wait_for(handle.result(), DEADLINE_S) == ["x", "y"]

        # A closed run is answered by a replay of its history.
        assert await handle.query(Collector.progress) == {"stage": "done", "items": ["x", "y"]}
        assert (await handle.describe()).status == WorkflowExecutionStatus.COMPLETED


async def _items_are(handle, items: list[str]) -> bool:  # type: ignore[no-untyped-def]
    return (await handle.query(Collector.progress))["items"] == items


async def test_a_query_sees_a_signal_the_workflow_has_not_processed_yet(sdk_client: Client) -> None:
    handle = await sdk_client.start_workflow(Collector.run, 3, id="collect-pending", task_queue=QUEUE)
    await handle.signal(Collector.add, "p")
    # A worker that only answers queries would see the signal in a replay: the history
    # holds it, past the last workflow task, and the replay delivers it.
    async with _worker(sdk_client):
        await wait_until(lambda: _items_are(handle, ["p"]), timeout=DEADLINE_S, what="the signal to show")
        await handle.terminate("done with it")


async def test_query_errors_name_the_problem(sdk_client: Client) -> None:
    handle = await sdk_client.start_workflow(Collector.run, 1, id="collect-errors", task_queue=QUEUE)
    with pytest.raises(RPCError) as no_worker:
        await handle.query(Collector.progress, timeout=timedelta(seconds=1))
    assert no_worker.value.status == grpc.StatusCode.DEADLINE_EXCEEDED
    assert "no worker answered" in no_worker.value.message and QUEUE in no_worker.value.message

    async with _worker(sdk_client):
        with pytest.raises(RPCError) as unknown:
            await handle.query("nope")
        assert unknown.value.status == grpc.StatusCode.INVALID_ARGUMENT
        assert "'nope'" in unknown.value.message and "item, progress" in unknown.value.message
        with pytest.raises(RPCError) as failing:
            await handle.query(Collector.item, 7)  # IndexError in the handler
        assert failing.value.status == grpc.StatusCode.INVALID_ARGUMENT
        assert "IndexError" in failing.value.message
        with pytest.raises(RPCError) as missing:
            await sdk_client.get_workflow_handle("no-such-workflow").query(Collector.progress)
        assert missing.value.status == grpc.StatusCode.NOT_FOUND
        # The workflow is unharmed: it still answers.
        assert await handle.query(Collector.progress) == {"stage": "collecting", "items": []}
        await handle.terminate("done with it")


async def test_signal_with_start_starts_a_fresh_id_and_only_signals_a_running_one(sdk_client: Client) -> None:
    first = await sdk_client.start_workflow(
        Collector.run, 2, id="collect-sws", task_queue=QUEUE, start_signal=Collector.add, start_signal_args=["one"]
    )
    history = await events(first)
    assert [e.event_type for e in history] == [
        "WorkflowExecutionStarted",
        "WorkflowExecutionSignaled",
        "WorkflowTaskScheduled",
    ]
    second = await sdk_client.start_workflow(
        Collector.run, 99, id="collect-sws", task_queue=QUEUE, start_signal="add", start_signal_args=["two"]
    )
    assert second.run_id == first.run_id  # the running run was signalled, nothing started
    assert [args for _, args in _signal_items(await events(first))] == [["one"], ["two"]]
    released.set()
    async with _worker(sdk_client):
        assert await asyncio.wait_for(first.result(), DEADLINE_S) == ["one", "two"]
    # Closed now: signal-with-start starts a new run.
    third = await sdk_client.start_workflow(
        Collector.run, 1, id="collect-sws", task_queue=QUEUE, start_signal="add", start_signal_args=["three"]
    )
    assert third.run_id != first.run_id


async def test_wait_condition_resolves_on_a_signal_or_times_out_on_a_durable_timer(sdk_client: Client) -> None:
    async with _worker(sdk_client):
        approved = await sdk_client.start_workflow(Deadline.run, 60.0, id="deadline-approved", task_queue=QUEUE)
        await wait_until(
            lambda: _has_event(approved, "TimerStarted"), timeout=DEADLINE_S, what="the timeout timer to start"
        )
        await approved.signal(Deadline.approve, "ops")
        assert await asyncio.wait_for(approved.result(), DEADLINE_S) == "approved by ops"
        history = await events(approved)
        assert len(of_type(history, "TimerCanceled")) == 1 and not of_type(history, "TimerFired")

        expired = await sdk_client.start_workflow(Deadline.run, 0.5, id="deadline-expired", task_queue=QUEUE)
        assert await asyncio.wait_for(expired.result(), DEADLINE_S) == "timed out"
        history = await events(expired)
        assert [e.attributes["start_to_fire_timeout"] for e in of_type(history, "TimerStarted")] == [0.5]
        assert len(of_type(history, "TimerFired")) == 1
    for handle in (approved, expired):
        await Replayer(workflows=[Deadline]).replay_workflow(await handle.fetch_history())


async def _has_event(handle, event_type: str) -> bool:  # type: ignore[no-untyped-def]
    return bool(of_type(await events(handle), event_type))


async def test_unknown_signals_are_dropped_with_a_warning_and_a_failing_handler_fails_the_workflow(
    sdk_client: Client, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="flowforge.workflow")
    async with _worker(sdk_client):
        handle = await sdk_client.start_workflow(Collector.run, 1, id="collect-unknown", task_queue=QUEUE)
        await handle.signal("no-such-signal", "zzz")
        await handle.signal(Collector.add, args=["too", "many"])  # does not fit the handler
        await wait_until(
            lambda: any("no-such-signal" in r.getMessage() for r in caplog.records),
            timeout=DEADLINE_S,
            what="the warning about the unknown signal",
        )
        message = next(r.getMessage() for r in caplog.records if "no-such-signal" in r.getMessage())
        assert "no handler" in message and "add, add-later, reject" in message
        await wait_until(
            lambda: any("does not fit" in r.getMessage() for r in caplog.records),
            timeout=DEADLINE_S,
            what="the warning about the ill-fitting signal",
        )
        assert await handle.query(Collector.progress) == {"stage": "collecting", "items": []}

        await handle.signal(Collector.reject, "no budget")
        with pytest.raises(WorkflowFailureError) as failed:
            await asyncio.wait_for(handle.result(), DEADLINE_S)
        assert isinstance(failed.value.cause, ApplicationError)
        assert failed.value.cause.message == "rejected: no budget"


async def test_bad_signals_get_a_clear_status_and_change_nothing(sdk_client: Client, server: FlowForgeServer) -> None:
    wire = Wire(f"127.0.0.1:{server.port}")
    try:
        handle = await sdk_client.start_workflow(Collector.run, 1, id="collect-bad", task_queue=QUEUE)
        before = await wire.history("collect-bad")

        with pytest.raises(RPCError) as unknown:
            await sdk_client.get_workflow_handle("nobody").signal(Collector.add, "x")
        assert unknown.value.status == grpc.StatusCode.NOT_FOUND and "'nobody'" in unknown.value.message
        empty = pb.SignalWorkflowExecutionRequest(
            namespace=NS, execution=common_pb2.WorkflowExecution(workflow_id="collect-bad")
        )
        with pytest.raises(grpc.aio.AioRpcError) as no_name:
            await wire.stub.SignalWorkflowExecution(empty)
        assert no_name.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "signal_name" in no_name.value.details()
        big = common_pb2.Payloads(payloads=[common_pb2.Payload(data=b"x" * (3 * 1024 * 1024))])
        with pytest.raises(grpc.aio.AioRpcError) as oversize:
            await wire.stub.SignalWorkflowExecution(
                pb.SignalWorkflowExecutionRequest(
                    namespace=NS,
                    execution=common_pb2.WorkflowExecution(workflow_id="collect-bad"),
                    signal_name="add",
                    input=big,
                )
            )
        assert oversize.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "payload limit" in oversize.value.details()
        with pytest.raises(grpc.aio.AioRpcError) as bad_start:
            await wire.stub.StartWorkflowExecution(
                pb.StartWorkflowExecutionRequest(
                    namespace=NS,
                    workflow_id="collect-bad-2",
                    workflow_type="Collector",
                    task_queue=QUEUE,
                    start_signal_input=default_converter.to_payloads(["orphan"]),
                )
            )
        assert bad_start.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert await wire.history("collect-bad") == before

        # A retried signal (same request id) is recorded once.
        request_id = str(uuid.uuid4())
        for _ in range(2):
            await wire.stub.SignalWorkflowExecution(
                pb.SignalWorkflowExecutionRequest(
                    namespace=NS,
                    execution=common_pb2.WorkflowExecution(workflow_id="collect-bad"),
                    signal_name="add",
                    input=default_converter.to_payloads(["once"]),
                    request_id=request_id,
                )
            )
        assert len(of_type(await events(handle), "WorkflowExecutionSignaled")) == 1

        await handle.terminate("closing")
        closed = await wire.history("collect-bad")
        with pytest.raises(RPCError) as after_close:
            await handle.signal(Collector.add, "late")
        assert after_close.value.status == grpc.StatusCode.FAILED_PRECONDITION
        assert "TERMINATED" in after_close.value.message
        assert await wire.history("collect-bad") == closed
    finally:
        await wire.close()


async def test_a_signal_during_a_running_workflow_task_is_appended_after_it_closes(server: FlowForgeServer) -> None:
    wire = Wire(f"127.0.0.1:{server.port}")
    try:
        await wire.start("buffered", task_queue="raw")
        task = await wire.poll_workflow_task("raw")
        await wire.stub.SignalWorkflowExecution(
            pb.SignalWorkflowExecutionRequest(
                namespace=NS,
                execution=common_pb2.WorkflowExecution(workflow_id="buffered"),
                signal_name="go",
                input=default_converter.to_payloads(["now"]),
            )
        )
        # Nothing is written between WorkflowTaskStarted and the event that closes it.
        assert [t for _, t, _ in await wire.history("buffered")][-1] == "WorkflowTaskStarted"
        await wire.complete_workflow_task(task.task_token)
        history = await wire.history("buffered")
        assert [t for _, t, _ in history][-4:] == [
            "WorkflowTaskStarted",
            "WorkflowTaskCompleted",
            "WorkflowExecutionSignaled",
            "WorkflowTaskScheduled",
        ]
        assert history[-2][2]["signal_name"] == "go"
        # The next task brings the signal to the workflow.
        task = await wire.poll_workflow_task("raw")
        assert "WorkflowExecutionSignaled" in [e.event_type for e in task.history]
    finally:
        await wire.close()


async def test_signals_survive_a_server_kill_9(client: Client, server_process: ServerProcess) -> None:
    handle = await client.start_workflow(Collector.run, 4, id="collect-crash", task_queue=QUEUE)
    await handle.signal(Collector.add, "before-1")
    await handle.signal("add-later", "before-2")
    server_process.kill9()
    server_process.start()
    await handle.signal(Collector.add, "after-1")
    await handle.signal(Collector.add, "after-2")
    released.set()
    async with _worker(client):
        assert await asyncio.wait_for(handle.result(), DEADLINE_S) == ["before-1", "before-2", "after-1", "after-2"]
    history = await events(handle)
    assert_gapless(history)
    assert len(of_type(history, "WorkflowExecutionSignaled")) == 4


@pytest.mark.postgres
async def test_a_query_to_one_replica_is_answered_by_a_worker_polling_another(postgres_dsn: str) -> None:
    # Pollers re-check only every 30 s: the query and its answer must travel by NOTIFY.
    replicas = [
        FlowForgeServer(ServerConfig(store=postgres_dsn, port=0, poll_recheck_interval_s=30.0, shutdown_grace_s=1.0))
        for _ in range(2)
    ]
    clients: list[Client] = []
    try:
        for replica in replicas:
            await replica.start()
            clients.append(await Client.connect(f"127.0.0.1:{replica.port}"))
        polled, asked = clients
        async with _worker(polled):
            handle = await asked.start_workflow(Collector.run, 2, id="collect-replicas", task_queue=QUEUE)
            await handle.signal(Collector.add, "via-b")
            await wait_until(lambda: _items_are(handle, ["via-b"]), timeout=DEADLINE_S, what="the signal to show")
            started = time.monotonic()
            assert await handle.query(Collector.item, 0) == "via-b"
            # Well under the pollers' 30 s re-check: the wake-up came by NOTIFY.
            assert time.monotonic() - started < 15.0
            await handle.terminate("done with it")
    finally:
        for connection in clients:
            await connection.close()
        for replica in replicas:
            await replica.stop()


async def test_bad_queries_and_answers_get_a_clear_status(sdk_client: Client, server: FlowForgeServer) -> None:
    wire = Wire(f"127.0.0.1:{server.port}")
    try:
        await sdk_client.start_workflow(Collector.run, 1, id="collect-bad-query", task_queue=QUEUE)
        execution = common_pb2.WorkflowExecution(workflow_id="collect-bad-query")

        async def status_of(call: Any) -> tuple[grpc.StatusCode, str]:
            with pytest.raises(grpc.aio.AioRpcError) as error:
                await call
            return error.value.code(), error.value.details() or ""

        code, message = await status_of(
            wire.stub.QueryWorkflow(
                pb.QueryWorkflowRequest(namespace=NS, execution=execution, query=pb.WorkflowQuery())
            )
        )
        assert code == grpc.StatusCode.INVALID_ARGUMENT and "query.query_type" in message
        big = common_pb2.Payloads(payloads=[common_pb2.Payload(data=b"x" * (3 * 1024 * 1024))])
        code, message = await status_of(
            wire.stub.QueryWorkflow(
                pb.QueryWorkflowRequest(
                    namespace=NS, execution=execution, query=pb.WorkflowQuery(query_type="progress", query_args=big)
                )
            )
        )
        assert code == grpc.StatusCode.INVALID_ARGUMENT and "payload limit" in message
        code, message = await status_of(
            wire.stub.RespondQueryTaskCompleted(
                pb.RespondQueryTaskCompletedRequest(
                    namespace=NS,
                    task_token=b"forged",
                    completed_type=pb.QUERY_RESULT_TYPE_ANSWERED,
                )
            )
        )
        assert code == grpc.StatusCode.INVALID_ARGUMENT and "task token" in message
        code, message = await status_of(
            wire.stub.RespondQueryTaskCompleted(pb.RespondQueryTaskCompletedRequest(namespace=NS, task_token=b"forged"))
        )
        assert code == grpc.StatusCode.INVALID_ARGUMENT and "completed_type" in message

        # A workflow task token cannot answer a query, and a query token is answered once.
        workflow_task = await wire.poll_workflow_task(QUEUE)
        assert not workflow_task.HasField("query")
        asking = asyncio.ensure_future(sdk_client.get_workflow_handle("collect-bad-query").query("progress"))
        code, message = await status_of(
            wire.stub.RespondQueryTaskCompleted(
                pb.RespondQueryTaskCompletedRequest(
                    namespace=NS,
                    task_token=workflow_task.task_token,
                    completed_type=pb.QUERY_RESULT_TYPE_ANSWERED,
                )
            )
        )
        assert code == grpc.StatusCode.INVALID_ARGUMENT and "needs a query token" in message
        query_task = await wire.poll_workflow_task(QUEUE)
        assert query_task.query.query_type == "progress"
        answer = pb.RespondQueryTaskCompletedRequest(
            namespace=NS,
            task_token=query_task.task_token,
            completed_type=pb.QUERY_RESULT_TYPE_ANSWERED,
            query_result=default_converter.to_payloads(["by hand"]),
        )
        await wire.stub.RespondQueryTaskCompleted(answer)
        assert await asyncio.wait_for(asking, DEADLINE_S) == "by hand"
        code, _ = await status_of(wire.stub.RespondQueryTaskCompleted(answer))
        assert code == grpc.StatusCode.FAILED_PRECONDITION
        assert [t for _, t, _ in await wire.history("collect-bad-query")] == [
            "WorkflowExecutionStarted",
            "WorkflowTaskScheduled",
            "WorkflowTaskStarted",
        ]
    finally:
        await wire.close()


async def test_a_query_whose_worker_died_is_answered_by_another_after_the_query_lease(store_url: str) -> None:
    server = FlowForgeServer(
        ServerConfig(store=store_url, port=0, poll_recheck_interval_s=0.2, engine=EngineConfig(query_lease_s=1.0))
    )
    await server.start()
    client = await Client.connect(f"127.0.0.1:{server.port}")
    wire = Wire(f"127.0.0.1:{server.port}")
    try:
        handle = await client.start_workflow(Collector.run, 2, id="collect-lost-query", task_queue=QUEUE)
        async with _worker(client):
            await handle.signal(Collector.add, "kept")
            await wait_until(lambda: _items_are(handle, ["kept"]), timeout=DEADLINE_S, what="the signal to show")
        # No worker now, and no workflow task pending: a poll can only get the query.
        asking = asyncio.ensure_future(handle.query(Collector.progress))
        leased = await wire.poll_workflow_task(QUEUE)  # a "worker" that dies silently
        assert leased.query.query_type == "progress"
        started = time.monotonic()
        async with _worker(client):
            assert await asyncio.wait_for(asking, DEADLINE_S) == {"stage": "collecting", "items": ["kept"]}
            assert time.monotonic() - started >= 0.9  # only once the query lease ran out
            # The dead worker's late answer changes nothing.
            with pytest.raises(grpc.aio.AioRpcError) as late:
                await wire.stub.RespondQueryTaskCompleted(
                    pb.RespondQueryTaskCompletedRequest(
                        namespace=NS,
                        task_token=leased.task_token,
                        completed_type=pb.QUERY_RESULT_TYPE_ANSWERED,
                        query_result=default_converter.to_payloads(["stale"]),
                    )
                )
            assert late.value.code() == grpc.StatusCode.FAILED_PRECONDITION
            await handle.signal(Collector.add, "second")
            released.set()
            assert await asyncio.wait_for(handle.result(), DEADLINE_S) == ["kept", "second"]
    finally:
        await wire.close()
        await client.close()
        await server.stop()
