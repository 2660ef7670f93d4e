"""The engine's cost per activity, counted exactly, with a budget a regression breaks.

A real server (each store in turn) runs the onboarding DAG and the one-activity
workflow through a real worker. The server's store is wrapped to count write
transactions (each one a durable commit, optimistic-concurrency retries included),
read snapshots and SQL statements (a batch is one), and on PostgreSQL round trips
(the statements plus BEGIN and COMMIT or ROLLBACK); the server's periodic health
probe and scheduler election are not counted. The client the worker and the
starter share counts RPCs. docs/performance.md explains
each budget; lower is fine, higher fails the build.
"""

from __future__ import annotations

import asyncio
import collections
import json
import uuid
from collections.abc import AsyncIterator
from typing import Any, TypeVar

import pytest

from flowforge import Client, WorkflowHandle
from flowforge.api.schema import TaskKind
from flowforge.api.v1 import workflow_service_pb2 as pb
from flowforge.converter import default_converter
from flowforge.server import FlowForgeServer, ServerConfig
from flowforge.server.history import queue_channel
from flowforge.server.history.mutation import close_channel
from flowforge.server.stores.postgres import NOTIFY_CHANNEL
from flowforge.worker import Worker
from samples.onboarding.workflows import ACTIVITIES, Onboarding
from tests.integration._protocol import NS, Wire, complete_workflow, schedule_activity
from tests.integration._stream_client import WORKFLOW, RawWorkerStream, credit
from testsupport.counting import StoreCounters, count_history_handed_out, count_rpcs, count_stream_messages
from testsupport.parking import ParkingNotifier
from testsupport.waiting import wait_until, within
from testsupport.workloads import LIMITED_KEY, LimitedActivity, SingleActivity, noop

ONBOARDINGS = 12
IN_FLIGHT = 4
SINGLES = 5

