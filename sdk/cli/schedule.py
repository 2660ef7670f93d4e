"""``flowforge schedule ...``: cron and interval schedules (docs/schedules.md)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import click

from flowforge.cli._connection import Connection, client_command, run
from flowforge.cli._output import emit_json, emit_table, output_option, progress, stamp
from flowforge.cli._params import JSON, MOMENT

if TYPE_CHECKING:
    from flowforge.client import Client, ScheduleDescription, ScheduleHandle

__all__ = ["schedule"]

_OVERLAP_CHOICES = ("SKIP", "BUFFER_ONE", "ALLOW_ALL", "CANCEL_OTHER", "TERMINATE_OTHER")
# A backfill is sent in pieces (the server takes at most 1,000 fire times per request);
# a long range is cut into this many to begin with, so its progress shows.
_BACKFILL_PIECES = 20
_ONE_MICROSECOND = timedelta(microseconds=1)


def _schedule_id_option(fn: Any) -> Any:
    return click.option("--schedule-id", "-s", required=True, help="the schedule's id")(fn)


def _overlap_option(fn: Any) -> Any:
    return click.option(
        "--overlap",
        type=click.Choice(_OVERLAP_CHOICES, case_sensitive=False),
        default=None,
        help="what to do when a run is still going (default: the schedule's policy, SKIP at create)",
    )(fn)


def _note_option(fn: Any) -> Any:
    return click.option("--note", default="", help="why, for people")(fn)


@click.group()
def schedule() -> None:
    """Cron and interval schedules that start workflows."""


def _schedule_dict(description: ScheduleDescription) -> dict[str, Any]:
    spec, action, policy = description.schedule.spec, description.schedule.action, description.schedule.policy
    state, info = description.schedule.state, description.info
    return {
        "schedule_id": description.id,
        "workflow_type": action.workflow,
        "task_queue": action.task_queue,
        "workflow_id_prefix": action.id,
        "args": action.args,
        "cron_expressions": list(spec.cron_expressions),
        "intervals_s": [i.every.total_seconds() for i in spec.intervals],
        "time_zone": spec.time_zone_name,
        "overlap": policy.overlap.name,
        "misfire": policy.misfire.name,
        "catchup_window_s": policy.catchup_window.total_seconds(),
        "paused": state.paused,
        "note": state.note,
        "actions": info.num_actions,
        "skipped_overlap": info.num_actions_skipped_overlap,
        "missed": info.num_actions_missed_catchup_window,
        "buffered": info.buffered_actions,
        "running": info.running_workflow_ids,
        "recent_actions": [
            {
                "nominal_time": stamp(a.scheduled_at),
                "started_at": stamp(a.started_at),
                "workflow_id": a.workflow_id,
                "run_id": a.run_id,
                "trigger": a.trigger,
            }
            for a in info.recent_actions
        ],
        "next_action_times": [stamp(t) for t in info.next_action_times],
    }


@schedule.command()
@_schedule_id_option
@click.option("--workflow-type", required=True, help="workflow type name")
@click.option("--task-queue", "-t", required=True, help="task queue its workers poll")
@click.option("--workflow-id", "-w", required=True, help="prefix of the started workflow ids")
@click.option("--cron", multiple=True, help="five-field cron expression (repeat for several)")
@click.option(
    "--interval", type=click.FloatRange(min=0, min_open=True), multiple=True, help="fire every N seconds (repeatable)"
)
@click.option("--time-zone", default="UTC", show_default=True, help="IANA zone of the cron expressions")
@click.option("--input", "-i", "inputs", type=JSON, multiple=True, help="a JSON argument (repeat for several)")
@_overlap_option
@click.option(
    "--misfire",
    type=click.Choice(("SKIP", "RUN_ONCE", "CATCH_UP"), case_sensitive=False),
    default="CATCH_UP",
    show_default=True,
    help="what to do with fires missed while the server was down",
)
@click.option(
    "--catchup-window",
    type=click.FloatRange(min=0, min_open=True),
    default=365 * 24 * 3600.0,
    show_default=True,
    help="seconds a missed fire may still run",
)
@click.option("--paused", is_flag=True, help="create it paused")
@_note_option
@client_command
def create(
    connection: Connection,
    schedule_id: str,
    workflow_type: str,
    task_queue: str,
    workflow_id: str,
    cron: tuple[str, ...],
    interval: tuple[float, ...],
    time_zone: str,
    inputs: tuple[Any, ...],
    overlap: str | None,
    misfire: str,
    catchup_window: float,
    paused: bool,
    note: str,
) -> None:
    """Create a schedule that starts a workflow."""
    from flowforge import client as api

    new = api.Schedule(
        action=api.ScheduleActionStartWorkflow(workflow_type, args=list(inputs), id=workflow_id, task_queue=task_queue),
        spec=api.ScheduleSpec(
            cron_expressions=list(cron),
            time_zone_name=time_zone,
            intervals=[api.ScheduleIntervalSpec(every=timedelta(seconds=s)) for s in interval],
        ),
        policy=api.SchedulePolicy(
            overlap=api.ScheduleOverlapPolicy[(overlap or "SKIP").upper()],
            misfire=api.ScheduleMisfirePolicy[misfire.upper()],
            catchup_window=timedelta(seconds=catchup_window),
        ),
        state=api.ScheduleState(paused=paused, note=note),
    )

    async def act(client: Client) -> None:
        await client.create_schedule(schedule_id, new)

    run(connection, act)
    click.echo(f"schedule {schedule_id} created")


@schedule.command(name="list")
@output_option
@client_command
def list_(connection: Connection, output: str) -> None:
    """Schedules by id."""

    async def act(client: Client) -> list[dict[str, Any]]:
        return [_schedule_dict(d) async for d in client.list_schedules()]

    schedules = run(connection, act)
    if output == "json":
        emit_json(schedules)
        return
    emit_table(
        ("SCHEDULE ID", "WORKFLOW TYPE", "SPEC", "ZONE", "PAUSED", "ACTIONS"),
        (
            (
                d["schedule_id"],
                d["workflow_type"],
                " | ".join(d["cron_expressions"] + [f"every {s:g}s" for s in d["intervals_s"]]),
                d["time_zone"],
                "yes" if d["paused"] else "no",
                d["actions"],
            )
            for d in schedules
        ),
        empty="no schedules",
    )


def _with_handle(connection: Connection, schedule_id: str, action: Any) -> Any:
    async def act(client: Client) -> Any:
        return await action(client.get_schedule_handle(schedule_id))

    return run(connection, act)


@schedule.command()
@_schedule_id_option
@output_option
@client_command
def describe(connection: Connection, schedule_id: str, output: str) -> None:
    """A schedule, its recent and next fires."""

    async def act(handle: ScheduleHandle) -> dict[str, Any]:
        return _schedule_dict(await handle.describe())

    described = _with_handle(connection, schedule_id, act)
    if output == "json":
        emit_json(described)
    else:
        for key, value in described.items():
            click.echo(f"{key}: {value}")


@schedule.command()
@_schedule_id_option
@_note_option
@client_command
def pause(connection: Connection, schedule_id: str, note: str) -> None:
    """Stop firing (trigger and backfill still work)."""

    async def act(handle: ScheduleHandle) -> None:
        await handle.pause(note=note)

    _with_handle(connection, schedule_id, act)
    click.echo(f"schedule {schedule_id} paused")


@schedule.command()
@_schedule_id_option
@_note_option
@client_command
def unpause(connection: Connection, schedule_id: str, note: str) -> None:
    """Fire again from now on."""

    async def act(handle: ScheduleHandle) -> None:
        await handle.unpause(note=note)

    _with_handle(connection, schedule_id, act)
    click.echo(f"schedule {schedule_id} unpaused")


def _overlap(name: str | None) -> Any:
    from flowforge.client import ScheduleOverlapPolicy

    return ScheduleOverlapPolicy[name.upper()] if name else None


@schedule.command()
@_schedule_id_option
@_overlap_option
@client_command
def trigger(connection: Connection, schedule_id: str, overlap: str | None) -> None:
    """Fire now."""

    async def act(handle: ScheduleHandle) -> None:
        await handle.trigger(overlap=_overlap(overlap))

    _with_handle(connection, schedule_id, act)
    click.echo(f"schedule {schedule_id} triggered")


@schedule.command()
@_schedule_id_option
@click.option("--start", type=MOMENT, required=True, help="ISO 8601 with an offset, e.g. 2026-03-01T00:00:00+00:00")
@click.option("--end", type=MOMENT, required=True, help="ISO 8601 with an offset (inclusive)")
@_overlap_option
@client_command
def backfill(connection: Connection, schedule_id: str, start: datetime, end: datetime, overlap: str | None) -> None:
    """Fire every nominal time in a range (any length: sent in pieces, with progress)."""
    if end < start:
        raise click.BadParameter(f"{stamp(end)} is before --start {stamp(start)}", param_hint="'--end'")

    async def act(handle: ScheduleHandle) -> None:
        await _backfill_in_pieces(handle, start, end, _overlap(overlap))

    _with_handle(connection, schedule_id, act)
    click.echo(f"schedule {schedule_id} backfill queued")


async def _backfill_in_pieces(handle: ScheduleHandle, start: datetime, end: datetime, overlap: Any) -> None:
    """Backfills ``[start, end]`` as adjacent pieces, halving a piece the server finds too long."""
    from flowforge.exceptions import RPCError

    whole = end - start
    piece = max(whole / _BACKFILL_PIECES, timedelta(seconds=1))
    with progress(f"backfill {handle.id}", whole.total_seconds()) as advance:
        begin = start
        while begin <= end:
            until = min(begin + piece, end)
            try:
                await handle.backfill(begin, until, overlap=overlap)
            except RPCError as error:
                if "split the range" not in error.message or until - begin <= _ONE_MICROSECOND:
                    raise
                piece = (until - begin) / 2
                continue
            advance((until - begin).total_seconds(), f"{stamp(begin)} .. {stamp(until)}")
            begin = until + _ONE_MICROSECOND


@schedule.command()
@_schedule_id_option
@client_command
def delete(connection: Connection, schedule_id: str) -> None:
    """Delete a schedule (its workflows go on)."""

    async def act(handle: ScheduleHandle) -> None:
        await handle.delete()

    _with_handle(connection, schedule_id, act)
    click.echo(f"schedule {schedule_id} deleted")


@schedule.command()
@output_option
@client_command
def status(connection: Connection, output: str) -> None:
    """Which server replica leads the scheduler."""

    async def act(client: Client) -> Any:
        return await client.get_scheduler_status()

    leader = run(connection, act)
    if output == "json":
        emit_json(leader)
        return
    click.echo(
        f"leader: {leader.leader_identity or '-'}  fencing token {leader.fencing_token}"
        f"  since {stamp(leader.leader_since)}  lease until {stamp(leader.lease_expires_at)}"
    )
    click.echo(
        f"this replica: {leader.replica_identity}  leader: {'yes' if leader.replica_is_leader else 'no'}"
        f"  refused writes: {leader.replica_rejected_writes}"
    )
    for change in leader.replica_leader_changes:
        click.echo(f"  {stamp(change.time)}  {change.event}  token {change.fencing_token}")
