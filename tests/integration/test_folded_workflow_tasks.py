"""The folded workflow task, over the wire (no SDK), unary and on the worker stream.

A worker that completed an activity and holds the run cached sends, with the
completion, the workflow task that completion schedules, already run. The server
applies both in one transaction when the run is as the worker saw it: the history is
then exactly the one the unfolded path writes (same event ids, types and attributes;
WorkflowTaskStarted at the worker's started_time). Otherwise the fold is ignored (a
signal landed after the worker's last event, the run is paused, a workflow task is
already scheduled, started_time out of bounds): the completion is recorded as if no
task were folded, and the eager workflow task comes with the whole history. A fold
whose fields are malformed is refused INVALID_ARGUMENT naming the field, and nothing
is applied (the activity's lease still holds).
"""

from __future__ import annotations

import collections
import json
import random
import time
from typing import Any

import grpc
import pytest
from google.protobuf import timestamp_pb2

from flowforge.api.v1 import command_pb2, common_pb2
from flowforge.api.v1 import remediation_pb2 as remediation
from flowforge.api.v1 import workflow_service_pb2 as pb
from flowforge.converter import default_converter
from flowforge.server import FlowForgeServer, ServerConfig
from tests.integration._protocol import NS, Wire, assert_gapless, complete_workflow, schedule_activity
from tests.integration._stream_client import RawWorkerStream
from testsupport.counting import StoreCounters
from testsupport.fuzz_messages import random_message

Q = "q"


def _now_us() -> int:
    return time.time_ns() // 1000


def _stamp(us: int) -> timestamp_pb2.Timestamp:
    stamp = timestamp_pb2.Timestamp()
    stamp.FromMicroseconds(us)
    return stamp


def _folded_count(server: FlowForgeServer, outcome: str) -> float:
    value = server.engine.metrics.registry.get_sample_value(
        "flowforge_folded_workflow_tasks_total", {"namespace": NS, "outcome": outcome}
    )
    return value or 0.0


async def _history(wire: Wire, workflow_id: str) -> list[common_pb2.HistoryEvent]:
    response = await wire.stub.GetWorkflowExecutionHistory(
        pb.GetWorkflowExecutionHistoryRequest(
            namespace=NS, execution=common_pb2.WorkflowExecution(workflow_id=workflow_id)
        )
    )
    return list(response.events)


async def _started_with_activities(wire: Wire, workflow_id: str, *activity_ids: str) -> tuple[list[bytes], int]:
    """Starts a run whose first workflow task schedules ``activity_ids`` (leased at once):
    their tokens, and the run's last event, where a worker's cached instance stands."""
    await wire.start(workflow_id, task_queue=Q)
    task = await wire.poll_workflow_task(Q)
    response = await wire.stub.RespondWorkflowTaskCompleted(
        pb.RespondWorkflowTaskCompletedRequest(
            namespace=NS,
            task_token=task.task_token,
            commands=[schedule_activity(a) for a in activity_ids],
            identity="folder",
            eager_activity_slots=len(activity_ids),
            cached_event_id=task.history[-1].event_id,
        )
    )
    assert [t.activity_id for t in response.activity_tasks] == list(activity_ids)
    return [t.task_token for t in response.activity_tasks], response.appended_events[-1].event_id


def _fold(
    last_event_id: int, *commands: command_pb2.Command, started_us: int | None = None, **completion: Any
) -> pb.FoldedWorkflowTask:
    closes = any(c.HasField("complete_workflow_execution") for c in commands)
    completion.setdefault("cached_event_id", 0 if closes else last_event_id + 4)
    return pb.FoldedWorkflowTask(
        last_event_id=last_event_id,
        started_time=_stamp(_now_us() if started_us is None else started_us),
        completion=pb.RespondWorkflowTaskCompletedRequest(commands=list(commands), **completion),
    )


