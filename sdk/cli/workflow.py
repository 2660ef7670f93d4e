"""``flowforge workflow ...``: start, follow, find, inspect and steer executions."""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, TypeVar

import click

from flowforge.cli._connection import Connection, client_command, run
from flowforge.cli._output import emit_json, emit_table, output_option, plain, stamp
from flowforge.cli._params import JSON, NAME_VALUE

if TYPE_CHECKING:
    from flowforge.client import Client, HistoryEvent, WorkflowExecutionDescription, WorkflowHandle

__all__ = ["workflow"]

_T = TypeVar("_T")
# How long one long poll of ``workflow execute`` waits for new events before asking again.
_FOLLOW_WAIT = timedelta(seconds=20)
# The event that closes a run -> the status it leaves (WorkflowExecutionStatus names).
_CLOSE_EVENTS = {
    "WorkflowExecutionCompleted": "COMPLETED",
    "WorkflowExecutionFailed": "FAILED",
    "WorkflowExecutionCanceled": "CANCELED",
    "WorkflowExecutionTerminated": "TERMINATED",
    "WorkflowExecutionContinuedAsNew": "CONTINUED_AS_NEW",
    "WorkflowExecutionTimedOut": "TIMED_OUT",
}


@click.group()
def workflow() -> None:
    """Start, follow, find, inspect and steer executions."""


def _execution_options(fn: Any) -> Any:
    fn = click.option("--run-id", "-r", default=None, help="a specific run (default: the latest)")(fn)
    return click.option("--workflow-id", "-w", required=True, help="the workflow id")(fn)


def _seconds_option(name: str, what: str) -> Any:
    return click.option(name, type=click.FloatRange(min=0, min_open=True), default=None, help=f"seconds {what}")


_START_OPTIONS = (
    click.option("--type", "workflow_type", required=True, help="workflow type name"),
    click.option("--task-queue", "-t", required=True, help="task queue its workers poll"),
    click.option("--workflow-id", "-w", required=True, help="the workflow id (a business key)"),
    click.option("--input", "-i", "inputs", type=JSON, multiple=True, help="a JSON argument (repeat for several)"),
    click.option(
        "--search-attribute",
        "search_attributes",
        type=NAME_VALUE,
        multiple=True,
        help="a registered search attribute NAME=VALUE (repeat); VALUE is JSON (42, true) or text,"
        " an RFC 3339 time for a Datetime attribute",
    ),
    click.option("--memo", "memos", type=NAME_VALUE, multiple=True, help="a memo entry NAME=JSON (repeat)"),
    _seconds_option("--execution-timeout", "the whole execution may take (retries and continue-as-new included)"),
    _seconds_option("--run-timeout", "one run may take"),
    _seconds_option("--task-timeout", "one workflow task may take"),
)


@dataclasses.dataclass(frozen=True)
class _StartRequest:
    """What the start flags of ``start``, ``execute`` and ``signal-with-start`` ask for."""

    workflow_type: str
    task_queue: str
    workflow_id: str
    inputs: tuple[Any, ...]
    search_attributes: tuple[tuple[str, str], ...]
    memos: tuple[tuple[str, str], ...]
    execution_timeout: float | None
    run_timeout: float | None
    task_timeout: float | None

    def __post_init__(self) -> None:
        for name, text in self.memos:
            try:
                json.loads(text)
            except ValueError:
                raise click.BadParameter(
                    f"{name}={text!r}: the value is not JSON (a string needs double quotes)", param_hint="'--memo'"
                ) from None

    async def start(
        self, client: Client, *, signal: str | None = None, signal_inputs: Sequence[Any] = ()
    ) -> WorkflowHandle[Any, Any]:
        """Starts the run (with ``signal``: signal-with-start); returns its handle."""

        def seconds(value: float | None) -> timedelta | None:
            return timedelta(seconds=value) if value is not None else None

        return await client.start_workflow(
            self.workflow_type,
            args=list(self.inputs),
            id=self.workflow_id,
            task_queue=self.task_queue,
            execution_timeout=seconds(self.execution_timeout),
            run_timeout=seconds(self.run_timeout),
            task_timeout=seconds(self.task_timeout),
            start_signal=signal,
            start_signal_args=list(signal_inputs),
            search_attributes=await _search_attribute_values(client, self.search_attributes),
            memo={name: json.loads(text) for name, text in self.memos},
        )


