"""Hostile input, class by class: each attack is refused with the right status or
contained, while another tenant's workflows on the same server keep finishing on time.

The arena: one server (each store in turn), the ``victim`` namespace with a worker on
task queue ``shared`` running :class:`VictimWorkflow` (a durable timer fires, an
activity's start-to-close timeout fires, an activity is delivered and completes), and
the ``attacker`` namespace, which uses the same queue name. During every attack the
victim starts workflows that must all finish within a generous deadline, and a cheap
RPC (describe namespace) must stay fast.

Attacks: quota floods (running executions, start rate); a run flooded with signals
and with history (per-execution limits); oversized and malformed
requests (payloads, payload metadata, an over-size gRPC message, deep JSON, a
regex-backtracking filter, an over-budget visibility query, non-finite and out-of-range
numbers, over-long reasons, bytes that do not parse, hostile workflow task commands);
a flood of parked polls; and poison items in the background loops (a timer, a run
timeout and an activity lease whose rows cannot be handled): each is held aside with a
reason, and the victim's timers and timeouts still fire.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import timedelta
from typing import Any

import grpc
import pytest

from flowforge import Client, RetryPolicy, activity, workflow
from flowforge.api.v1 import command_pb2, common_pb2, event_pb2
from flowforge.api.v1 import workflow_service_pb2 as pb
from flowforge.exceptions import ActivityError
from flowforge.server import FlowForgeServer, ServerConfig
from flowforge.server.history import EngineConfig
from flowforge.server.history.execution_limits import ExecutionLimits
from flowforge.server.stores.base import Transaction
from flowforge.worker import Worker
from tests.integration._protocol import Wire, schedule_activity, seconds, start_timer
from testsupport.waiting import wait_until

VICTIM = "victim"
ATTACKER = "attacker"
QUEUE = "shared"
VICTIMS = 4
# Generous on 2 shared cores: a victim run needs ~1 s of timers and timeouts.
VICTIM_DEADLINE_S = 60.0
CHEAP_RPC_S = 2.0
MAX_PAYLOAD_BYTES = 256 * 1024
MAX_PARKED_POLLS = 16
MAX_SIGNALS = 20
ATTACKER_MAX_RUNNING = 4
# The poison timer, run timeout and activity lease fall due this long after they are
# made: after their rows are corrupted, so it is the corrupt rows that are handled.
POISON_DUE_S = 3.0
MAX_HISTORY_EVENTS = 400


@activity.defn
async def echo(value: str) -> str:
    return value


@activity.defn
async def stalls(seconds: float) -> str:
    await asyncio.sleep(seconds)
    return "late"


@workflow.defn
class VictimWorkflow:
    """A timer fires, a start-to-close timeout fires, an activity is delivered."""

    @workflow.run
    async def run(self, name: str) -> dict[str, Any]:
        await workflow.sleep(0.2)
        timed_out = False
        try:
            await workflow.execute_activity(
                stalls,
                30.0,
                start_to_close_timeout=timedelta(seconds=0.5),
                retry_policy=RetryPolicy(maximum_attempts=1),
            )
        except ActivityError:
            timed_out = True
        echoed = await workflow.execute_activity(echo, name, start_to_close_timeout=timedelta(seconds=30))
        return {"timed_out": timed_out, "echoed": echoed}


@dataclasses.dataclass
class Arena:
    server: FlowForgeServer
    victim: Client
    wire: Wire

    async def victims_keep_finishing(self, attack: Callable[[], Awaitable[None]]) -> None:
        """Runs ``attack`` while victim workflows run; they must all finish correctly
        in time, and a cheap RPC must stay fast, whatever the attack does."""
        attacking = asyncio.create_task(attack())
        handles = [
            await self.victim.start_workflow(
                VictimWorkflow.run, f"v{index}", id=f"victim-{uuid.uuid4().hex[:8]}", task_queue=QUEUE
            )
            for index in range(VICTIMS)
        ]
        slowest = 0.0
        for _ in range(5):
            began = time.monotonic()
            await self.victim.describe_namespace(VICTIM)
            slowest = max(slowest, time.monotonic() - began)
        results = await asyncio.wait_for(asyncio.gather(*(h.result() for h in handles)), VICTIM_DEADLINE_S)
        assert results == [{"timed_out": True, "echoed": f"v{index}"} for index in range(VICTIMS)]
        assert slowest < CHEAP_RPC_S, f"describe namespace took {slowest:.2f}s during the attack"
        await asyncio.wait_for(attacking, VICTIM_DEADLINE_S)


@pytest.fixture
async def arena(store_url: str) -> AsyncIterator[Arena]:
    server = FlowForgeServer(
        ServerConfig(
            store=store_url,
            port=0,
            poll_recheck_interval_s=0.2,
            max_parked_polls=MAX_PARKED_POLLS,
            engine=EngineConfig(
                max_payload_bytes=MAX_PAYLOAD_BYTES,
                limits=ExecutionLimits(max_signals=MAX_SIGNALS, max_history_events=MAX_HISTORY_EVENTS),
            ),
        )
    )
    await server.start()
    address = f"127.0.0.1:{server.port}"
    wire = Wire(address)
    await wire.stub.RegisterNamespace(pb.RegisterNamespaceRequest(name=VICTIM))
    await wire.stub.RegisterNamespace(
        pb.RegisterNamespaceRequest(name=ATTACKER, max_running_executions=ATTACKER_MAX_RUNNING)
    )
    victim = await Client.connect(address, namespace=VICTIM)
    try:
        async with Worker(
            victim,
            task_queue=QUEUE,
            workflows=[VictimWorkflow],
            activities=[echo, stalls],
            graceful_shutdown_timeout=timedelta(seconds=1),
        ):
            yield Arena(server, victim, wire)
    finally:
        await victim.close()
        await wire.close()
        await server.stop()


async def _status(call: Awaitable[Any]) -> tuple[grpc.StatusCode, str]:
    try:
        await call
    except grpc.aio.AioRpcError as error:
        return error.code(), error.details() or ""
    return grpc.StatusCode.OK, ""


def _start(workflow_id: str, namespace: str = ATTACKER, **extra: Any) -> pb.StartWorkflowExecutionRequest:
    return pb.StartWorkflowExecutionRequest(
        namespace=namespace, workflow_id=workflow_id, workflow_type="attack", task_queue=QUEUE, **extra
    )


async def _attacker_workflow_task(wire: Wire, workflow_id: str, **extra: Any) -> tuple[str, bytes]:
    """Starts an attacker workflow and leases its first workflow task: (run id, token)."""
    run_id = (await wire.stub.StartWorkflowExecution(_start(workflow_id, **extra))).run_id
    task = await wire.stub.PollWorkflowTaskQueue(
        pb.PollWorkflowTaskQueueRequest(namespace=ATTACKER, task_queue=QUEUE, identity="a", poll_timeout=seconds(10))
    )
    assert task.task_token and task.workflow_execution.workflow_id == workflow_id
    return run_id, task.task_token


async def test_quota_floods_are_refused_at_admission(arena: Arena) -> None:
    wire = arena.wire
    await wire.stub.RegisterNamespace(pb.RegisterNamespaceRequest(name="bursty", start_rate=2))

    async def attack() -> None:
        outcomes = await asyncio.gather(
            *(_status(wire.stub.StartWorkflowExecution(_start(f"f{i}"))) for i in range(150))
        )
        codes = [code for code, _ in outcomes]
        assert codes.count(grpc.StatusCode.OK) == ATTACKER_MAX_RUNNING
        assert codes.count(grpc.StatusCode.RESOURCE_EXHAUSTED) == 150 - ATTACKER_MAX_RUNNING
        assert all("max_running_executions" in details for code, details in outcomes if code != grpc.StatusCode.OK)
        burst = await asyncio.gather(
            *(_status(wire.stub.StartWorkflowExecution(_start(f"b{i}", namespace="bursty"))) for i in range(20))
        )
        refused = [details for code, details in burst if code == grpc.StatusCode.RESOURCE_EXHAUSTED]
        assert len(refused) >= 15 and all("start_rate" in d and "retry in" in d for d in refused)

    await arena.victims_keep_finishing(attack)


async def test_oversized_and_malformed_requests_are_refused_clearly(arena: Arena) -> None:
    wire = arena.wire
    big = common_pb2.Payloads(payloads=[common_pb2.Payload(data=b"x" * (MAX_PAYLOAD_BYTES + 1))])
    heavy_metadata = common_pb2.Payloads(
        payloads=[common_pb2.Payload(data=b"1", metadata={"k": b"m" * (MAX_PAYLOAD_BYTES + 1)})]
    )
    huge_message = common_pb2.Payloads(payloads=[common_pb2.Payload(data=b"x" * (8 * MAX_PAYLOAD_BYTES))])
    deep_event = event_pb2.CloudEvent(id="e", source="s", type="t", data=b"[" * 50_000 + b"]" * 50_000)
    backtracking = "data.x == 1" + " " * 60_000 + "x"
    expensive = " OR ".join(["WorkflowType = 'x'"] * 200)
    overdue = pb.StartWorkflowExecutionRequest()
    overdue.CopyFrom(_start("overdue"))
    overdue.workflow_run_timeout.FromSeconds(100 * 365 * 86400)
    raw = wire.channel.unary_unary("/flowforge.api.v1.WorkflowService/StartWorkflowExecution")

    async def attack() -> None:
        invalid = [
            wire.stub.StartWorkflowExecution(_start("big", input=big)),
            wire.stub.StartWorkflowExecution(_start("meta", input=heavy_metadata)),
            wire.stub.StartWorkflowExecution(overdue),
            wire.stub.PublishEvent(event_pb2.PublishEventRequest(namespace=ATTACKER, event=deep_event)),
            wire.stub.CreateEventTrigger(
                event_pb2.CreateEventTriggerRequest(
                    namespace=ATTACKER,
                    trigger=event_pb2.EventTrigger(
                        trigger_id="t", event_type="t", workflow_type="w", task_queue=QUEUE, filter=[backtracking]
                    ),
                )
            ),
            wire.stub.CountWorkflowExecutions(pb.CountWorkflowExecutionsRequest(namespace=ATTACKER, query=expensive)),
            wire.stub.TerminateWorkflowExecution(
                pb.TerminateWorkflowExecutionRequest(
                    namespace=ATTACKER, execution=common_pb2.WorkflowExecution(workflow_id="x"), reason="r" * 10_000
                )
            ),
            raw(b"\x0a\xff\xff\xff\xff\x0f garbage"),
        ]
        for call in invalid:
            began = time.monotonic()
            code, details = await _status(call)
            assert code == grpc.StatusCode.INVALID_ARGUMENT, (code, details[:200])
            assert time.monotonic() - began < 5.0, details[:200]
        code, _ = await _status(wire.stub.StartWorkflowExecution(_start("huge", input=huge_message)))
        assert code == grpc.StatusCode.RESOURCE_EXHAUSTED  # gRPC's limit, before the request is read
        _, token = await _attacker_workflow_task(wire, "commands")
        shrinking = common_pb2.RetryPolicy(backoff_coefficient=0.5)
        for commands in (
            [schedule_activity("a", retry=shrinking)],
            [start_timer(f"t{i}", 1) for i in range(1001)],
            [schedule_activity("a", retry=common_pb2.RetryPolicy(backoff_coefficient=float("nan")))],
        ):
            code, details = await _status(
                wire.stub.RespondWorkflowTaskCompleted(
                    pb.RespondWorkflowTaskCompletedRequest(namespace=ATTACKER, task_token=token, commands=commands)
                )
            )
            assert code == grpc.StatusCode.INVALID_ARGUMENT, details

    await arena.victims_keep_finishing(attack)


async def test_one_execution_cannot_grow_without_bound(arena: Arena) -> None:
    wire = arena.wire

    async def attack() -> None:
        _, token = await _attacker_workflow_task(wire, "markers")
        markers = [
            command_pb2.Command(record_marker=command_pb2.RecordMarkerCommandAttributes(marker_name=f"m{i}"))
            for i in range(MAX_HISTORY_EVENTS)
        ]
        await wire.stub.RespondWorkflowTaskCompleted(
            pb.RespondWorkflowTaskCompletedRequest(namespace=ATTACKER, task_token=token, commands=markers)
        )
        described = await wire.stub.DescribeWorkflowExecution(
            pb.DescribeWorkflowExecutionRequest(
                namespace=ATTACKER, execution=common_pb2.WorkflowExecution(workflow_id="markers")
            )
        )
        assert described.status == common_pb2.WORKFLOW_EXECUTION_STATUS_TERMINATED
        _, token = await _attacker_workflow_task(wire, "signalled")
        await wire.stub.RespondWorkflowTaskCompleted(
            pb.RespondWorkflowTaskCompletedRequest(namespace=ATTACKER, task_token=token)
        )
        signal = pb.SignalWorkflowExecutionRequest(
            namespace=ATTACKER, execution=common_pb2.WorkflowExecution(workflow_id="signalled"), signal_name="s"
        )
        codes = [(await _status(wire.stub.SignalWorkflowExecution(signal)))[0] for _ in range(MAX_SIGNALS + 10)]
        assert codes.count(grpc.StatusCode.OK) == MAX_SIGNALS
        assert set(codes[MAX_SIGNALS:]) == {grpc.StatusCode.RESOURCE_EXHAUSTED}

    await arena.victims_keep_finishing(attack)


async def test_a_flood_of_parked_polls_is_capped(arena: Arena) -> None:
    wire = arena.wire

    async def attack() -> None:
        polls = [
            _status(
                wire.stub.PollActivityTaskQueue(
                    pb.PollActivityTaskQueueRequest(
                        namespace=ATTACKER, task_queue=QUEUE, identity=f"p{i}", poll_timeout=seconds(2)
                    )
                )
            )
            for i in range(MAX_PARKED_POLLS + 8)
        ]
        outcomes = await asyncio.gather(*polls)
        refused = [d for code, d in outcomes if code == grpc.StatusCode.RESOURCE_EXHAUSTED]
        assert len(refused) >= 8 and all("polls already wait" in d for d in refused)
        assert all(code in (grpc.StatusCode.OK, grpc.StatusCode.RESOURCE_EXHAUSTED) for code, _ in outcomes)

    await arena.victims_keep_finishing(attack)


async def test_poison_items_are_held_aside_and_do_not_stall_the_timekeeper(arena: Arena) -> None:
    wire = arena.wire
    timekeeper = arena.server.timekeeper
    # A timer whose run cannot be loaded, a run timeout likewise, an activity lease whose options are garbage.
    timer_run, token = await _attacker_workflow_task(wire, "poison-timer")
    await wire.stub.RespondWorkflowTaskCompleted(
        pb.RespondWorkflowTaskCompletedRequest(
            namespace=ATTACKER, task_token=token, commands=[start_timer("t", POISON_DUE_S)]
        )
    )
    timeout_run, token = await _attacker_workflow_task(
        wire, "poison-timeout", workflow_run_timeout=seconds(POISON_DUE_S)
    )
    await wire.stub.RespondWorkflowTaskCompleted(
        pb.RespondWorkflowTaskCompletedRequest(namespace=ATTACKER, task_token=token)
    )
    activity_run, token = await _attacker_workflow_task(wire, "poison-activity")
    await wire.stub.RespondWorkflowTaskCompleted(
        pb.RespondWorkflowTaskCompletedRequest(
            namespace=ATTACKER,
            task_token=token,
            commands=[
                schedule_activity("a", start_to_close=POISON_DUE_S, retry=common_pb2.RetryPolicy(maximum_attempts=1))
            ],
        )
    )
    # And on a queue of its own, a pending activity task whose row is garbage, ahead of a good one.
    queue_run, token = await _attacker_workflow_task(wire, "poison-queue")
    await wire.stub.RespondWorkflowTaskCompleted(
        pb.RespondWorkflowTaskCompletedRequest(
            namespace=ATTACKER,
            task_token=token,
            commands=[schedule_activity(name, task_queue="poisoned") for name in ("bad", "good")],
        )
    )
    leased = await wire.stub.PollActivityTaskQueue(
        pb.PollActivityTaskQueueRequest(namespace=ATTACKER, task_queue=QUEUE, identity="a", poll_timeout=seconds(10))
    )
    assert leased.task_token

    async def corrupt(tx: Transaction) -> None:
        for run_id in (timer_run, timeout_run):
            row = await tx.get_execution(ATTACKER, run_id)
            assert row is not None
            row.buffered_events = "{this is not JSON"
            await tx.update_execution(row, row.version)
        for run_id, activity_id in ((activity_run, "a"), (queue_run, "bad")):
            (task,) = await tx.get_activity_tasks(run_id, [activity_id])
            task.options = "{this is not JSON"
            await tx.update_task(task)

    # Retried on a concurrency conflict (the engine may write one of these runs meanwhile).
    await arena.server.engine.transaction(corrupt)

    async def attack() -> None:
        # The poll is not failed by the garbage task for good: it is set aside, the good one delivered.
        delivered = await wire.stub.PollActivityTaskQueue(
            pb.PollActivityTaskQueueRequest(
                namespace=ATTACKER, task_queue="poisoned", identity="a", poll_timeout=seconds(10)
            )
        )
        assert delivered.activity_id == "good"
        (held,) = arena.server.matching.held.held()
        assert "JSON" in held.reason or "Expecting" in held.reason, held.reason
        await wait_until(
            lambda: timekeeper.timers_held and timekeeper.runs_held and timekeeper.tasks_held,
            timeout=VICTIM_DEADLINE_S,
            what="the poison timer, run timeout and activity lease to be held aside",
        )

    await arena.victims_keep_finishing(attack)
    for quarantine in (timekeeper.timers_held, timekeeper.runs_held, timekeeper.tasks_held):
        (held,) = quarantine.held()
        assert "JSON" in held.reason or "Expecting" in held.reason, held.reason
    metrics = arena.server.engine.metrics.registry
    for loop in ("timekeeper: timer", "timekeeper: run timeout", "timekeeper: expired task", "matching: task"):
        assert metrics.get_sample_value("flowforge_held_items", {"loop": loop}) == 1, loop
    assert timer_run in str(timekeeper.timers_held.held()[0].item)
    assert timeout_run in str(timekeeper.runs_held.held()[0].item)
