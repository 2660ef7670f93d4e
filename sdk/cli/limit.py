"""``flowforge limit ...``: fleet-wide concurrency limits per key and dispatch rate
limits per task queue or key (docs/flow-control.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from flowforge.cli._connection import Connection, client_command, run
from flowforge.cli._output import emit_json, emit_table, output_option, plain, stamp

if TYPE_CHECKING:
    from flowforge.client import Client, ConcurrencyLimit, RateLimit

__all__ = ["limit"]


@click.group()
def limit() -> None:
    """Fleet-wide limits on running activities per concurrency key (execute_activity(..., concurrency_key=K))."""


@limit.command(name="set")
@click.option("--key", "concurrency_key", required=True, help="the concurrency key")
@click.option(
    "--max-running", type=click.IntRange(min=0), required=True, help="most activities of the key at once; 0 removes"
)
@click.option("--reason", default="", help="why, recorded in the audit log")
@client_command
def set_(connection: Connection, concurrency_key: str, max_running: int, reason: str) -> None:
    """Set (or with --max-running 0 remove) the namespace's limit on one key."""

    async def act(client: Client) -> None:
        await client.set_concurrency_limit(concurrency_key, max_running, reason=reason)

    run(connection, act)
    if max_running:
        click.echo(f"at most {max_running} activities of key {concurrency_key} run at once")
    else:
        click.echo(f"key {concurrency_key} has no limit")


@limit.command(name="list")
@output_option
@client_command
def list_(connection: Connection, output: str) -> None:
    """The namespace's limits with their running and waiting activities."""

    async def act(client: Client) -> list[ConcurrencyLimit]:
        return await client.list_concurrency_limits()

    limits = run(connection, act)
    if output == "json":
        emit_json([plain(item) for item in limits])
        return
    emit_table(
        ("KEY", "MAX RUNNING", "RUNNING", "WAITING", "SET"),
        ((i.concurrency_key, i.max_running, i.running, i.waiting, stamp(i.update_time)) for i in limits),
        empty="no concurrency limits",
    )


@limit.command()
@click.option("--task-queue", default="", help="limit the activity tasks of this task queue")
@click.option("--key", "concurrency_key", default="", help="limit the activity tasks of this concurrency key")
@click.option(
    "--per-second",
    type=click.FloatRange(min=0),
    required=True,
    help="activity tasks handed out per second at most; 0 removes the limit",
)
@click.option("--reason", default="", help="why, recorded in the audit log")
@client_command
def rate(connection: Connection, task_queue: str, concurrency_key: str, per_second: float, reason: str) -> None:
    """Set (or with --per-second 0 remove) a dispatch rate limit on a task queue or a key."""
    if bool(task_queue) == bool(concurrency_key):
        raise click.UsageError("give exactly one of --task-queue and --key")

    async def act(client: Client) -> None:
        await client.set_rate_limit(per_second, task_queue=task_queue, concurrency_key=concurrency_key, reason=reason)

    run(connection, act)
    target = f"task queue {task_queue}" if task_queue else f"key {concurrency_key}"
    click.echo(f"{target}: at most {per_second:g} dispatches per second" if per_second else f"{target}: no rate limit")


@limit.command()
@output_option
@client_command
def rates(connection: Connection, output: str) -> None:
    """The namespace's dispatch rate limits."""

    async def act(client: Client) -> list[RateLimit]:
        return await client.list_rate_limits()

    limits = run(connection, act)
    if output == "json":
        emit_json([plain(item) for item in limits])
        return
    emit_table(
        ("TASK QUEUE", "KEY", "PER SECOND", "SET"),
        ((i.task_queue or "-", i.concurrency_key or "-", f"{i.per_second:g}", stamp(i.update_time)) for i in limits),
        empty="no rate limits",
    )
