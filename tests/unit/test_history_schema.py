"""The typed history schema (``flowforge.api.schema``) against the code that writes and reads history.

- Every event type the server source names where it writes an event (``append`` /
  ``deliver`` and every event-shaped string literal) is an :class:`EventType`.
- Every attribute key the SDK and the worker read from an event's attributes is declared
  in that event's ``TypedDict`` (in the union of the events an enclosing
  ``if event_type == ...`` allows, or of all events where nothing narrows it).
- The checks themselves catch a bad name (so they can fail).

tests/integration/test_history_schema_runtime.py runs real workflows and checks every
event the server writes against the schema.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import get_type_hints

import pytest

from flowforge import converter
from flowforge.api import schema
from flowforge.api.schema import EVENT_ATTRIBUTES, EventType

ROOT = Path(__file__).resolve().parents[2]
SERVER = ROOT / "server"
# The modules that read event attributes. sdk/_codec.py is left out on purpose: its
# ``attributes`` are a failure's encoded attributes (message, stack_trace), not an event's.
READERS = [*sorted((ROOT / "sdk").glob("*.py")), *sorted((ROOT / "worker").rglob("*.py"))]
READERS = [path for path in READERS if path.name != "_codec.py"]

# A Temporal history event name: who it is about, then what happened to it.
EVENT_SHAPED = re.compile(
    r"^(Workflow|Activity|Timer|Marker|Child|StartChild|Signal|RequestCancel|External|Upsert)[A-Za-z]*"
    r"(Started|Scheduled|Completed|Failed|TimedOut|Canceled|Cancelled|CancelRequested|Terminated|ContinuedAsNew"
    r"|Signaled|Fired|Recorded|Initiated|SearchAttributes)$"
)
# Expressions that hold one event's attributes in the readers: ``attributes`` / ``attrs``
# (any event) and ``started`` (the run's WorkflowExecutionStarted), or ``<x>.attributes``.
_ATTRIBUTE_NAMES = {"attributes": None, "attrs": None, "started": EventType.WORKFLOW_EXECUTION_STARTED}


def _keys(event_type: EventType) -> set[str]:
    attributes = EVENT_ATTRIBUTES[event_type]
    return set(attributes.__required_keys__) | set(attributes.__optional_keys__)


ALL_KEYS = set().union(*(_keys(event_type) for event_type in EventType))


# ------------------------------------------------------------------ the schema itself


def test_every_event_type_has_exactly_one_attributes_type_whose_hints_resolve() -> None:
    assert set(EVENT_ATTRIBUTES) == set(EventType)
    for event_type, attributes in EVENT_ATTRIBUTES.items():
        assert attributes.__name__ == f"{event_type.value}Attributes"
        get_type_hints(attributes)  # every annotation names something that exists


def test_the_converter_re_exports_the_one_copy_of_the_json_helpers() -> None:
    assert converter.message_to_json_dict is schema.message_to_json_dict
    assert converter.json_dict_to_message is schema.json_dict_to_message


def test_execution_statuses_are_the_api_enum_without_its_prefix() -> None:
    for status in schema.ExecutionStatus:
        assert schema.ExecutionStatus.from_proto(status.proto) is status
    with pytest.raises(ValueError):
        schema.ExecutionStatus.from_proto(0)


# ------------------------------------------------------------------ the server writes


def _python_files(folder: Path) -> Iterator[tuple[Path, ast.Module]]:
    for path in sorted(folder.rglob("*.py")):
        yield path, ast.parse(path.read_text(), filename=str(path))


def _event_type_of(node: ast.expr) -> str | None:
    """The event type an expression spells, if it is a literal or ``EventType.X``; else None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "EventType":
        return EventType[node.attr].value if node.attr in EventType.__members__ else f"EventType.{node.attr}"
    return None