# Per onboarding activity (6 per workflow): 9 commits per workflow are 1 start, 1
# workflow task leased by a poll, its completion (leases the first activity eagerly) and
# 6 activity completions, each with the workflow task it schedules folded in (the worker
# holds the run cached: docs/worker-stream.md, "Folded workflow tasks"), which leases the
# activities that task schedules; the three parallel ones fold one after another. 1.5
# each, less where SQLite's group commit joins reports: 0.94-1.11 (SQLite) and 1.47-1.5
# (PostgreSQL) measured at load 5-6, against 2.33 before folds (14 commits per workflow).
WRITE_TRANSACTIONS_PER_ACTIVITY = 1.7
# Read snapshots besides the polls' looks (a woken poll reads before it takes a
# write lock; how many wake depends on timing): the history handed out with the first
# workflow task and the result() long poll; folded tasks are handed out to nobody.
# 0.33-0.36 measured.
READ_TRANSACTIONS_PER_ACTIVITY = 0.6
WRITE_STATEMENTS_PER_ACTIVITY = 14.0  # 11.8 (SQLite) and 6.5 (PostgreSQL) measured; 20 before folds
_LOOKS = ("HistoryEngine.visible_tasks", "HistoryEngine.visible_workflow_work")
RPCS_PER_ACTIVITY = 1.84  # 11 per workflow: start, 1 poll, 1 + 6 reports, result, 1 spare (16 before folds)
# On the worker stream (the same workload), messages each way per activity. Without any
# batching: 2 reports and about 0.3 credit messages out, 2 answers and 0.2 pushed tasks in.
# The worker's flush waits (0.5 ms at most) for the reports of the tasks it was just
# handed, credits the server does not need at once ride with them, the reports of one
# message commit in one transaction and their answers leave in one message: 0.57-1.15
# out and 0.58-1.4 in measured (SQLite the lower, PostgreSQL the higher, load 9-15 on
# 2 cores), against 1.2-1.6 each way when only what was ready in the same turn of the
# event loop was batched; and no poll or report call. With folded workflow tasks (1.17
# reports per activity instead of 2): 0.61-0.82 out and 0.72-0.94 in measured (load 5-6).
STREAM_MESSAGES_SENT_PER_ACTIVITY = 1.1
STREAM_MESSAGES_RECEIVED_PER_ACTIVITY = 1.25
# Write transactions per activity of the SDK worker on the stream (same workload), per
# store: the reports of one message are group-committed, workflow task completions and
# activity completions alike. SQLite 0.83-1.04 measured (load 12-21), against 1.24-1.32
# when a report that found no group transaction under way committed alone (its message's
# other reports in the next one) and 2.33 ungrouped. PostgreSQL runs up to 4 report
# transactions at once (824d8c9: no group waits for another's round trips), so a
# stream's reports that arrive apart go in transactions of their own: 1.12-1.43 measured
# (load 16-19; 0.96-1.12 with one at a time). With folded workflow tasks: SQLite
# 0.72-0.75, PostgreSQL 0.88-1.01 (load 5-6).
STREAM_SDK_WRITE_TRANSACTIONS_PER_ACTIVITY = {"sqlite": 1.0, "postgresql": 1.3}
# The same on the stream under load, STREAM_LOAD_IN_FLIGHT onboardings at a time (a
# worker's default 100 activity slots are far from full): bigger groups per transaction
# and per message. At 24 in flight: SQLite 0.27-0.29 messages each way and 0.35-0.41
# transactions; PostgreSQL (4 transactions at once) 0.5-0.58 messages and 0.63-0.67
# transactions, 0.30-0.44 and 0.34-0.38 with one at a time (load 12-21). With folded
# workflow tasks (load 5-6): SQLite 0.21-0.24 messages and 0.30-0.34 transactions,
# PostgreSQL 0.36-0.45 messages and 0.48-0.52 transactions.
STREAM_LOAD_IN_FLIGHT = 24
STREAM_LOAD_ONBOARDINGS = 72
STREAM_LOAD_MESSAGES_PER_ACTIVITY = 0.6  # each way
STREAM_LOAD_WRITE_TRANSACTIONS_PER_ACTIVITY = {"sqlite": 0.45, "postgresql": 0.65}
# History events sent with each workflow task (sticky execution): the polled first task
# carries the whole (3 events), the handed-back ones only the tail from the event the
# worker's cached instance stopped at (7.1 measured, against 21.1 with whole histories).
# With every activity's workflow task folded, only the polled first tasks are handed out:
# 3.0 measured.
EVENTS_PER_WORKFLOW_TASK = 4.0
# PostgreSQL round trips: the statements plus BEGIN and COMMIT (a transaction's
# wake-ups for other replicas leave after it, batched in a NOTIFY transaction of their
# own, not counted here), and a report reads its task and execution with one statement.
# Writes: 12.8-13.3 measured (10.4 when one report transaction ran at a time, before
# 824d8c9), since the writes of a report wait and go together as one statement
# (stores/postgres_writes.py); 17.2-17.4 before that, 21.6 before the NOTIFY
# rode with the COMMIT (it has its own transaction since), a start stopped taking a
# savepoint and a report stopped reading its execution apart. Reads (the polls' looks
# not counted): 4.4-5.2 measured, ~7 when the history handed out with a workflow task
# and a result()'s run lookup still took a BEGIN and a ROLLBACK around their one
# SELECT (Store.read(one_statement=True)). With folded workflow tasks (a commit and a
# history hand-out fewer per activity): writes 9.4-9.5, reads 1.2-2.3 measured; then
# 8.44-8.5, and 7.94-8.0 since a start's request id waits with its other writes, two
# deletes of one table go together and a read of tables no write waiting changes rides
# with them (the unfolded activity completion's history gap read, a close's lineage).
WRITE_ROUND_TRIPS_PER_ACTIVITY = 8.4
READ_ROUND_TRIPS_PER_ACTIVITY = 3.0
# The limited path (LimitedActivity: a concurrency key with a limit and a fairness key):
# the activity is never leased eagerly, so a poll leases it (one more commit) and the
# lease and the completion each lock the key's limit row and count its leased tasks.
LIMITED_WRITE_TRANSACTIONS = 5
# Per workflow (a batch counted once): 43 on both stores before folds; 38 (SQLite) and 29
# (PostgreSQL) with the closing workflow task folded into the activity's completion.
LIMITED_WRITE_STATEMENTS = 44.0

_R = TypeVar("_R")


async def _result(handle: WorkflowHandle[Any, _R]) -> _R:
    """The workflow's result, or a failure naming it if it has not closed within two
    minutes (each takes milliseconds, seconds at 24 in flight on a machine at load 20;
    a hang would otherwise stall until the suite's timeout, which names no cause)."""
    return await within(handle.result(), timeout=120.0, what=f"workflow {handle.id!r} to close")


