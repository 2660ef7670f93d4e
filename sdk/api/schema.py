"""The history protocol's names, shared by the server and the SDK (docs/history-events.md).

An execution's history is a list of events, each with an :class:`EventType` and a JSON
object of attributes (snake_case keys). This module is the one place those names are
spelled: the event types, one ``TypedDict`` per event's attributes
(:data:`EVENT_ATTRIBUTES`), the closed vocabularies stored in the attributes and in the
server's rows (statuses, task kinds and states, causes, timeout types), and the JSON
helpers that turn protobuf messages into attribute values and back. It depends on
nothing but the generated API beside it, so the server needs only ``flowforge.api``.

Inside the attributes, payload lists use the protobuf JSON form of ``Payloads``,
failures the protobuf JSON form of ``Failure`` and durations are float seconds.
"""

import base64
import enum
import json
from collections.abc import Mapping
from typing import Any, NotRequired, Self, TypeAlias, TypedDict, TypeVar, cast

from google.protobuf import duration_pb2, json_format
from google.protobuf.message import Message

from flowforge.api.v1 import common_pb2

__all__ = [
    "EVENT_ATTRIBUTES",
    "ActivityState",
    "ActivityTaskCancelRequestedAttributes",
    "ActivityTaskCanceledAttributes",
    "ActivityTaskCompletedAttributes",
    "ActivityTaskDeadLetterRetriedAttributes",
    "ActivityTaskDeadLetteredAttributes",
    "ActivityTaskFailedAttributes",
    "ActivityTaskScheduledAttributes",
    "ActivityTaskStartedAttributes",
    "ActivityTaskTimedOutAttributes",
    "ChildWorkflowExecutionCanceledAttributes",
    "ChildWorkflowExecutionCompletedAttributes",
    "ChildWorkflowExecutionFailedAttributes",
    "ChildWorkflowExecutionStartedAttributes",
    "ChildWorkflowExecutionTerminatedAttributes",
    "ChildWorkflowExecutionTimedOutAttributes",
    "DagJSON",
    "EventType",
    "ExecutionStatus",
    "ExternalWorkflowExecutionSignaledAttributes",
    "FailureJSON",
    "HeaderJSON",
    "MarkerRecordedAttributes",
    "MemoJSON",
    "OriginJSON",
    "ParentClosePolicy",
    "PayloadsJSON",
    "PriorityJSON",
    "QueryState",
    "RequestCancelExternalWorkflowExecutionInitiatedAttributes",
    "RetryInitiator",
    "RetryPolicyJSON",
    "RetryState",
    "SearchAttributesJSON",
    "SignalExternalWorkflowExecutionFailedAttributes",
    "SignalExternalWorkflowExecutionFailedCause",
    "SignalExternalWorkflowExecutionInitiatedAttributes",
    "StartChildWorkflowExecutionFailedAttributes",
    "StartChildWorkflowExecutionFailedCause",
    "StartChildWorkflowExecutionInitiatedAttributes",
    "TaskKind",
    "TaskState",
    "TimeoutType",
    "TimerCanceledAttributes",
    "TimerFiredAttributes",
    "TimerStartedAttributes",
    "UpsertWorkflowSearchAttributesAttributes",
    "WorkflowExecutionCancelRequestedAttributes",
    "WorkflowExecutionCanceledAttributes",
    "WorkflowExecutionCompletedAttributes",
    "WorkflowExecutionContinuedAsNewAttributes",
    "WorkflowExecutionFailedAttributes",
    "WorkflowExecutionPausedAttributes",
    "WorkflowExecutionSignaledAttributes",
    "WorkflowExecutionStartedAttributes",
    "WorkflowExecutionTerminatedAttributes",
    "WorkflowExecutionTimedOutAttributes",
    "WorkflowExecutionUnpausedAttributes",
    "WorkflowTaskCompletedAttributes",
    "WorkflowTaskFailedAttributes",
    "WorkflowTaskFailedCause",
    "WorkflowTaskScheduledAttributes",
    "WorkflowTaskStartedAttributes",
    "WorkflowTaskState",
    "WorkflowTaskTimedOutAttributes",
    "WorkflowTimeoutType",
    "dumps",
    "duration_s",
    "failure_from_json",
    "failure_json",
    "json_dict_to_message",
    "message_to_json_dict",
    "payloads_from_json",
    "payloads_json",
]

_M = TypeVar("_M", bound=Message)


# ------------------------------------------------------------------ vocabularies


