"""Two server replicas on one PostgreSQL database, driven through raw gRPC.

- Racing reports: the same activity completion sent to both replicas at once is
  recorded exactly once (fencing and row locks across the replicas' connections).
- Cross-replica wake-ups: a long-poll parked on replica A is answered promptly when
  replica B creates its task. The replicas re-check queues only every 30 s here, so
  a prompt answer can only come from LISTEN/NOTIFY.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TypeVar

import grpc
import pytest

from flowforge.server import FlowForgeServer, ServerConfig
from tests.integration._protocol import Wire, assert_gapless, schedule_activity
from testsupport.parking import ParkingNotifier

pytestmark = pytest.mark.postgres

ACTIVITIES = 50
DEADLINE_S = 20.0
# Half the default 1 s re-check; a NOTIFY round trip takes milliseconds.
WAKE_UP_BOUND_S = 0.5

_T = TypeVar("_T")


@dataclasses.dataclass
class Replica:
    server: FlowForgeServer
    wire: Wire
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
            started.append(Replica(server, Wire(f"127.0.0.1:{server.port}"), notifier))
        yield started[0], started[1]
    finally:
        for replica in started:
            await replica.wire.close()
            await replica.server.stop()


async def answered_promptly(
    replica: Replica, poll: Awaitable[_T], trigger: Callable[[], Awaitable[object]]
) -> tuple[_T, float]:
    """Parks ``poll`` on ``replica``, runs ``trigger`` (on the other replica) and
    returns the poll's answer and the seconds from the trigger to the answer."""
    replica.notifier.any_parked.clear()
    waiting = asyncio.ensure_future(poll)
    await asyncio.wait_for(replica.notifier.any_parked.wait(), DEADLINE_S)
    started = time.monotonic()
    await trigger()
    answer = await asyncio.wait_for(waiting, DEADLINE_S)
    return answer, time.monotonic() - started


async def test_racing_completions_on_two_replicas_record_one_outcome(replicas: tuple[Replica, Replica]) -> None:
    a, b = replicas
    await a.wire.start("race-1", "race")
    workflow_task = await b.wire.poll_workflow_task("race", timeout=DEADLINE_S)
    await a.wire.complete_workflow_task(
        workflow_task.task_token, *(schedule_activity(f"charge-{i}", start_to_close=300) for i in range(ACTIVITIES))
    )
    tokens = []
    for i in range(ACTIVITIES):
        task = await (a, b)[i % 2].wire.poll_activity_task("race", timeout=DEADLINE_S)
        assert task.task_token, "an activity task was not handed out"
        tokens.append(task.task_token)

    for i, token in enumerate(tokens):
        outcomes = await asyncio.gather(
            a.wire.complete_activity(token, i), b.wire.complete_activity(token, i), return_exceptions=True
        )
        codes = collections.Counter(
            outcome.code().name if isinstance(outcome, grpc.aio.AioRpcError) else "OK" for outcome in outcomes
        )
        assert codes == {"OK": 1, "FAILED_PRECONDITION": 1}, f"activity {i}: {outcomes}"

    history = await b.wire.history("race-1")
    assert_gapless(history)
    scheduled = [event_id for event_id, event_type, _ in history if event_type == "ActivityTaskScheduled"]
    completed = [
        attributes["scheduled_event_id"]
        for _, event_type, attributes in history
        if event_type == "ActivityTaskCompleted"
    ]
    assert len(scheduled) == ACTIVITIES
    assert sorted(completed) == scheduled, "an activity completed twice or not at all"


async def test_poll_on_one_replica_is_woken_by_the_other(replicas: tuple[Replica, Replica]) -> None:
    a, b = replicas

    # A start on B creates the workflow task A's poll waits for.
    workflow_task, elapsed = await answered_promptly(
        a, a.wire.poll_workflow_task("wake", timeout=DEADLINE_S), lambda: b.wire.start("wake-1", "wake")
    )
    assert workflow_task.task_token and elapsed < WAKE_UP_BOUND_S, f"woken after {elapsed:.3f}s"

    # Completing the workflow task on B schedules the activity A's activity poll waits for.
    activity_task, elapsed = await answered_promptly(
        a,
        a.wire.poll_activity_task("wake", timeout=DEADLINE_S),
        lambda: b.wire.complete_workflow_task(workflow_task.task_token, schedule_activity("ship")),
    )
    assert activity_task.activity_id == "ship" and elapsed < WAKE_UP_BOUND_S, f"woken after {elapsed:.3f}s"

    # The activity's completion on B schedules the next workflow task.
    next_task, elapsed = await answered_promptly(
        a,
        a.wire.poll_workflow_task("wake", timeout=DEADLINE_S),
        lambda: b.wire.complete_activity(activity_task.task_token, "shipped"),
    )
    assert next_task.history[-1].event_type == "WorkflowTaskStarted" and elapsed < WAKE_UP_BOUND_S, (
        f"woken after {elapsed:.3f}s"
    )