@pytest.fixture
async def counted(
    server: FlowForgeServer,
) -> AsyncIterator[tuple[StoreCounters, collections.Counter[str], Client, str]]:
    store = StoreCounters(server.store)
    client = await Client.connect(f"127.0.0.1:{server.port}")
    rpcs = count_rpcs(client)
    queue = f"cost-{uuid.uuid4().hex[:8]}"
    try:
        async with Worker(
            client,
            task_queue=queue,
            workflows=[Onboarding, SingleActivity, LimitedActivity],
            activities=[*ACTIVITIES, noop],
            # These budgets count the unary calls of each poll and report; the worker
            # stream carries the same work without a call each (docs/worker-stream.md).
            task_transport="unary",
        ):
            # Let the worker's polls park before counting. result() can return before
            # the worker has the answer to its last report, so wait for that too.
            await _result(await client.start_workflow(SingleActivity.run, -1, id=f"warm-{queue}", task_queue=queue))
            # The activity's completion, with the workflow task that closes the run folded in, is the last.
            await wait_until(
                lambda: rpcs["RespondActivityTaskCompleted"] == 1,
                timeout=10.0,
                what="the worker's reports to return",
                interval=0.01,
            )
            store.reset()
            rpcs.clear()
            yield store, rpcs, client, queue
    finally:
        await client.close()


async def test_one_activity_workflow_costs_four_commits_and_five_rpcs(
    counted: tuple[StoreCounters, collections.Counter[str], Client, str],
) -> None:
    store, rpcs, client, queue = counted
    for i in range(SINGLES):
        handle = await client.start_workflow(SingleActivity.run, i, id=f"single-{queue}-{i}", task_queue=queue)
        assert await _result(handle) == i
    await wait_until(
        lambda: rpcs["RespondActivityTaskCompleted"] == SINGLES,
        timeout=10.0,
        what="the worker's reports to return",
        interval=0.01,
    )
    # start, lease by poll, complete (leases the activity), activity completed with the
    # workflow task it schedules folded in (the worker held the run cached; it closes the
    # run): four commits, no conflict, no empty write (five before folds).
    assert store.counts["write_transactions"] == 4 * SINGLES, dict(store.counts)
    assert store.counts["write_transactions_that_changed_rows"] == 4 * SINGLES
    assert rpcs["StartWorkflowExecution"] == SINGLES
    assert rpcs["PollWorkflowTaskQueue"] == SINGLES, dict(rpcs)
    assert rpcs["RespondWorkflowTaskCompleted"] == SINGLES
    assert rpcs["RespondActivityTaskCompleted"] == SINGLES
    assert "PollActivityTaskQueue" not in rpcs
    assert rpcs["GetWorkflowExecutionHistory"] == SINGLES  # result(): one long poll each


@pytest.fixture
async def unhurried_server(store_url: str) -> AsyncIterator[FlowForgeServer]:
    """A server whose parked polls do not look again on their own during a test (no
    periodic re-check), so a stream poll seen waiting stays claimable by the next start."""
    instance = FlowForgeServer(ServerConfig(store=store_url, port=0, poll_recheck_interval_s=300.0))
    await instance.start()
    yield instance
    await instance.stop()