class EventType(enum.StrEnum):
    """The type of a history event (Temporal's names)."""

    WORKFLOW_EXECUTION_STARTED = "WorkflowExecutionStarted"
    WORKFLOW_EXECUTION_COMPLETED = "WorkflowExecutionCompleted"
    WORKFLOW_EXECUTION_FAILED = "WorkflowExecutionFailed"
    WORKFLOW_EXECUTION_TIMED_OUT = "WorkflowExecutionTimedOut"
    WORKFLOW_EXECUTION_CANCEL_REQUESTED = "WorkflowExecutionCancelRequested"
    WORKFLOW_EXECUTION_CANCELED = "WorkflowExecutionCanceled"
    WORKFLOW_EXECUTION_TERMINATED = "WorkflowExecutionTerminated"
    WORKFLOW_EXECUTION_CONTINUED_AS_NEW = "WorkflowExecutionContinuedAsNew"
    WORKFLOW_EXECUTION_SIGNALED = "WorkflowExecutionSignaled"
    WORKFLOW_TASK_SCHEDULED = "WorkflowTaskScheduled"
    WORKFLOW_TASK_STARTED = "WorkflowTaskStarted"
    WORKFLOW_TASK_COMPLETED = "WorkflowTaskCompleted"
    WORKFLOW_TASK_FAILED = "WorkflowTaskFailed"
    WORKFLOW_TASK_TIMED_OUT = "WorkflowTaskTimedOut"
    ACTIVITY_TASK_SCHEDULED = "ActivityTaskScheduled"
    ACTIVITY_TASK_STARTED = "ActivityTaskStarted"
    ACTIVITY_TASK_COMPLETED = "ActivityTaskCompleted"
    ACTIVITY_TASK_FAILED = "ActivityTaskFailed"
    ACTIVITY_TASK_TIMED_OUT = "ActivityTaskTimedOut"
    ACTIVITY_TASK_CANCEL_REQUESTED = "ActivityTaskCancelRequested"
    ACTIVITY_TASK_CANCELED = "ActivityTaskCanceled"
    ACTIVITY_TASK_DEAD_LETTERED = "ActivityTaskDeadLettered"
    ACTIVITY_TASK_DEAD_LETTER_RETRIED = "ActivityTaskDeadLetterRetried"
    WORKFLOW_EXECUTION_PAUSED = "WorkflowExecutionPaused"
    WORKFLOW_EXECUTION_UNPAUSED = "WorkflowExecutionUnpaused"
    TIMER_STARTED = "TimerStarted"
    TIMER_FIRED = "TimerFired"
    TIMER_CANCELED = "TimerCanceled"
    MARKER_RECORDED = "MarkerRecorded"
    UPSERT_WORKFLOW_SEARCH_ATTRIBUTES = "UpsertWorkflowSearchAttributes"
    START_CHILD_WORKFLOW_EXECUTION_INITIATED = "StartChildWorkflowExecutionInitiated"
    START_CHILD_WORKFLOW_EXECUTION_FAILED = "StartChildWorkflowExecutionFailed"
    CHILD_WORKFLOW_EXECUTION_STARTED = "ChildWorkflowExecutionStarted"
    CHILD_WORKFLOW_EXECUTION_COMPLETED = "ChildWorkflowExecutionCompleted"
    CHILD_WORKFLOW_EXECUTION_FAILED = "ChildWorkflowExecutionFailed"
    CHILD_WORKFLOW_EXECUTION_CANCELED = "ChildWorkflowExecutionCanceled"
    CHILD_WORKFLOW_EXECUTION_TERMINATED = "ChildWorkflowExecutionTerminated"
    CHILD_WORKFLOW_EXECUTION_TIMED_OUT = "ChildWorkflowExecutionTimedOut"
    SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED = "SignalExternalWorkflowExecutionInitiated"
    SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_FAILED = "SignalExternalWorkflowExecutionFailed"
    EXTERNAL_WORKFLOW_EXECUTION_SIGNALED = "ExternalWorkflowExecutionSignaled"
    REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED = "RequestCancelExternalWorkflowExecutionInitiated"


