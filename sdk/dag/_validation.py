"""Validation of a DAG document: every violation at once, each with the path where it is.

Checks, in order: the document is plain JSON (YAML can produce dates and non-string keys) and
not too large; the JSON Schema (``dag.schema.json``); duplicate task ids; unknown dependencies;
cycles (Kahn's algorithm, each cycle shown as ``a -> b -> a`` in execution order); malformed
expressions and references to tasks that are not ancestors of the task that reads them; a task
without a start-to-close or schedule-to-close timeout; the limit on tasks per DAG.
"""

from __future__ import annotations

import json
import math
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

from flowforge.dag._expressions import ExpressionError, references

if TYPE_CHECKING:
    import jsonschema

__all__ = ["MAX_NODES", "MAX_TASKS", "DagValidationError", "Violation", "find_cycles", "schema", "validate_document"]

MAX_TASKS = 1000
"""Tasks per DAG."""

MAX_NODES = 200_000
"""JSON values in a whole document (YAML aliases can make a small file expand without bound)."""


@dataclass(frozen=True, order=True)
class Violation:
    """One thing wrong with a definition.

    Attributes:
        path: Where, as ``$.tasks[2].depends_on[0]`` (``$`` is the document).
        message: What is wrong, for a person to fix.
    """

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


class DagValidationError(ValueError):
    """A definition that is not valid; ``violations`` lists everything wrong with it.

    Args:
        violations: At least one.
    """

    def __init__(self, violations: list[Violation]) -> None:
        self.violations = violations
        count = f"{len(violations)} violation{'s' if len(violations) != 1 else ''}"
        super().__init__(f"invalid DAG, {count}:\n" + "\n".join(f"  {v}" for v in violations))


@cache
def schema() -> dict[str, Any]:
    """The JSON Schema of the format (shipped as ``flowforge/dag/dag.schema.json``)."""
    loaded: dict[str, Any] = json.loads(resources.files("flowforge.dag").joinpath("dag.schema.json").read_text())
    return loaded


@cache
def _validator() -> jsonschema.protocols.Validator:
    import jsonschema  # on first validation: a client that only starts DAG runs never loads it

    validator_class = jsonschema.validators.validator_for(schema())
    validator: jsonschema.protocols.Validator = validator_class(schema())
    return validator


def _json_path(parts: Any) -> str:
    return "$" + "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in parts)


def _not_json(value: Any, path: str, budget: list[int]) -> Iterator[Violation]:
    """Values JSON cannot hold: what YAML adds (dates, non-string keys) and non-finite numbers."""
    budget[0] -= 1
    if budget[0] < 0:
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                yield Violation(path, f"key {key!r} is not a string")
                continue
            yield from _not_json(item, f"{path}.{key}", budget)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _not_json(item, f"{path}[{index}]", budget)
    elif isinstance(value, float) and not math.isfinite(value):
        yield Violation(path, f"{value} is not a JSON number")
    elif value is not None and not isinstance(value, str | int | float | bool):
        yield Violation(path, f"{type(value).__name__} value {value!s} is not JSON (quote it to make a string)")


def _schema_violations(document: Any) -> Iterator[Violation]:
    for error in sorted(_validator().iter_errors(document), key=lambda e: list(map(str, e.absolute_path))):
        message = error.message
        if error.schema == schema()["$defs"]["duration"]:  # oneOf's own message names no format
            message = f"{error.instance!r} is not a duration: seconds > 0, or text such as '500ms', '30s', '1h30m'"
        yield Violation(_json_path(error.absolute_path), message)


def find_cycles(dependencies: Mapping[str, tuple[str, ...]]) -> list[list[str]]:
    """The cycles of a dependency graph, each in execution order and closed (``[a, b, a]``).

    Kahn's algorithm removes every task whose dependencies are all removed; each task left
    has a dependency that is left too, so walking dependencies from one of them must repeat
    a task, and the walk from that repetition is a cycle. Every task left is covered by one
    walk; each reported cycle is a real one, rotated to start at its smallest id.
    """
    waiting = {task: sum(1 for d in deps if d in dependencies) for task, deps in dependencies.items()}
    dependents: dict[str, list[str]] = {task: [] for task in dependencies}
    for task, deps in dependencies.items():
        for dep in deps:
            if dep in dependents:
                dependents[dep].append(task)
    ready = deque(task for task, count in waiting.items() if count == 0)
    while ready:
        for dependent in dependents[ready.popleft()]:
            waiting[dependent] -= 1
            if waiting[dependent] == 0:
                ready.append(dependent)
    left = {task for task, count in waiting.items() if count > 0}
    cycles: list[list[str]] = []
    covered: set[str] = set()
    for start in sorted(left):
        walk: list[str] = []
        position: dict[str, int] = {}
        task = start
        while task not in position and task not in covered:
            position[task] = len(walk)
            walk.append(task)
            task = min(d for d in dependencies[task] if d in left)
        covered.update(walk)
        if task in position:
            loop = walk[position[task] :][::-1]  # dependencies walked backwards: reverse into execution order
            first = loop.index(min(loop))
            loop = loop[first:] + loop[:first]
            cycles.append([*loop, loop[0]])
    return cycles