async def test_on_the_worker_stream_a_one_activity_workflow_costs_three_commits(
    unhurried_server: FlowForgeServer, store_kind: str
) -> None:
    server = unhurried_server
    store = StoreCounters(server.store)
    client = await Client.connect(f"127.0.0.1:{server.port}")
    messages = count_stream_messages(client)
    queue = f"cost-eager-{uuid.uuid4().hex[:8]}"
    try:
        async with Worker(client, task_queue=queue, workflows=[SingleActivity], activities=[noop]):
            await _result(await client.start_workflow(SingleActivity.run, -1, id=f"warm-{queue}", task_queue=queue))
            await wait_until(
                lambda: messages["results"] >= 2, timeout=10.0, what="the worker's reports to return", interval=0.01
            )
            store.reset()
            # How far ahead each deadline the engine reports is: one due within the
            # timekeeper's longest sleep (1 s) wakes it for a look (two reads).
            deadlines_ahead_s: list[float] = []
            deadline_added = server.engine.on_new_deadline

            def note(deadline_us: int) -> None:
                deadlines_ahead_s.append((deadline_us - server.engine.clock.now_us()) / 1e6)
                deadline_added(deadline_us)

            server.engine.on_new_deadline = note
            for i in range(SINGLES):
                # Each start is eager only with the stream's poll back in wait; on a loaded
                # machine the worker may not have asked again yet (its poll then leases
                # with a commit of its own), so wait for that before each start.
                await wait_until(
                    lambda: server.matching.idle_workflow_polls(NS, queue) >= 1,
                    timeout=30.0,
                    what="the stream's workflow poll to wait on the queue",
                    interval=0.01,
                )
                handle = await client.start_workflow(SingleActivity.run, i, id=f"single-{queue}-{i}", task_queue=queue)
                assert await _result(handle) == i
            await wait_until(
                lambda: messages["results"] >= 2 * (SINGLES + 1),
                timeout=10.0,
                what="the worker's reports to return",
                interval=0.01,
            )
    finally:
        await client.close()
    # The unary path's four less the first task's lease: the start leases it to the
    # stream's waiting poll in its own transaction (eager start, docs/worker-stream.md).
    # Then the task's completion (leases the activity) and the activity's completion with
    # the closing workflow task folded in: three commits (four before folds).
    assert store.counts["write_transactions"] == 3 * SINGLES, dict(store.counts)
    if store_kind == "postgresql":
        # The round trips of those commits: BEGIN, the statements, COMMIT (the critical
        # path of docs/performance.md's hello, hop by hop). The start's 5: its request id
        # lookup, the run's insert, then its events, task and request id in one, and the
        # first task's 6 (the lock, its delete before the read of the activity ids in use,
        # the rest in one); the fold's 4 (the lock, then the deletes of the task and of
        # the closed run's tasks, the rest of its writes and the read of the run's
        # lineage in one statement). 18 before the request id waited, two deletes of one
        # table went together and a read of tables no write waiting changes rode with them.
        assert store.counts["write_round_trips"] == 15 * SINGLES, dict(store.counts)
    # No workflow task's history is read back after its lease commits: the start's
    # task carries what the start appended, the activity completion's what it appended
    # and read in its own transaction (docs/performance.md, one-activity latency).
    assert store.readers["WorkflowTasks._hand_out_workflow_task"] == 0, dict(store.readers)
    # Nor does the close wake the timekeeper: a run that closes reaching no other run
    # adds no deadline (its own go with it).
    assert deadlines_ahead_s and min(deadlines_ahead_s) > 1.0, deadlines_ahead_s


async def _onboard(client: Client, queue: str, onboardings: int = ONBOARDINGS, in_flight: int = IN_FLIGHT) -> None:
    """Runs ``onboardings`` onboarding workflows, ``in_flight`` at a time."""
    request = {"name": "Cost", "email": "cost@example.com", "work_seconds": 0, "cooling_off_seconds": 0}
    gate = asyncio.Semaphore(in_flight)

    async def one(i: int) -> None:
        async with gate:
            handle = await client.start_workflow(Onboarding.run, request, id=f"onb-{queue}-{i}", task_queue=queue)
            assert (await _result(handle))["notification"]["sent_to"] == "cost@example.com"

    await asyncio.gather(*(one(i) for i in range(onboardings)))


async def test_onboarding_stays_within_its_budget_per_activity(
    counted: tuple[StoreCounters, collections.Counter[str], Client, str], store_kind: str
) -> None:
    store, rpcs, client, queue = counted
    handed_out = count_history_handed_out(client)
    await _onboard(client, queue)
    activities = ONBOARDINGS * 6
    await wait_until(
        lambda: rpcs["RespondActivityTaskCompleted"] == activities,
        timeout=10.0,
        what="the worker's reports to return",
        interval=0.01,
    )
    per_activity = {name: count / activities for name, count in store.counts.items()}
    looks = sum(n for reader, n in store.readers.items() if reader in _LOOKS)
    per_activity["read_transactions"] -= looks / activities
    rpcs_per_activity = sum(rpcs.values()) / activities
    summary = f"store per activity {per_activity}, reads by caller {dict(store.readers)}, RPCs {dict(rpcs)}"
    assert per_activity["write_transactions"] <= WRITE_TRANSACTIONS_PER_ACTIVITY, summary
    assert per_activity["read_transactions"] <= READ_TRANSACTIONS_PER_ACTIVITY, summary
    assert per_activity["write_statements"] <= WRITE_STATEMENTS_PER_ACTIVITY, summary
    assert rpcs_per_activity <= RPCS_PER_ACTIVITY, summary
    if store_kind == "postgresql":
        looks_round_trips = sum(n for reader, n in store.reader_round_trips.items() if reader in _LOOKS)
        per_activity["read_round_trips"] -= looks_round_trips / activities
        assert per_activity["write_round_trips"] <= WRITE_ROUND_TRIPS_PER_ACTIVITY, per_activity
        assert per_activity["read_round_trips"] <= READ_ROUND_TRIPS_PER_ACTIVITY, per_activity
    else:
        assert "write_round_trips" not in store.counts, summary
    # Every activity is handed out eagerly, and polls lease only first workflow tasks.
    assert "PollActivityTaskQueue" not in rpcs, summary
    assert rpcs["PollWorkflowTaskQueue"] <= ONBOARDINGS, summary
    assert rpcs["RespondActivityTaskCompleted"] == activities, summary
    events_per_task = handed_out["events"] / handed_out["workflow_tasks"]
    assert events_per_task <= EVENTS_PER_WORKFLOW_TASK, dict(handed_out)