class ExecutionStatus(enum.StrEnum):
    """An execution's (run's) status as the server stores it; the
    ``WorkflowExecutionStatus`` enum of the API without its prefix."""

    RUNNING = "RUNNING"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    CANCELED = "CANCELED"
    TERMINATED = "TERMINATED"
    CONTINUED_AS_NEW = "CONTINUED_AS_NEW"
    TIMED_OUT = "TIMED_OUT"

    @property
    def proto(self) -> common_pb2.WorkflowExecutionStatus:
        """The API's ``WorkflowExecutionStatus`` number of this status."""
        number = common_pb2.WorkflowExecutionStatus.Value(f"WORKFLOW_EXECUTION_STATUS_{self.value}")
        return cast(common_pb2.WorkflowExecutionStatus, number)  # the stubs type Value() as a plain int

    @classmethod
    def from_proto(cls, number: int) -> Self:
        """The status of an API ``WorkflowExecutionStatus`` number (ValueError for UNSPECIFIED or unknown)."""
        name = common_pb2.WorkflowExecutionStatus.Name(number).removeprefix("WORKFLOW_EXECUTION_STATUS_")
        return cls(name)


class TaskKind(enum.StrEnum):
    """What a task (and the token that leases it) is for. Task rows are WORKFLOW or
    ACTIVITY; QUERY names a leased query in a task token."""

    WORKFLOW = "WORKFLOW"
    ACTIVITY = "ACTIVITY"
    QUERY = "QUERY"


class TaskState(enum.StrEnum):
    """A task row's state: waiting in its queue, or leased to a worker (with a lease expiry)."""

    PENDING = "PENDING"
    LEASED = "LEASED"


class QueryState(enum.StrEnum):
    """A query row's state: waiting for a worker's answer, or answered."""

    PENDING = "PENDING"
    ANSWERED = "ANSWERED"


class WorkflowTaskState(enum.StrEnum):
    """The state of a run's (at most one) outstanding workflow task."""

    NONE = "NONE"
    SCHEDULED = "SCHEDULED"
    STARTED = "STARTED"


class ActivityState(enum.StrEnum):
    """An activity's state as ``describe()`` shows it: a DAG node's, or a pending activity's
    (SCHEDULED or STARTED)."""

    SCHEDULED = "SCHEDULED"
    """Waiting for a worker (its first attempt)."""
    STARTED = "STARTED"
    """Leased to a worker."""
    RETRYING = "RETRYING"
    """Waiting for a worker after a failed attempt."""
    PAUSED = "PAUSED"
    """Paused by an operator (``flowforge activity pause``): no further attempt starts."""
    DEAD_LETTERED = "DEAD_LETTERED"
    """Parked in the dead-letter store after its retries (docs/operations.md)."""
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    TIMED_OUT = "TIMED_OUT"
    CANCELED = "CANCELED"


class WorkflowTaskFailedCause(enum.StrEnum):
    """``cause`` of ``WorkflowTaskFailed``: the API's ``WorkflowTaskFailedCause`` names
    without their prefix, and the causes only the server gives."""

    UNSPECIFIED = "UNSPECIFIED"
    WORKFLOW_WORKER_UNHANDLED_FAILURE = "WORKFLOW_WORKER_UNHANDLED_FAILURE"
    NON_DETERMINISTIC_ERROR = "NON_DETERMINISTIC_ERROR"
    UNKNOWN_WORKFLOW_TYPE = "UNKNOWN_WORKFLOW_TYPE"
    BAD_COMMAND = "BAD_COMMAND"
    UNHANDLED_COMMAND = "UNHANDLED_COMMAND"
    """Server: new events arrived while the task closed the run; it runs again to see them."""
    BAD_SEARCH_ATTRIBUTES = "BAD_SEARCH_ATTRIBUTES"
    """Server: an upsert or child start names an unregistered attribute or a wrongly typed value."""
    FORCE_CLOSE_COMMAND = "FORCE_CLOSE_COMMAND"
    """Server: the run was terminated or timed out while the task was started."""
    RESET_WORKFLOW = "RESET_WORKFLOW"
    """Server: an operator reset the workflow to this task; the new run runs it again."""


class TimeoutType(enum.StrEnum):
    """Which timeout of an activity or workflow task fired (Temporal's ``TimeoutType``)."""

    START_TO_CLOSE = "START_TO_CLOSE"
    SCHEDULE_TO_START = "SCHEDULE_TO_START"
    SCHEDULE_TO_CLOSE = "SCHEDULE_TO_CLOSE"
    HEARTBEAT = "HEARTBEAT"


class WorkflowTimeoutType(enum.StrEnum):
    """Which deadline closed a run: the whole chain's execution timeout, or its own run timeout."""

    EXECUTION = "EXECUTION"
    RUN = "RUN"


