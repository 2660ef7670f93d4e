"""How commands print: ``--output text`` (rich tables, colour on a terminal) or ``--output json``."""

from __future__ import annotations

import dataclasses
import enum
import json
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any, TypeVar

import click
from rich.console import Console
from rich.table import Table

__all__ = ["duration", "emit_json", "emit_table", "output_option", "plain", "progress", "stamp", "stdout_console"]

_F = TypeVar("_F", bound=Callable[..., Any])


def output_option(fn: _F) -> _F:
    """Adds ``--output/-o text|json`` (default text) to a command that prints data."""
    return click.option(
        "--output",
        "-o",
        type=click.Choice(["text", "json"]),
        default="text",
        show_default=True,
        help="text for people, json for programs",
    )(fn)


def stdout_console() -> Console:
    """A console on stdout: colours and the terminal's width on a terminal; plain, unwrapped lines otherwise."""
    terminal = sys.stdout.isatty()
    # Not on a terminal, a table must not be folded to 80 columns: scripts read its lines.
    return Console(highlight=False, soft_wrap=not terminal, width=None if terminal else 100_000, no_color=not terminal)


def duration(value: timedelta) -> str:
    """A duration the way people write it: ``30d``, ``12h``, ``90s``."""
    seconds = value.total_seconds()
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{seconds / size:.0f}{unit}"
    return f"{seconds:g}s"


def stamp(value: datetime | None) -> str:
    """A time to the second, ISO 8601 with its offset; empty for ``None``."""
    return value.isoformat(timespec="seconds") if value else ""


def plain(value: Any) -> Any:
    """A JSON-ready copy: dataclasses as objects (without their ``raw`` protobuf), enums by name, times in ISO 8601."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value) if f.name != "raw"}
    if isinstance(value, enum.Enum):
        return value.name
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [plain(v) for v in value]
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return value


def emit_json(value: Any, *, lines: bool = False) -> None:
    """Prints ``value`` as JSON: indented, or as one line (``lines=True``, for JSON Lines streams)."""
    text = json.dumps(plain(value), indent=None if lines else 2, ensure_ascii=False)
    click.echo(text)


def emit_table(headers: Sequence[str], rows: Iterable[Sequence[Any]], *, empty: str | None = None) -> None:
    """Prints rows under bold headers, columns aligned; ``empty`` (if given) instead of a table with no rows."""
    materialized = [[str(cell) for cell in row] for row in rows]
    if not materialized and empty is not None:
        click.echo(empty)
        return
    table = Table(box=None, pad_edge=False, show_edge=False, header_style="bold", padding=(0, 2, 0, 0))
    for header in headers:
        table.add_column(header, overflow="fold")  # a narrow terminal folds cells, never crops an id
    for row in materialized:
        table.add_row(*row)
    console = stdout_console()
    if console.is_terminal:
        console.print(table)
        return
    with console.capture() as captured:
        console.print(table)
    for line in captured.get().splitlines():
        click.echo(line.rstrip())


@contextmanager
def progress(title: str, total: float) -> Iterator[Callable[[float, str], None]]:
    """Reports a long operation's progress: a bar on a terminal, one plain line per step otherwise.

    Yields ``advance(amount, what)``: ``amount`` more of ``total`` is done, ``what`` says which part.
    """
    if not sys.stdout.isatty():
        done = 0.0

        def line(amount: float, what: str) -> None:
            nonlocal done
            done += amount
            click.echo(f"{title}: {what} ({100 * done / total if total else 100:.0f}%)")

        yield line
        return
    from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeRemainingColumn

    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TaskProgressColumn(),
        TimeRemainingColumn(),
        console=stdout_console(),
    ) as bar:
        task = bar.add_task(title, total=total)
        yield lambda amount, what: bar.update(task, advance=amount)