def _activity_completion(
    token: bytes, value: object, fold: pb.FoldedWorkflowTask | None, **extra: Any
) -> pb.RespondActivityTaskCompletedRequest:
    request = pb.RespondActivityTaskCompletedRequest(
        namespace=NS,
        task_token=token,
        result=default_converter.to_payloads([value]),
        identity="folder",
        eager_workflow_task_queue=Q,
        **extra,
    )
    if fold is not None:
        request.folded_workflow_task.CopyFrom(fold)
    return request


class _Unary:
    """Sends activity completions as RespondActivityTaskCompleted."""

    def __init__(self, wire: Wire) -> None:
        self.wire = wire

    async def complete(
        self, request: pb.RespondActivityTaskCompletedRequest
    ) -> pb.RespondActivityTaskCompletedResponse:
        return await self.wire.stub.RespondActivityTaskCompleted(request)

    async def close(self) -> None:
        pass


class _Stream:
    """Sends activity completions as worker stream reports (answer errors raised as RpcError-like)."""

    def __init__(self, wire: Wire) -> None:
        self.stream = RawWorkerStream(wire.channel)
        self.greeted = False

    async def complete(
        self, request: pb.RespondActivityTaskCompletedRequest
    ) -> pb.RespondActivityTaskCompletedResponse:
        if not self.greeted:
            await self.stream.hello(NS)
            self.greeted = True
        report = self.stream.report(activity_task_completed=request)
        await self.stream.send(reports=[report])
        result = (await self.stream.results(1))[report.id]
        if result.status_code:
            raise _Refused(grpc.StatusCode(_CODES[result.status_code]), result.status_message)
        return result.activity_task_completed

    async def close(self) -> None:
        self.stream.cancel()


_CODES = {code.value[0]: code.value for code in grpc.StatusCode}


class _Refused(Exception):
    def __init__(self, code: grpc.StatusCode, details: str) -> None:
        super().__init__(details)
        self.status, self.message = code, details


async def _refusal(call: Any) -> tuple[grpc.StatusCode, str]:
    """The status a completion was refused with, on either transport."""
    try:
        await call
    except grpc.aio.AioRpcError as error:
        return error.code(), error.details() or ""
    except _Refused as error:
        return error.status, error.message
    raise AssertionError("the completion was not refused")


@pytest.fixture(params=["unary", "stream"])
async def reporter(request: pytest.FixtureRequest, wire: Wire) -> Any:
    sender = _Unary(wire) if request.param == "unary" else _Stream(wire)
    yield sender
    await sender.close()


def _shape(history: list[common_pb2.HistoryEvent]) -> list[tuple[int, str, dict[str, Any]]]:
    """Each event's id, type and attributes, without what names the run."""
    shaped = []
    for event in history:
        attributes = json.loads(event.attributes_json)
        if event.event_type == "WorkflowExecutionStarted":
            attributes = {}
        shaped.append((event.event_id, event.event_type, attributes))
    return shaped


async def _unfolded_run(wire: Wire, workflow_id: str) -> list[common_pb2.HistoryEvent]:
    """The reference: a then b, each completion's workflow task handed back and completed apart."""
    (a,), _ = await _started_with_activities(wire, workflow_id, "a")
    task = (await wire.stub.RespondActivityTaskCompleted(_activity_completion(a, "A", None))).workflow_task
    response = await wire.stub.RespondWorkflowTaskCompleted(
        pb.RespondWorkflowTaskCompletedRequest(
            namespace=NS,
            task_token=task.task_token,
            commands=[schedule_activity("b")],
            identity="folder",
            eager_activity_slots=1,
        )
    )
    (b,) = response.activity_tasks
    task = (await wire.stub.RespondActivityTaskCompleted(_activity_completion(b.task_token, "B", None))).workflow_task
    await wire.stub.RespondWorkflowTaskCompleted(
        pb.RespondWorkflowTaskCompletedRequest(
            namespace=NS, task_token=task.task_token, commands=[complete_workflow("done")], identity="folder"
        )
    )
    return await _history(wire, workflow_id)