def _start_options(fn: Callable[..., _T]) -> Callable[..., _T]:
    """Adds the start flags; the function receives them as ``request``, a :class:`_StartRequest`."""
    keys = [field.name for field in dataclasses.fields(_StartRequest)]

    @functools.wraps(fn)
    def with_request(*args: Any, **kwargs: Any) -> _T:
        request = _StartRequest(**{key: kwargs.pop(key) for key in keys})
        return fn(*args, request=request, **kwargs)

    wrapped: Callable[..., _T] = with_request
    for option in reversed(_START_OPTIONS):
        wrapped = option(wrapped)
    return wrapped


async def _search_attribute_values(client: Client, pairs: Sequence[tuple[str, str]]) -> dict[str, Any]:
    """NAME=VALUE pairs as typed values: JSON where it parses, else text; a time for a Datetime attribute."""
    from flowforge.cli._params import MOMENT
    from flowforge.common import SearchAttributeIndexedValueType

    types = await client.list_search_attributes() if pairs else {}
    values: dict[str, Any] = {}
    for name, text in pairs:
        try:
            value = json.loads(text)
        except ValueError:
            value = text
        if types.get(name) == SearchAttributeIndexedValueType.DATETIME and isinstance(value, str):
            value = MOMENT.convert(value, None, None)
        values[name] = value
    return values


@workflow.command()
@_start_options
@output_option
@client_command
def start(connection: Connection, request: _StartRequest, output: str) -> None:
    """Start an execution; prints its run id."""

    async def act(client: Client) -> WorkflowHandle[Any, Any]:
        return await request.start(client)

    _print_started(run(connection, act), output)


def _print_started(handle: WorkflowHandle[Any, Any], output: str) -> None:
    if output == "json":
        emit_json({"workflow_id": handle.id, "run_id": handle.run_id})
    else:
        click.echo(handle.run_id)


@workflow.command("signal-with-start")
@_start_options
@click.option("--signal", "signal_name", required=True, help="the signal to send")
@click.option(
    "--signal-input", "signal_inputs", type=JSON, multiple=True, help="a JSON argument of the signal (repeat)"
)
@output_option
@client_command
def signal_with_start(
    connection: Connection, request: _StartRequest, signal_name: str, signal_inputs: tuple[Any, ...], output: str
) -> None:
    """Signal the running execution of the workflow id, or start one with the signal first; prints the run id."""

    async def act(client: Client) -> WorkflowHandle[Any, Any]:
        return await request.start(client, signal=signal_name, signal_inputs=signal_inputs)

    _print_started(run(connection, act), output)


@workflow.command()
@_start_options
@output_option
@client_command
def execute(connection: Connection, request: _StartRequest, output: str) -> None:
    """Start an execution and follow it: print its events as they happen, then its result.

    A run that continues as new is followed into its next run. Exits 1 when the execution
    does not complete (failed, canceled, terminated, timed out). With --output json, one
    JSON object per line: each event, then the outcome.
    """

    async def act(client: Client) -> tuple[str, Any]:
        handle = await request.start(client)
        while True:
            if output != "json":
                click.echo(f"run {handle.run_id} of {handle.id}")
            close = await _follow(client, handle, lambda event: _print_event(event, output))
            status = _CLOSE_EVENTS[close.event_type]
            if status == "COMPLETED":
                return status, await handle.result()
            if status != "CONTINUED_AS_NEW":
                return status, close.attributes
            handle = client.get_workflow_handle(handle.id, run_id=close.attributes["new_execution_run_id"])

    status, outcome = run(connection, act)
    if output == "json":
        key = "result" if status == "COMPLETED" else "details"
        emit_json({"workflow_id": request.workflow_id, "status": status, key: outcome}, lines=True)
    elif status == "COMPLETED":
        click.echo(f"result: {json.dumps(plain(outcome), ensure_ascii=False)}")
    else:
        click.echo(f"{status}: {' '.join(_details(outcome))}".rstrip())
    if status != "COMPLETED":
        raise SystemExit(1)


# Attributes that tell people what an event is about, shown after its type (docs/history-events.md).
_TELLING_ATTRIBUTES = (
    "workflow_type",
    "activity_type",
    "activity_id",
    "signal_name",
    "timer_id",
    "start_to_fire_timeout",
    "marker_name",
    "workflow_id",
    "reason",
    "cause",
    "timeout_type",
)