class RetryState(enum.StrEnum):
    """``retry_state``: why the server stopped retrying; the names of
    ``flowforge.exceptions.RetryState`` members."""

    NON_RETRYABLE_FAILURE = "NON_RETRYABLE_FAILURE"
    MAXIMUM_ATTEMPTS_REACHED = "MAXIMUM_ATTEMPTS_REACHED"
    TIMEOUT = "TIMEOUT"
    CANCEL_REQUESTED = "CANCEL_REQUESTED"


class RetryInitiator(enum.StrEnum):
    """``initiator`` of a run started by its predecessor's retry policy."""

    RETRY = "RETRY"


class ParentClosePolicy(enum.StrEnum):
    """What happens to a pending child when its parent closes (the API's names without prefix)."""

    TERMINATE = "TERMINATE"
    ABANDON = "ABANDON"
    REQUEST_CANCEL = "REQUEST_CANCEL"


class StartChildWorkflowExecutionFailedCause(enum.StrEnum):
    """``cause`` of ``StartChildWorkflowExecutionFailed``."""

    WORKFLOW_ALREADY_EXISTS = "WORKFLOW_ALREADY_EXISTS"


class SignalExternalWorkflowExecutionFailedCause(enum.StrEnum):
    """``cause`` of ``SignalExternalWorkflowExecutionFailed``."""

    EXTERNAL_WORKFLOW_EXECUTION_NOT_FOUND = "EXTERNAL_WORKFLOW_EXECUTION_NOT_FOUND"


# ------------------------------------------------------------------ attribute values

PayloadsJSON: TypeAlias = dict[str, Any]
"""A ``Payloads`` message in protobuf JSON form (:func:`payloads_json`)."""
FailureJSON: TypeAlias = dict[str, Any]
"""A ``Failure`` message in protobuf JSON form (:func:`failure_json`)."""
SearchAttributesJSON: TypeAlias = dict[str, Any]
"""A ``SearchAttributes`` message in protobuf JSON form (``{"indexed_fields": {...}}``)."""
MemoJSON: TypeAlias = dict[str, Any]
"""A ``Memo`` message in protobuf JSON form (``{"fields": {name: Payload}}``)."""
HeaderJSON: TypeAlias = dict[str, Any]
"""A ``Header`` message in protobuf JSON form (``{"fields": {name: Payload}}``): what the
caller's interceptors propagated (e.g. the trace context under ``_tracer-data``)."""


class RetryPolicyJSON(TypedDict):
    """A retry policy with its defaults filled in, as recorded in history (seconds)."""

    initial_interval: float
    backoff_coefficient: float
    maximum_interval: float
    maximum_attempts: int
    non_retryable_error_types: list[str]
    full_jitter: bool


class PriorityJSON(TypedDict):
    """A task's dispatch order as recorded in history (docs/flow-control.md), with
    inherited values filled in."""

    priority_key: int
    """1 (first) to 5 (last)."""
    fairness_key: str
    fairness_weight: float


class OriginJSON(TypedDict, total=False):
    """What started a run besides a direct request (``origin`` of its started event)."""

    kind: str
    """``"event"`` (an event trigger) or ``"schedule"``."""
    trigger: str
    event_source: str
    event_id: str
    schedule_id: str
    nominal_time: str


# ------------------------------------------------------------------ event attributes


class DagJSON(TypedDict):
    """The declarative DAG a run executes (docs/dags.md): its name and version, fixed at start."""

    name: str
    digest: str


class WorkflowExecutionStartedAttributes(TypedDict):
    workflow_id: str
    run_id: str
    workflow_type: str
    task_queue: str
    input: PayloadsJSON
    identity: str
    workflow_execution_timeout: float
    workflow_run_timeout: float
    workflow_task_timeout: float
    original_execution_run_id: str
    first_execution_run_id: str
    request_id: NotRequired[str]
    cron_schedule: NotRequired[str]
    last_completion_result: NotRequired[PayloadsJSON]
    last_failure: NotRequired[FailureJSON]
    workflow_execution_expiration_us: NotRequired[int]
    continued_execution_run_id: NotRequired[str]
    parent_workflow_namespace: NotRequired[str]
    parent_workflow_id: NotRequired[str]
    parent_run_id: NotRequired[str]
    parent_initiated_event_id: NotRequired[int]
    retry_policy: NotRequired[RetryPolicyJSON]
    attempt: NotRequired[int]
    initiator: NotRequired[RetryInitiator]
    search_attributes: NotRequired[SearchAttributesJSON]
    memo: NotRequired[MemoJSON]
    origin: NotRequired[OriginJSON]
    header: NotRequired[HeaderJSON]
    dag: NotRequired[DagJSON]
    priority: NotRequired[PriorityJSON]


