"""``flowforge dag ...``: declarative DAG definitions (docs/dags.md)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from flowforge.cli._connection import Connection, client_command, run
from flowforge.cli._output import emit_json, emit_table, output_option, stamp
from flowforge.cli._params import JSON
from flowforge.dag import DagSpec, DagValidationError, load_dag

if TYPE_CHECKING:
    from flowforge.client import Client, DagVersion, WorkflowHandle

__all__ = ["dag"]


@click.group()
def dag() -> None:
    """Validate, publish and run declarative DAGs."""


@dag.command()
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
def validate(file: Path) -> None:
    """Check a JSON or YAML definition locally (no server): print every violation with its path.

    Exits 1 when the definition is invalid, one violation a line; prints its digest when valid.
    """
    try:
        spec = load_dag(file)
    except DagValidationError as error:
        for violation in error.violations:
            click.echo(str(violation))
        count = len(error.violations)
        raise click.ClickException(f"{file}: {count} violation{'s' if count != 1 else ''}") from None
    click.echo(f"{file}: valid DAG {spec.name!r}, {len(spec.tasks)} tasks, version {spec.digest}")


def _digest_param(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is not None and not re.fullmatch(r"[0-9a-f]{64}", value):
        raise click.BadParameter(f"{value!r} is not a version: 64 lowercase hex digits (as `dag publish` prints)")
    return value


_VERSION_OPTION = click.option("--version", "version", callback=_digest_param, help="the version (digest)")


@dag.command()
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--alias", help="also point this alias of the DAG (e.g. prod) at the version")
@output_option
@client_command
def publish(connection: Connection, file: Path, alias: str | None, output: str) -> None:
    """Validate FILE locally, publish it, print its version (SHA-256 digest of the canonical form)."""
    try:
        spec = load_dag(file)
    except DagValidationError as error:
        for violation in error.violations:
            click.echo(str(violation), err=True)
        raise click.ClickException(f"{file}: {len(error.violations)} violation(s); nothing published") from None

    async def act(client: Client) -> str:
        return await client.publish_dag(spec, alias=alias)

    digest = run(connection, act)
    if output == "json":
        emit_json({"name": spec.name, "digest": digest, "alias": alias})
    else:
        click.echo(digest)


@dag.command()
@click.option("--name", required=True, help="the DAG's name")
@click.option("--alias", required=True, help="the alias to move, e.g. prod or latest")
@click.option(
    "--version", "version", required=True, callback=_digest_param, help="the version it points at from now on"
)
@click.option("--reason", default="", help="why, for the audit log")
@client_command
def alias(connection: Connection, name: str, alias: str, version: str, reason: str) -> None:
    """Point an alias of a DAG at one of its versions (audited; runs already started keep theirs)."""

    async def act(client: Client) -> str | None:
        return await client.set_dag_alias(name, alias, version, reason=reason)

    previous = run(connection, act)
    click.echo(f"{name}@{alias} -> {version}" + (f" (was {previous})" if previous and previous != version else ""))


@dag.command("list")
@click.option("--name", help="only the versions of this DAG")
@click.option("--limit", type=click.IntRange(1, 1000), default=100, show_default=True, help="at most this many")
@output_option
@client_command
def list_(connection: Connection, name: str | None, limit: int, output: str) -> None:
    """Published versions, newest first, with their aliases."""

    async def act(client: Client) -> list[DagVersion]:
        return await client.list_dags(name, limit=limit)

    versions = run(connection, act)
    if output == "json":
        emit_json(versions)
        return
    emit_table(
        ("NAME", "VERSION", "TASKS", "ALIASES", "PUBLISHED"),
        ((v.name, v.digest, v.task_count, ",".join(v.aliases), stamp(v.create_time)) for v in versions),
        empty="no DAG published yet (flowforge dag publish FILE)",
    )


@dag.command()
@click.option("--name", help="the DAG's name (with --alias)")
@click.option("--alias", help="the alias to resolve")
@_VERSION_OPTION
@client_command
def show(connection: Connection, name: str | None, alias: str | None, version: str | None) -> None:
    """Print a published version's canonical definition (JSON)."""
    if (version is None) == (alias is None) or (alias is not None and name is None):
        raise click.UsageError("give --version, or --name with --alias")

    async def act(client: Client) -> DagSpec:
        return (await client.get_dag(version=version, name=name, alias=alias))[1]

    click.echo(json.dumps(run(connection, act).to_document(), indent=2, ensure_ascii=False))


@dag.command()
@click.option("--version", "version", required=True, callback=_digest_param, help="the version to delete")
@click.option("--reason", required=True, help="why, for the audit log")
@client_command
def delete(connection: Connection, version: str, reason: str) -> None:
    """Delete a version no running execution and no alias uses."""

    async def act(client: Client) -> None:
        await client.delete_dag_version(version, reason=reason)

    run(connection, act)
    click.echo(f"version {version} deleted")


@dag.command("run")
@click.option("--name", required=True, help="the DAG's name")
@_VERSION_OPTION
@click.option("--alias", help="the alias to resolve, once, now [default: latest]")
@click.option("--workflow-id", required=True, help="the run's workflow id")
@click.option("--task-queue", help="where the activities run unless a task names its own [default: the definition's]")
@click.option("--input", "input_", type=JSON, help="the run's input ($.input), JSON")
@output_option
@client_command
def run_(
    connection: Connection,
    name: str,
    version: str | None,
    alias: str | None,
    workflow_id: str,
    task_queue: str | None,
    input_: Any,
    output: str,
) -> None:
    """Start a run of a DAG version, executed by the server; prints its run id."""
    if version is not None and alias is not None:
        raise click.UsageError("give --version or --alias, not both")

    async def act(client: Client) -> WorkflowHandle[Any, Any]:
        return await client.start_dag(name, input_, id=workflow_id, task_queue=task_queue, version=version, alias=alias)

    handle = run(connection, act)
    if output == "json":
        emit_json({"workflow_id": handle.id, "run_id": handle.run_id})
    else:
        click.echo(handle.run_id)