def _details(attributes: dict[str, Any]) -> list[str]:
    """``key=value`` for the attributes that say what an event is about."""
    details = [f"{key}={attributes[key]}" for key in _TELLING_ATTRIBUTES if attributes.get(key) not in (None, "", 0)]
    if isinstance(attributes.get("attempt"), int) and attributes["attempt"] > 1:
        details.append(f"attempt={attributes['attempt']}")
    failure = attributes.get("failure")
    if isinstance(failure, dict) and failure.get("message"):
        details.append(f"failure={json.dumps(failure['message'], ensure_ascii=False)}")
    return details


def _event_line(event: HistoryEvent) -> str:
    """``  id  time  type  key=value ...``."""
    return "  ".join(
        [f"  {event.event_id:>4}", stamp(event.event_time), event.event_type, " ".join(_details(event.attributes))]
    ).rstrip()


def _print_event(event: HistoryEvent, output: str) -> None:
    if output == "json":
        emit_json(
            {
                "event_id": event.event_id,
                "event_type": event.event_type,
                "event_time": event.event_time.isoformat(),
                "attributes": event.attributes,
            },
            lines=True,
        )
    else:
        click.echo(_event_line(event))


async def _follow(
    client: Client, handle: WorkflowHandle[Any, Any], on_event: Callable[[HistoryEvent], None]
) -> HistoryEvent:
    """Long-polls the run's history, handing each new event to ``on_event``; returns the close event."""
    from flowforge.api.v1 import common_pb2, workflow_service_pb2
    from flowforge.client import HistoryEvent

    request = workflow_service_pb2.GetWorkflowExecutionHistoryRequest(
        namespace=client.namespace,
        execution=common_pb2.WorkflowExecution(workflow_id=handle.id, run_id=handle.run_id or ""),
        wait_new_event=True,
    )
    request.wait_timeout.FromTimedelta(_FOLLOW_WAIT)
    while True:
        response = await client.workflow_service.call(
            "GetWorkflowExecutionHistory", request, timeout=_FOLLOW_WAIT + timedelta(seconds=10)
        )
        for proto in response.events:
            event = HistoryEvent.from_proto(proto)
            on_event(event)
            request.after_event_id = event.event_id
            if event.event_type in _CLOSE_EVENTS:
                return event


@workflow.command(name="list")
@click.option("--query", "-q", default="", help="a visibility query (docs/visibility.md)")
@click.option("--limit", type=click.IntRange(min=1), default=50, show_default=True, help="at most this many runs")
@output_option
@client_command
def list_(connection: Connection, query: str, limit: int, output: str) -> None:
    """Executions matching a query, newest first."""

    async def act(client: Client) -> list[Any]:
        executions = []
        async for execution in client.list_workflows(query, page_size=min(limit, 1000)):
            executions.append(execution)
            if len(executions) >= limit:
                break
        return executions

    executions = run(connection, act)
    if output == "json":
        emit_json(
            [
                {
                    "workflow_id": e.workflow_id,
                    "run_id": e.run_id,
                    "workflow_type": e.workflow_type,
                    "task_queue": e.task_queue,
                    "status": e.status.name,
                    "start_time": stamp(e.start_time),
                    "close_time": stamp(e.close_time),
                    "history_length": e.history_length,
                    "search_attributes": e.search_attributes,
                    "memo": e.memo,
                }
                for e in executions
            ]
        )
    else:
        emit_table(
            ("WORKFLOW ID", "RUN ID", "TYPE", "STATUS", "STARTED", "CLOSED"),
            (
                (e.workflow_id, e.run_id, e.workflow_type, e.status.name, stamp(e.start_time), stamp(e.close_time))
                for e in executions
            ),
        )


@workflow.command()
@click.option("--query", "-q", default="", help="a visibility query (docs/visibility.md)")
@output_option
@client_command
def count(connection: Connection, query: str, output: str) -> None:
    """The number of executions a query matches."""

    async def act(client: Client) -> int:
        return (await client.count_workflows(query)).count

    number = run(connection, act)
    if output == "json":
        emit_json({"count": number})
    else:
        click.echo(number)


def _describe_dict(description: WorkflowExecutionDescription) -> dict[str, Any]:
    described: dict[str, Any] = plain(description)
    described["status"] = description.status.name
    return described


