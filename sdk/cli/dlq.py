"""``flowforge dlq ...``: the dead-letter store: list, show, retry and discard parked
activities, one by id or every one a filter matches (docs/operations.md)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from datetime import timedelta
from typing import TYPE_CHECKING, Any, TypeVar

import click

from flowforge.cli._connection import Connection, client_command, run
from flowforge.cli._output import emit_json, emit_table, output_option, plain, stamp

if TYPE_CHECKING:
    from flowforge.client import Client, DeadLetter, DeadLetterList

__all__ = ["dlq"]

_F = TypeVar("_F", bound=Callable[..., Any])
_FILTERS = ("workflow_type", "activity_type", "error_type", "workflow_id", "older_than")


@click.group()
def dlq() -> None:
    """The dead-letter queue: activities parked after their retries (execute_activity(..., dead_letter=True))."""


def _filter_options(fn: _F) -> _F:
    """The filter flags shared by list, retry and discard."""
    for option in reversed(
        (
            click.option("--workflow-type", default="", help="only dead letters of this workflow type"),
            click.option("--activity-type", default="", help="only dead letters of this activity type"),
            click.option("--error-type", default="", help="only failures of this type (ApplicationError.type)"),
            click.option("--workflow-id", default="", help="only dead letters of this workflow id"),
            click.option(
                "--older-than",
                type=click.FloatRange(min=0, min_open=True),
                default=None,
                help="only dead letters parked at least this many SECONDS ago",
            ),
        )
    ):
        fn = option(fn)
    return fn


def _filters(values: dict[str, Any]) -> dict[str, Any]:
    """The client's filter keywords from the parsed flags."""
    older_than = values["older_than"]
    return {
        **{key: values[key] for key in _FILTERS if key != "older_than"},
        "older_than": timedelta(seconds=older_than) if older_than else None,
    }


def _failure_text(dead_letter: DeadLetter) -> str:
    failure = dead_letter.failure
    return f"{failure.get('type', '')}: {failure.get('message', '')}".strip(": ")


@dlq.command(name="list")
@_filter_options
@click.option("--limit", type=click.IntRange(1, 1000), default=100, show_default=True, help="at most this many")
@output_option
@client_command
def list_(connection: Connection, limit: int, output: str, **filters: Any) -> None:
    """Parked activities, oldest first, and the namespace's depth per activity type."""

    async def act(client: Client) -> DeadLetterList:
        return await client.list_dead_letters(limit=limit, **_filters(filters))

    listed = run(connection, act)
    if output == "json":
        emit_json([_document(d) for d in listed.dead_letters])
        return
    emit_table(
        ("ID", "WORKFLOW ID", "ACTIVITY", "ATTEMPT", "PARKED", "FAILURE"),
        (
            (
                d.id,
                d.workflow_id,
                f"{d.activity_type} ({d.activity_id})",
                d.attempt,
                stamp(d.dead_lettered_time),
                _failure_text(d),
            )
            for d in listed.dead_letters
        ),
        empty="no dead letters",
    )
    if listed.depths:
        click.echo()
        emit_table(("ACTIVITY TYPE", "DEPTH"), sorted(listed.depths.items()))


def _document(dead_letter: DeadLetter) -> dict[str, Any]:
    """A dead letter as JSON (times in ISO 8601); ``attempts`` only when described."""
    document: dict[str, Any] = plain(dead_letter)
    if not dead_letter.attempts:
        del document["attempts"]
    return document


@dlq.command()
@click.option("--id", "dead_letter_id", required=True, help="the dead letter's id (dlq list)")
@output_option
@client_command
def show(connection: Connection, dead_letter_id: str, output: str) -> None:
    """One parked activity: its run, its failure and every attempt on record."""

    async def act(client: Client) -> DeadLetter:
        return await client.describe_dead_letter(dead_letter_id)

    described = run(connection, act)
    if output == "json":
        emit_json(_document(described))
        return
    for label, value in (
        ("id", described.id),
        ("workflow", f"{described.workflow_id} (run {described.run_id}, type {described.workflow_type})"),
        ("activity", f"{described.activity_type} (id {described.activity_id}, task queue {described.task_queue})"),
        ("input", f"recorded in event {described.scheduled_event_id} (ActivityTaskScheduled)"),
        ("attempt", described.attempt),
        ("parked", stamp(described.dead_lettered_time)),
        ("failure", _failure_text(described)),
    ):
        click.echo(f"{label + ':':<10}{value}")
    click.echo()
    emit_table(
        ("ATTEMPT", "WORKER", "STARTED", "ENDED", "OUTCOME", "FAILURE"),
        (
            (
                a.attempt,
                a.identity,
                stamp(a.started_time),
                stamp(a.ended_time),
                a.outcome,
                f"{(a.failure or {}).get('type', '')}: {(a.failure or {}).get('message', '')}" if a.failure else "",
            )
            for a in described.attempts
        ),
        empty="no attempt on record",
    )


def _decision(fn: _F) -> _F:
    """--id or filters, and the required --reason, of retry and discard."""

    @click.option("--id", "dead_letter_id", default="", help="one dead letter; without it, every one the filters match")
    @_filter_options
    @click.option("--reason", required=True, help="why, recorded in history and the audit log")
    @output_option
    @functools.wraps(fn)
    def checked(**kwargs: Any) -> Any:
        selected = [key for key in _FILTERS if kwargs[key]]
        if kwargs["dead_letter_id"] and selected:
            raise click.UsageError("give either --id or filters, not both")
        if not kwargs["dead_letter_id"] and not selected:
            raise click.UsageError("give --id, or at least one filter (--workflow-type, --activity-type, ...)")
        return fn(**kwargs)

    return checked  # type: ignore[return-value]


def _report(ids: list[str], done: str, output: str) -> None:
    if output == "json":
        emit_json({"ids": ids, "count": len(ids)})
        return
    for dead_letter_id in ids:
        click.echo(dead_letter_id)
    click.echo(f"{len(ids)} dead letter{'s' if len(ids) != 1 else ''} {done}")


@dlq.command()
@_decision
@click.option(
    "--fresh-budget",
    is_flag=True,
    help="start the retry policy's attempts over (else: one attempt, parked again if it fails)",
)
@client_command
def retry(
    connection: Connection, dead_letter_id: str, reason: str, fresh_budget: bool, output: str, **filters: Any
) -> None:
    """Schedule parked activities again in their runs: the same execution, the attempt count going on."""

    async def act(client: Client) -> list[str]:
        return await client.retry_dead_letters(
            dead_letter_id, reason=reason, fresh_budget=fresh_budget, **_filters(filters)
        )

    _report(run(connection, act), "retried", output)


@dlq.command()
@_decision
@client_command
def discard(connection: Connection, dead_letter_id: str, reason: str, output: str, **filters: Any) -> None:
    """Fail parked activities into their workflows (an ActivityError whose cause says discarded, and why)."""

    async def act(client: Client) -> list[str]:
        return await client.discard_dead_letters(dead_letter_id, reason=reason, **_filters(filters))

    _report(run(connection, act), "discarded", output)