class WorkflowTaskScheduledAttributes(TypedDict):
    task_queue: str
    attempt: int
    start_to_close_timeout: float


class WorkflowTaskStartedAttributes(TypedDict):
    scheduled_event_id: int
    identity: str


class WorkflowTaskCompletedAttributes(TypedDict):
    scheduled_event_id: int
    started_event_id: int
    identity: str
    worker_build_id: str


class WorkflowTaskFailedAttributes(TypedDict):
    scheduled_event_id: int
    started_event_id: int
    cause: WorkflowTaskFailedCause
    failure: FailureJSON
    identity: str
    base_run_id: NotRequired[str]
    """RESET_WORKFLOW: the run whose history this run kept up to here."""
    new_run_id: NotRequired[str]
    """RESET_WORKFLOW: this run (the reset's new run)."""


class WorkflowTaskTimedOutAttributes(TypedDict):
    scheduled_event_id: int
    started_event_id: int
    timeout_type: TimeoutType


class ActivityTaskScheduledAttributes(TypedDict):
    activity_id: str
    activity_type: str
    task_queue: str
    input: PayloadsJSON
    schedule_to_close_timeout: float
    schedule_to_start_timeout: float
    start_to_close_timeout: float
    heartbeat_timeout: float
    retry_policy: RetryPolicyJSON
    cancellation_type: int
    """The API's ``ActivityCancellationType`` number."""
    depends_on_activity_ids: list[str]
    workflow_task_completed_event_id: int
    header: NotRequired[HeaderJSON]
    dead_letter: NotRequired[bool]
    """True: parked in the dead-letter store instead of failing (ActivityTaskDeadLettered)."""
    priority: NotRequired[PriorityJSON]
    concurrency_key: NotRequired[str]
    """At most the key's limit of such activities are leased at once (docs/flow-control.md)."""


class ActivityTaskStartedAttributes(TypedDict):
    scheduled_event_id: int
    attempt: int
    identity: str
    retry_delays: list[float]
    last_failure: NotRequired[FailureJSON]


class ActivityTaskCompletedAttributes(TypedDict):
    scheduled_event_id: int
    started_event_id: int
    result: PayloadsJSON
    identity: str


class ActivityTaskFailedAttributes(TypedDict):
    scheduled_event_id: int
    started_event_id: int
    failure: FailureJSON
    retry_state: RetryState
    identity: str


class ActivityTaskTimedOutAttributes(TypedDict):
    scheduled_event_id: int
    started_event_id: int
    failure: FailureJSON
    retry_state: RetryState


class ActivityTaskCancelRequestedAttributes(TypedDict):
    scheduled_event_id: int
    activity_id: str
    workflow_task_completed_event_id: int


class ActivityTaskCanceledAttributes(TypedDict):
    scheduled_event_id: int
    started_event_id: int
    """0 when the activity was cancelled before any worker started it."""
    details: NotRequired[PayloadsJSON]
    identity: NotRequired[str]


class ActivityTaskDeadLetteredAttributes(TypedDict):
    """The activity was parked in the dead-letter store instead of failing into the
    workflow (not delivered to workflow code: the activity stays pending)."""

    scheduled_event_id: int
    started_event_id: int
    failure: FailureJSON
    retry_state: RetryState
    dead_letter_id: str
    identity: NotRequired[str]


class ActivityTaskDeadLetterRetriedAttributes(TypedDict):
    """An operator scheduled the parked activity again (not delivered to workflow code)."""

    scheduled_event_id: int
    dead_letter_id: str
    attempt: int
    """The number the next attempt runs as: the count goes on."""
    fresh_budget: bool
    reason: str
    identity: str


class WorkflowExecutionPausedAttributes(TypedDict):
    """An operator paused the run: nothing of it is dispatched until it is unpaused
    (not delivered to workflow code)."""

    reason: str
    identity: str


class WorkflowExecutionUnpausedAttributes(TypedDict):
    """An operator unpaused the run (not delivered to workflow code)."""

    reason: str
    identity: str


class MarkerRecordedAttributes(TypedDict):
    marker_name: str
    details: dict[str, PayloadsJSON]
    workflow_task_completed_event_id: int


class UpsertWorkflowSearchAttributesAttributes(TypedDict):
    search_attributes: SearchAttributesJSON
    workflow_task_completed_event_id: int


