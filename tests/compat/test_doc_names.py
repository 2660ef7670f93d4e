"""Every Temporal name docs/coming-from-temporal.md says FlowForge has still works.

The Imports table's lines go through ``scripts/port_from_temporal.py`` and are executed; in the
other tables, each row not marked *missing* has its names (the FlowForge column's code spans,
or the Temporal column's when the FlowForge column says "same") resolved against FlowForge:
``workflow.execute_local_activity``, ``handle.execute_update``, ``ApplicationErrorCategory.BENIGN``,
``client.get_async_activity_handle`` ... A name that stops resolving fails its table row here.
"""

from __future__ import annotations

import importlib
import re
import typing
from pathlib import Path
from typing import Any

import pytest

import flowforge
from flowforge import activity, client, common, converter, envconfig, exceptions, testing, worker, workflow
from scripts.port_from_temporal import port_source

DOC = Path(__file__).parents[2] / "docs" / "coming-from-temporal.md"
# What the doc's code spans name: modules, and the objects its examples call by habit.
ROOTS: dict[str, Any] = {
    **{
        name: getattr(module, name)
        for module in (common, exceptions, testing, worker, envconfig)
        for name in module.__all__
    },
    **{name: getattr(client, name) for name in client.__all__},
    "flowforge": flowforge,
    "workflow": workflow,
    "activity": activity,
    "converter": converter,
    "client": client.Client,
    "Client": client.Client,
    "handle": client.WorkflowHandle,
    "env": testing.WorkflowEnvironment,
    "operation": client.WithStartWorkflowOperation,
    "exceptions": exceptions,
}
# Leading words of spans that are not names of the API (CLI commands, placeholders, values).
_NOT_API = re.compile(r"^(temporal |flowforge [a-z]|--|\.|[A-Z_]+_[A-Z_]+$|\d)")


def _rows() -> list[tuple[str, str, list[str], list[str], str]]:
    """(section, status, Temporal spans, FlowForge spans, the row) of every table row."""
    rows, section = [], ""
    for line in DOC.read_text().splitlines():
        if line.startswith("## "):
            section = line[3:]
        if not line.startswith("| ") or line.startswith(("|---", "| Temporal")):
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split(" | ")]
        if len(cells) < 2:
            continue
        status = cells[2] if len(cells) > 2 else cells[1]
        rows.append((section, status, re.findall(r"`([^`]+)`", cells[0]), re.findall(r"`([^`]+)`", cells[1]), line))
    return rows


def _resolve(span: str) -> Any:
    """The object a code span names (``workflow.unsafe.is_replaying()`` -> the function)."""
    match = re.match(r"^(?:await |async for \w+ in (?:await )?|@)?([A-Za-z_][\w.]*)", span)
    if match is None:
        return None  # an argument list or a value, not a name
    path = match.group(1).rstrip(".").replace("temporalio", "flowforge").split(".")
    if path[0] not in ROOTS:
        return None
    value = ROOTS[path[0]]
    for depth, part in enumerate(path[1:], start=1):
        if isinstance(value, property):
            value = typing.get_type_hints(value.fget)["return"]  # client.workflow_service.call
        if not hasattr(value, part) and isinstance(value, type(flowforge)):
            try:
                value = importlib.import_module(f"{value.__name__}.{part}")
            except ModuleNotFoundError:
                raise AssertionError(f"{'.'.join(path[:depth])} has no {part!r}") from None
            continue
        if not hasattr(value, part) and isinstance(value, type):
            fields = getattr(value, "__dataclass_fields__", {})
            if part in fields or part in value.__init__.__code__.co_names:
                return value  # a field, or an attribute each instance sets in __init__ (handle.id)
        assert hasattr(value, part), f"{'.'.join(path[:depth])} has no {part!r}"
        value = getattr(value, part)
    return value


IMPORT_ROWS = [row for row in _rows() if row[0] == "Imports"]
API_ROWS = [
    row
    for row in _rows()
    if row[0] not in ("Imports", "Server and CLI", "Not in FlowForge at all") and not row[1].startswith("missing")
]


@pytest.mark.parametrize("row", IMPORT_ROWS, ids=[row[2][0] for row in IMPORT_ROWS])
def test_each_import_in_the_doc_works_after_the_port(row: tuple[str, str, list[str], list[str], str]) -> None:
    for span in row[2]:
        if span.startswith(("from temporalio", "import temporalio")) and "..." not in span:
            exec(port_source(span), {})  # the doc's own import line, ported
        elif span.startswith("temporalio."):
            importlib.import_module(span.replace("temporalio", "flowforge"))


@pytest.mark.parametrize("row", API_ROWS, ids=[row[4][:60] for row in API_ROWS])
def test_each_name_in_the_doc_resolves(row: tuple[str, str, list[str], list[str], str]) -> None:
    _, _, temporal_spans, flowforge_spans, _ = row
    # The FlowForge column's names, or the Temporal column's where it says "same".
    for span in flowforge_spans or temporal_spans:
        if not _NOT_API.match(span):
            _resolve(span)  # raises AssertionError naming the part that is gone


def test_the_doc_has_tables_to_check() -> None:
    assert len(IMPORT_ROWS) >= 8 and len(API_ROWS) >= 60
