"""``flowforge trigger ...`` and ``flowforge event publish``: events that start workflows (docs/events.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from flowforge.cli._connection import Connection, client_command, run
from flowforge.cli._output import emit_json, emit_table, output_option, stamp
from flowforge.cli._params import JSON

if TYPE_CHECKING:
    from flowforge.client import Client, EventTrigger, PublishEventResult

__all__ = ["event", "trigger"]


@click.group()
def trigger() -> None:
    """Event triggers: events that start workflows."""


@click.group()
def event() -> None:
    """Publish events (they start the workflows of matching triggers)."""


def _trigger_id_option(fn: Any) -> Any:
    return click.option("--trigger-id", required=True, help="the trigger's id")(fn)


def _trigger_dict(found: EventTrigger) -> dict[str, Any]:
    return {
        "trigger_id": found.trigger_id,
        "event_type": found.event_type,
        "filter": found.filter,
        "input_paths": found.input_paths,
        "workflow_type": found.workflow_type,
        "task_queue": found.task_queue,
        "workflow_id_prefix": found.workflow_id_prefix,
        "create_time": stamp(found.create_time),
    }


@trigger.command()
@_trigger_id_option
@click.option("--event-type", required=True, help="the event type it reacts to, e.g. order.paid")
@click.option("--workflow-type", required=True, help="the workflow it starts")
@click.option("--task-queue", "-t", required=True, help="task queue of that workflow's workers")
@click.option(
    "--filter",
    "filters",
    multiple=True,
    help="condition PATH OP JSON, OP one of ==, !=, in, not in (repeat: all must hold)",
)
@click.option(
    "--input", "-i", "input_paths", multiple=True, help="event path of a workflow argument, e.g. data.order_id (repeat)"
)
@click.option("--id-prefix", default=None, help="workflow id prefix (default TRIGGER_ID-)")
@client_command
def create(
    connection: Connection,
    trigger_id: str,
    event_type: str,
    workflow_type: str,
    task_queue: str,
    filters: tuple[str, ...],
    input_paths: tuple[str, ...],
    id_prefix: str | None,
) -> None:
    """Subscribe a workflow to an event type."""

    async def act(client: Client) -> EventTrigger:
        return await client.create_trigger(
            trigger_id,
            event_type=event_type,
            workflow=workflow_type,
            task_queue=task_queue,
            filter=filters,
            input_paths=input_paths,
            id_prefix=id_prefix,
        )

    created = run(connection, act)
    click.echo(f"trigger {created.trigger_id} created")


@trigger.command(name="list")
@output_option
@client_command
def list_(connection: Connection, output: str) -> None:
    """Triggers by id."""

    async def act(client: Client) -> list[EventTrigger]:
        return [t async for t in client.list_triggers()]

    triggers = run(connection, act)
    if output == "json":
        emit_json([_trigger_dict(t) for t in triggers])
        return
    emit_table(
        ("TRIGGER ID", "EVENT TYPE", "WORKFLOW TYPE", "TASK QUEUE", "FILTER"),
        ((t.trigger_id, t.event_type, t.workflow_type, t.task_queue, " AND ".join(t.filter) or "-") for t in triggers),
        empty="no triggers",
    )


@trigger.command()
@_trigger_id_option
@output_option
@client_command
def describe(connection: Connection, trigger_id: str, output: str) -> None:
    """One trigger."""

    async def act(client: Client) -> EventTrigger:
        return await client.describe_trigger(trigger_id)

    described = _trigger_dict(run(connection, act))
    if output == "json":
        emit_json(described)
    else:
        for key, value in described.items():
            click.echo(f"{key}: {value}")


@trigger.command()
@_trigger_id_option
@client_command
def delete(connection: Connection, trigger_id: str) -> None:
    """Delete a trigger (its workflows go on)."""

    async def act(client: Client) -> None:
        await client.delete_trigger(trigger_id)

    run(connection, act)
    click.echo(f"trigger {trigger_id} deleted")


@event.command()
@click.option("--id", "event_id", required=True, help="event id, unique within the source")
@click.option("--source", required=True, help="who sent it, e.g. shop")
@click.option("--type", "event_type", required=True, help="its type, e.g. order.paid")
@click.option("--subject", default=None, help="what it is about")
@click.option("--data", type=JSON, default=None, help="the payload as JSON")
@output_option
@client_command
def publish(
    connection: Connection, event_id: str, source: str, event_type: str, subject: str | None, data: Any, output: str
) -> None:
    """Publish a CloudEvents-shaped event; prints the workflows it started."""

    async def act(client: Client) -> PublishEventResult:
        return await client.publish_event(id=event_id, source=source, type=event_type, data=data, subject=subject)

    result = run(connection, act)
    started = [
        {"trigger_id": w.trigger_id, "workflow_id": w.workflow_id, "run_id": w.run_id, "started": w.started}
        for w in result.workflows
    ]
    if output == "json":
        emit_json({"duplicate": result.duplicate, "workflows": started})
        return
    if result.duplicate:
        click.echo(f"event {event_id} from {source} was published before: nothing new started")
    emit_table(
        ("TRIGGER ID", "WORKFLOW ID", "RUN ID", "STARTED"),
        ((w["trigger_id"], w["workflow_id"], w["run_id"], "yes" if w["started"] else "no") for w in started),
        empty="no trigger matched",
    )