class TimerStartedAttributes(TypedDict):
    timer_id: str
    start_to_fire_timeout: float
    workflow_task_completed_event_id: int


class TimerFiredAttributes(TypedDict):
    timer_id: str
    started_event_id: int


class TimerCanceledAttributes(TypedDict):
    timer_id: str
    started_event_id: int
    workflow_task_completed_event_id: int


class WorkflowExecutionCancelRequestedAttributes(TypedDict):
    reason: str
    identity: str


class WorkflowExecutionSignaledAttributes(TypedDict):
    signal_name: str
    input: PayloadsJSON
    identity: str
    header: NotRequired[HeaderJSON]


class WorkflowExecutionCompletedAttributes(TypedDict):
    result: PayloadsJSON
    workflow_task_completed_event_id: int


class WorkflowExecutionFailedAttributes(TypedDict):
    failure: FailureJSON
    workflow_task_completed_event_id: int


class WorkflowExecutionCanceledAttributes(TypedDict):
    details: PayloadsJSON
    workflow_task_completed_event_id: int


class WorkflowExecutionTerminatedAttributes(TypedDict):
    reason: str
    identity: str


class WorkflowExecutionTimedOutAttributes(TypedDict):
    timeout_type: WorkflowTimeoutType


class WorkflowExecutionContinuedAsNewAttributes(TypedDict):
    new_execution_run_id: str
    workflow_type: str
    task_queue: str
    input: PayloadsJSON
    workflow_run_timeout: float
    workflow_task_timeout: float
    workflow_task_completed_event_id: int
    last_completion_result: NotRequired[PayloadsJSON]
    last_failure: NotRequired[FailureJSON]


class StartChildWorkflowExecutionInitiatedAttributes(TypedDict):
    workflow_id: str
    workflow_type: str
    task_queue: str
    input: PayloadsJSON
    workflow_execution_timeout: float
    workflow_run_timeout: float
    workflow_task_timeout: float
    parent_close_policy: ParentClosePolicy
    workflow_task_completed_event_id: int
    retry_policy: NotRequired[RetryPolicyJSON]
    header: NotRequired[HeaderJSON]


class StartChildWorkflowExecutionFailedAttributes(TypedDict):
    initiated_event_id: int
    workflow_id: str
    workflow_type: str
    cause: StartChildWorkflowExecutionFailedCause


class ChildWorkflowExecutionStartedAttributes(TypedDict):
    initiated_event_id: int
    workflow_id: str
    workflow_type: str
    run_id: str


class _ChildWorkflowExecutionClosedAttributes(TypedDict):
    """The ids every closed-child event carries (``run_id``: the child's last run)."""

    initiated_event_id: int
    workflow_id: str
    run_id: str
    workflow_type: str


class ChildWorkflowExecutionCompletedAttributes(_ChildWorkflowExecutionClosedAttributes):
    result: PayloadsJSON


class ChildWorkflowExecutionFailedAttributes(_ChildWorkflowExecutionClosedAttributes):
    failure: FailureJSON
    retry_state: NotRequired[RetryState]


class ChildWorkflowExecutionCanceledAttributes(_ChildWorkflowExecutionClosedAttributes):
    details: PayloadsJSON


class ChildWorkflowExecutionTerminatedAttributes(_ChildWorkflowExecutionClosedAttributes):
    reason: str


class ChildWorkflowExecutionTimedOutAttributes(_ChildWorkflowExecutionClosedAttributes):
    timeout_type: WorkflowTimeoutType
    retry_state: NotRequired[RetryState]


class SignalExternalWorkflowExecutionInitiatedAttributes(TypedDict):
    workflow_id: str
    run_id: str
    """Empty: the child's current run."""
    signal_name: str
    input: PayloadsJSON
    child_workflow_only: bool
    workflow_task_completed_event_id: int


class SignalExternalWorkflowExecutionFailedAttributes(TypedDict):
    initiated_event_id: int
    workflow_id: str
    run_id: str
    cause: SignalExternalWorkflowExecutionFailedCause


class ExternalWorkflowExecutionSignaledAttributes(TypedDict):
    initiated_event_id: int
    workflow_id: str
    run_id: str


class RequestCancelExternalWorkflowExecutionInitiatedAttributes(TypedDict):
    workflow_id: str
    run_id: str
    child_workflow_only: bool
    workflow_task_completed_event_id: int


