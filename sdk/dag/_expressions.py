"""Input and output expressions of a DAG: what they reference and what they evaluate to.

An expression is JSON. A string that starts with ``$.`` is a reference: ``$.input`` (the run's
input) or ``$.tasks.ID.output`` (a completed task's result), each optionally followed by
``.key`` or ``.N`` segments that select inside the value. A string that starts with ``$$`` is
the literal string without its first ``$``. Lists and objects are evaluated element by element;
everything else is a literal.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["ExpressionError", "Reference", "evaluate", "references"]

_SEGMENT = re.compile(r"^[A-Za-z0-9_-]+$")


class ExpressionError(ValueError):
    """An expression that cannot be parsed, or whose reference selects nothing."""


@dataclass(frozen=True)
class Reference:
    """One ``$.`` reference: the run's input or a task's output, and the path inside it.

    Attributes:
        task_id: The referenced task, or ``None`` for ``$.input``.
        path: The ``.key`` / ``.N`` segments after ``$.input`` or ``$.tasks.ID.output``.
    """

    task_id: str | None
    path: tuple[str, ...]


def _parse(text: str) -> Reference:
    if not text.startswith("$."):
        raise ExpressionError(f"{text!r} is not an expression: it starts with '$' but not '$.' ('$$' escapes a '$')")
    segments = text[2:].split(".")
    if any(not _SEGMENT.match(segment) for segment in segments):
        raise ExpressionError(f"{text!r} is not an expression: segments are letters, digits, '_' or '-'")
    if segments[0] == "input":
        return Reference(None, tuple(segments[1:]))
    if segments[0] == "tasks" and len(segments) >= 3 and segments[2] == "output":
        return Reference(segments[1], tuple(segments[3:]))
    raise ExpressionError(f"{text!r} is not an expression: use $.input or $.tasks.ID.output (then .key segments)")


def references(expression: Any, path: str = "") -> Iterator[tuple[str, Reference | ExpressionError]]:
    """Every reference inside ``expression``, with its path below ``path`` (or why it is malformed)."""
    if isinstance(expression, str) and expression.startswith("$") and not expression.startswith("$$"):
        try:
            yield path, _parse(expression)
        except ExpressionError as error:
            yield path, error
    elif isinstance(expression, list):
        for index, item in enumerate(expression):
            yield from references(item, f"{path}[{index}]")
    elif isinstance(expression, dict):
        for key, item in expression.items():
            yield from references(item, f"{path}.{key}")


def _select(value: Any, reference: Reference, text: str) -> Any:
    for segment in reference.path:
        if isinstance(value, Mapping) and segment in value:
            value = value[segment]
        elif isinstance(value, list) and segment.isdigit() and int(segment) < len(value):
            value = value[int(segment)]
        else:
            raise ExpressionError(f"{text}: the value has no {segment!r}")
    return value


def evaluate(expression: Any, run_input: Any, outputs: Mapping[str, Any]) -> Any:
    """The value of ``expression`` given the run's input and the outputs of completed tasks.

    Raises:
        ExpressionError: a reference is malformed, names a task without an output, or selects
            a key or index the value does not have.
    """
    if isinstance(expression, str) and expression.startswith("$$"):
        return expression[1:]
    if isinstance(expression, str) and expression.startswith("$"):
        reference = next(iter(references(expression)))[1]
        if isinstance(reference, ExpressionError):
            raise reference
        if reference.task_id is None:
            return _select(run_input, reference, expression)
        if reference.task_id not in outputs:
            raise ExpressionError(f"{expression}: task {reference.task_id!r} has no output yet")
        return _select(outputs[reference.task_id], reference, expression)
    if isinstance(expression, list):
        return [evaluate(item, run_input, outputs) for item in expression]
    if isinstance(expression, dict):
        return {key: evaluate(item, run_input, outputs) for key, item in expression.items()}
    return expression
