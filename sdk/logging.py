"""Structured logs for FlowForge servers and workers: one JSON object a line.

Each line carries ``time`` (RFC 3339, UTC), ``level``, ``logger`` and ``message``, and
where they are known: ``namespace``, ``workflow_id``, ``run_id``, ``activity_id``,
``attempt``, ``trace_id`` and ``span_id``. The ids come, in this order, from the record's
own fields (``extra=``), the running activity or workflow, fields bound with
:func:`bind` (the server binds each RPC's ids), and the current OpenTelemetry span.
Payloads and secrets are never added: only ids, and the message the code logged.

A worker process turns it on with::

    import flowforge.logging
    flowforge.logging.configure(format="json", level="INFO")

The server does the same for ``flowforge server start --log-format json``.
"""

from __future__ import annotations

import contextvars
import datetime
import json
import logging
import sys
from typing import Any, Literal, TextIO

from opentelemetry import trace

from flowforge import activity
from flowforge._workflow_runtime import _Runtime

__all__ = ["FIELDS", "JsonFormatter", "bind", "configure", "fields"]

#: The id fields a line may carry, in the order they are written.
FIELDS = ("namespace", "workflow_id", "run_id", "activity_id", "attempt", "trace_id", "span_id")
_ID_FIELDS = FIELDS[:5]
_TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

_bound: contextvars.ContextVar[dict[str, Any]] = contextvars.ContextVar("flowforge_log_fields", default={})  # noqa: B039 - never mutated, only replaced


class bind:
    """Adds id fields (of :data:`FIELDS`) to every line logged inside the block,
    in this task and the tasks it starts. Empty values are left out.

    A class rather than a generator-based context manager: the server binds each RPC's
    ids, so it runs on every call."""

    __slots__ = ("_token", "_values")

    def __init__(self, **values: Any) -> None:
        self._values = values
        self._token: contextvars.Token[dict[str, Any]] | None = None

    def __enter__(self) -> None:
        added = {k: v for k, v in self._values.items() if v is not None and v != ""}
        self._token = _bound.set({**_bound.get(), **added} if added else _bound.get())

    def __exit__(self, *exc_info: object) -> None:
        if self._token is not None:
            _bound.reset(self._token)
            self._token = None


def fields(record: logging.LogRecord | None = None) -> dict[str, Any]:
    """The id fields known now (and on ``record``), as a JSON line would carry them."""
    found: dict[str, Any] = {}
    span = trace.get_current_span().get_span_context()
    if span.is_valid:
        found["trace_id"] = format(span.trace_id, "032x")
        found["span_id"] = format(span.span_id, "016x")
    found.update(_bound.get())
    runtime = _Runtime.current_or_none()
    if runtime is not None:
        info = runtime.workflow_info()
        found.update(namespace=info.namespace, workflow_id=info.workflow_id, run_id=info.run_id)
    running = activity._current_context.get(None)
    if running is not None:
        attempt = running.info
        found.update(
            namespace=attempt.namespace,
            workflow_id=attempt.workflow_id,
            run_id=attempt.run_id,
            activity_id=attempt.activity_id,
            attempt=attempt.attempt,
        )
    if record is not None:
        found.update({name: getattr(record, name) for name in _ID_FIELDS if getattr(record, name, None)})
    return found


class JsonFormatter(logging.Formatter):
    """Formats a record as one JSON object (see the module docstring)."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.datetime.fromtimestamp(record.created, datetime.UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        known = fields(record)
        line.update((name, known[name]) for name in FIELDS if name in known)
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str, ensure_ascii=False)


def configure(
    format: Literal["json", "text"] = "json",
    level: int | str = "INFO",
    stream: TextIO | None = None,
) -> logging.Handler:
    """Sends every log record of the process to ``stream`` (stderr by default) as JSON
    lines or as plain text; replaces the root logger's handlers. Returns the handler."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter() if format == "json" else logging.Formatter(_TEXT_FORMAT))
    root = logging.getLogger()
    for old in root.handlers[:]:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper() if isinstance(level, str) else level)
    return handler
