"""The server's pushing on the worker stream (server/frontend/worker_stream.py) with its
leases scripted: credits granted while the feed's lease attempts end are still spent."""

from __future__ import annotations

import asyncio
import types

from flowforge.api.schema import TaskKind
from flowforge.api.v1 import workflow_service_pb2 as pb
from flowforge.server.frontend import worker_stream
from flowforge.server.metrics import ServerMetrics
from testsupport.waiting import wait_until

QUEUE = "q"


class _ScriptedLeases(worker_stream._WorkerStream):
    """A stream whose lease attempts wait until the test hands each one a task."""

    def __init__(self) -> None:
        engine: object = types.SimpleNamespace(metrics=ServerMetrics())
        super().__init__(engine, None, None)  # type: ignore[arg-type]
        self._namespace = "default"
        self.waiting: list[asyncio.Future[pb.PushedTask]] = []

    async def _lease(self, feed: worker_stream._Feed) -> pb.PushedTask | None:
        leased: asyncio.Future[pb.PushedTask] = asyncio.get_running_loop().create_future()
        self.waiting.append(leased)
        return await leased


def _credit(count: int) -> pb.TaskCredit:
    return pb.TaskCredit(task_queue=QUEUE, task_queue_type=pb.TASK_QUEUE_TYPE_ACTIVITY, count=count)


async def test_a_credit_granted_as_every_lease_attempt_ends_starts_a_new_one() -> None:
    stream = _ScriptedLeases()
    stream._grant([_credit(worker_stream.POLLS_PER_QUEUE)])
    await wait_until(
        lambda: len(stream.waiting) == worker_stream.POLLS_PER_QUEUE, timeout=5.0, what="the lease attempts"
    )
    for number, leased in enumerate(stream.waiting):
        leased.set_result(pb.PushedTask(task_queue=QUEUE, activity_task={"task_token": b"t%d" % number}))
    stream.waiting.clear()
    # One turn of the loop: every attempt takes its task and ends (no credit is left),
    # and the credit below arrives in the same turn, as a worker's next one may.
    await asyncio.sleep(0)
    stream._grant([_credit(1)])
    feed = stream._feeds[QUEUE, TaskKind.ACTIVITY]
    await wait_until(lambda: stream.waiting, timeout=5.0, what="a lease attempt for the new credit")
    assert (feed.credits, len(feed.polls)) == (0, 1)
    assert stream._outbox.qsize() == worker_stream.POLLS_PER_QUEUE
    await stream._stop_feeds()
