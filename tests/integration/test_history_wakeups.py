"""A parked history long-poll is woken by every kind of change, on both stores.

The history wait has no periodic re-check (an open console page must cost the store
nothing while its execution does not change), so a change that forgot to notify the
run's channel would leave the wait parked until its deadline. Each test parks a wait
with a deadline far past the test's own, makes one kind of change, and needs the wait
answered with that change's event. Then: a wait that ended empty parks again without a
read; a wait on one PostgreSQL replica is woken by a change through the other; and a
replaced LISTEN connection wakes every waiter, since notifications may have been lost.
"""

from __future__ import annotations

import asyncio
import collections
import inspect
import urllib.parse
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import timedelta

import pytest

from flowforge import Client, activity, workflow
from flowforge.api.v1 import common_pb2
from flowforge.api.v1 import workflow_service_pb2 as pb
from flowforge.client import WorkflowHandle
from flowforge.server import FlowForgeServer, ServerConfig
from flowforge.server.clock import SkippingClock
from flowforge.server.stores.postgres import PostgresStore
from tests.integration._reliability import DEADLINE_S, events, fast_worker
from testsupport.counting import StoreCounters
from testsupport.parking import ParkingNotifier, history_long_poll
from testsupport.postgres import with_address
from testsupport.tcp_proxy import TcpProxy
from testsupport.waiting import wait_until

QUEUE = "wakeups"
# Far past DEADLINE_S: a wait answered within the test's deadline was woken, not timed out.
PARKED_S = 300.0
# The "timer" command's timer: an hour, so it fires only when the test moves the clock.
TIMER_S = 3600.0
RELEASE: dict[str, asyncio.Event] = collections.defaultdict(asyncio.Event)


@activity.defn
async def held(key: str) -> str:
    """Runs until the test releases it."""
    await asyncio.wait_for(RELEASE[key].wait(), DEADLINE_S)
    return key


@workflow.defn
class Driven:
    """Does what each ``do`` signal says, one command at a time."""

    def __init__(self) -> None:
        self.commands: list[str] = []

    @workflow.signal
    def do(self, command: str) -> None:
        self.commands.append(command)

    @workflow.run
    async def run(self, key: str) -> str:
        while True:
            await workflow.wait_condition(lambda: bool(self.commands))
            command = self.commands.pop(0)
            if command == "timer":
                await workflow.sleep(TIMER_S)
            elif command == "activity":
                await workflow.execute_activity(held, key, start_to_close_timeout=timedelta(seconds=30))
            elif command == "continue":
                workflow.continue_as_new(key)
            elif command == "finish":
                return "finished"


def parking_server(store_url: str) -> FlowForgeServer:
    # A clock the timer test moves past its timer (otherwise it follows the wall clock).
    clock = SkippingClock()
    server = FlowForgeServer(ServerConfig(store=store_url, port=0, poll_recheck_interval_s=0.2, clock=clock))
    server.store.notifier = ParkingNotifier()
    return server


@pytest.fixture
async def server(store_url: str) -> AsyncIterator[FlowForgeServer]:
    instance = parking_server(store_url)
    await instance.start()
    yield instance
    await instance.stop()


@pytest.fixture
async def client(server: FlowForgeServer) -> AsyncIterator[Client]:
    connection = await Client.connect(f"127.0.0.1:{server.port}")
    async with fast_worker(connection, QUEUE, workflows=[Driven], activities=[held]):
        yield connection
    await connection.close()


def history_wait(
    client: Client, workflow_id: str, run_id: str, after_event_id: int, *, close_only: bool
) -> Awaitable[pb.GetWorkflowExecutionHistoryResponse]:
    request = pb.GetWorkflowExecutionHistoryRequest(
        namespace="default",
        execution=common_pb2.WorkflowExecution(workflow_id=workflow_id, run_id=run_id),
        after_event_id=after_event_id,
        wait_new_event=True,
        close_event_only=close_only,
    )
    request.wait_timeout.FromSeconds(int(PARKED_S))
    return client.workflow_service.call(
        "GetWorkflowExecutionHistory", request, retry=False, timeout=timedelta(seconds=PARKED_S + 10)
    )