async def test_the_limited_path_costs_one_more_commit_and_a_bounded_number_of_statements(
    counted: tuple[StoreCounters, collections.Counter[str], Client, str],
) -> None:
    store, rpcs, client, queue = counted
    await client.set_concurrency_limit(LIMITED_KEY, 5)
    store.reset()
    rpcs.clear()
    for i in range(SINGLES):
        handle = await client.start_workflow(LimitedActivity.run, i, id=f"limited-{queue}-{i}", task_queue=queue)
        assert await _result(handle) == i
    await wait_until(
        lambda: rpcs["RespondActivityTaskCompleted"] == SINGLES,
        timeout=10.0,
        what="the worker's reports to return",
        interval=0.01,
    )
    summary = f"store {dict(store.counts)}, RPCs {dict(rpcs)}"
    # start, lease by poll, complete, the activity leased by a poll, activity completed
    # with the closing workflow task folded in: five commits (six before folds).
    assert store.counts["write_transactions_that_changed_rows"] == LIMITED_WRITE_TRANSACTIONS * SINGLES, summary
    assert store.counts["write_statements"] / SINGLES <= LIMITED_WRITE_STATEMENTS, summary
    assert rpcs["PollActivityTaskQueue"] >= SINGLES, summary


# The worker stream with a worker that batches as far as the protocol lets it (the raw
# client of tests/integration/_stream_client.py): STREAM_WORKFLOWS runs, each fanning
# out STREAM_FAN_OUT activities. Per run: a workflow task pushed against a credit, its
# completion (which leases the activities eagerly), the activities' completions sent
# together in one message, the second workflow task pushed and completed. Each lot of
# reports sent together commits in one transaction (3), and the leases of the workflow
# tasks pushed are grouped too: the stream's lease attempts that run together (up to 5
# per queue) lease in one transaction, with the reports under way. 9 (SQLite) and 11
# (PostgreSQL, one transaction at a time) write transactions measured for 64 activities (0.14-0.17 each; 0.30 when
# each lease took a transaction of its own and 16 of 19 were leases, 0.53 before workflow
# task completions were grouped); messages: a handful each way for the whole lot.
STREAM_WORKFLOWS = 8
STREAM_FAN_OUT = 8
# PostgreSQL runs up to 4 such transactions at once (824d8c9), so lease attempts woken
# apart lease apart: 17-18 there (0.27-0.28 each). Slack for lease attempts woken apart:
STREAM_WRITE_TRANSACTIONS_PER_ACTIVITY = {"sqlite": 0.25, "postgresql": 0.4}
STREAM_MESSAGES_PER_ACTIVITY = 1.0  # each way


