"""``flowforge namespace ...``: create, update, describe and list namespaces, with their quotas."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import click

from flowforge.cli._connection import Connection, client_command, run
from flowforge.cli._output import duration, emit_json, emit_table, output_option, plain, stamp

if TYPE_CHECKING:
    from flowforge.client import Client, NamespaceDescription

__all__ = ["namespace"]


@click.group()
def namespace() -> None:
    """Create, update, describe and list namespaces."""


def _namespace_dict(described: NamespaceDescription) -> dict[str, Any]:
    described_dict: dict[str, Any] = plain(described)
    described_dict["retention_s"] = described_dict.pop("retention")
    return described_dict


def _settings_options(command: Callable[..., None]) -> Callable[..., None]:
    """The flags ``create`` and ``update`` share: description, retention and quotas."""
    options = [
        click.option("--description", default=None, help="what it is for, for people"),
        click.option(
            "--retention",
            type=click.IntRange(min=1),
            default=None,
            help="seconds closed executions are kept (default: the server's)",
        ),
        click.option(
            "--max-running-executions",
            type=click.IntRange(min=0),
            default=None,
            help="quota: starts are refused while this many runs are running (0: no limit)",
        ),
        click.option(
            "--start-rate",
            type=click.FloatRange(min=0, max=1_000_000),
            default=None,
            help="quota: starts admitted per second (0: no limit)",
        ),
        click.option(
            "--max-concurrent-activities",
            type=click.IntRange(min=0),
            default=None,
            help="quota: activity tasks running at once; more wait in their queue (0: no limit)",
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


@namespace.command()
@click.argument("name")
@_settings_options
@client_command
def create(
    connection: Connection,
    name: str,
    description: str | None,
    retention: int | None,
    max_running_executions: int | None,
    start_rate: float | None,
    max_concurrent_activities: int | None,
) -> None:
    """Create a namespace."""

    async def act(client: Client) -> None:
        await client.register_namespace(
            name,
            description=description or "",
            retention=timedelta(seconds=retention) if retention else None,
            max_running_executions=max_running_executions or 0,
            start_rate=start_rate or 0.0,
            max_concurrent_activities=max_concurrent_activities or 0,
        )

    run(connection, act)
    click.echo(f"namespace {name} created")


@namespace.command()
@click.argument("name")
@_settings_options
@client_command
def update(
    connection: Connection,
    name: str,
    description: str | None,
    retention: int | None,
    max_running_executions: int | None,
    start_rate: float | None,
    max_concurrent_activities: int | None,
) -> None:
    """Change a namespace's description, retention or quotas (the flags given)."""

    async def act(client: Client) -> None:
        await client.update_namespace(
            name,
            description=description,
            retention=timedelta(seconds=retention) if retention else None,
            max_running_executions=max_running_executions,
            start_rate=start_rate,
            max_concurrent_activities=max_concurrent_activities,
        )

    run(connection, act)
    click.echo(f"namespace {name} updated")


@namespace.command()
@click.argument("name")
@output_option
@client_command
def describe(connection: Connection, name: str, output: str) -> None:
    """One namespace: its description, retention, quotas and retention record."""

    async def act(client: Client) -> NamespaceDescription:
        return await client.describe_namespace(name)

    described = run(connection, act)
    if output == "json":
        emit_json(_namespace_dict(described))
        return
    click.echo(f"name:        {described.name}")
    click.echo(f"description: {described.description}")
    click.echo(f"retention:   {duration(described.retention)}")
    click.echo(f"created:     {stamp(described.create_time)}")
    click.echo(f"quotas:      {_quotas(described)}")
    last_purge = stamp(described.last_purge_time) if described.last_purge_time else "never"
    click.echo(f"purged:      {described.purged_executions} closed runs (last pass {last_purge})")


def _quotas(described: NamespaceDescription) -> str:
    quotas = [
        f"max running executions {described.max_running_executions or 'unlimited'}",
        f"start rate {f'{described.start_rate:g}/s' if described.start_rate else 'unlimited'}",
        f"max concurrent activities {described.max_concurrent_activities or 'unlimited'}",
    ]
    return ", ".join(quotas)


@namespace.command(name="list")
@output_option
@client_command
def list_(connection: Connection, output: str) -> None:
    """Every namespace of the server."""

    async def act(client: Client) -> list[NamespaceDescription]:
        return await client.list_namespaces()

    namespaces = run(connection, act)
    if output == "json":
        emit_json([_namespace_dict(n) for n in namespaces])
    else:
        emit_table(
            ("NAME", "RETENTION", "CREATED", "DESCRIPTION"),
            ((n.name, duration(n.retention), stamp(n.create_time), n.description) for n in namespaces),
        )