async def woken_by(
    server: FlowForgeServer,
    client: Client,
    handle: WorkflowHandle[Driven, str],
    change: Callable[[], object],
    *,
    close_only: bool = False,
) -> list[str]:
    """Parks a history wait on the run after its last event, makes ``change`` once the
    wait is parked, and returns the event types that woke it."""
    notifier = server.store.notifier
    assert isinstance(notifier, ParkingNotifier)
    run_id = (await handle.describe()).run_id
    last = (await events(handle))[-1].event_id
    channel = f"{'c' if close_only else 'r'}:{run_id}"
    notifier.parked[channel].clear()
    waiting = asyncio.ensure_future(history_wait(client, handle.id, run_id, last, close_only=close_only))
    try:
        await asyncio.wait_for(notifier.parked[channel].wait(), DEADLINE_S)
        changed = change()
        if inspect.isawaitable(changed):
            await changed
        answer = await asyncio.wait_for(waiting, DEADLINE_S)
    finally:
        waiting.cancel()
    return [e.event_type for e in answer.events]


async def settled(handle: WorkflowHandle[Driven, str], last_type: str) -> bool:
    """Whether the run's history ends with ``last_type`` (it waits for nothing else)."""
    history = await events(handle)
    return history[-1].event_type == last_type


async def started(client: Client, command: str = "", wait_for: str = "WorkflowTaskCompleted") -> WorkflowHandle:
    """A Driven run that took ``command`` (if any) and is idle, its history ending with ``wait_for``."""
    workflow_id = f"w-{uuid.uuid4().hex}"
    handle = await client.start_workflow(Driven.run, workflow_id, id=workflow_id, task_queue=QUEUE)
    if command:
        await handle.signal(Driven.do, command)
    await wait_until(lambda: settled(handle, wait_for), timeout=DEADLINE_S, what=f"the run to reach {wait_for}")
    return handle


# ------------------------------------------------------------------ one test per kind of change


async def test_a_signal_wakes_the_wait(server: FlowForgeServer, client: Client) -> None:
    handle = await started(client)
    woke = await woken_by(server, client, handle, lambda: handle.signal(Driven.do, "nothing"))
    assert woke[0] == "WorkflowExecutionSignaled"


async def test_a_fired_timer_wakes_the_wait(server: FlowForgeServer, client: Client) -> None:
    handle = await started(client, "timer", wait_for="TimerStarted")
    clock = server.config.clock
    assert isinstance(clock, SkippingClock)
    # The timer fires when the clock is moved past it, once the wait is parked: a timer
    # left to fire by itself (it was 1 s) could fire before, on a loaded machine.
    woke = await woken_by(server, client, handle, lambda: clock.skip_to(clock.now_us() + int((TIMER_S + 1) * 1e6)))
    assert woke[0] == "TimerFired"


async def test_an_activity_outcome_wakes_the_wait(server: FlowForgeServer, client: Client) -> None:
    handle = await started(client, "activity", wait_for="ActivityTaskScheduled")
    woke = await woken_by(server, client, handle, RELEASE[handle.id].set)
    assert "ActivityTaskCompleted" in woke


async def test_a_cancel_request_wakes_the_wait(server: FlowForgeServer, client: Client) -> None:
    handle = await started(client)
    woke = await woken_by(server, client, handle, handle.cancel)
    assert woke[0] == "WorkflowExecutionCancelRequested"


async def test_a_pause_wakes_the_wait(server: FlowForgeServer, client: Client) -> None:
    handle = await started(client)
    woke = await woken_by(server, client, handle, lambda: client.pause_workflow(handle.id, reason="wake-up test"))
    assert woke == ["WorkflowExecutionPaused"]


@pytest.mark.parametrize("close_only", [False, True], ids=["history", "close-only"])
async def test_terminate_wakes_the_wait(server: FlowForgeServer, client: Client, close_only: bool) -> None:
    handle = await started(client)
    woke = await woken_by(server, client, handle, handle.terminate, close_only=close_only)
    assert woke == ["WorkflowExecutionTerminated"]


async def test_completion_wakes_a_close_only_wait(server: FlowForgeServer, client: Client) -> None:
    handle = await started(client)
    woke = await woken_by(server, client, handle, lambda: handle.signal(Driven.do, "finish"), close_only=True)
    assert woke == ["WorkflowExecutionCompleted"]


async def test_continue_as_new_wakes_a_close_only_wait(server: FlowForgeServer, client: Client) -> None:
    handle = await started(client)
    woke = await woken_by(server, client, handle, lambda: handle.signal(Driven.do, "continue"), close_only=True)
    assert woke == ["WorkflowExecutionContinuedAsNew"]


