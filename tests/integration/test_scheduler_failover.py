"""Split brain: two server replicas on one PostgreSQL, each running the scheduler.

Replica A leads (it started first). A schedule fires every second. A is frozen
with SIGSTOP past its lease's TTL; B takes the lease over with a higher fencing
token and keeps firing. A is resumed with SIGCONT: it still believes it leads,
its first write with the old token is refused by the store, and it demotes
itself. Across the whole run every nominal second from the first fire to the
last has exactly one execution: none fired twice, none was missed.
"""

from __future__ import annotations

import asyncio
import signal
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from flowforge import Client
from flowforge.client import (
    Schedule,
    ScheduleActionStartWorkflow,
    ScheduleIntervalSpec,
    ScheduleOverlapPolicy,
    SchedulePolicy,
    ScheduleSpec,
)
from tests.integration._processes import ServerProcess
from testsupport.waiting import wait_until

pytestmark = pytest.mark.postgres

TTL_S = 2.0
# Short lease and passes so the test stays well under a minute.
SCHEDULER_FLAGS = (
    "--scheduler-lease-ttl",
    str(TTL_S),
    "--scheduler-renew-interval",
    "0.4",
    "--scheduler-max-sleep",
    "0.2",
)


async def _fired(client: Client) -> Counter[str]:
    """Runs per workflow id of the schedule's executions."""
    return Counter([e.workflow_id async for e in client.list_workflows() if e.workflow_id.startswith("tick-")])


async def test_a_frozen_leader_is_superseded_and_its_writes_are_refused(postgres_dsn: str, tmp_path: Path) -> None:
    a = ServerProcess(postgres_dsn, tmp_path, name="replica-a", extra_args=SCHEDULER_FLAGS)
    b = ServerProcess(postgres_dsn, tmp_path, name="replica-b", extra_args=SCHEDULER_FLAGS)
    a.start()
    client_a = await Client.connect(a.address)
    try:
        await wait_until(lambda: _leads(client_a), timeout=10, what="replica A to take the scheduler lease")
        b.start()
        client_b = await Client.connect(b.address)
        try:
            await _split_brain(a, client_a, client_b)
        finally:
            await client_b.close()
    finally:
        if a.process is not None and a.process.poll() is None:
            a.process.send_signal(signal.SIGCONT)
        await client_a.close()
        a.stop()
        b.stop()


async def _leads(client: Client) -> bool:
    return (await client.get_scheduler_status()).replica_is_leader


async def _split_brain(a: ServerProcess, client_a: Client, client_b: Client) -> None:
    assert a.process is not None
    created = datetime.now(UTC)
    handle = await client_a.create_schedule(
        "ticks",
        Schedule(
            action=ScheduleActionStartWorkflow("Tick", id="tick", task_queue="ticks"),
            spec=ScheduleSpec(intervals=[ScheduleIntervalSpec(every=timedelta(seconds=1))]),
            policy=SchedulePolicy(overlap=ScheduleOverlapPolicy.ALLOW_ALL),
        ),
    )
    await wait_until(lambda: _count_at_least(client_b, 2), timeout=10, what="A to fire twice")
    before = await client_a.get_scheduler_status()
    assert before.replica_is_leader and before.leader_identity == before.replica_identity

    # Freeze A. If it happened to be frozen inside a transaction that holds the lease
    # row, B cannot take over until it resumes: thaw it and freeze it again.
    for _attempt in range(3):
        a.process.send_signal(signal.SIGSTOP)
        frozen_at = datetime.now(UTC)
        try:
            await wait_until(lambda: _leads(client_b), timeout=TTL_S + 6, what="B to take the lease over")
            break
        except AssertionError:
            a.process.send_signal(signal.SIGCONT)
            await asyncio.sleep(0.5)
    else:
        pytest.fail("B never took the scheduler lease over from the frozen A")
    taken = await client_b.get_scheduler_status()
    assert taken.fencing_token > before.fencing_token
    # Not before A's lease ran out (A renewed at most 0.4 s before it froze), and promptly after.
    assert taken.leader_since is not None
    takeover_s = (taken.leader_since - frozen_at).total_seconds()
    assert TTL_S - 0.5 <= takeover_s <= TTL_S + 3, takeover_s
    assert taken.leader_identity == taken.replica_identity != before.replica_identity
    fired_by_a = sum((await _fired(client_b)).values())
    await wait_until(lambda: _count_at_least(client_b, fired_by_a + 3), timeout=10, what="B to fire while A is frozen")

    a.process.send_signal(signal.SIGCONT)
    resumed = await wait_until(lambda: _demoted(client_a), timeout=10, what="A to find out and demote itself")
    assert resumed.replica_rejected_writes >= 1
    assert [c.event for c in resumed.replica_leader_changes][-2:] == ["acquired", "lost"]
    assert resumed.leader_identity == taken.replica_identity and resumed.fencing_token == taken.fencing_token
    fired_so_far = sum((await _fired(client_b)).values())
    await wait_until(lambda: _count_at_least(client_b, fired_so_far + 2), timeout=10, what="B to keep firing")
    await handle.pause(note="end of the test")
    stopped = datetime.now(UTC)

    runs = await _fired(client_b)
    assert all(count == 1 for count in runs.values()), [w for w, c in runs.items() if c > 1]
    nominal = sorted(datetime.fromisoformat(w.removeprefix("tick-").replace("Z", "+00:00")) for w in runs)
    expected = [nominal[0] + timedelta(seconds=i) for i in range(len(nominal))]
    assert nominal == expected, f"missed: {sorted(set(expected) - set(nominal))}"
    assert nominal[0] <= created + timedelta(seconds=2)
    assert nominal[-1] >= stopped - timedelta(seconds=3)
    origin = (await client_b.get_workflow_handle(f"tick-{nominal[-1]:%Y-%m-%dT%H:%M:%SZ}").describe()).origin
    assert origin is not None and origin["schedule_id"] == "ticks"


async def _count_at_least(client: Client, count: int) -> bool:
    return sum((await _fired(client)).values()) >= count


async def _demoted(client: Client):  # type: ignore[no-untyped-def]
    status = await client.get_scheduler_status()
    return status if not status.replica_is_leader and status.replica_rejected_writes else None