def _written_event_types(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """(line, name) of each event type passed to ``m.append(type, attributes, ...)`` or in a
    ``(type, attributes, ...)`` tuple given to ``deliver`` / ``append`` / ``first_events``."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        if node.func.attr == "append" and len(node.args) >= 2:
            candidates = [node.args[0]]
        elif node.func.attr in ("append", "deliver") or any(k.arg == "first_events" for k in node.keywords):
            candidates = [
                element.elts[0]
                for argument in [*node.args, *(k.value for k in node.keywords)]
                for element in ast.walk(argument)
                if isinstance(element, ast.Tuple) and len(element.elts) >= 2 and isinstance(element.elts[1], ast.Dict)
            ]
        else:
            continue
        for candidate in candidates:
            name = _event_type_of(candidate)
            if name is not None:
                yield node.lineno, name


def undeclared_server_event_types(folder: Path) -> list[str]:
    """Where the server source names an event type the schema does not declare."""
    declared = {event_type.value for event_type in EventType}
    found = []
    for path, tree in _python_files(folder):
        where = path.relative_to(folder)
        for line, name in _written_event_types(tree):
            if name not in declared:
                found.append(f"{where}:{line}: writes {name!r}")
        for node in ast.walk(tree):
            literal = node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else ""
            if EVENT_SHAPED.match(literal) and literal not in declared:
                found.append(f"{where}:{node.lineno}: names {literal!r}")
            member = _event_type_of(node) if isinstance(node, ast.Attribute) else None
            if member is not None and member not in declared:
                found.append(f"{where}:{node.lineno}: names {member}")
    return found


def test_every_event_type_the_server_writes_is_declared() -> None:
    assert undeclared_server_event_types(SERVER) == []


def test_the_server_check_finds_an_undeclared_event_type(tmp_path: Path) -> None:
    (tmp_path / "engine.py").write_text(
        "def close(m, outcomes):\n"
        "    m.append('WorkflowExecutionExploded', {'reason': 'x'})\n"
        "    m.deliver([(EventType.ACTIVITY_TASK_VANISHED, {})])\n"
        "    outcomes.append(('TimerStarted', {}))\n"
        "    return m.append_later('ActivityTaskRetryScheduled')\n"
    )
    assert sorted(undeclared_server_event_types(tmp_path)) == [
        "engine.py:2: writes 'WorkflowExecutionExploded'",
        "engine.py:3: names EventType.ACTIVITY_TASK_VANISHED",
        "engine.py:3: writes 'EventType.ACTIVITY_TASK_VANISHED'",
        "engine.py:5: names 'ActivityTaskRetryScheduled'",
    ]


# ------------------------------------------------------------------ the SDK reads


@dataclass(frozen=True)
class AttributeRead:
    path: str
    line: int
    key: str
    event_types: frozenset[EventType] | None
    """The events the read can be of (None: any)."""


def _narrowed_event_types(test: ast.expr) -> frozenset[EventType] | None:
    """The event types an ``if`` test such as ``event.event_type == "X"`` or
    ``event_type in ("X", "Y")`` admits in its body, or None if it does not narrow."""
    for node in ast.walk(test):
        if not isinstance(node, ast.Compare) or len(node.ops) != 1:
            continue
        left = node.left
        is_event_type = (isinstance(left, ast.Name) and left.id == "event_type") or (
            isinstance(left, ast.Attribute) and left.attr == "event_type"
        )
        if not is_event_type or not isinstance(node.ops[0], ast.Eq | ast.In):
            continue
        right = node.comparators[0]
        elements = right.elts if isinstance(right, ast.Tuple | ast.List | ast.Set) else [right]
        names = [_event_type_of(element) for element in elements]
        if names and all(name in EventType._value2member_map_ for name in names):
            return frozenset(EventType(name) for name in names if name is not None)
    return None


def _attribute_holder(node: ast.expr) -> tuple[bool, EventType | None]:
    """Whether ``node`` holds an event's attributes, and of which event if that is known."""
    if isinstance(node, ast.Name) and node.id in _ATTRIBUTE_NAMES:
        return True, _ATTRIBUTE_NAMES[node.id]
    if isinstance(node, ast.Attribute) and node.attr == "attributes":
        return True, None
    return False, None


def _reads(node: ast.AST, path: str, narrowed: frozenset[EventType] | None) -> Iterator[AttributeRead]:
    if isinstance(node, ast.If):
        body_narrowed = _narrowed_event_types(node.test) or narrowed
        yield from _reads(node.test, path, narrowed)
        for child in node.body:
            yield from _reads(child, path, body_narrowed)
        for child in node.orelse:
            yield from _reads(child, path, narrowed)
        return
    key_node: ast.expr | None = None
    holder: ast.expr | None = None
    if isinstance(node, ast.Subscript):
        holder, key_node = node.value, node.slice
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" and node.args:
        holder, key_node = node.func.value, node.args[0]
    if holder is not None and isinstance(key_node, ast.Constant) and isinstance(key_node.value, str):
        is_holder, event_type = _attribute_holder(holder)
        if is_holder:
            events = frozenset({event_type}) if event_type is not None else narrowed
            yield AttributeRead(path, node.lineno, key_node.value, events)
    for child in ast.iter_child_nodes(node):
        yield from _reads(child, path, narrowed)


def attribute_reads(paths: list[Path]) -> list[AttributeRead]:
    reads = []
    for path in paths:
        tree = ast.parse(path.read_text(), filename=str(path))
        reads.extend(_reads(tree, path.name, None))
    return reads


def undeclared_reads(paths: list[Path]) -> list[str]:
    """Each read of an attribute key that the events it can be of do not declare."""
    found = []
    for read in attribute_reads(paths):
        allowed = ALL_KEYS if read.event_types is None else set().union(*(_keys(t) for t in read.event_types))
        if read.key not in allowed:
            of = "any event" if read.event_types is None else ", ".join(sorted(read.event_types))
            found.append(f"{read.path}:{read.line}: reads {read.key!r} of {of}")
    return found


def test_the_sdk_and_the_worker_read_only_declared_attributes() -> None:
    reads = attribute_reads(READERS)
    # The walk does see the replay's reads (else this test would prove nothing).
    assert len(reads) > 40
    assert {"scheduled_event_id", "timer_id", "initiated_event_id", "new_execution_run_id"} <= {r.key for r in reads}
    assert undeclared_reads(READERS) == []


def test_the_read_check_finds_an_undeclared_key_and_a_key_of_another_event(tmp_path: Path) -> None:
    source = tmp_path / "reader.py"
    source.write_text(
        "def apply(event, attributes):\n"
        "    if event.event_type == 'TimerFired':\n"
        "        timer = attributes['timer_id']\n"
        "        result = attributes.get('result')\n"
        "    elif event.event_type in ('ActivityTaskCompleted', EventType.ACTIVITY_TASK_FAILED):\n"
        "        result = event.attributes.get('result')\n"
        "    scheduled = attributes['scheduled_event_idd']\n"
        "    started = {}\n"
        "    run = started.get('run_idd')\n"
    )
    assert undeclared_reads([source]) == [
        "reader.py:4: reads 'result' of TimerFired",
        "reader.py:7: reads 'scheduled_event_idd' of any event",
        "reader.py:9: reads 'run_idd' of WorkflowExecutionStarted",
    ]
