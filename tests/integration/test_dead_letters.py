"""Dead letters end to end, on SQLite and PostgreSQL: an activity scheduled with
``dead_letter=True`` is parked after its retries while its workflow keeps running
(timers fire, signals and queries are answered); a retry after the cause is fixed
completes the same execution with the attempt count going on; a discard fails into
the workflow as an ``ActivityError`` its own code handles; a workflow cancelling a
parked activity gets its cancellation; a server killed with -9 between parking and
retry loses nothing; every attempt is on record."""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta

import grpc
import pytest

from flowforge import Client, RetryPolicy, activity, workflow
from flowforge.client import DeadLetter, WorkflowExecutionStatus
from flowforge.exceptions import ActivityError, ApplicationError, RPCError
from flowforge.server import FlowForgeServer
from tests.integration._processes import ServerProcess
from tests.integration._reliability import DEADLINE_S, assert_gapless, events, fast_worker, of_type
from testsupport.waiting import wait_until

QUEUE = "dead-letters"
ATTEMPTS = 2
# Orders whose payment API is "fixed": their charge succeeds.
FIXED: set[str] = set()


@activity.defn
async def charge(order: str) -> str:
    if order not in FIXED:
        raise ApplicationError(f"payments API down for {order}", type="PaymentsDown")
    return f"charged {order} on attempt {activity.info().attempt}"


@workflow.defn
class Checkout:
    def __init__(self) -> None:
        self.notes: list[str] = []
        self.ticked = False

    @workflow.run
    async def run(self, order: str) -> str:
        async def tick() -> None:
            await asyncio.sleep(0.3)
            self.ticked = True

        ticker = asyncio.ensure_future(tick())
        try:
            result: str = await workflow.execute_activity(
                charge,
                order,
                start_to_close_timeout=timedelta(seconds=10),
                retry_policy=RetryPolicy(initial_interval=timedelta(milliseconds=10), maximum_attempts=ATTEMPTS),
                dead_letter=True,
            )
        except ActivityError as error:
            result = f"handled {type(error.cause).__name__}: {error.cause}"
        await ticker
        return result

    @workflow.signal
    def note(self, text: str) -> None:
        self.notes.append(text)

    @workflow.query
    def state(self) -> dict[str, object]:
        return {"notes": self.notes, "ticked": self.ticked}


@workflow.defn
class GivesUp:
    """Waits a short while for a charge, then cancels it, waits for the cancellation and returns."""

    @workflow.run
    async def run(self, order: str) -> str:
        try:
            return await asyncio.wait_for(
                workflow.execute_activity(
                    charge,
                    order,
                    start_to_close_timeout=timedelta(seconds=10),
                    retry_policy=RetryPolicy(maximum_attempts=1),
                    dead_letter=True,
                    cancellation_type=workflow.ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
                ),
                timeout=1.5,
            )
        except TimeoutError:
            return "gave up"


async def _parked(client: Client, workflow_id: str, attempt: int = ATTEMPTS) -> DeadLetter:
    async def check() -> DeadLetter | None:
        listed = await client.list_dead_letters(workflow_id=workflow_id)
        return next((d for d in listed.dead_letters if d.attempt == attempt), None)

    return await wait_until(check, timeout=DEADLINE_S, what=f"{workflow_id} parked after attempt {attempt}")


