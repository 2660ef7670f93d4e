"""``flowforge breaker ...``: circuit breakers per activity type (docs/flow-control.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from flowforge.cli._connection import Connection, client_command, run
from flowforge.cli._output import emit_json, emit_table, output_option, plain, stamp

if TYPE_CHECKING:
    from flowforge.client import Breaker, Client

__all__ = ["breaker"]


@click.group()
def breaker() -> None:
    """Circuit breakers: hold an activity type's tasks while its downstream fails."""


@breaker.command(name="set")
@click.option("--activity-type", required=True, help="the activity type the breaker guards")
@click.option(
    "--failure-rate", type=click.FloatRange(min=0, max=1, min_open=True), required=True, help="opens at this rate"
)
@click.option("--min-calls", type=click.IntRange(min=1), required=True, help="outcomes a window needs first")
@click.option("--window", type=click.FloatRange(min=0, min_open=True), required=True, help="counting window, seconds")
@click.option(
    "--open-seconds", type=click.FloatRange(min=0, min_open=True), required=True, help="open period before a probe"
)
@click.option("--reason", default="", help="why, recorded in the audit log")
@client_command
def set_(
    connection: Connection,
    activity_type: str,
    failure_rate: float,
    min_calls: int,
    window: float,
    open_seconds: float,
    reason: str,
) -> None:
    """Set the breaker of an activity type (a new one starts closed)."""

    async def act(client: Client) -> None:
        await client.set_breaker(
            activity_type,
            failure_rate=failure_rate,
            min_calls=min_calls,
            window_seconds=window,
            open_seconds=open_seconds,
            reason=reason,
        )

    run(connection, act)
    click.echo(f"breaker of {activity_type}: opens at {failure_rate:g} failures over {min_calls}+ calls in {window:g}s")


@breaker.command(name="list")
@output_option
@client_command
def list_(connection: Connection, output: str) -> None:
    """The namespace's breakers with their state, counts and since when."""

    async def act(client: Client) -> list[Breaker]:
        return await client.list_breakers()

    breakers = run(connection, act)
    if output == "json":
        emit_json([plain(item) for item in breakers])
        return
    emit_table(
        ("ACTIVITY TYPE", "STATE", "SINCE", "SUCCESSES", "FAILURES", "REASON"),
        ((b.activity_type, b.state, stamp(b.since), b.successes, b.failures, b.reason or "-") for b in breakers),
        empty="no circuit breakers",
    )


def _force(name: str, state: str) -> click.Command:
    @click.option("--activity-type", required=True, help="the activity type whose breaker changes")
    @click.option("--reason", required=True, help="why, recorded in the audit log")
    @client_command
    def command(connection: Connection, activity_type: str, reason: str) -> None:
        async def act(client: Client) -> None:
            if state == "open":
                await client.open_breaker(activity_type, reason=reason)
            else:
                await client.close_breaker(activity_type, reason=reason)

        run(connection, act)
        click.echo(f"breaker of {activity_type}: {state}")

    command.__doc__ = f"{name.capitalize()} an activity type's breaker by hand."
    return breaker.command(name=name)(command)


open_ = _force("open", "open")
close = _force("close", "closed")