async def test_a_batching_worker_on_the_stream_costs_under_one_transaction_and_one_message_per_activity(
    server: FlowForgeServer, store_kind: str
) -> None:
    queue = f"cost-raw-{uuid.uuid4().hex[:8]}"
    wire = Wire(f"127.0.0.1:{server.port}")
    stream = RawWorkerStream(wire.channel)
    try:
        for i in range(STREAM_WORKFLOWS):
            await wire.start(f"{queue}-{i}", task_queue=queue)
        store = StoreCounters(server.store)  # from the first lease on: the worker's path
        await stream.hello(NS, credit(queue, WORKFLOW, STREAM_WORKFLOWS))
        first = await stream.tasks(STREAM_WORKFLOWS)
        fan_out = [
            stream.report(
                workflow_task_completed=pb.RespondWorkflowTaskCompletedRequest(
                    task_token=task.workflow_task.task_token,
                    commands=[schedule_activity(f"a{n}") for n in range(STREAM_FAN_OUT)],
                    eager_activity_slots=STREAM_FAN_OUT,
                )
            )
            for task in first
        ]
        await stream.send(reports=fan_out)
        scheduled = await stream.results(STREAM_WORKFLOWS)
        activity_tasks = [t for r in scheduled.values() for t in r.workflow_task_completed.activity_tasks]
        assert len(activity_tasks) == STREAM_WORKFLOWS * STREAM_FAN_OUT, scheduled
        completions = [
            stream.report(
                activity_task_completed=pb.RespondActivityTaskCompletedRequest(
                    task_token=t.task_token, result=default_converter.to_payloads([t.activity_id])
                )
            )
            for t in activity_tasks
        ]
        await stream.send(reports=completions)
        completed = await stream.results(len(completions))
        assert all(r.status_code == 0 for r in completed.values()), completed
        await stream.send(credits=[credit(queue, WORKFLOW, STREAM_WORKFLOWS)])
        second = await stream.tasks(STREAM_WORKFLOWS)
        done = [
            stream.report(
                workflow_task_completed=pb.RespondWorkflowTaskCompletedRequest(
                    task_token=task.workflow_task.task_token, commands=[complete_workflow("done")]
                )
            )
            for task in second
        ]
        await stream.send(reports=done)
        finished = await stream.results(STREAM_WORKFLOWS)
        assert all(r.status_code == 0 for r in finished.values()), finished
        activities = STREAM_WORKFLOWS * STREAM_FAN_OUT
        per_activity = {name: count / activities for name, count in store.counts.items()}
        summary = f"store per activity {per_activity}, messages sent {stream.sent}, received {stream.received}"
        assert per_activity["write_transactions"] <= STREAM_WRITE_TRANSACTIONS_PER_ACTIVITY[store_kind], summary
        assert stream.sent / activities <= STREAM_MESSAGES_PER_ACTIVITY, summary
        assert stream.received / activities <= STREAM_MESSAGES_PER_ACTIVITY, summary
    finally:
        stream.cancel()
        await wire.close()


async def _onboard_on_the_stream(
    server: FlowForgeServer, onboardings: int, in_flight: int
) -> tuple[dict[str, float], dict[str, float], str]:
    """Runs the onboarding workflows on an SDK worker's stream; returns the store's
    counts and the stream's messages per activity, and a summary to fail with."""
    store = StoreCounters(server.store)
    client = await Client.connect(f"127.0.0.1:{server.port}")
    rpcs = count_rpcs(client)
    messages = count_stream_messages(client)
    queue = f"cost-stream-{uuid.uuid4().hex[:8]}"
    activities = onboardings * 6
    try:
        async with Worker(client, task_queue=queue, workflows=[Onboarding], activities=ACTIVITIES):
            await _onboard(client, queue, onboardings, in_flight)
            # Per run: its first workflow task's completion and each activity's (with the
            # workflow task it schedules folded in).
            await wait_until(
                lambda: messages["results"] >= activities + onboardings,
                timeout=10.0,
                what="the worker's reports to return",
                interval=0.01,
            )
    finally:
        await client.close()
    per_activity = {name: count / activities for name, count in store.counts.items()}
    stream = {name: count / activities for name, count in messages.items()}
    summary = f"store per activity {per_activity}, stream per activity {stream}, RPCs {dict(rpcs)}"
    assert not [rpc for rpc in rpcs if rpc.startswith(("Poll", "Respond", "Record"))], summary
    return per_activity, stream, summary


async def test_on_the_worker_stream_onboarding_makes_no_task_call_and_few_messages_per_activity(
    server: FlowForgeServer, store_kind: str
) -> None:
    per_activity, stream, summary = await _onboard_on_the_stream(server, ONBOARDINGS, IN_FLIGHT)
    assert per_activity["write_transactions"] <= STREAM_SDK_WRITE_TRANSACTIONS_PER_ACTIVITY[store_kind], summary
    assert stream["sent"] <= STREAM_MESSAGES_SENT_PER_ACTIVITY, summary
    assert stream["received"] <= STREAM_MESSAGES_RECEIVED_PER_ACTIVITY, summary


async def test_on_the_worker_stream_under_load_an_activity_costs_under_one_message_each_way_and_one_transaction(
    server: FlowForgeServer, store_kind: str
) -> None:
    per_activity, stream, summary = await _onboard_on_the_stream(server, STREAM_LOAD_ONBOARDINGS, STREAM_LOAD_IN_FLIGHT)
    assert per_activity["write_transactions"] <= STREAM_LOAD_WRITE_TRANSACTIONS_PER_ACTIVITY[store_kind], summary
    assert stream["sent"] <= STREAM_LOAD_MESSAGES_PER_ACTIVITY, summary
    assert stream["received"] <= STREAM_LOAD_MESSAGES_PER_ACTIVITY, summary