async def test_a_parked_activity_lets_its_workflow_run_and_a_retry_after_the_fix_completes_the_same_execution(
    sdk_client: Client, server: FlowForgeServer, store_kind: str
) -> None:
    order = f"retry-{store_kind}-{uuid.uuid4().hex[:6]}"
    async with fast_worker(sdk_client, QUEUE, workflows=[Checkout], activities=[charge]):
        handle = await sdk_client.start_workflow(Checkout.run, order, id=order, task_queue=QUEUE)
        parked = await _parked(sdk_client, order)
        assert (parked.workflow_id, parked.run_id, parked.activity_type) == (order, handle.run_id, "charge")
        assert parked.failure["type"] == "PaymentsDown" and order in parked.failure["message"]

        # The workflow still runs: its timer fires, it takes a signal and answers queries.
        await handle.signal(Checkout.note, "customer called")
        state = await wait_until(
            lambda: _state_when_ticked(handle), timeout=DEADLINE_S, what="the timer to fire while parked"
        )
        assert state["notes"] == ["customer called"]
        described_run = await handle.describe()
        assert described_run.status == WorkflowExecutionStatus.RUNNING
        assert [node.state for node in described_run.dag] == ["DEAD_LETTERED"]
        assert [(a.activity_type, a.attempt, a.outcome) for a in described_run.activity_attempts] == [
            ("charge", 1, "failed"),
            ("charge", 2, "failed"),
        ]

        # Every attempt is on record with its worker and failure.
        described = await sdk_client.describe_dead_letter(parked.id)
        assert [(a.attempt, a.outcome) for a in described.attempts] == [(1, "failed"), (2, "failed")]
        assert all(a.identity and a.failure and a.failure["type"] == "PaymentsDown" for a in described.attempts)
        assert all(a.started_time and a.ended_time and a.started_time <= a.ended_time for a in described.attempts)
        listed = await sdk_client.list_dead_letters()
        assert listed.depths == {"charge": 1}
        # The depth per namespace and activity type is a gauge, for alerting.
        server.engine.metrics.set_dead_letter_depths(await server.engine.dead_letter_depths())
        rendered = server.engine.metrics.render()
        assert b'flowforge_dead_letters{activity_type="charge",namespace="default"} 1.0' in rendered

        # Retried without a fix: one more attempt (3), parked again; the count goes on.
        assert await sdk_client.retry_dead_letters(parked.id, reason="try once more") == [parked.id]
        again = await _parked(sdk_client, order, attempt=ATTEMPTS + 1)
        # With a fresh budget the policy's attempts start over: 4 and 5, then parked.
        await sdk_client.retry_dead_letters(again.id, reason="fresh budget", fresh_budget=True)
        last = await _parked(sdk_client, order, attempt=ATTEMPTS + 1 + ATTEMPTS)

        FIXED.add(order)
        assert await sdk_client.retry_dead_letters(last.id, reason="payments API fixed") == [last.id]
        result = await asyncio.wait_for(handle.result(), DEADLINE_S)
    assert result == f"charged {order} on attempt {2 * ATTEMPTS + 2}"
    history = await events(handle)
    assert_gapless(history)
    assert len(of_type(history, "ActivityTaskDeadLettered")) == 3
    retried = of_type(history, "ActivityTaskDeadLetterRetried")
    assert [e.attributes["reason"] for e in retried] == ["try once more", "fresh budget", "payments API fixed"]
    assert [e.attributes["fresh_budget"] for e in retried] == [False, True, False]
    assert not of_type(history, "ActivityTaskFailed")
    assert len(of_type(history, "ActivityTaskCompleted")) == 1
    assert not (await sdk_client.list_dead_letters(workflow_id=order)).dead_letters
    # Every attempt is on record, and describe() shows them.
    attempts = (await handle.describe()).activity_attempts
    assert [(a.attempt, a.outcome) for a in attempts] == [(n, "failed") for n in range(1, 6)] + [(6, "completed")]
    assert attempts[-1].failure is None and all(a.identity for a in attempts)
    with pytest.raises(RPCError) as error:
        await sdk_client.describe_dead_letter(last.id)
    assert error.value.status == grpc.StatusCode.NOT_FOUND
    # The attempts are purged with the execution (the retention sweeper's purge).
    assert await server.engine.transaction(lambda tx: tx.purge_runs("default", [handle.run_id])) == 1
    assert await server.engine.read(lambda tx: tx.list_activity_attempts("default", handle.run_id)) == []


async def _state_when_ticked(handle: object) -> dict[str, object] | None:
    state: dict[str, object] = await handle.query(Checkout.state)  # type: ignore[attr-defined]
    return state if state["ticked"] else None