async def test_a_fold_writes_the_unfolded_history_and_closes_the_run(
    wire: Wire, reporter: Any, server: FlowForgeServer
) -> None:
    reference = await _unfolded_run(wire, "unfolded")
    applied_before = _folded_count(server, "applied")

    (a,), last = await _started_with_activities(wire, "folded", "a")
    started_us = _now_us()
    first = await reporter.complete(
        _activity_completion(a, "A", _fold(last, schedule_activity("b"), started_us=started_us, eager_activity_slots=1))
    )
    assert first.workflow_task_folded and not first.HasField("workflow_task")
    answer = first.folded_workflow_task_completed
    (b,) = answer.activity_tasks
    assert b.activity_id == "b"
    history = await _history(wire, "folded")
    # The fold's WorkflowTaskStarted is last + 4; what its completion appended follows it.
    assert list(answer.appended_events) == history[last + 4 :]
    assert [e.event_type for e in answer.appended_events] == ["WorkflowTaskCompleted", "ActivityTaskScheduled"]
    # The workflow time the code ran at is the task's, and the events the worker synthesized.
    for event in history[last + 1 : last + 4]:
        assert event.event_time.ToMicroseconds() == started_us, event.event_type

    last = answer.appended_events[-1].event_id
    second = await reporter.complete(_activity_completion(b.task_token, "B", _fold(last, complete_workflow("done"))))
    assert second.workflow_task_folded and not second.folded_workflow_task_completed.appended_events

    folded = await _history(wire, "folded")
    assert_gapless([(e.event_id, e.event_type, {}) for e in folded])
    assert _shape(folded) == _shape(reference)
    assert folded[-1].event_type == "WorkflowExecutionCompleted"
    assert (await wire.describe("folded")).status == common_pb2.WORKFLOW_EXECUTION_STATUS_COMPLETED
    assert _folded_count(server, "applied") == applied_before + 2


async def test_a_signal_after_the_workers_last_event_ignores_the_fold(
    wire: Wire, reporter: Any, server: FlowForgeServer
) -> None:
    (a,), last = await _started_with_activities(wire, "signaled", "a")
    await wire.stub.SignalWorkflowExecution(
        pb.SignalWorkflowExecutionRequest(
            namespace=NS, execution=common_pb2.WorkflowExecution(workflow_id="signaled"), signal_name="poke"
        )
    )
    response = await reporter.complete(_activity_completion(a, "A", _fold(last, complete_workflow("too early"))))
    assert not response.workflow_task_folded and not response.HasField("folded_workflow_task_completed")
    # The signal scheduled the workflow task: the completion only joins it, as if nothing was folded.
    assert not response.HasField("workflow_task")
    history = await _history(wire, "signaled")
    assert [e.event_type for e in history[last:]] == [
        "WorkflowExecutionSignaled",
        "WorkflowTaskScheduled",
        "ActivityTaskStarted",
        "ActivityTaskCompleted",
    ]
    assert _folded_count(server, "history_moved") == 1
    # The workflow task is the run's, whole history and all: completing it closes the run.
    task = await wire.poll_workflow_task(Q)
    assert [e.event_id for e in task.history] == list(range(1, len(task.history) + 1))
    await wire.complete_workflow_task(task.task_token, complete_workflow("seen"))
    assert (await _history(wire, "signaled"))[-1].event_type == "WorkflowExecutionCompleted"


async def test_an_ignored_fold_hands_out_its_workflow_task_with_the_whole_history(
    wire: Wire, reporter: Any, server: FlowForgeServer
) -> None:
    """The worker's instance ran past the history: it is spoiled, so the eager task
    comes from event 1, even when the request names a cache position."""
    (a,), last = await _started_with_activities(wire, "spoiled", "a")
    request = _activity_completion(a, "A", _fold(last - 1, complete_workflow("stale")))
    request.eager_workflow_task_cached_event_id = last - 1
    response = await reporter.complete(request)
    assert not response.workflow_task_folded
    task = response.workflow_task
    assert [e.event_id for e in task.history] == list(range(1, last + 5))
    assert task.history[-1].event_type == "WorkflowTaskStarted"
    assert _folded_count(server, "history_moved") == 1
    await wire.complete_workflow_task(task.task_token, complete_workflow("whole"))
    assert (await _history(wire, "spoiled"))[-1].event_type == "WorkflowExecutionCompleted"