def _ancestors(dependencies: Mapping[str, tuple[str, ...]]) -> dict[str, set[str]]:
    result: dict[str, set[str]] = {}
    for task in dependencies:
        seen: set[str] = set()
        stack = [d for d in dependencies[task] if d in dependencies]
        while stack:
            dep = stack.pop()
            if dep not in seen:
                seen.add(dep)
                stack.extend(d for d in dependencies[dep] if d in dependencies)
        result[task] = seen
    return result


def _reference_violations(
    expression: Any, path: str, known: Mapping[str, Any], allowed: set[str] | None, reader: str
) -> Iterator[Violation]:
    for where, reference in references(expression, path):
        if isinstance(reference, ExpressionError):
            yield Violation(where, str(reference))
        elif reference.task_id is None:
            continue
        elif reference.task_id not in known:
            yield Violation(where, f"references unknown task {reference.task_id!r}")
        elif allowed is not None and reference.task_id not in allowed:
            yield Violation(
                where,
                f"{reader} reads the output of {reference.task_id!r}, which it does not depend on "
                f"(add {reference.task_id!r} to its depends_on, directly or through another task)",
            )


def _graph_violations(
    tasks: Sequence[tuple[int, Mapping[str, Any]]], document: Mapping[str, Any]
) -> Iterator[Violation]:
    index_of: dict[str, int] = {}
    for index, task in tasks:
        task_id = task["id"]
        if task_id in index_of:
            yield Violation(
                f"$.tasks[{index}].id", f"duplicate task id {task_id!r} (first at $.tasks[{index_of[task_id]}])"
            )
        else:
            index_of[task_id] = index
    dependencies: dict[str, tuple[str, ...]] = {}
    for index, task in tasks:
        deps = task.get("depends_on", [])
        deps = [d for d in deps if isinstance(d, str)] if isinstance(deps, list) else []
        for position, dep in enumerate(deps):
            if dep not in index_of:
                yield Violation(f"$.tasks[{index}].depends_on[{position}]", f"unknown task {dep!r}")
            elif dep == task["id"]:
                yield Violation(f"$.tasks[{index}].depends_on[{position}]", f"task {dep!r} depends on itself")
        if index_of[task["id"]] == index:
            dependencies[task["id"]] = tuple(d for d in deps if d in index_of and d != task["id"])
    for cycle in find_cycles(dependencies):
        yield Violation(f"$.tasks[{index_of[cycle[0]]}].depends_on", "cycle: " + " -> ".join(cycle))
    ancestors = _ancestors(dependencies)
    for index, task in tasks:
        if "input" in task:
            allowed = ancestors.get(task["id"], set())
            yield from _reference_violations(
                task["input"], f"$.tasks[{index}].input", index_of, allowed, f"task {task['id']!r}"
            )
    if "output" in document:
        yield from _reference_violations(document["output"], "$.output", index_of, None, "the output")


def validate_document(document: Any) -> list[Violation]:
    """Everything wrong with a loaded definition (an empty list when it is valid)."""
    budget = [MAX_NODES]
    violations = list(_not_json(document, "$", budget))
    if budget[0] < 0:
        return [Violation("$", f"the document has more than {MAX_NODES} values")]
    violations.extend(_schema_violations(document))
    if not isinstance(document, dict) or not isinstance(document.get("tasks"), list):
        return violations
    tasks = [
        (index, task)
        for index, task in enumerate(document["tasks"])
        if isinstance(task, dict) and isinstance(task.get("id"), str)
    ]
    if len(document["tasks"]) > MAX_TASKS:
        violations.append(Violation("$.tasks", f"{len(document['tasks'])} tasks, more than the limit of {MAX_TASKS}"))
    for index, task in tasks:
        if "start_to_close_timeout" not in task and "schedule_to_close_timeout" not in task:
            violations.append(
                Violation(
                    f"$.tasks[{index}]",
                    f"task {task['id']!r} needs start_to_close_timeout or schedule_to_close_timeout",
                )
            )
    violations.extend(_graph_violations(tasks, document))
    return violations
