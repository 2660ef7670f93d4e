"""``flowforge namespace ...``: create, describe and list namespaces."""

from __future__ import annotations

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
    """Create, describe and list namespaces."""


def _namespace_dict(described: NamespaceDescription) -> dict[str, Any]:
    described_dict: dict[str, Any] = plain(described)
    described_dict["retention_s"] = described_dict.pop("retention")
    return described_dict


@namespace.command()
@click.argument("name")
@click.option("--description", default="", help="what it is for, for people")
@click.option(
    "--retention",
    type=click.IntRange(min=1),
    default=None,
    help="seconds closed executions are kept (default: the server's)",
)
@client_command
def create(connection: Connection, name: str, description: str, retention: int | None) -> None:
    """Create a namespace."""

    async def act(client: Client) -> None:
        await client.register_namespace(
            name, description=description, retention=timedelta(seconds=retention) if retention else None
        )

    run(connection, act)
    click.echo(f"namespace {name} created")


@namespace.command()
@click.argument("name")
@output_option
@client_command
def describe(connection: Connection, name: str, output: str) -> None:
    """One namespace: its description, retention and creation time."""

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