async def test_the_poll_a_start_wakes_leases_its_workflow_task_without_a_look(store_url: str) -> None:
    # The first workflow task of every execution goes to a parked poll: the wake-up says a
    # task was added, so the poll leases at once instead of reading first (the read is a
    # PostgreSQL round trip or more on the way to schedule-to-start). No periodic re-check
    # can run a look meanwhile: the interval is far past the test.
    server = FlowForgeServer(ServerConfig(store=store_url, port=0, poll_recheck_interval_s=300.0))
    notifier = server.store.notifier = ParkingNotifier()
    await server.start()
    wire = Wire(f"127.0.0.1:{server.port}")
    store = StoreCounters(server.store)
    try:
        for i in range(3):
            parked = notifier.parked[queue_channel(NS, TaskKind.WORKFLOW, "woken")]
            parked.clear()
            poll = asyncio.create_task(wire.poll_workflow_task("woken", timeout=60.0))
            await asyncio.wait_for(parked.wait(), 20.0)
            store.reset()
            await wire.start(f"woken-{i}", "woken")
            task = await asyncio.wait_for(poll, 20.0)
            assert task.workflow_execution.workflow_id == f"woken-{i}"
            looks = {reader: n for reader, n in store.readers.items() if reader in _LOOKS}
            assert looks == {}, dict(store.readers)
            assert store.counts["write_transactions"] == 2, dict(store.counts)  # the start and the lease
    finally:
        await wire.close()
        await server.stop()


async def test_a_parked_result_wait_reads_the_run_once_and_takes_the_close_from_its_commit(store_url: str) -> None:
    # result() (a close-only history long poll) on a run named by id: its lookup is its
    # first look, so it parks after one read; the commit that closes the run hands it the
    # close event, so it answers without reading again (docs/performance.md, one-activity
    # latency). Before: a second read before parking and one more after the wake-up.
    server = FlowForgeServer(ServerConfig(store=store_url, port=0))
    notifier = server.store.notifier = ParkingNotifier()
    await server.start()
    wire = Wire(f"127.0.0.1:{server.port}")
    client = await Client.connect(f"127.0.0.1:{server.port}")
    store = StoreCounters(server.store)
    try:
        for i in range(3):
            run_id = await wire.start(f"closing-{i}", "closing")
            task = await wire.poll_workflow_task("closing", timeout=20.0)
            store.reset()
            result = asyncio.create_task(client.get_workflow_handle(f"closing-{i}", run_id=run_id).result())
            await asyncio.wait_for(notifier.parked[close_channel(run_id)].wait(), 20.0)
            assert store.readers["Executions.get_history"] == 1, dict(store.readers)
            await wire.complete_workflow_task(task.task_token, complete_workflow(i))
            assert await asyncio.wait_for(result, 20.0) == i
            assert store.readers["Executions.get_history"] == 1, dict(store.readers)
    finally:
        await client.close()
        await wire.close()
        await server.stop()


async def test_a_poll_on_a_queue_found_empty_since_the_last_commit_parks_without_a_look(store_url: str) -> None:
    # A new poll (e.g. for a worker stream's credit, which rides with its next report) on
    # a queue whose last look found nothing, and that no commit has notified since,
    # parks at once; the commit that adds a task wakes it, and once a commit has come
    # the next poll looks again. The re-check interval is far past the test.
    server = FlowForgeServer(ServerConfig(store=store_url, port=0, poll_recheck_interval_s=300.0))
    notifier = server.store.notifier = ParkingNotifier()
    await server.start()
    wire = Wire(f"127.0.0.1:{server.port}")
    store = StoreCounters(server.store)
    parked = notifier.parked[queue_channel(NS, TaskKind.WORKFLOW, "found-empty")]

    def looks() -> int:
        return sum(n for reader, n in store.readers.items() if reader in _LOOKS)

    async def parked_poll() -> asyncio.Task[pb.PollWorkflowTaskQueueResponse]:
        parked.clear()
        poll = asyncio.create_task(wire.poll_workflow_task("found-empty", timeout=60.0))
        await asyncio.wait_for(parked.wait(), 20.0)
        return poll

    try:
        first = await parked_poll()
        assert looks() == 1, dict(store.readers)
        first.cancel()
        await asyncio.gather(first, return_exceptions=True)
        store.reset()
        second = await parked_poll()
        assert looks() == 0, dict(store.readers)
        await wire.start("found-empty-1", "found-empty")
        assert (await asyncio.wait_for(second, 20.0)).workflow_execution.workflow_id == "found-empty-1"
        await wire.start("found-empty-2", "found-empty")
        third = await wire.poll_workflow_task("found-empty", timeout=20.0)
        assert third.workflow_execution.workflow_id == "found-empty-2"
        assert looks() == 1, dict(store.readers)
    finally:
        await wire.close()
        await server.stop()