EVENT_ATTRIBUTES: dict[EventType, type] = {
    EventType.WORKFLOW_EXECUTION_STARTED: WorkflowExecutionStartedAttributes,
    EventType.WORKFLOW_EXECUTION_COMPLETED: WorkflowExecutionCompletedAttributes,
    EventType.WORKFLOW_EXECUTION_FAILED: WorkflowExecutionFailedAttributes,
    EventType.WORKFLOW_EXECUTION_TIMED_OUT: WorkflowExecutionTimedOutAttributes,
    EventType.WORKFLOW_EXECUTION_CANCEL_REQUESTED: WorkflowExecutionCancelRequestedAttributes,
    EventType.WORKFLOW_EXECUTION_CANCELED: WorkflowExecutionCanceledAttributes,
    EventType.WORKFLOW_EXECUTION_TERMINATED: WorkflowExecutionTerminatedAttributes,
    EventType.WORKFLOW_EXECUTION_CONTINUED_AS_NEW: WorkflowExecutionContinuedAsNewAttributes,
    EventType.WORKFLOW_EXECUTION_SIGNALED: WorkflowExecutionSignaledAttributes,
    EventType.WORKFLOW_TASK_SCHEDULED: WorkflowTaskScheduledAttributes,
    EventType.WORKFLOW_TASK_STARTED: WorkflowTaskStartedAttributes,
    EventType.WORKFLOW_TASK_COMPLETED: WorkflowTaskCompletedAttributes,
    EventType.WORKFLOW_TASK_FAILED: WorkflowTaskFailedAttributes,
    EventType.WORKFLOW_TASK_TIMED_OUT: WorkflowTaskTimedOutAttributes,
    EventType.ACTIVITY_TASK_SCHEDULED: ActivityTaskScheduledAttributes,
    EventType.ACTIVITY_TASK_STARTED: ActivityTaskStartedAttributes,
    EventType.ACTIVITY_TASK_COMPLETED: ActivityTaskCompletedAttributes,
    EventType.ACTIVITY_TASK_FAILED: ActivityTaskFailedAttributes,
    EventType.ACTIVITY_TASK_TIMED_OUT: ActivityTaskTimedOutAttributes,
    EventType.ACTIVITY_TASK_CANCEL_REQUESTED: ActivityTaskCancelRequestedAttributes,
    EventType.ACTIVITY_TASK_CANCELED: ActivityTaskCanceledAttributes,
    EventType.ACTIVITY_TASK_DEAD_LETTERED: ActivityTaskDeadLetteredAttributes,
    EventType.ACTIVITY_TASK_DEAD_LETTER_RETRIED: ActivityTaskDeadLetterRetriedAttributes,
    EventType.WORKFLOW_EXECUTION_PAUSED: WorkflowExecutionPausedAttributes,
    EventType.WORKFLOW_EXECUTION_UNPAUSED: WorkflowExecutionUnpausedAttributes,
    EventType.TIMER_STARTED: TimerStartedAttributes,
    EventType.TIMER_FIRED: TimerFiredAttributes,
    EventType.TIMER_CANCELED: TimerCanceledAttributes,
    EventType.MARKER_RECORDED: MarkerRecordedAttributes,
    EventType.UPSERT_WORKFLOW_SEARCH_ATTRIBUTES: UpsertWorkflowSearchAttributesAttributes,
    EventType.START_CHILD_WORKFLOW_EXECUTION_INITIATED: StartChildWorkflowExecutionInitiatedAttributes,
    EventType.START_CHILD_WORKFLOW_EXECUTION_FAILED: StartChildWorkflowExecutionFailedAttributes,
    EventType.CHILD_WORKFLOW_EXECUTION_STARTED: ChildWorkflowExecutionStartedAttributes,
    EventType.CHILD_WORKFLOW_EXECUTION_COMPLETED: ChildWorkflowExecutionCompletedAttributes,
    EventType.CHILD_WORKFLOW_EXECUTION_FAILED: ChildWorkflowExecutionFailedAttributes,
    EventType.CHILD_WORKFLOW_EXECUTION_CANCELED: ChildWorkflowExecutionCanceledAttributes,
    EventType.CHILD_WORKFLOW_EXECUTION_TERMINATED: ChildWorkflowExecutionTerminatedAttributes,
    EventType.CHILD_WORKFLOW_EXECUTION_TIMED_OUT: ChildWorkflowExecutionTimedOutAttributes,
    EventType.SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED: SignalExternalWorkflowExecutionInitiatedAttributes,
    EventType.SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_FAILED: SignalExternalWorkflowExecutionFailedAttributes,
    EventType.EXTERNAL_WORKFLOW_EXECUTION_SIGNALED: ExternalWorkflowExecutionSignaledAttributes,
    EventType.REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED: (
        RequestCancelExternalWorkflowExecutionInitiatedAttributes
    ),
}
"""Each event type's attributes (``__required_keys__`` / ``__optional_keys__`` list the keys)."""