async def test_a_reset_wakes_the_wait_on_the_old_run(server: FlowForgeServer, client: Client) -> None:
    handle = await started(client)

    async def reset() -> None:
        await client.reset_workflow(handle.id, reason="wake-up test", reset_type="last")

    woke = await woken_by(server, client, handle, reset, close_only=True)
    assert woke == ["WorkflowExecutionTerminated"]


async def test_a_batch_terminate_wakes_the_wait(server: FlowForgeServer, client: Client) -> None:
    handle = await started(client)

    async def batch() -> None:
        await client.start_batch_operation("terminate", query=f"WorkflowId = '{handle.id}'", reason="wake-up test")

    woke = await woken_by(server, client, handle, batch, close_only=True)
    assert woke == ["WorkflowExecutionTerminated"]


# ------------------------------------------------------------------ an idle wait costs no reads


async def test_a_wait_on_an_unchanged_run_reads_nothing_until_a_change(server: FlowForgeServer, client: Client) -> None:
    """Back-to-back waits on a run that does not change (a console page following it)
    read the store once, for the first; a change ends that, and costs one read."""
    handle = await started(client)
    run_id = (await handle.describe()).run_id
    last = (await events(handle))[-1].event_id
    counters = StoreCounters(server.store)
    first = await history_long_poll(client, handle.id, run_id, last, seconds=1)
    assert not first.events
    assert counters.readers["Executions.get_history"] == 2  # resolve the run, then read it
    counters.reset()
    # The window: three more waits of 1 s each, answered empty by their own deadline.
    for _ in range(3):
        assert not (await history_long_poll(client, handle.id, run_id, last, seconds=1)).events
    assert counters.readers["Executions.get_history"] == 0, counters.readers
    # What did read meanwhile are the server's own loops (matching, timers, scheduler, batches).
    assert not [reader for reader in counters.readers if reader.startswith("Executions.")], counters.readers
    await handle.signal(Driven.do, "nothing")
    counters.reset()
    woke = await history_long_poll(client, handle.id, run_id, last, seconds=int(PARKED_S))
    assert woke.events[0].event_type == "WorkflowExecutionSignaled"
    assert counters.readers["Executions.get_history"] == 2


# ------------------------------------------------------------------ PostgreSQL: other replicas, lost notifications


@pytest.mark.postgres
async def test_a_change_through_another_replica_wakes_the_wait(postgres_dsn: str) -> None:
    a, b = parking_server(postgres_dsn), parking_server(postgres_dsn)
    await a.start()
    await b.start()
    try:
        async with (
            await Client.connect(f"127.0.0.1:{a.port}") as on_a,
            await Client.connect(f"127.0.0.1:{b.port}") as on_b,
        ):
            async with fast_worker(on_b, QUEUE, workflows=[Driven], activities=[held]):
                handle = await started(on_b)
                woke = await woken_by(a, on_a, handle, lambda: handle.signal(Driven.do, "nothing"))
        assert woke[0] == "WorkflowExecutionSignaled"
    finally:
        await a.stop()
        await b.stop()


@pytest.mark.postgres
async def test_a_replaced_listen_connection_wakes_every_waiter(postgres_dsn: str) -> None:
    """A notification sent while a replica's LISTEN connection is down never reaches it;
    once the connection is back, every waiter is woken to re-read instead."""
    target = urllib.parse.urlsplit(postgres_dsn)
    proxy = TcpProxy(target.hostname or "127.0.0.1", target.port or 5432)
    await proxy.start()
    writer = PostgresStore(postgres_dsn)
    replica = PostgresStore(with_address(postgres_dsn, "127.0.0.1", proxy.port), connect_timeout_s=1.0)
    await writer.open()
    await replica.open()
    try:
        waiters = [replica.notifier.listen(f"r:run-{i}") for i in range(3)]
        await proxy.cut()
        async with writer.transaction() as tx:
            tx.notify_after_commit("r:run-0")  # lost: the replica is not listening
        assert not any(waiter.is_set() for waiter in waiters)
        await proxy.start()
        for waiter in waiters:
            assert await replica.wait_for_notification(waiter, DEADLINE_S), "a waiter slept through the outage"
    finally:
        await replica.close()
        await writer.close()
        await proxy.cut()