async def test_a_discarded_activity_fails_into_the_workflow_which_handles_the_activity_error(
    sdk_client: Client, store_kind: str
) -> None:
    orders = [f"discard-{store_kind}-{i}-{uuid.uuid4().hex[:6]}" for i in range(3)]
    async with fast_worker(sdk_client, QUEUE, workflows=[Checkout], activities=[charge]):
        handles = [await sdk_client.start_workflow(Checkout.run, o, id=o, task_queue=QUEUE) for o in orders]
        first = await _parked(sdk_client, orders[0])
        others = [(await _parked(sdk_client, order)).id for order in orders[1:]]
        assert await sdk_client.discard_dead_letters(first.id, reason="order cancelled by support") == [first.id]
        assert await asyncio.wait_for(handles[0].result(), DEADLINE_S) == (
            "handled ApplicationError: discarded from the dead-letter queue: order cancelled by support"
        )
        # Bulk: every remaining one of this workflow type and error type, by filter.
        discarded = await sdk_client.discard_dead_letters(
            reason="bulk clean-up", workflow_type="Checkout", error_type="PaymentsDown"
        )
        assert set(others) <= set(discarded)
        results = [await asyncio.wait_for(h.result(), DEADLINE_S) for h in handles[1:]]
    assert all("bulk clean-up" in r for r in results)
    history = await events(handles[0])
    failed = of_type(history, "ActivityTaskFailed")
    assert len(failed) == 1
    assert failed[0].attributes["failure"]["type"] == "DeadLetterDiscarded"
    assert failed[0].attributes["failure"]["cause"]["type"] == "PaymentsDown"


async def test_a_workflow_cancelling_a_parked_activity_gets_its_cancellation_and_the_dead_letter_goes(
    sdk_client: Client, store_kind: str
) -> None:
    order = f"gives-up-{store_kind}-{uuid.uuid4().hex[:6]}"
    async with fast_worker(sdk_client, QUEUE, workflows=[GivesUp], activities=[charge]):
        handle = await sdk_client.start_workflow(GivesUp.run, order, id=order, task_queue=QUEUE)
        await _parked(sdk_client, order, attempt=1)
        assert await asyncio.wait_for(handle.result(), DEADLINE_S) == "gave up"
    assert not (await sdk_client.list_dead_letters(workflow_id=order)).dead_letters
    history = await events(handle)
    (scheduled,) = of_type(history, "ActivityTaskScheduled")
    (requested,) = of_type(history, "ActivityTaskCancelRequested")
    (canceled,) = of_type(history, "ActivityTaskCanceled")
    assert requested.attributes["scheduled_event_id"] == canceled.attributes["scheduled_event_id"] == scheduled.event_id
    assert canceled.attributes["started_event_id"] == 0


async def test_bad_dead_letter_requests_are_refused_and_change_nothing(
    sdk_client: Client, server: FlowForgeServer
) -> None:
    with pytest.raises(RPCError) as error:
        await sdk_client.retry_dead_letters("no-such-id", reason="why not")
    assert error.value.status == grpc.StatusCode.NOT_FOUND
    with pytest.raises(RPCError) as error:
        await sdk_client.discard_dead_letters("no-such-id", reason="")
    assert error.value.status == grpc.StatusCode.INVALID_ARGUMENT and "reason" in error.value.message
    with pytest.raises(RPCError) as error:
        await sdk_client.list_dead_letters(limit=5000)
    assert error.value.status == grpc.StatusCode.INVALID_ARGUMENT


async def test_a_server_killed_between_parking_and_retry_loses_nothing(server_process: ServerProcess) -> None:
    order = f"kill-{uuid.uuid4().hex[:6]}"
    client = await Client.connect(server_process.address)
    try:
        async with fast_worker(client, QUEUE, workflows=[Checkout], activities=[charge]):
            handle = await client.start_workflow(Checkout.run, order, id=order, task_queue=QUEUE)
            parked = await _parked(client, order)
            server_process.kill9()
            server_process.start()
            after = await _parked(client, order)
            assert (after.id, after.attempt, after.failure) == (parked.id, parked.attempt, parked.failure)
            assert len((await client.describe_dead_letter(parked.id)).attempts) == ATTEMPTS
            FIXED.add(order)
            await client.retry_dead_letters(parked.id, reason="after the restart")
            assert await asyncio.wait_for(handle.result(), DEADLINE_S) == f"charged {order} on attempt {ATTEMPTS + 1}"
    finally:
        await client.close()
