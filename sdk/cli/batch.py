"""``flowforge batch ...``: one operation over every execution a query matches, run by
the server as a tracked job (docs/operations.md)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from flowforge.cli._connection import Connection, client_command, run
from flowforge.cli._output import emit_json, emit_table, output_option, plain, stamp
from flowforge.cli._params import JSON

if TYPE_CHECKING:
    from flowforge.client import BatchOperation, Client

__all__ = ["batch"]


@click.group()
def batch() -> None:
    """Batch operations: cancel, terminate, signal, reset or pause every execution a query matches."""


def _starter(operation: str, summary: str, extra: tuple[Callable[[Any], Any], ...] = ()) -> click.Command:
    """``batch <operation> --query Q --reason R [--rps N]`` with the operation's own flags."""

    @click.option("--query", "-q", required=True, help="a visibility query, e.g. \"WorkflowType = 'Order'\"")
    @click.option("--reason", required=True, help="why, recorded in each execution's history and audit row")
    @click.option(
        "--rps",
        type=click.FloatRange(min=0, min_open=True, max=10_000),
        default=None,
        help="at most this many executions a second (default 50)",
    )
    @output_option
    @client_command
    def command(
        connection: Connection, query: str, reason: str, rps: float | None, output: str, **extra_values: Any
    ) -> None:
        async def act(client: Client) -> str:
            return await client.start_batch_operation(
                operation,
                query=query,
                reason=reason,
                rps=rps or 0.0,
                signal_name=extra_values.get("signal_name") or "",
                signal_args=list(extra_values.get("inputs") or ()),
                reset_type=extra_values.get("reset_type") or "",
            )

        job_id = run(connection, act)
        if output == "json":
            emit_json({"job_id": job_id})
        else:
            click.echo(f"batch {operation} started: job {job_id} (flowforge batch describe --job-id {job_id})")

    for option in reversed(extra):
        command = option(command)
    return click.command(name=operation, help=summary)(command)


for _operation, _summary, _extra in (
    ("cancel", "Ask every execution the query matches to cancel.", ()),
    ("terminate", "Terminate every execution the query matches.", ()),
    (
        "signal",
        "Signal every execution the query matches.",
        (
            click.option("--name", "signal_name", required=True, help="the signal's name"),
            click.option("--input", "-i", "inputs", type=JSON, multiple=True, help="a JSON argument (repeat)"),
        ),
    ),
    (
        "reset",
        "Reset every execution the query matches (workflow reset).",
        (
            click.option(
                "--type", "reset_type", type=click.Choice(["first", "last"]), required=True, help="first or last"
            ),
        ),
    ),
    ("pause", "Pause every execution the query matches (workflow pause).", ()),
):
    batch.add_command(_starter(_operation, _summary, _extra))


def _rows(operations: list[BatchOperation]) -> list[tuple[Any, ...]]:
    return [
        (o.job_id, o.operation, o.state, f"{o.done + o.failed}/{o.total}", o.failed, stamp(o.create_time), o.query)
        for o in operations
    ]


_HEADERS = ("JOB ID", "OPERATION", "STATE", "PROGRESS", "FAILED", "STARTED", "QUERY")


@batch.command()
@click.option("--job-id", required=True, help="the job (batch list)")
@output_option
@client_command
def describe(connection: Connection, job_id: str, output: str) -> None:
    """A batch job's progress: done and failed of the total."""

    async def act(client: Client) -> BatchOperation:
        return await client.describe_batch_operation(job_id)

    described = run(connection, act)
    if output == "json":
        emit_json(plain(described))
        return
    emit_table(_HEADERS, _rows([described]))


@batch.command(name="list")
@output_option
@client_command
def list_(connection: Connection, output: str) -> None:
    """The namespace's batch jobs, newest first."""

    async def act(client: Client) -> list[BatchOperation]:
        return await client.list_batch_operations()

    listed = run(connection, act)
    if output == "json":
        emit_json(plain(listed))
        return
    emit_table(_HEADERS, _rows(listed), empty="no batch jobs")
