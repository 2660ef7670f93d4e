"""Two server replicas on one PostgreSQL database, driven through raw gRPC.

- Racing reports: the same activity completion sent to both replicas at once is
  recorded exactly once (fencing + row locks across processes' connections).
- Cross-replica wake-ups: a long-poll parked on replica A is answered promptly when
  replica B creates its task. The replicas re-check queues only every 30 s here, so
  a prompt answer can only come from LISTEN/NOTIFY.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import json
import time
from typing import AsyncIterator, Awaitable, Callable, TypeVar

import grpc
import pytest
from google.protobuf import duration_pb2

from flowforge.api.v1 import command_pb2, common_pb2, workflow_service_pb2 as pb, workflow_service_pb2_grpc
from flowforge.server import FlowForgeServer, ServerConfig
from flowforge.server.stores.base import Notifier

pytestmark = pytest.mark.postgres

NAMESPACE = "default"
ACTIVITIES = 50
# Generous bounds for 2 busy cores; the wake-up bound is half the default 1 s re-check.
DEADLINE_S = 20.0
WAKE_UP_BOUND_S = 0.5

_T = TypeVar("_T")


class ParkingNotifier(Notifier):
    """A Notifier that tells the test when a long-poll has parked to wait for a wake-up."""

    def __init__(self) -> None:
        super().__init__()
        self.parked = asyncio.Event()

    async def wait(self, event: asyncio.Event, timeout: float) -> bool:  # type: ignore[override]
        self.parked.set()
        return await Notifier.wait(event, timeout)


@dataclasses.dataclass
class Replica:
    server: FlowForgeServer
    channel: grpc.aio.Channel
    stub: workflow_service_pb2_grpc.WorkflowServiceStub
    notifier: ParkingNotifier


@pytest.fixture
async def replicas(postgres_dsn: str) -> AsyncIterator[tuple[Replica, Replica]]:
    started: list[Replica] = []
    try:
        for _ in range(2):
            server = FlowForgeServer(
                ServerConfig(store=postgres_dsn, port=0, poll_recheck_interval_s=30.0, shutdown_grace_s=1.0)
            )
            notifier = server.store.notifier = ParkingNotifier()
            await server.start()
            channel = grpc.aio.insecure_channel(f"127.0.0.1:{server.port}")
            started.append(Replica(server, channel, workflow_service_pb2_grpc.WorkflowServiceStub(channel), notifier))
        yield started[0], started[1]
    finally:
        for replica in started:
            await replica.channel.close()
            await replica.server.stop()


def seconds(value: float) -> duration_pb2.Duration:
    duration = duration_pb2.Duration()
    duration.FromMilliseconds(int(value * 1000))
    return duration


def payloads(value: object) -> common_pb2.Payloads:
    return common_pb2.Payloads(
        payloads=[common_pb2.Payload(metadata={"encoding": b"json/plain"}, data=json.dumps(value).encode())]
    )


def schedule_activity(activity_id: str) -> command_pb2.Command:
    return command_pb2.Command(
        schedule_activity_task=command_pb2.ScheduleActivityTaskCommandAttributes(
            activity_id=activity_id, activity_type="charge", input=payloads(activity_id),
            start_to_close_timeout=seconds(300),
        )
    )


async def start_workflow(replica: Replica, workflow_id: str, task_queue: str) -> str:
    response = await replica.stub.StartWorkflowExecution(
        pb.StartWorkflowExecutionRequest(
            namespace=NAMESPACE, workflow_id=workflow_id, workflow_type="Checkout", task_queue=task_queue,
            input=payloads({"order": workflow_id}), request_id=f"start-{workflow_id}",
        ),
        timeout=DEADLINE_S,
    )
    return response.run_id


def poll_workflow_task(replica: Replica, task_queue: str) -> Awaitable[pb.PollWorkflowTaskQueueResponse]:
    return replica.stub.PollWorkflowTaskQueue(
        pb.PollWorkflowTaskQueueRequest(namespace=NAMESPACE, task_queue=task_queue, poll_timeout=seconds(DEADLINE_S)),
        timeout=DEADLINE_S + 5,
    )


def poll_activity_task(replica: Replica, task_queue: str) -> Awaitable[pb.PollActivityTaskQueueResponse]:
    return replica.stub.PollActivityTaskQueue(
        pb.PollActivityTaskQueueRequest(namespace=NAMESPACE, task_queue=task_queue, poll_timeout=seconds(DEADLINE_S)),
        timeout=DEADLINE_S + 5,
    )


def complete_activity(replica: Replica, token: bytes, result: object) -> Awaitable[object]:
    return replica.stub.RespondActivityTaskCompleted(
        pb.RespondActivityTaskCompletedRequest(namespace=NAMESPACE, task_token=token, result=payloads(result)),
        timeout=DEADLINE_S,
    )


async def history(replica: Replica, run_id: str) -> list[common_pb2.HistoryEvent]:
    events: list[common_pb2.HistoryEvent] = []
    while True:
        page = await replica.stub.GetWorkflowExecutionHistory(
            pb.GetWorkflowExecutionHistoryRequest(
                namespace=NAMESPACE, execution=common_pb2.WorkflowExecution(run_id=run_id),
                after_event_id=events[-1].event_id if events else 0, maximum_page_size=1000,
            ),
            timeout=DEADLINE_S,
        )
        events.extend(page.events)
        if not page.has_more:
            return events


async def answered_promptly(
    replica: Replica, poll: Awaitable[_T], trigger: Callable[[], Awaitable[object]]
) -> tuple[_T, float]:
    """Parks ``poll`` on ``replica``, runs ``trigger`` (on the other replica) and
    returns the poll's answer and the seconds from the trigger to the answer."""
    replica.notifier.parked.clear()
    waiting = asyncio.ensure_future(poll)
    await asyncio.wait_for(replica.notifier.parked.wait(), DEADLINE_S)
    started = time.monotonic()
    await trigger()
    answer = await asyncio.wait_for(waiting, DEADLINE_S)
    return answer, time.monotonic() - started


