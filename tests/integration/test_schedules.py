"""Schedules on a server whose clock the test controls (both stores): overlap
policies, misfire policies after an outage, pause/trigger/backfill, bad input, and
the fencing that keeps a superseded scheduler from writing."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import grpc
import pytest

from flowforge import Client
from flowforge.client import (
    Schedule,
    ScheduleActionStartWorkflow,
    ScheduleHandle,
    ScheduleIntervalSpec,
    ScheduleMisfirePolicy,
    ScheduleOverlapPolicy,
    SchedulePolicy,
    ScheduleSpec,
)
from flowforge.common import WorkflowExecutionStatus
from flowforge.exceptions import RPCError
from flowforge.server import FlowForgeServer, SchedulerConfig, ServerConfig
from flowforge.server.clock import ManualClock
from flowforge.server.scheduler import Scheduler
from flowforge.server.stores.base import FencingTokenRejected, Transaction

HOUR = timedelta(hours=1)
# A Monday, midnight UTC: hourly fires are at 01:00, 02:00, ...
START = datetime(2026, 1, 5, 0, 0, tzinfo=UTC)


def _us(moment: datetime) -> int:
    return int(moment.timestamp() * 1_000_000)


class Rig:
    """A server on a manual clock, a client, and a way to run the scheduler now."""

    def __init__(self, store_url: str) -> None:
        self.store_url = store_url
        self.clock = ManualClock(_us(START))
        self.server: FlowForgeServer
        self.client: Client

    async def start(self) -> None:
        self.server = FlowForgeServer(
            # No background loop: the test runs each pass itself, at the time it chose.
            ServerConfig(store=self.store_url, port=0, clock=self.clock, scheduler=SchedulerConfig(enabled=False))
        )
        await self.server.start()
        self.client = await Client.connect(f"127.0.0.1:{self.server.port}")

    async def stop(self) -> None:
        await self.client.close()
        await self.server.stop()

    async def advance(self, delta: timedelta) -> None:
        """Moves time and runs one scheduler pass at the new time."""
        self.clock.advance(int(delta.total_seconds() * 1_000_000))
        await self.server.scheduler.tick()

    async def hourly(
        self,
        schedule_id: str,
        *,
        overlap: ScheduleOverlapPolicy = ScheduleOverlapPolicy.SKIP,
        misfire: ScheduleMisfirePolicy = ScheduleMisfirePolicy.CATCH_UP,
        catchup_window: timedelta = 365 * 24 * HOUR,
    ) -> ScheduleHandle:
        return await self.client.create_schedule(
            schedule_id,
            Schedule(
                action=ScheduleActionStartWorkflow("Report", {"kind": "hourly"}, id=schedule_id, task_queue="reports"),
                spec=ScheduleSpec(intervals=[ScheduleIntervalSpec(every=HOUR)]),
                policy=SchedulePolicy(overlap=overlap, misfire=misfire, catchup_window=catchup_window),
            ),
        )

    async def runs(self, prefix: str) -> dict[str, WorkflowExecutionStatus]:
        """Workflow id -> status of every run the schedule started."""
        return {
            e.workflow_id: e.status
            async for e in self.client.list_workflows()
            if e.workflow_id.startswith(prefix + "-")
        }

    async def terminate(self, workflow_id: str) -> None:
        await self.client.get_workflow_handle(workflow_id).terminate(reason="the test ends this run")


@pytest.fixture
async def rig(store_url: str) -> AsyncIterator[Rig]:
    instance = Rig(store_url)
    await instance.start()
    yield instance
    await instance.stop()


R = WorkflowExecutionStatus.RUNNING


# ------------------------------------------------------------------ firing


async def test_a_fire_starts_a_run_with_a_deterministic_id_that_records_its_schedule(rig: Rig) -> None:
    handle = await rig.hourly("report")
    await rig.advance(HOUR)
    assert await rig.runs("report") == {"report-2026-01-05T01:00:00Z": R}
    run = rig.client.get_workflow_handle("report-2026-01-05T01:00:00Z")
    origin = {
        "kind": "schedule",
        "schedule_id": "report",
        "nominal_time": "2026-01-05T01:00:00Z",
        "trigger": "scheduled",
    }
    assert (await run.describe()).origin == origin
    started = (await run.fetch_history()).events[0]
    assert started.attributes["origin"] == origin
    assert started.attributes["workflow_type"] == "Report"
    info = (await handle.describe()).info
    assert info.num_actions == 1
    assert info.running_workflow_ids == ["report-2026-01-05T01:00:00Z"]
    assert info.next_action_times[0] == datetime(2026, 1, 5, 2, 0, tzinfo=UTC)
    # Running the pass again at the same time fires nothing more.
    await rig.server.scheduler.tick()
    assert len(await rig.runs("report")) == 1


# ------------------------------------------------------------------ overlap


async def test_overlap_skip_drops_a_fire_while_the_previous_run_runs(rig: Rig) -> None:
    handle = await rig.hourly("skip", overlap=ScheduleOverlapPolicy.SKIP)
    await rig.advance(HOUR)
    await rig.advance(HOUR)
    assert await rig.runs("skip") == {"skip-2026-01-05T01:00:00Z": R}
    assert (await handle.describe()).info.num_actions_skipped_overlap == 1
    await rig.terminate("skip-2026-01-05T01:00:00Z")
    await rig.advance(HOUR)
    assert "skip-2026-01-05T03:00:00Z" in await rig.runs("skip")


async def test_overlap_buffer_one_starts_one_waiting_fire_when_the_run_closes(rig: Rig) -> None:
    handle = await rig.hourly("buffer", overlap=ScheduleOverlapPolicy.BUFFER_ONE)
    await rig.advance(HOUR)
    await rig.advance(HOUR)  # buffered
    await rig.advance(HOUR)  # the one slot is taken: dropped
    info = (await handle.describe()).info
    assert (info.buffered_actions, info.num_actions_skipped_overlap) == (1, 1)
    assert list(await rig.runs("buffer")) == ["buffer-2026-01-05T01:00:00Z"]
    await rig.terminate("buffer-2026-01-05T01:00:00Z")
    await rig.advance(timedelta(seconds=1))
    runs = await rig.runs("buffer")
    assert runs["buffer-2026-01-05T02:00:00Z"] == R
    assert "buffer-2026-01-05T03:00:00Z" not in runs


async def test_overlap_allow_all_starts_every_fire(rig: Rig) -> None:
    await rig.hourly("all", overlap=ScheduleOverlapPolicy.ALLOW_ALL)
    await rig.advance(HOUR)
    await rig.advance(HOUR)
    assert await rig.runs("all") == {"all-2026-01-05T01:00:00Z": R, "all-2026-01-05T02:00:00Z": R}


async def test_a_schedule_tracks_its_hundred_newest_running_runs(rig: Rig) -> None:
    handle = await rig.client.create_schedule(
        "many",
        Schedule(
            action=ScheduleActionStartWorkflow("Report", id="many", task_queue="reports"),
            spec=ScheduleSpec(intervals=[ScheduleIntervalSpec(every=timedelta(minutes=1))]),
            policy=SchedulePolicy(overlap=ScheduleOverlapPolicy.ALLOW_ALL),
        ),
    )
    await handle.backfill(START - timedelta(minutes=119), START)
    await rig.server.scheduler.tick()
    assert len(await rig.runs("many")) == 120
    info = (await handle.describe()).info
    assert info.num_actions == 120 and len(info.running_workflow_ids) == 100
    assert info.running_workflow_ids[-1] == "many-2026-01-05T00:00:00Z"


async def test_overlap_cancel_other_requests_cancellation_and_starts_after_the_run_closes(rig: Rig) -> None:
    await rig.hourly("cancel", overlap=ScheduleOverlapPolicy.CANCEL_OTHER)
    await rig.advance(HOUR)
    await rig.advance(HOUR)
    first = rig.client.get_workflow_handle("cancel-2026-01-05T01:00:00Z")
    assert "WorkflowExecutionCancelRequested" in [e.event_type for e in (await first.fetch_history()).events]
    assert list(await rig.runs("cancel")) == ["cancel-2026-01-05T01:00:00Z"]
    await first.terminate(reason="the workflow acknowledged the cancellation")  # no worker runs it here
    await rig.advance(timedelta(seconds=1))
    assert (await rig.runs("cancel"))["cancel-2026-01-05T02:00:00Z"] == R


async def test_overlap_terminate_other_terminates_the_run_and_starts_at_once(rig: Rig) -> None:
    await rig.hourly("term", overlap=ScheduleOverlapPolicy.TERMINATE_OTHER)
    await rig.advance(HOUR)
    await rig.advance(HOUR)
    assert await rig.runs("term") == {
        "term-2026-01-05T01:00:00Z": WorkflowExecutionStatus.TERMINATED,
        "term-2026-01-05T02:00:00Z": R,
    }


# ------------------------------------------------------------------ DST, through the server


@pytest.mark.parametrize(
    ("zone", "day_before", "expected"),
    [
        # Spring forward: 02:30 does not exist; the fire comes when the clocks jump (03:00 local).
        ("Europe/Stockholm", datetime(2026, 3, 28, 12, tzinfo=UTC), ["2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z"]),
        ("America/New_York", datetime(2026, 3, 7, 12, tzinfo=UTC), ["2026-03-08T07:00:00Z", "2026-03-09T06:30:00Z"]),
        # Fall back: 02:30 (Stockholm) and 01:30 (New York) happen twice; one fire, at the first.
        ("Europe/Stockholm", datetime(2026, 10, 24, 12, tzinfo=UTC), ["2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"]),
        ("America/New_York", datetime(2026, 10, 31, 12, tzinfo=UTC), ["2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"]),
    ],
)
async def test_a_daily_schedule_fires_once_on_each_dst_night(
    rig: Rig, zone: str, day_before: datetime, expected: list[str]
) -> None:
    rig.clock.set(_us(day_before))
    hour = "1" if zone == "America/New_York" and day_before.month == 10 else "2"
    handle = await rig.client.create_schedule(
        "dst",
        Schedule(
            action=ScheduleActionStartWorkflow("Report", id="dst", task_queue="reports"),
            spec=ScheduleSpec(cron_expressions=[f"30 {hour} * * *"], time_zone_name=zone),
            policy=SchedulePolicy(overlap=ScheduleOverlapPolicy.ALLOW_ALL),
        ),
    )
    for _night in expected:
        # Move to the next fire time the server announces, then one hour on: nothing more fires.
        next_fire = (await handle.describe()).info.next_action_times[0]
        rig.clock.set(_us(next_fire))
        await rig.server.scheduler.tick()
        await rig.advance(HOUR)
    assert await rig.runs("dst") == {f"dst-{night}": R for night in expected}
    assert {a.trigger for a in (await handle.describe()).info.recent_actions} == {"scheduled"}


# ------------------------------------------------------------------ misfire after a 3-hour outage


async def _outage(
    rig: Rig, schedule_id: str, misfire: ScheduleMisfirePolicy, window: timedelta
) -> dict[str, WorkflowExecutionStatus]:
    """Creates an hourly ALLOW_ALL schedule, stops the server for 3 h 10 min
    (fires at 01:00, 02:00 and 03:00 missed), restarts it on the same store."""
    await rig.hourly(schedule_id, overlap=ScheduleOverlapPolicy.ALLOW_ALL, misfire=misfire, catchup_window=window)
    await rig.stop()
    rig.clock.advance(int((3 * HOUR + timedelta(minutes=10)).total_seconds() * 1_000_000))
    await rig.start()
    await rig.server.scheduler.tick()
    return await rig.runs(schedule_id)


async def test_misfire_skip_runs_none_of_the_missed_fires(rig: Rig) -> None:
    assert await _outage(rig, "m-skip", ScheduleMisfirePolicy.SKIP, 365 * 24 * HOUR) == {}
    info = (await rig.client.get_schedule_handle("m-skip").describe()).info
    assert info.num_actions_missed_catchup_window == 3
    await rig.advance(timedelta(minutes=50))  # 04:00, on time
    assert list(await rig.runs("m-skip")) == ["m-skip-2026-01-05T04:00:00Z"]


async def test_misfire_run_once_runs_the_latest_missed_fire_once(rig: Rig) -> None:
    assert await _outage(rig, "m-once", ScheduleMisfirePolicy.RUN_ONCE, 365 * 24 * HOUR) == {
        "m-once-2026-01-05T03:00:00Z": R
    }


async def test_misfire_catch_up_runs_every_missed_fire_within_the_window(rig: Rig) -> None:
    runs = await _outage(rig, "m-catch", ScheduleMisfirePolicy.CATCH_UP, timedelta(hours=2))
    # 01:00 is 3 h 10 min old: outside the window. 02:00 and 03:00 are inside.
    assert runs == {"m-catch-2026-01-05T02:00:00Z": R, "m-catch-2026-01-05T03:00:00Z": R}
    started = await rig.client.get_workflow_handle("m-catch-2026-01-05T02:00:00Z").describe()
    assert started.origin is not None and started.origin["trigger"] == "catchup"


# ------------------------------------------------------------------ pause, trigger, backfill, delete


async def test_pause_stops_fires_and_unpause_does_not_run_the_fires_missed_while_paused(rig: Rig) -> None:
    handle = await rig.hourly("paused", overlap=ScheduleOverlapPolicy.ALLOW_ALL)
    await handle.pause(note="maintenance window, ticket OPS-12")
    description = await handle.describe()
    assert description.schedule.state.paused and description.schedule.state.note == "maintenance window, ticket OPS-12"
    assert description.info.next_action_times == []
    await rig.advance(2 * HOUR)
    assert await rig.runs("paused") == {}
    await handle.unpause(note="done")
    await rig.advance(timedelta(0))
    assert await rig.runs("paused") == {}
    await rig.advance(HOUR)
    assert list(await rig.runs("paused")) == ["paused-2026-01-05T03:00:00Z"]


async def test_trigger_fires_now_even_while_paused(rig: Rig) -> None:
    handle = await rig.hourly("manual")
    await handle.pause(note="only by hand")
    await handle.trigger()
    await rig.server.scheduler.tick()
    runs = await rig.runs("manual")
    assert list(runs) == ["manual-2026-01-05T00:00:00Z"]
    assert (await handle.describe()).info.recent_actions[0].trigger == "trigger"


async def test_backfill_fires_every_nominal_time_in_the_range_once(rig: Rig) -> None:
    handle = await rig.hourly("back", overlap=ScheduleOverlapPolicy.ALLOW_ALL)
    start = datetime(2026, 1, 4, 21, 0, tzinfo=UTC)
    await handle.backfill(start, start + 2 * HOUR)
    await rig.server.scheduler.tick()
    expected = {f"back-2026-01-04T{h}:00:00Z": R for h in (21, 22, 23)}
    assert await rig.runs("back") == expected
    await handle.backfill(start, start + 2 * HOUR)  # the same range again: refused by the ids
    await rig.server.scheduler.tick()
    assert await rig.runs("back") == expected


async def test_list_and_delete(rig: Rig) -> None:
    handle = await rig.hourly("b-listed")
    await rig.hourly("a-listed")
    assert [d.id async for d in rig.client.list_schedules()] == ["a-listed", "b-listed"]
    await handle.delete()
    assert [d.id async for d in rig.client.list_schedules()] == ["a-listed"]
    with pytest.raises(RPCError) as raised:
        await handle.describe()
    assert raised.value.status == grpc.StatusCode.NOT_FOUND


# ------------------------------------------------------------------ bad input


def _cron(expression: str, zone: str = "UTC") -> Schedule:
    return Schedule(
        action=ScheduleActionStartWorkflow("Report", id="bad", task_queue="reports"),
        spec=ScheduleSpec(cron_expressions=[expression], time_zone_name=zone),
    )


@pytest.mark.parametrize(
    ("schedule", "message"),
    [
        (_cron("61 2 * * *"), "invalid cron expression '61 2 * * *'"),
        (_cron("0 2 * *"), "expected five fields"),
        (_cron("0 2 * * *", "Europe/Atlantis"), "unknown time zone 'Europe/Atlantis'"),
        (
            Schedule(action=ScheduleActionStartWorkflow("Report", id="bad", task_queue="q"), spec=ScheduleSpec()),
            "at least one cron expression or interval",
        ),
    ],
)
async def test_an_invalid_schedule_is_refused_and_nothing_is_created(
    rig: Rig, schedule: Schedule, message: str
) -> None:
    with pytest.raises(RPCError) as raised:
        await rig.client.create_schedule("bad", schedule)
    assert raised.value.status == grpc.StatusCode.INVALID_ARGUMENT
    assert message in raised.value.message
    assert [d.id async for d in rig.client.list_schedules()] == []


async def test_a_duplicate_create_is_already_exists_and_leaves_the_first(rig: Rig) -> None:
    await rig.hourly("dup")
    with pytest.raises(RPCError) as raised:
        await rig.client.create_schedule("dup", _cron("0 2 * * *"))
    assert raised.value.status == grpc.StatusCode.ALREADY_EXISTS
    description = await rig.client.get_schedule_handle("dup").describe()
    assert description.schedule.spec.cron_expressions == []
    assert description.schedule.spec.intervals == [ScheduleIntervalSpec(every=HOUR)]


async def test_an_unknown_schedule_id_is_not_found_for_every_operation(rig: Rig) -> None:
    handle = rig.client.get_schedule_handle("nope")
    for operation in (
        handle.describe(),
        handle.pause(),
        handle.unpause(),
        handle.trigger(),
        handle.backfill(START, START + HOUR),
        handle.delete(),
    ):
        with pytest.raises(RPCError) as raised:
            await operation
        assert raised.value.status == grpc.StatusCode.NOT_FOUND
        assert "schedule 'nope' not found" in raised.value.message


# ------------------------------------------------------------------ leader election and fencing


async def test_a_superseded_leader_cannot_write_and_demotes_itself(rig: Rig) -> None:
    await rig.hourly("fenced", overlap=ScheduleOverlapPolicy.ALLOW_ALL)
    old = rig.server.scheduler
    await old.tick()
    first = await rig.client.get_scheduler_status()
    assert first.replica_is_leader and first.leader_identity == old.identity
    # A second replica's scheduler on the same store takes over once the lease lapsed
    # (the old leader "froze": it did not renew).
    rig.clock.advance(int((old.config.lease_ttl_s + 1) * 1_000_000))
    successor = Scheduler(rig.server.engine, SchedulerConfig(enabled=False))
    await successor.tick()
    assert successor.is_leader
    status = await successor.status()
    assert status.lease is not None and status.lease.fencing_token == first.fencing_token + 1
    # The old leader still believes it leads; its schedule write carries the old token.
    rig.clock.advance(int(HOUR.total_seconds() * 1_000_000))
    assert old.is_leader

    async def write_with_the_old_token(tx: Transaction) -> None:
        row = await tx.get_schedule("default", "fenced")
        assert row is not None
        row.paused = 1
        await tx.update_schedule(row, row.version, first.fencing_token)

    with pytest.raises(FencingTokenRejected):
        await rig.server.engine.transaction(write_with_the_old_token)
    assert not (await rig.client.get_schedule_handle("fenced").describe()).schedule.state.paused
    # Its next pass finds that out and demotes it; the successor fires.
    await old.tick()
    assert not old.is_leader
    status = await rig.client.get_scheduler_status()
    assert not status.replica_is_leader and status.replica_rejected_writes == 1
    assert [c.event for c in status.replica_leader_changes] == ["acquired", "lost"]
    assert status.leader_identity == successor.identity
    await successor.tick()
    assert list(await rig.runs("fenced")) == ["fenced-2026-01-05T01:00:00Z"]
    await successor.stop()