async def test_a_paused_run_ignores_the_fold_and_holds_its_workflow_task(
    wire: Wire, reporter: Any, server: FlowForgeServer
) -> None:
    (a,), _ = await _started_with_activities(wire, "paused", "a")
    await wire.stub.PauseWorkflowExecution(
        remediation.PauseWorkflowExecutionRequest(
            namespace=NS, execution=common_pb2.WorkflowExecution(workflow_id="paused"), reason="look", identity="ops"
        )
    )
    last = (await _history(wire, "paused"))[-1].event_id  # the pause's event included: only the pause differs
    response = await reporter.complete(_activity_completion(a, "A", _fold(last, complete_workflow("no"))))
    assert not response.workflow_task_folded and not response.HasField("workflow_task")
    history = await _history(wire, "paused")
    assert [e.event_type for e in history[last:]] == [
        "ActivityTaskStarted",
        "ActivityTaskCompleted",
        "WorkflowTaskScheduled",
    ]
    assert _folded_count(server, "paused") == 1


async def test_a_terminated_run_refuses_the_completion_and_its_fold(wire: Wire, reporter: Any) -> None:
    (a,), last = await _started_with_activities(wire, "terminated", "a")
    await wire.stub.TerminateWorkflowExecution(
        pb.TerminateWorkflowExecutionRequest(
            namespace=NS, execution=common_pb2.WorkflowExecution(workflow_id="terminated"), reason="stop"
        )
    )
    before = await _history(wire, "terminated")
    code, _ = await _refusal(reporter.complete(_activity_completion(a, "A", _fold(last, complete_workflow("no")))))
    assert code == grpc.StatusCode.FAILED_PRECONDITION
    assert await _history(wire, "terminated") == before


@pytest.mark.parametrize(
    "when", ["in_the_future", "older_than_ten_seconds", "before_the_last_event"], ids=lambda when: when
)
async def test_a_started_time_out_of_bounds_ignores_the_fold(
    wire: Wire, reporter: Any, server: FlowForgeServer, when: str
) -> None:
    (a,), last = await _started_with_activities(wire, f"time-{when}", "a")
    last_event_us = (await _history(wire, f"time-{when}"))[-1].event_time.ToMicroseconds()
    started_us = {
        "in_the_future": _now_us() + 60_000_000,
        "older_than_ten_seconds": _now_us() - 11_000_000,
        "before_the_last_event": last_event_us - 1,
    }[when]
    response = await reporter.complete(
        _activity_completion(a, "A", _fold(last, complete_workflow("no"), started_us=started_us))
    )
    assert not response.workflow_task_folded
    assert response.workflow_task.history[-1].event_type == "WorkflowTaskStarted"
    assert response.workflow_task.history[0].event_id == 1
    history = await _history(wire, f"time-{when}")
    assert history[-1].event_type == "WorkflowTaskStarted"
    assert history[-1].event_time.ToMicroseconds() != started_us
    assert _folded_count(server, "started_time") == 1


async def test_a_workflow_task_already_scheduled_ignores_the_fold(
    wire: Wire, reporter: Any, server: FlowForgeServer
) -> None:
    (a, b), _ = await _started_with_activities(wire, "pending", "a", "b")
    await wire.complete_activity(a, "A")  # schedules the workflow task; nobody leased it
    last = (await _history(wire, "pending"))[-1].event_id
    response = await reporter.complete(_activity_completion(b, "B", _fold(last, complete_workflow("no"))))
    assert not response.workflow_task_folded and not response.HasField("workflow_task")
    assert [e.event_type for e in (await _history(wire, "pending"))[last:]] == [
        "ActivityTaskStarted",
        "ActivityTaskCompleted",
    ]
    assert _folded_count(server, "workflow_task_pending") == 1