@workflow.command()
@_execution_options
@output_option
@client_command
def describe(connection: Connection, workflow_id: str, run_id: str | None, output: str) -> None:
    """An execution's status, pending work and DAG."""

    async def act(client: Client) -> WorkflowExecutionDescription:
        return await client.get_workflow_handle(workflow_id, run_id=run_id).describe()

    description = run(connection, act)
    if output == "json":
        emit_json(_describe_dict(description))
        return
    _print_summary(description)
    rows = [
        ("Task queue", description.task_queue),
        ("Started", stamp(description.start_time)),
        ("Closed", stamp(description.close_time) or "-"),
        ("History length", str(description.history_length)),
    ]
    if description.parent_workflow_id:
        rows.append(("Parent", f"{description.parent_workflow_id}  run {description.parent_run_id}"))
    if description.continued_run_id:
        rows.append(("Continued from", description.continued_run_id))
    if description.origin:
        rows.append(("Started by", json.dumps(description.origin)))
    if description.pause:
        pause = description.pause
        rows.append(("Paused", f"since {stamp(pause.pause_time)} by {pause.identity}: {pause.reason}"))
    for name, value in rows:
        click.echo(f"{name + ':':<16}{value}")
    if description.pending_activities:
        click.echo("\nPending activities:")
        emit_table(
            ("ACTIVITY ID", "TYPE", "STATE", "ATTEMPT", "LAST FAILURE", "WAITING"),
            (
                (a.activity_id, a.activity_type, a.state, a.attempt, a.last_failure or "-", a.waiting_reason or "-")
                for a in description.pending_activities
            ),
        )
    if description.activity_attempts:
        click.echo("\nActivity attempts:")
        emit_table(
            ("ACTIVITY ID", "TYPE", "ATTEMPT", "WORKER", "ENDED", "OUTCOME", "FAILURE"),
            (
                (
                    a.activity_id,
                    a.activity_type,
                    a.attempt,
                    a.identity,
                    stamp(a.ended_time),
                    a.outcome,
                    (a.failure or {}).get("message", "-"),
                )
                for a in description.activity_attempts
            ),
        )
    if description.pending_children:
        click.echo("\nPending children:")
        emit_table(
            ("WORKFLOW ID", "RUN ID", "TYPE"),
            ((c.workflow_id, c.run_id, c.workflow_type) for c in description.pending_children),
        )
    _print_dag_and_task(description)


def _print_summary(description: WorkflowExecutionDescription) -> None:
    build = f"  build {description.first_worker_build_id}" if description.first_worker_build_id else ""
    click.echo(
        f"{description.workflow_id}  run {description.run_id}  {description.workflow_type}"
        f"  {description.status.name}{build}"
    )
    for title, values in (("Search attributes", description.search_attributes), ("Memo", description.memo)):
        if values:
            click.echo(f"\n{title}:")
            for name, value in values.items():
                click.echo(f"  {name} = {value.isoformat() if isinstance(value, datetime) else json.dumps(value)}")


def _print_dag_and_task(description: WorkflowExecutionDescription) -> None:
    if description.dag:
        click.echo("\nDAG:")
        for node in description.dag:
            after = ", ".join(node.depends_on) or "-"
            click.echo(
                f"  [{node.activity_id}] {node.activity_type}  after: {after}  {node.state} (attempt {node.attempt})"
            )
    if description.pending_workflow_task and description.pending_workflow_task.last_failure:
        click.echo(f"\nWorkflow task failing: {description.pending_workflow_task.last_failure}")


@workflow.command()
@_execution_options
@output_option
@client_command
def show(connection: Connection, workflow_id: str, run_id: str | None, output: str) -> None:
    """An execution's history and DAG (--output json: a history file the Replayer accepts)."""

    async def act(client: Client) -> tuple[Any, WorkflowExecutionDescription | None]:
        handle = client.get_workflow_handle(workflow_id, run_id=run_id)
        history = await handle.fetch_history()
        return history, None if output == "json" else await handle.describe()

    history, description = run(connection, act)
    if description is None:
        click.echo(history.to_json())
        return
    _print_summary(description)
    click.echo("\nHistory:")
    for event in history.events:
        click.echo(_event_line(event))
    _print_dag_and_task(description)


@workflow.command()
@_execution_options
@output_option
@client_command
def result(connection: Connection, workflow_id: str, run_id: str | None, output: str) -> None:
    """Wait for an execution to close and print its result (exit 1 when it did not complete)."""
    from flowforge.exceptions import WorkflowFailureError

    async def act(client: Client) -> Any:
        return await client.get_workflow_handle(workflow_id, run_id=run_id).result()

    try:
        value = run(connection, act)
    except WorkflowFailureError as error:
        raise click.ClickException(f"{workflow_id} did not complete: {error.cause}") from None
    if output == "json":
        emit_json({"workflow_id": workflow_id, "result": value})
    else:
        click.echo(json.dumps(plain(value), ensure_ascii=False))


def _reason_option(fn: Any) -> Any:
    return click.option("--reason", default="", help="why, recorded in history")(fn)


