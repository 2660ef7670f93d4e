"""The model of a validated DAG definition, its canonical form and its digest."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["TIMEOUT_FIELDS", "DagSpec", "DagTask", "parse_duration"]

TIMEOUT_FIELDS = (
    "start_to_close_timeout",
    "schedule_to_close_timeout",
    "schedule_to_start_timeout",
    "heartbeat_timeout",
)
_DURATION_PART = re.compile(r"([0-9]+(?:\.[0-9]+)?)(ms|s|m|h|d)")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_duration(value: float | str) -> float:
    """Seconds of a duration given as seconds or as text such as ``"1m30s"`` (validated beforehand)."""
    if isinstance(value, int | float):
        return float(value)
    return sum(float(number) * _UNIT_SECONDS[unit] for number, unit in _DURATION_PART.findall(value))


def _retry_policy(document: Mapping[str, Any]) -> dict[str, Any]:
    """The retry policy with durations in seconds (floats), so equal policies compare and hash equal."""
    policy: dict[str, Any] = {}
    for key, value in document.items():
        if key in ("initial_interval", "maximum_interval"):
            policy[key] = parse_duration(value)
        elif key == "backoff_coefficient":
            policy[key] = float(value)
        elif key == "non_retryable_error_types":
            policy[key] = sorted(set(value))
        else:
            policy[key] = value
    return policy


@dataclass(frozen=True)
class DagTask:
    """One task of a DAG: an activity call and the tasks whose outputs it waits for.

    Attributes:
        id: Unique within the DAG; ``$.tasks.ID.output`` names its result.
        activity: The activity type a worker registers.
        depends_on: Tasks that must complete before this one is scheduled (sorted).
        input: The argument expression; meaningful only when ``has_input``.
        has_input: Whether the activity gets one argument (``input``) or none.
        task_queue: The task's own queue, or ``None`` for the run's.
        retry_policy: Durations in seconds; ``None`` for the server's default.
        timeouts: Seconds per timeout field that was given.
    """

    id: str
    activity: str
    depends_on: tuple[str, ...] = ()
    input: Any = None
    has_input: bool = False
    task_queue: str | None = None
    retry_policy: Mapping[str, Any] | None = None
    timeouts: Mapping[str, float] = field(default_factory=dict)

    @classmethod
    def from_document(cls, document: Mapping[str, Any]) -> DagTask:
        """The task of a validated ``tasks[i]`` object."""
        policy = document.get("retry_policy")
        return cls(
            id=document["id"],
            activity=document["activity"],
            depends_on=tuple(sorted(set(document.get("depends_on", ())))),
            input=document.get("input"),
            has_input="input" in document,
            task_queue=document.get("task_queue"),
            retry_policy=_retry_policy(policy) if policy is not None else None,
            timeouts={name: parse_duration(document[name]) for name in TIMEOUT_FIELDS if name in document},
        )

    def to_document(self) -> dict[str, Any]:
        """The canonical object of this task (absent fields omitted, durations in seconds)."""
        document: dict[str, Any] = {"id": self.id, "activity": self.activity}
        if self.depends_on:
            document["depends_on"] = list(self.depends_on)
        if self.has_input:
            document["input"] = self.input
        if self.task_queue is not None:
            document["task_queue"] = self.task_queue
        if self.retry_policy is not None:
            document["retry_policy"] = dict(self.retry_policy)
        document.update(self.timeouts)
        return document


@dataclass(frozen=True)
class DagSpec:
    """A validated DAG definition (build one with :func:`flowforge.dag.parse_dag`).

    Attributes:
        name: Runs are started by this name and a version or alias.
        tasks: Sorted by id (the order of tasks in a file carries no meaning).
        output: The run's result expression; ``None`` gives a ``null`` result.
        task_queue: The activities' queue unless a task or the start names another.
        description: Free text for people.
    """

    name: str
    tasks: tuple[DagTask, ...]
    output: Any = None
    task_queue: str | None = None
    description: str | None = None

    @classmethod
    def from_document(cls, document: Mapping[str, Any]) -> DagSpec:
        """The spec of a validated document."""
        tasks = sorted((DagTask.from_document(task) for task in document["tasks"]), key=lambda task: task.id)
        return cls(
            name=document["name"],
            tasks=tuple(tasks),
            output=document.get("output"),
            task_queue=document.get("task_queue"),
            description=document.get("description"),
        )

    def task(self, task_id: str) -> DagTask:
        """The task with that id (``KeyError`` if there is none)."""
        for task in self.tasks:
            if task.id == task_id:
                return task
        raise KeyError(task_id)

    def to_document(self) -> dict[str, Any]:
        """The canonical document: a valid definition again, with one spelling per meaning."""
        document: dict[str, Any] = {"name": self.name, "tasks": [task.to_document() for task in self.tasks]}
        if self.task_queue is not None:
            document["task_queue"] = self.task_queue
        if self.description is not None:
            document["description"] = self.description
        if self.output is not None:
            document["output"] = self.output
        return document

    def canonical_json(self) -> bytes:
        """The canonical form: sorted keys, no whitespace, UTF-8."""
        text = json.dumps(self.to_document(), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return text.encode()

    @property
    def digest(self) -> str:
        """The version: SHA-256 of the canonical form, 64 hex digits (same content, same digest)."""
        return hashlib.sha256(self.canonical_json()).hexdigest()