async def test_a_fold_for_another_queue_is_ignored(wire: Wire, reporter: Any, server: FlowForgeServer) -> None:
    (a,), last = await _started_with_activities(wire, "other-queue", "a")
    request = _activity_completion(a, "A", _fold(last, complete_workflow("no")))
    request.eager_workflow_task_queue = "elsewhere"
    response = await reporter.complete(request)
    assert not response.workflow_task_folded and not response.HasField("workflow_task")
    assert _folded_count(server, "other_queue") == 1


def _malformed_cases() -> dict[str, tuple[Any, str]]:
    """How each case spoils a good fold, and what the refusal must name."""

    def bad_command(fold: pb.FoldedWorkflowTask) -> None:
        fold.completion.commands.add()  # a command without attributes

    return {
        "last_event_id_zero": (lambda f: setattr(f, "last_event_id", 0), "folded_workflow_task.last_event_id"),
        "last_event_id_negative": (lambda f: setattr(f, "last_event_id", -3), "folded_workflow_task.last_event_id"),
        "started_time_missing": (lambda f: f.ClearField("started_time"), "folded_workflow_task.started_time"),
        "started_time_nanos": (lambda f: setattr(f.started_time, "nanos", 1_000_000_000), "started_time"),
        "started_time_seconds": (lambda f: setattr(f.started_time, "seconds", 10**12), "started_time"),
        "started_time_finer_than_microseconds": (
            lambda f: setattr(f.started_time, "nanos", f.started_time.nanos + 1),
            "folded_workflow_task.started_time must be a whole number of microseconds",
        ),
        "task_token": (
            lambda f: setattr(f.completion, "task_token", b"forged"),
            "folded_workflow_task.completion.task_token",
        ),
        "namespace": (
            lambda f: setattr(f.completion, "namespace", "other"),
            "folded_workflow_task.completion.namespace",
        ),
        "identity": (lambda f: setattr(f.completion, "identity", "a\x00b"), "folded_workflow_task.completion.identity"),
        "eager_activity_slots": (
            lambda f: setattr(f.completion, "eager_activity_slots", -1),
            "folded_workflow_task.completion.eager_activity_slots",
        ),
        "cached_event_id": (
            lambda f: setattr(f.completion, "cached_event_id", -1),
            "folded_workflow_task.completion.cached_event_id",
        ),
        "command": (bad_command, "folded_workflow_task.completion: command 0"),
    }


async def test_each_malformed_field_is_refused_naming_it_and_nothing_is_applied(wire: Wire) -> None:
    (a,), last = await _started_with_activities(wire, "malformed", "a")
    before = await _history(wire, "malformed")
    for case, (spoil, named) in _malformed_cases().items():
        fold = _fold(last, complete_workflow("no"))
        spoil(fold)
        code, message = await _refusal(wire.stub.RespondActivityTaskCompleted(_activity_completion(a, "A", fold)))
        assert code == grpc.StatusCode.INVALID_ARGUMENT, (case, message)
        assert named in message, (case, message)
    assert await _history(wire, "malformed") == before
    # The lease still holds: a good fold applies.
    response = await wire.stub.RespondActivityTaskCompleted(
        _activity_completion(a, "A", _fold(last, complete_workflow("yes"), namespace=NS))
    )
    assert response.workflow_task_folded
    assert (await _history(wire, "malformed"))[-1].event_type == "WorkflowExecutionCompleted"