async def test_racing_completions_on_two_replicas_record_one_outcome(replicas: tuple[Replica, Replica]) -> None:
    a, b = replicas
    run_id = await start_workflow(a, "race-1", "race")
    workflow_task = await poll_workflow_task(b, "race")
    await a.stub.RespondWorkflowTaskCompleted(
        pb.RespondWorkflowTaskCompletedRequest(
            namespace=NAMESPACE, task_token=workflow_task.task_token,
            commands=[schedule_activity(f"charge-{i}") for i in range(ACTIVITIES)],
        ),
        timeout=DEADLINE_S,
    )
    tokens = []
    for i in range(ACTIVITIES):
        task = await poll_activity_task((a, b)[i % 2], "race")
        assert task.task_token, "an activity task was not handed out"
        tokens.append(task.task_token)

    for i, token in enumerate(tokens):
        outcomes = await asyncio.gather(
            complete_activity(a, token, i), complete_activity(b, token, i), return_exceptions=True
        )
        codes = collections.Counter(
            outcome.code().name if isinstance(outcome, grpc.aio.AioRpcError) else "OK" for outcome in outcomes
        )
        assert codes == {"OK": 1, "FAILED_PRECONDITION": 1}, f"activity {i}: {outcomes}"

    events = await history(a, run_id)
    assert [e.event_id for e in events] == list(range(1, len(events) + 1)), "history has gaps or duplicates"
    scheduled = {e.event_id for e in events if e.event_type == "ActivityTaskScheduled"}
    completed = [json.loads(e.attributes_json)["scheduled_event_id"] for e in events if e.event_type == "ActivityTaskCompleted"]
    assert len(scheduled) == ACTIVITIES
    assert sorted(completed) == sorted(scheduled), "an activity completed twice or not at all"


async def test_poll_on_one_replica_is_woken_by_the_other(replicas: tuple[Replica, Replica]) -> None:
    a, b = replicas

    # A start on B creates the workflow task A's poll waits for.
    workflow_task, elapsed = await answered_promptly(
        a, poll_workflow_task(a, "wake"), lambda: start_workflow(b, "wake-1", "wake")
    )
    assert workflow_task.task_token and elapsed < WAKE_UP_BOUND_S, f"woken after {elapsed:.3f}s"

    # Completing the workflow task on B schedules the activity A's activity poll waits for.
    activity_task, elapsed = await answered_promptly(
        a, poll_activity_task(a, "wake"),
        lambda: b.stub.RespondWorkflowTaskCompleted(
            pb.RespondWorkflowTaskCompletedRequest(
                namespace=NAMESPACE, task_token=workflow_task.task_token, commands=[schedule_activity("ship")],
            ),
            timeout=DEADLINE_S,
        ),
    )
    assert activity_task.activity_id == "ship" and elapsed < WAKE_UP_BOUND_S, f"woken after {elapsed:.3f}s"

    # The activity's completion on B schedules the next workflow task.
    next_task, elapsed = await answered_promptly(
        a, poll_workflow_task(a, "wake"), lambda: complete_activity(b, activity_task.task_token, "shipped")
    )
    assert next_task.history[-1].event_type == "WorkflowTaskStarted" and elapsed < WAKE_UP_BOUND_S, (
        f"woken after {elapsed:.3f}s"
    )
