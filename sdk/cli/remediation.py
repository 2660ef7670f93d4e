"""``flowforge workflow reset|pause|unpause`` and ``flowforge activity pause|unpause``:
remediation of one execution or one of its activities (docs/operations.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from flowforge.cli._connection import Connection, client_command, run
from flowforge.cli._output import emit_json, output_option

if TYPE_CHECKING:
    from flowforge.client import Client

__all__ = ["activity", "pause", "reset", "unpause"]


@click.command()
@click.option("--workflow-id", "-w", required=True, help="the workflow id")
@click.option("--run-id", "-r", default=None, help="the run to reset (default: the latest)")
@click.option(
    "--event-id",
    type=click.IntRange(min=1),
    default=None,
    help="the workflow task to go back to: its WorkflowTaskStarted or WorkflowTaskCompleted event id",
)
@click.option(
    "--type",
    "reset_type",
    type=click.Choice(["first", "last"]),
    default=None,
    help="first: the run's first workflow task; last: its last completed one",
)
@click.option("--reason", required=True, help="why, recorded in history and the audit log")
@output_option
@client_command
def reset(
    connection: Connection,
    workflow_id: str,
    run_id: str | None,
    event_id: int | None,
    reset_type: str | None,
    reason: str,
    output: str,
) -> None:
    """Start a new run keeping history up to a workflow task (Temporal's reset); the running run is terminated."""
    if (event_id is None) == (reset_type is None):
        raise click.UsageError("give exactly one of --event-id and --type")

    async def act(client: Client) -> str:
        return await client.reset_workflow(
            workflow_id, reason=reason, run_id=run_id, event_id=event_id or 0, reset_type=reset_type or ""
        )

    new_run_id = run(connection, act)
    if output == "json":
        emit_json({"workflow_id": workflow_id, "run_id": new_run_id})
    else:
        click.echo(f"workflow {workflow_id} reset: new run {new_run_id}")


def _hold_command(name: str, summary: str, done: str) -> click.Command:
    """``workflow pause`` or ``workflow unpause``."""

    @click.command(name=name, help=summary)
    @click.option("--workflow-id", "-w", required=True, help="the workflow id")
    @click.option("--run-id", "-r", default=None, help="a specific run (default: the latest)")
    @click.option("--reason", required=True, help="why, recorded in history and the audit log")
    @client_command
    def command(connection: Connection, workflow_id: str, run_id: str | None, reason: str) -> None:
        async def act(client: Client) -> None:
            call = client.pause_workflow if name == "pause" else client.unpause_workflow
            await call(workflow_id, reason=reason, run_id=run_id)

        run(connection, act)
        click.echo(f"workflow {workflow_id} {done}")

    return command


pause = _hold_command(
    "pause",
    "Hold an execution: no workflow task and no new activity task is dispatched (signals and timers wait).",
    "paused",
)
unpause = _hold_command("unpause", "Release a paused execution: it goes on exactly where it was.", "unpaused")


@click.group()
def activity() -> None:
    """Pause or unpause one pending activity of an execution."""


def _activity_command(name: str, summary: str, done: str) -> click.Command:
    """``activity pause`` or ``activity unpause``."""

    @click.command(name=name, help=summary)
    @click.option("--workflow-id", "-w", required=True, help="the workflow id")
    @click.option("--run-id", "-r", default=None, help="a specific run (default: the latest)")
    @click.option("--activity-id", required=True, help="the pending activity's id (workflow describe)")
    @click.option("--reason", required=True, help="why, recorded in the audit log")
    @client_command
    def command(connection: Connection, workflow_id: str, run_id: str | None, activity_id: str, reason: str) -> None:
        async def act(client: Client) -> None:
            call = client.pause_activity if name == "pause" else client.unpause_activity
            await call(workflow_id, activity_id, reason=reason, run_id=run_id)

        run(connection, act)
        click.echo(f"activity {activity_id} of workflow {workflow_id} {done}")

    return command


activity.add_command(
    _activity_command("pause", "Hold a pending activity: a running attempt finishes, no further one starts.", "paused")
)
activity.add_command(
    _activity_command("unpause", "Release a paused activity: its next attempt starts now.", "unpaused")
)