async def test_on_the_stream_a_malformed_fold_fails_only_its_report(wire: Wire) -> None:
    (a,), last = await _started_with_activities(wire, "malformed-stream", "a")
    sender = _Stream(wire)
    try:
        fold = _fold(last, complete_workflow("no"))
        fold.completion.task_token = b"forged"
        code, message = await _refusal(sender.complete(_activity_completion(a, "A", fold)))
        assert code == grpc.StatusCode.INVALID_ARGUMENT and "task_token" in message
        response = await sender.complete(_activity_completion(a, "A", _fold(last, complete_workflow("yes"))))
        assert response.workflow_task_folded
    finally:
        await sender.close()


async def test_a_fold_whose_commands_the_run_refuses_applies_nothing(wire: Wire, reporter: Any) -> None:
    """What RespondWorkflowTaskCompleted refuses once the run is loaded (an activity id
    still in use) refuses the whole report: the activity's completion is not recorded either."""
    (a, _), last = await _started_with_activities(wire, "refused", "a", "b")
    before = await _history(wire, "refused")
    fold = _fold(last, schedule_activity("b"))
    code, message = await _refusal(reporter.complete(_activity_completion(a, "A", fold)))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "'b' is already in use" in message
    assert await _history(wire, "refused") == before
    response = await reporter.complete(_activity_completion(a, "A", _fold(last, schedule_activity("c"))))
    assert response.workflow_task_folded


# Runs measured each way by the cost test below.
_COSTED_RUNS = 4
# The fold's share of what the unfolded path's two transactions cost (one-activity
# runs, the close included). Measured: SQLite 10 statements per folded activity
# against 17 (0.59); PostgreSQL 4 statements and 6 round trips against 8 and 12 (0.5:
# the time of the worker's last event comes from this server's memory of the workflow
# task completion that wrote it; 7 round trips with its read).
_FOLDED_SHARE_OF_STATEMENTS = 0.65
_FOLDED_SHARE_OF_ROUND_TRIPS = 0.55


async def test_a_folded_activity_costs_one_commit_where_the_unfolded_path_costs_two(
    wire: Wire, server: FlowForgeServer, store_kind: str
) -> None:
    """Counted exactly (testsupport/counting.py): an activity's completion with its
    workflow task folded in is one write transaction, against two for the completion
    and the workflow task's completion apart, with no read snapshot, and about half
    the statements (PostgreSQL: round trips) of the two together."""
    store = StoreCounters(server.store)
    unfolded: collections.Counter[str] = collections.Counter()
    folded: collections.Counter[str] = collections.Counter()
    for i in range(_COSTED_RUNS):
        (a,), _ = await _started_with_activities(wire, f"cost-unfolded-{i}", "a")
        store.reset()
        task = (await wire.stub.RespondActivityTaskCompleted(_activity_completion(a, "A", None))).workflow_task
        await wire.complete_workflow_task(task.task_token, complete_workflow("done"))
        unfolded.update(store.counts)

        (a,), last = await _started_with_activities(wire, f"cost-folded-{i}", "a")
        store.reset()
        response = await wire.stub.RespondActivityTaskCompleted(
            _activity_completion(a, "A", _fold(last, complete_workflow("done")))
        )
        assert response.workflow_task_folded
        folded.update(store.counts)
    summary = f"unfolded {dict(unfolded)}, folded {dict(folded)} for {_COSTED_RUNS} activities"
    assert unfolded["write_transactions"] == 2 * _COSTED_RUNS, summary
    assert folded["write_transactions"] == _COSTED_RUNS, summary
    assert folded["read_transactions"] == 0, summary
    assert folded["write_statements"] <= _FOLDED_SHARE_OF_STATEMENTS * unfolded["write_statements"], summary
    if store_kind == "postgresql":
        assert folded["write_round_trips"] <= _FOLDED_SHARE_OF_ROUND_TRIPS * unfolded["write_round_trips"], summary


_FUZZ_SEED = 20261202
_FUZZ_RUNS = 40
_FUZZ_HOSTILITY = 0.1