# ------------------------------------------------------------------ JSON helpers


# json.dumps with options builds an encoder per call; every event goes through this one.
_CANONICAL_JSON = json.JSONEncoder(sort_keys=True, separators=(",", ":"))


def dumps(attributes: Mapping[str, Any]) -> str:
    """Canonical JSON for attributes: byte-identical whenever the content is."""
    return _CANONICAL_JSON.encode(attributes)


def duration_s(duration: duration_pb2.Duration) -> float:
    """A protobuf ``Duration`` as float seconds (how history records durations)."""
    return duration.seconds + duration.nanos / 1e9


def message_to_json_dict(message: Message) -> dict[str, Any]:
    """Protobuf message -> JSON-ready dict with snake_case keys (history attributes)."""
    return json_format.MessageToDict(message, preserving_proto_field_name=True)


def json_dict_to_message(value: dict[str, Any] | None, message_type: type[_M]) -> _M:
    """Inverse of :func:`message_to_json_dict`; ``None`` gives an empty message."""
    if not value:
        return message_type()  # most memos, headers and search attributes: no ParseDict
    return json_format.ParseDict(value, message_type(), ignore_unknown_fields=True)


def payloads_json(payloads: common_pb2.Payloads) -> PayloadsJSON:
    """``Payloads`` as an attribute value: what ``MessageToDict`` makes of it (empty
    fields left out, bytes in standard base64), built directly: ``MessageToDict`` is
    pure Python, and the server writes payloads into a run's events on every start,
    activity and completion (issue 20)."""
    items: list[dict[str, Any]] = []
    for payload in payloads.payloads:
        item: dict[str, Any] = {}
        if payload.metadata:
            item["metadata"] = {key: base64.b64encode(value).decode() for key, value in payload.metadata.items()}
        if payload.data:
            item["data"] = base64.b64encode(payload.data).decode()
        items.append(item)
    return {"payloads": items} if items else {}


def payloads_from_json(value: PayloadsJSON | None) -> common_pb2.Payloads:
    """An attribute value back to ``Payloads`` (``None``: none)."""
    decoded = _payloads_as_written(value) if value else None
    return decoded if decoded is not None else json_dict_to_message(value, common_pb2.Payloads)


def _payloads_as_written(value: Mapping[str, Any]) -> common_pb2.Payloads | None:
    """``value`` decoded directly when it has the shape :func:`payloads_json` writes
    (base64 strings only), as ``ParseDict`` would; None for any other shape, which
    ``ParseDict`` decodes (or refuses) itself. ``ParseDict`` is pure Python, and a
    workflow's payloads are decoded under the determinism guard's profile hook, where
    every Python call costs several: this is most of a workflow task's replay."""
    try:
        if value.keys() != {"payloads"}:
            return None
        decoded = common_pb2.Payloads()
        for item in value["payloads"]:
            if not item.keys() <= {"metadata", "data"}:
                return None
            payload = decoded.payloads.add(data=_base64_bytes(item.get("data", "")))
            for key, encoded in item.get("metadata", {}).items():
                if not isinstance(key, str):
                    return None
                payload.metadata[key] = _base64_bytes(encoded)
        return decoded
    except (AttributeError, TypeError, ValueError):  # binascii.Error is a ValueError
        return None


def _base64_bytes(text: object) -> bytes:
    """A JSON bytes value, decoded as ``json_format`` does (padding added, URL-safe
    or standard alphabet); TypeError for anything but a string."""
    if not isinstance(text, str):
        raise TypeError("not a string")
    encoded = text.encode()
    return base64.urlsafe_b64decode(encoded + b"=" * (4 - len(encoded) % 4))


def failure_json(failure: common_pb2.Failure) -> FailureJSON:
    """A ``Failure`` as an attribute value."""
    return message_to_json_dict(failure)


def failure_from_json(value: FailureJSON | None) -> common_pb2.Failure:
    """An attribute value back to a ``Failure`` (``None``: an empty one)."""
    return json_dict_to_message(value, common_pb2.Failure)