async def test_a_commit_wakes_a_queue_only_for_a_task_it_left_visible(
    unhurried_server: FlowForgeServer, store_url: str, store_kind: str
) -> None:
    """A task leased in the transaction that created it (eager start, eager activity,
    folded workflow task) is no one else's to take: its commit wakes no poll of its
    queue, in this process or (PostgreSQL) in another replica through the NOTIFY. A
    task left visible wakes its queue, in both. Counted exactly, since every queue
    wake-up costs each replica's parked polls of the queue a look."""
    server = unhurried_server
    woken: collections.Counter[str] = collections.Counter()
    notify = server.store.notifier.notify

    def counting_notify(channel: str) -> None:
        woken[channel] += 1
        notify(channel)

    server.store.notifier.notify = counting_notify  # type: ignore[method-assign]
    notified: collections.Counter[str] = collections.Counter()
    listener = None
    if store_kind == "postgresql":
        import asyncpg

        # What the other replicas are told: the payloads (JSON arrays of channels) on the store's NOTIFY channel.
        listener = await asyncpg.connect(store_url)
        await listener.add_listener(
            NOTIFY_CHANNEL, lambda _c, _pid, _ch, payload: notified.update(json.loads(str(payload)))
        )
    client = await Client.connect(f"127.0.0.1:{server.port}")
    queue = f"wake-{uuid.uuid4().hex[:8]}"
    channels = [queue_channel(NS, kind, queue) for kind in (TaskKind.WORKFLOW, TaskKind.ACTIVITY)]
    try:
        async with Worker(client, task_queue=queue, workflows=[SingleActivity], activities=[noop]):
            warm = await client.start_workflow(SingleActivity.run, -1, id=f"warm-{queue}", task_queue=queue)
            await _result(warm)
            if listener is not None:
                # The warm-up's first task may have waited for the worker's first poll. Its
                # close is its last commit and the sender sends in order: count from there.
                await wait_until(
                    lambda: close_channel(warm.run_id or "") in notified,
                    timeout=10.0,
                    what="the NOTIFY of the warm-up's close",
                    interval=0.01,
                )
                notified.clear()
            for i in range(SINGLES):
                # Eager only with the stream's poll back in wait (as in the stream's cost test).
                await wait_until(
                    lambda: server.matching.idle_workflow_polls(NS, queue) >= 1,
                    timeout=30.0,
                    what="the stream's workflow poll to wait on the queue",
                    interval=0.01,
                )
                woken.clear()
                handle = await client.start_workflow(SingleActivity.run, i, id=f"single-{queue}-{i}", task_queue=queue)
                assert await _result(handle) == i
                # The start leased the first task to the waiting poll, its completion the
                # activity, the activity's completion folded the closing task in: no
                # commit left a task for anyone, so no queue was woken; the close was.
                assert [woken[channel] for channel in channels] == [0, 0], dict(woken)
                assert woken[close_channel(handle.run_id or "")] >= 1, dict(woken)
        # A start with no poll waiting leaves its first task visible: its queue is woken once.
        idle_queue = f"idle-{queue}"
        woken.clear()
        handle = await client.start_workflow(SingleActivity.run, 0, id=f"idle-{queue}", task_queue=idle_queue)
        assert woken[queue_channel(NS, TaskKind.WORKFLOW, idle_queue)] == 1, dict(woken)
        if listener is not None:
            await wait_until(
                lambda: queue_channel(NS, TaskKind.WORKFLOW, idle_queue) in notified,
                timeout=10.0,
                what="the NOTIFY of the visible task's queue",
                interval=0.01,
            )
            # Every commit of the eager runs has been sent (the sender sends in order).
            assert notified[queue_channel(NS, TaskKind.WORKFLOW, idle_queue)] == 1, dict(notified)
            assert [notified[channel] for channel in channels] == [0, 0], dict(notified)
    finally:
        await client.close()
        if listener is not None:
            await listener.close()
