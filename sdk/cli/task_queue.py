"""``flowforge task-queue ...``: who polls a task queue and what waits on it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from flowforge.cli._connection import Connection, client_command, run
from flowforge.cli._output import duration, emit_json, emit_table, output_option, plain, stamp

if TYPE_CHECKING:
    from flowforge.client import Client, TaskQueueDescription

__all__ = ["task_queue"]


@click.group(name="task-queue")
def task_queue() -> None:
    """Describe task queues."""


@task_queue.command()
@click.option("--task-queue", "name", required=True, help="the task queue's name")
@output_option
@client_command
def describe(connection: Connection, name: str, output: str) -> None:
    """Pollers (identity, last poll), and per kind the backlog, the oldest task's age and the dispatch rate."""

    async def act(client: Client) -> TaskQueueDescription:
        return await client.describe_task_queue(name)

    described = run(connection, act)
    if output == "json":
        document: dict[str, Any] = plain(described)
        for backlog in document["backlogs"].values():
            backlog["oldest_task_age_s"] = backlog.pop("oldest_task_age")
        emit_json(document)
        return
    emit_table(
        ("KIND", "BACKLOG", "OLDEST TASK", "DISPATCH RATE"),
        (
            (b.kind, b.ready_tasks, duration(b.oldest_task_age), f"{b.dispatch_rate:.2f}/s")
            for b in described.backlogs.values()
        ),
    )
    click.echo()
    emit_table(
        ("POLLER IDENTITY", "KIND", "LAST ACCESS"),
        ((p.identity, p.kind, stamp(p.last_access_time)) for p in described.pollers),
        empty="no pollers in the last five minutes",
    )
