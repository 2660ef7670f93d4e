"""The engine's value types: its configuration and what its calls take and return."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from flowforge.api.schema import (
    HeaderJSON,
    PriorityJSON,
    WorkflowExecutionSignaledAttributes,
    message_to_json_dict,
    payloads_json,
)
from flowforge.api.v1 import command_pb2, common_pb2
from flowforge.server.history.execution_limits import ExecutionLimits
from flowforge.server.stores.base import ExecutionRow, HistoryEventRow, QueryRow, TaskRow

__all__ = [
    "DEFAULT_PRIORITY",
    "ActivityCompletion",
    "EngineConfig",
    "FoldedWorkflowTask",
    "LeasedActivityTask",
    "LeasedQuery",
    "LeasedWorkflowTask",
    "StartSignal",
    "TaskPriority",
    "WorkflowTaskCompletion",
    "WorkflowTaskReport",
    "header_attributes",
]


@dataclasses.dataclass
class EngineConfig:
    """Server limits and defaults."""

    max_payload_bytes: int = 2 * 1024 * 1024
    """Largest Payloads (sum of its values) a request may carry."""
    default_workflow_task_timeout_s: float = 10.0
    """How long a worker may hold a workflow task before it is given to another."""
    max_workflow_task_retry_delay_s: float = 60.0
    """Cap of the backoff between attempts of a failing workflow task."""
    default_history_wait_s: float = 60.0
    query_lease_s: float = 10.0
    """How long a worker may take to answer a query before it is offered to another."""
    limits: ExecutionLimits = dataclasses.field(default_factory=ExecutionLimits)
    """Per-execution limits: history size, signals, pending activities and children."""


def header_attributes(header: common_pb2.Header | None) -> dict[str, HeaderJSON]:
    """``{"header": ...}`` for an event's attributes when the call carried a header, else nothing."""
    return {"header": message_to_json_dict(header)} if header is not None and header.fields else {}


@dataclasses.dataclass(frozen=True)
class StartSignal:
    """A signal to deliver: by SignalWorkflowExecution, or with a start (signal-with-start)."""

    name: str
    input: common_pb2.Payloads
    header: common_pb2.Header = dataclasses.field(default_factory=common_pb2.Header)

    def attributes(self, identity: str) -> WorkflowExecutionSignaledAttributes:
        """The attributes of its WorkflowExecutionSignaled event."""
        signaled: WorkflowExecutionSignaledAttributes = {
            "signal_name": self.name,
            "input": payloads_json(self.input),
            "identity": identity,
        }
        if self.header.fields:
            signaled["header"] = message_to_json_dict(self.header)
        return signaled


@dataclasses.dataclass
class LeasedWorkflowTask:
    """A workflow task leased to a worker, with the history it replays."""

    token: bytes
    execution: ExecutionRow
    task: TaskRow
    history: list[HistoryEventRow]


@dataclasses.dataclass
class LeasedQuery:
    """A query leased to a poll, with the history of the run it asks."""

    token: bytes
    query: QueryRow
    history: list[HistoryEventRow]


@dataclasses.dataclass
class LeasedActivityTask:
    """An activity task leased to a worker."""

    token: bytes
    task: TaskRow


@dataclasses.dataclass
class WorkflowTaskCompletion:
    """What a workflow task completion hands back to the worker that reported it."""

    activity_tasks: list[LeasedActivityTask]
    workflow_task: LeasedWorkflowTask | None
    appended_events: list[HistoryEventRow] = dataclasses.field(default_factory=list)
    """The events the completion appended after the task's WorkflowTaskStarted (a
    sticky worker's instance goes on from them without a read)."""


@dataclasses.dataclass(frozen=True)
class WorkflowTaskReport:
    """A workflow task's completion as its worker reported it (RespondWorkflowTaskCompleted)."""

    commands: Sequence[command_pb2.Command]
    identity: str
    eager_activity_slots: int = 0
    """How many of the activity tasks the commands schedule may be leased to the worker at once."""
    worker_build_id: str = ""
    return_new_workflow_task: bool = False
    cached_event_id: int = 0
    """The worker keeps the run cached through this event (0: it does not)."""


@dataclasses.dataclass(frozen=True)
class FoldedWorkflowTask:
    """The workflow task an activity completion schedules, already run by the worker
    that completed the activity (docs/worker-stream.md, "Folded workflow tasks")."""

    last_event_id: int
    """The run's last event the worker's instance had processed."""
    started_us: int
    """The workflow time its code ran at: the WorkflowTaskStarted event's time."""
    completion: WorkflowTaskReport


@dataclasses.dataclass(frozen=True)
class ActivityCompletion:
    """What recording an activity's completion hands back to its worker."""

    workflow_task: LeasedWorkflowTask | None = None
    """The workflow task it scheduled, leased eagerly (asked for, and not folded)."""
    folded: WorkflowTaskCompletion | None = None
    """The answer to the folded workflow task's completion, when it was applied."""


@dataclasses.dataclass(frozen=True)
class TaskPriority:
    """A task's place in its queue's dispatch order (docs/flow-control.md): the lowest
    ``priority_key`` first, then ``fairness_key`` values in proportion to their weights."""

    priority_key: int = 3
    fairness_key: str = ""
    fairness_weight: float = 1.0

    def to_json(self) -> PriorityJSON:
        """As recorded in history (``priority`` of started and scheduled events)."""
        return {
            "priority_key": self.priority_key,
            "fairness_key": self.fairness_key,
            "fairness_weight": self.fairness_weight,
        }

    @classmethod
    def of_run(cls, row: ExecutionRow) -> TaskPriority:
        """The run's priority, which its tasks inherit."""
        return cls(row.priority_key, row.fairness_key, row.fairness_weight)

    @classmethod
    def from_json(cls, value: PriorityJSON | None) -> TaskPriority:
        """The priority recorded in history; the default where none was."""
        return DEFAULT_PRIORITY if value is None else cls(**value)


DEFAULT_PRIORITY = TaskPriority()