async def test_folds_with_random_completions_answer_clearly_and_keep_histories_gapless(wire: Wire) -> None:
    """Seeded: folds that would apply (the right last event, a good started_time) carry
    random completions (testsupport/fuzz_messages.py, mostly plausible values), so random
    commands reach the code that applies them in the activity's transaction. Each is
    answered OK (folded or not) or with a clear refusal, never INTERNAL or UNKNOWN, and
    every history stays gapless."""
    rng = random.Random(_FUZZ_SEED)
    outcomes: collections.Counter[str] = collections.Counter()
    for i in range(_FUZZ_RUNS):
        (a,), last = await _started_with_activities(wire, f"fuzz-{i}", "a")
        completion = random_message(pb.RespondWorkflowTaskCompletedRequest(), rng, _FUZZ_HOSTILITY)
        assert isinstance(completion, pb.RespondWorkflowTaskCompletedRequest)
        completion.task_token, completion.namespace = b"", ""  # else refused before anything else is looked at
        fold = pb.FoldedWorkflowTask(last_event_id=last, started_time=_stamp(_now_us()), completion=completion)
        try:
            response = await wire.stub.RespondActivityTaskCompleted(_activity_completion(a, "A", fold))
            outcomes["folded" if response.workflow_task_folded else "ignored"] += 1
        except grpc.aio.AioRpcError as error:
            assert error.code() not in (grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN), error.details()
            outcomes[error.code().name] += 1
        history = await _history(wire, f"fuzz-{i}")
        assert [e.event_id for e in history] == list(range(1, len(history) + 1))
    # Both the refusals and the applied folds were reached.
    assert outcomes["folded"] and outcomes["INVALID_ARGUMENT"], outcomes


async def test_a_server_that_did_not_write_the_last_event_reads_its_time(store_url: str) -> None:
    """The time of the worker's last event comes from the server's memory when that
    server committed it, and is read otherwise: here a server restarted between the
    workflow tasks that scheduled the activities and the folds still refuses a
    started_time before the last event, and applies a good one."""
    first = FlowForgeServer(ServerConfig(store=store_url, port=0))
    await first.start()
    wire = Wire(f"127.0.0.1:{first.port}")
    try:
        (early,), early_last = await _started_with_activities(wire, "restarted-early", "a")
        (good,), good_last = await _started_with_activities(wire, "restarted-good", "a")
    finally:
        await wire.close()
        await first.stop()
    second = FlowForgeServer(ServerConfig(store=store_url, port=0))
    await second.start()
    wire = Wire(f"127.0.0.1:{second.port}")
    try:
        last_event_us = (await _history(wire, "restarted-early"))[-1].event_time.ToMicroseconds()
        response = await wire.stub.RespondActivityTaskCompleted(
            _activity_completion(early, "A", _fold(early_last, complete_workflow("no"), started_us=last_event_us - 1))
        )
        assert not response.workflow_task_folded and _folded_count(second, "started_time") == 1
        response = await wire.stub.RespondActivityTaskCompleted(
            _activity_completion(good, "A", _fold(good_last, complete_workflow("yes")))
        )
        assert response.workflow_task_folded
        assert (await _history(wire, "restarted-good"))[-1].event_type == "WorkflowExecutionCompleted"
    finally:
        await wire.close()
        await second.stop()


async def test_on_the_stream_a_started_time_no_timestamp_holds_ends_the_stream_naming_it(wire: Wire) -> None:
    """An ill-formed value anywhere in a stream message ends the stream (the rule of
    every field, server/frontend/malformed.py); the activity's lease is untouched."""
    (a,), last = await _started_with_activities(wire, "ill-formed-stream", "a")
    stream = RawWorkerStream(wire.channel)
    try:
        await stream.hello(NS)
        fold = _fold(last, complete_workflow("no"))
        fold.started_time.nanos = -1
        await stream.send(reports=[stream.report(activity_task_completed=_activity_completion(a, "A", fold))])
        code, details = await stream.status()
        assert code == grpc.StatusCode.INVALID_ARGUMENT and "folded_workflow_task.started_time" in details, details
    finally:
        stream.cancel()
    response = await wire.stub.RespondActivityTaskCompleted(
        _activity_completion(a, "A", _fold(last, complete_workflow("yes")))
    )
    assert response.workflow_task_folded