@workflow.command()
@_execution_options
@_reason_option
@client_command
def cancel(connection: Connection, workflow_id: str, run_id: str | None, reason: str) -> None:
    """Ask an execution to cancel (its code decides how)."""

    async def act(client: Client) -> None:
        await client.get_workflow_handle(workflow_id, run_id=run_id).cancel(reason)

    run(connection, act)
    click.echo(f"cancellation of {workflow_id} requested")


@workflow.command()
@_execution_options
@_reason_option
@client_command
def terminate(connection: Connection, workflow_id: str, run_id: str | None, reason: str) -> None:
    """End an execution at once (no code of it runs)."""

    async def act(client: Client) -> None:
        await client.get_workflow_handle(workflow_id, run_id=run_id).terminate(reason=reason)

    run(connection, act)
    click.echo(f"{workflow_id} terminated")


@workflow.command()
@_execution_options
@click.option("--name", required=True, help="signal name")
@click.option("--input", "-i", "inputs", type=JSON, multiple=True, help="a JSON argument (repeat for several)")
@client_command
def signal(connection: Connection, workflow_id: str, run_id: str | None, name: str, inputs: tuple[Any, ...]) -> None:
    """Send a signal to an execution."""

    async def act(client: Client) -> None:
        await client.get_workflow_handle(workflow_id, run_id=run_id).signal(name, args=list(inputs))

    run(connection, act)
    click.echo(f"signal {name} sent to {workflow_id}")


@workflow.command()
@_execution_options
@click.option("--name", required=True, help="update name")
@click.option("--input", "-i", "inputs", type=JSON, multiple=True, help="a JSON argument (repeat for several)")
@click.option(
    "--update-id", help="the update id (default: a new UUID); an id the workflow has seen returns its outcome"
)
@output_option
@client_command
def update(
    connection: Connection,
    workflow_id: str,
    run_id: str | None,
    name: str,
    inputs: tuple[Any, ...],
    update_id: str | None,
    output: str,
) -> None:
    """Send an update to an execution and print its result (exits 1 if it was rejected or failed)."""
    from flowforge.client import WorkflowUpdateStage
    from flowforge.exceptions import WorkflowUpdateFailedError

    async def act(client: Client) -> tuple[str, Any]:
        handle = await client.get_workflow_handle(workflow_id, run_id=run_id).start_update(
            name, args=list(inputs), id=update_id, wait_for_stage=WorkflowUpdateStage.COMPLETED
        )
        return handle.id, await handle.result()

    try:
        sent_id, result = run(connection, act)
    except WorkflowUpdateFailedError as error:
        raise click.ClickException(f"update {error.update_id} failed: {error.cause}") from None
    if output == "json":
        emit_json({"update_id": sent_id, "result": result})
    else:
        click.echo(json.dumps(result))


def _timeout_option(fn: Any) -> Any:
    return click.option(
        "--timeout",
        type=click.FloatRange(min=0, min_open=True),
        default=30.0,
        show_default=True,
        help="seconds to wait for a worker's answer",
    )(fn)


@workflow.command()
@_execution_options
@click.option("--name", required=True, help="query name")
@click.option("--input", "-i", "inputs", type=JSON, multiple=True, help="a JSON argument (repeat for several)")
@_timeout_option
@output_option
@client_command
def query(
    connection: Connection,
    workflow_id: str,
    run_id: str | None,
    name: str,
    inputs: tuple[Any, ...],
    timeout: float,
    output: str,
) -> None:
    """Ask an execution a query, answered by a worker (closed runs too); prints the answer as JSON."""

    async def act(client: Client) -> Any:
        handle = client.get_workflow_handle(workflow_id, run_id=run_id)
        return await handle.query(name, args=list(inputs), timeout=timedelta(seconds=timeout))

    emit_json(run(connection, act))


@workflow.command()
@_execution_options
@_timeout_option
@output_option
@client_command
def stack(connection: Connection, workflow_id: str, run_id: str | None, timeout: float, output: str) -> None:
    """Where each coroutine of a running execution is waiting (the built-in __stack_trace query)."""

    async def act(client: Client) -> Any:
        handle = client.get_workflow_handle(workflow_id, run_id=run_id)
        return await handle.query("__stack_trace", timeout=timedelta(seconds=timeout))

    trace = run(connection, act)
    if output == "json":
        emit_json({"workflow_id": workflow_id, "stack_trace": trace})
    else:
        click.echo(str(trace).rstrip("\n"))
