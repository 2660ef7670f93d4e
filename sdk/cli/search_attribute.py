"""``flowforge search-attribute ...``: a namespace's custom search attributes (docs/visibility.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from flowforge.cli._connection import Connection, client_command, run
from flowforge.cli._output import emit_json, emit_table, output_option

if TYPE_CHECKING:
    from flowforge.client import Client

__all__ = ["search_attribute"]

_VALUE_TYPES = ("Keyword", "Int", "Double", "Bool", "Datetime")


@click.group("search-attribute")
def search_attribute() -> None:
    """Custom search attributes of a namespace."""


@search_attribute.command()
@click.option("--name", required=True, help="the attribute's name, e.g. CustomerId")
@click.option("--type", "value_type", type=click.Choice(_VALUE_TYPES, case_sensitive=False), required=True)
@client_command
def create(connection: Connection, name: str, value_type: str) -> None:
    """Register an attribute and its type (idempotent)."""
    from flowforge.common import SearchAttributeIndexedValueType

    async def act(client: Client) -> str:
        await client.add_search_attributes({name: SearchAttributeIndexedValueType[value_type.upper()]})
        return client.namespace

    namespace = run(connection, act)
    click.echo(f"search attribute {name} ({value_type.capitalize()}) registered in namespace {namespace}")


@search_attribute.command(name="list")
@output_option
@client_command
def list_(connection: Connection, output: str) -> None:
    """The registered attributes and their types."""

    async def act(client: Client) -> dict[str, Any]:
        return await client.list_search_attributes()

    attributes = run(connection, act)
    if output == "json":
        emit_json([{"name": name, "type": t.name.capitalize()} for name, t in attributes.items()])
    else:
        emit_table(("NAME", "TYPE"), ((name, t.name.capitalize()) for name, t in attributes.items()))