async def test_parallel_activities_fold_one_after_the_other(wire: Wire, reporter: Any) -> None:
    """Three activities of one run, each completion folding the task it schedules from
    where the previous fold's answer left the instance (its appended_events): all apply,
    and the history is gapless with one workflow task per activity."""
    tokens, last = await _started_with_activities(wire, "parallel", "a", "b", "c")
    for index, token in enumerate(tokens):
        closes = index == len(tokens) - 1
        commands = [complete_workflow("all")] if closes else []
        response = await reporter.complete(_activity_completion(token, index, _fold(last, *commands)))
        assert response.workflow_task_folded, index
        appended = response.folded_workflow_task_completed.appended_events
        if not closes:
            assert [e.event_id for e in appended] == [last + 5], appended
            last = appended[-1].event_id
    history = await _history(wire, "parallel")
    assert [e.event_id for e in history] == list(range(1, len(history) + 1))
    types = [e.event_type for e in history]
    assert types.count("ActivityTaskCompleted") == 3 and types.count("WorkflowTaskCompleted") == 4
    assert types[-1] == "WorkflowExecutionCompleted"


async def test_a_fold_whose_completion_schedules_a_task_returns_it_with_the_tail(
    wire: Wire, reporter: Any, server: FlowForgeServer
) -> None:
    """return_new_workflow_task in a fold: cancelling an activity no worker started
    cancels it at once (its outcome schedules the next workflow task), which comes
    back leased with the history from the fold's WorkflowTaskStarted (the instance's
    cached_event_id) on: the fold's events are in the transaction's memory, no read."""
    await wire.start("returned", task_queue=Q)
    task = await wire.poll_workflow_task(Q)
    scheduled = await wire.stub.RespondWorkflowTaskCompleted(
        pb.RespondWorkflowTaskCompletedRequest(
            namespace=NS,
            task_token=task.task_token,
            commands=[schedule_activity("a"), schedule_activity("b", task_queue="elsewhere")],
            identity="folder",
            eager_activity_slots=2,
            cached_event_id=task.history[-1].event_id,
        )
    )
    (a,) = scheduled.activity_tasks  # b waits on its own queue
    last = scheduled.appended_events[-1].event_id
    cancel_b = command_pb2.Command(
        request_cancel_activity_task=command_pb2.RequestCancelActivityTaskCommandAttributes(activity_id="b")
    )
    store = StoreCounters(server.store)
    response = await reporter.complete(
        _activity_completion(a.task_token, "A", _fold(last, cancel_b, return_new_workflow_task=True))
    )
    assert response.workflow_task_folded
    # One commit, and no history read for the returned task (the timekeeper may look at its deadlines).
    assert store.counts["write_transactions"] == 1, dict(store.counts)
    assert all(reader.startswith("Timekeeper.") for reader in store.readers), dict(store.readers)
    answer = response.folded_workflow_task_completed
    returned = answer.workflow_task
    assert returned.task_token
    history = await _history(wire, "returned")
    assert list(returned.history) == history[last + 3 :]  # from the fold's WorkflowTaskStarted (last + 4) on
    assert [e.event_type for e in returned.history] == [
        "WorkflowTaskStarted",
        "WorkflowTaskCompleted",
        "ActivityTaskCancelRequested",
        "ActivityTaskCanceled",
        "WorkflowTaskScheduled",
        "WorkflowTaskStarted",
    ]
    assert list(answer.appended_events) == history[last + 4 :]
    await wire.complete_workflow_task(returned.task_token, complete_workflow("done"))
    assert (await _history(wire, "returned"))[-1].event_type == "WorkflowExecutionCompleted"
