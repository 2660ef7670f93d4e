"""Circuit breakers end to end on both stores (docs/flow-control.md): a breaker opens on a
failing downstream, holds its type's tasks without spending attempts, lets one probe
through after its open period, and closes once the downstream recovers, after which
every workflow completes; describe says a held activity is held by the breaker; manual
open and close are validated and audited."""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta

import grpc
import pytest

from flowforge import Client, activity, workflow
from flowforge.client import Breaker
from flowforge.common import RetryPolicy
from flowforge.exceptions import ApplicationError, RPCError
from flowforge.server import FlowForgeServer
from flowforge.worker import Worker
from testsupport.waiting import wait_until

WORKFLOWS = 6
OPEN_S = 1.5


class _Downstream:
    """A downstream service that fails while ``down``; counts the calls it gets."""

    def __init__(self) -> None:
        self.down = False
        self.calls = 0
        self.running = 0


_downstream = _Downstream()


@activity.defn
async def call_downstream(n: int) -> int:
    _downstream.calls += 1
    _downstream.running += 1
    try:
        await asyncio.sleep(0)
        if _downstream.down:
            raise ApplicationError("downstream unavailable")
        return n
    finally:
        _downstream.running -= 1


@workflow.defn
class CallsDownstream:
    @workflow.run
    async def run(self, n: int) -> int:
        return await workflow.execute_activity(
            call_downstream,
            n,
            start_to_close_timeout=timedelta(seconds=10),
            retry_policy=RetryPolicy(initial_interval=timedelta(milliseconds=100), backoff_coefficient=1.0),
        )


async def _breaker(client: Client, activity_type: str) -> Breaker:
    (found,) = [b for b in await client.list_breakers() if b.activity_type == activity_type]
    return found


async def test_a_breaker_opens_holds_probes_and_closes_when_the_downstream_recovers(server: FlowForgeServer) -> None:
    client = await Client.connect(f"127.0.0.1:{server.port}")
    queue = f"breaker-{uuid.uuid4().hex[:8]}"
    global _downstream
    _downstream = _Downstream()
    _downstream.down = True
    try:
        await client.set_breaker(
            "call_downstream", failure_rate=0.5, min_calls=4, window_seconds=30, open_seconds=OPEN_S, reason="test"
        )
        assert (await _breaker(client, "call_downstream")).state == "closed"
        async with Worker(client, task_queue=queue, workflows=[CallsDownstream], activities=[call_downstream]):
            handles = [
                await client.start_workflow(CallsDownstream.run, n, id=f"{queue}-{n}", task_queue=queue)
                for n in range(WORKFLOWS)
            ]

            async def opened_and_idle() -> bool:
                return (await _breaker(client, "call_downstream")).state == "open" and _downstream.running == 0

            await wait_until(opened_and_idle, timeout=30, what="the breaker to open on the failing downstream")
            opened = await _breaker(client, "call_downstream")
            calls_at_open = _downstream.calls

            async def held_shown() -> bool:
                described = await handles[0].describe()
                return any(
                    a.waiting_reason == "held by the open circuit breaker of activity type call_downstream"
                    for a in described.pending_activities
                )

            await wait_until(held_shown, timeout=30, what="describe to say the activity is held by the breaker")
            attempts_held = [a.attempt for a in (await handles[0].describe()).pending_activities]

            # After the open period exactly one probe goes through; it fails, so the breaker opens again.
            async def reopened() -> bool:
                b = await _breaker(client, "call_downstream")
                return b.state == "open" and b.since != opened.since and _downstream.running == 0

            await wait_until(reopened, timeout=30, what="the probe to fail and reopen the breaker")
            assert _downstream.calls == calls_at_open + 1, "one probe, no other attempt, while open"
            attempts_after = [a.attempt for a in (await handles[0].describe()).pending_activities]
            assert len(attempts_after) == 1
            assert attempts_after[0] <= attempts_held[0] + 1, "attempts frozen while held (at most the probe's)"

            _downstream.down = False

            async def closed() -> bool:
                return (await _breaker(client, "call_downstream")).state == "closed"

            await wait_until(closed, timeout=30, what="the probe to succeed and close the breaker")
            results = await asyncio.wait_for(asyncio.gather(*(h.result() for h in handles)), 60)
        assert results == list(range(WORKFLOWS))
    finally:
        await client.close()


async def test_a_breaker_opened_by_hand_holds_tasks_until_closed_by_hand_and_both_are_audited(
    server: FlowForgeServer,
) -> None:
    client = await Client.connect(f"127.0.0.1:{server.port}")
    queue = f"manual-{uuid.uuid4().hex[:8]}"
    global _downstream
    _downstream = _Downstream()
    try:
        with pytest.raises(RPCError) as refused:
            await client.open_breaker("call_downstream", reason="no breaker yet")
        assert refused.value.status == grpc.StatusCode.NOT_FOUND
        for bad in ({"failure_rate": 1.5}, {"min_calls": 0}, {"open_seconds": -1.0}):
            config = {"failure_rate": 0.5, "min_calls": 3, "window_seconds": 10.0, "open_seconds": 60.0} | bad
            with pytest.raises(RPCError) as refused:
                await client.set_breaker("call_downstream", **config)  # type: ignore[arg-type]
            assert refused.value.status == grpc.StatusCode.INVALID_ARGUMENT
        await client.set_breaker("call_downstream", failure_rate=0.5, min_calls=3, window_seconds=10, open_seconds=60)
        with pytest.raises(RPCError) as refused:
            await client.open_breaker("call_downstream", reason=" ")
        assert refused.value.status == grpc.StatusCode.INVALID_ARGUMENT
        await client.open_breaker("call_downstream", reason="partner maintenance")
        opened = await _breaker(client, "call_downstream")
        assert (opened.state, opened.reason) == ("open", "partner maintenance")
        server.engine.metrics.set_breaker_states(await server.engine.breaker_states())
        rendered = server.engine.metrics.render()
        assert b'flowforge_breaker_state{activity_type="call_downstream",namespace="default"} 1.0' in rendered
        async with Worker(client, task_queue=queue, workflows=[CallsDownstream], activities=[call_downstream]):
            handle = await client.start_workflow(CallsDownstream.run, 7, id=queue, task_queue=queue)

            async def held_shown() -> bool:
                described = await handle.describe()
                return any(
                    a.waiting_reason.startswith("held by the open circuit breaker")
                    for a in described.pending_activities
                )

            await wait_until(held_shown, timeout=30, what="the activity to be held by the open breaker")
            assert _downstream.calls == 0
            await client.close_breaker("call_downstream", reason="partner back")
            assert await asyncio.wait_for(handle.result(), 30) == 7
        assert _downstream.calls == 1
        async with server.store.read() as tx:
            rows = await tx.list_audit_rows(after_seq=0, limit=500)
        entries = [(r.action, r.target, r.reason) for r in rows if r.target == "breaker:call_downstream"]
        assert ("OpenBreaker", "breaker:call_downstream", "partner maintenance") in entries
        assert ("CloseBreaker", "breaker:call_downstream", "partner back") in entries
        # Each breaker's state is a gauge (0 closed, 1 open, 2 half_open).
        server.engine.metrics.set_breaker_states(await server.engine.breaker_states())
        rendered = server.engine.metrics.render()
        assert b'flowforge_breaker_state{activity_type="call_downstream",namespace="default"} 0.0' in rendered
        assert any(action == "SetBreaker" for action, _, _ in entries)
    finally:
        await client.close()
