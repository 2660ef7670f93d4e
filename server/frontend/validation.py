"""Request validation: each function checks the fields of a request and returns them
typed, or raises ``InvalidArgument`` with a message a person can act on (rule 8: bad
input gets a clear error and changes nothing). No function here calls a server."""

from __future__ import annotations

import base64
import re
from typing import Protocol

from google.protobuf import duration_pb2

from flowforge._json_depth import JSONTooDeep, loads_bounded
from flowforge.api.schema import ExecutionStatus, WorkflowTaskFailedCause, duration_s
from flowforge.api.v1 import common_pb2, dead_letters_pb2, event_pb2, remediation_pb2
from flowforge.api.v1 import workflow_service_pb2 as pb
from flowforge.server.errors import InvalidArgument
from flowforge.server.events import PublishedEvent, trigger_row
from flowforge.server.frontend._base import Context
from flowforge.server.history import StartSignal
from flowforge.server.history.batches import BATCH_OPERATIONS
from flowforge.server.history.resets import RESET_TYPES
from flowforge.server.stores.base import EventTriggerRow
from flowforge.server.stores.rows import DeadLetterFilter

__all__ = [
    "ExecutionKey",
    "batch_start",
    "dead_letter_filter",
    "dead_letter_target",
    "eager_activity_slots",
    "execution_key",
    "history_page",
    "list_filters",
    "name",
    "page_size",
    "poll",
    "published_event",
    "query_answer",
    "query_timeout",
    "reset_point",
    "schedule_key",
    "search_attribute_types",
    "seconds",
    "start_signal",
    "text",
    "text_page_token",
    "trigger_row_of",
    "workflow_task_failed_cause",
]

MAX_NAME = 1000
# ASCII control characters (ord < 32), which no name may hold; one regex search is far
# cheaper than a Python loop over every character of every name of every request.
_CONTROL_CHARACTER = re.compile(r"[\x00-\x1f]")
#: Free text a person reads (reasons, notes): at most this many characters.
MAX_TEXT = 4000
MAX_POLL_TIMEOUT_S = 600.0
DEFAULT_POLL_TIMEOUT_S = 60.0
# How long a query waits for a worker when the caller set no deadline, and at most.
DEFAULT_QUERY_TIMEOUT_S = 30.0
MAX_QUERY_TIMEOUT_S = 600.0
MAX_QUERY_ERROR = 4000
# Leave time for the empty answer to reach a caller whose deadline is near.
DEADLINE_MARGIN_S = 1.0
MAX_EAGER_ACTIVITY_SLOTS = 1000

ExecutionKey = tuple[str, str, str]
"""(namespace, workflow_id, run_id); one of the two ids may be empty."""


class _ExecutionRequest(Protocol):
    @property
    def namespace(self) -> str: ...
    @property
    def execution(self) -> common_pb2.WorkflowExecution: ...


class _PollRequest(Protocol):
    @property
    def namespace(self) -> str: ...
    @property
    def task_queue(self) -> str: ...
    @property
    def identity(self) -> str: ...
    @property
    def poll_timeout(self) -> duration_pb2.Duration: ...


class _ScheduleRequest(Protocol):
    @property
    def namespace(self) -> str: ...
    @property
    def schedule_id(self) -> str: ...


def name(value: str, field: str, *, required: bool = True) -> str:
    """A name or id: present if required, at most 1000 characters, no control characters."""
    if not value:
        if required:
            raise InvalidArgument(f"{field} is required")
        return value
    if len(value) > MAX_NAME:
        raise InvalidArgument(f"{field} is {len(value)} characters long; the limit is {MAX_NAME}")
    if _CONTROL_CHARACTER.search(value):
        raise InvalidArgument(f"{field} must not contain control characters")
    return value


def text(value: str, field: str) -> str:
    """Free text (a reason, a note): at most :data:`MAX_TEXT` characters, no NUL."""
    if len(value) > MAX_TEXT:
        raise InvalidArgument(f"{field} is {len(value)} characters long; the limit is {MAX_TEXT}")
    if "\x00" in value:
        raise InvalidArgument(f"{field} must not contain NUL characters")
    return value


def seconds(duration: duration_pb2.Duration, field: str) -> float:
    """A duration in seconds; never negative (0 = unset)."""
    value = duration_s(duration)
    if value < 0:
        raise InvalidArgument(f"{field} must not be negative")
    return value


def execution_key(request: _ExecutionRequest) -> ExecutionKey:
    """The execution a request names: a workflow id (its latest run), a run id, or both."""
    namespace = name(request.namespace, "namespace")
    workflow_id = name(request.execution.workflow_id, "execution.workflow_id", required=False)
    run_id = name(request.execution.run_id, "execution.run_id", required=False)
    if not workflow_id and not run_id:
        raise InvalidArgument("execution.workflow_id (or execution.run_id) is required")
    return namespace, workflow_id, run_id


def start_signal(request: pb.StartWorkflowExecutionRequest) -> StartSignal | None:
    """The signal of a signal-with-start, if the request carries one."""
    if not request.start_signal:
        if request.start_signal_input.payloads:
            raise InvalidArgument("start_signal_input is set but start_signal (the signal name) is empty")
        return None
    return StartSignal(name(request.start_signal, "start_signal"), request.start_signal_input)


def _time_remaining(context: Context) -> float | None:
    """Seconds until the caller's deadline; None when it set none (the stubs omit that case)."""
    return context.time_remaining()


def _within_deadline(timeout_s: float, context: Context) -> float:
    """``timeout_s``, shortened so that an empty answer still reaches the caller in time."""
    remaining = _time_remaining(context)
    if remaining is not None:
        return max(0.0, min(timeout_s, remaining - DEADLINE_MARGIN_S))
    return timeout_s


def history_page(
    request: pb.GetWorkflowExecutionHistoryRequest, context: Context, default_wait_s: float
) -> tuple[int, int, float]:
    """(after_event_id, page size, how long to wait for new events) of a history read."""
    if request.after_event_id < 0:
        raise InvalidArgument("after_event_id must not be negative")
    size = request.maximum_page_size or 1000
    if not 0 < size <= 10_000:
        raise InvalidArgument("maximum_page_size must be between 1 and 10000")
    wait_s = seconds(request.wait_timeout, "wait_timeout") or default_wait_s
    return request.after_event_id, size, _within_deadline(wait_s, context)


def poll(request: _PollRequest, context: Context) -> tuple[str, str, str, float]:
    """(namespace, task queue, identity, how long to wait for a task) of a poll: the
    request's timeout (60 s if unset, at most 600 s), ending before the caller's deadline."""
    namespace = name(request.namespace, "namespace")
    task_queue = name(request.task_queue, "task_queue")
    identity = name(request.identity, "identity", required=False)
    timeout = seconds(request.poll_timeout, "poll_timeout") or DEFAULT_POLL_TIMEOUT_S
    if timeout > MAX_POLL_TIMEOUT_S:
        raise InvalidArgument(f"poll_timeout may be at most {MAX_POLL_TIMEOUT_S:.0f}s")
    return namespace, task_queue, identity, _within_deadline(timeout, context)


def query_timeout(context: Context) -> float:
    """How long a query waits for a worker: until just before the caller's deadline
    (at most 600 s), or 30 s when the caller set none."""
    if _time_remaining(context) is None:
        return DEFAULT_QUERY_TIMEOUT_S
    return _within_deadline(MAX_QUERY_TIMEOUT_S, context)


def eager_activity_slots(requested: int, field: str = "eager_activity_slots") -> int:
    if requested < 0:
        raise InvalidArgument(f"{field} must not be negative")
    return min(requested, MAX_EAGER_ACTIVITY_SLOTS)


def cached_event_id(value: int, field: str) -> int:
    """A worker's sticky-cache position: an event id, or 0 for none."""
    if value < 0:
        raise InvalidArgument(f"{field} must be an event id (1 or more) or 0 for none, not {value}")
    return value


def workflow_task_failed_cause(number: int) -> WorkflowTaskFailedCause:
    try:
        cause = pb.WorkflowTaskFailedCause.Name(number).removeprefix("WORKFLOW_TASK_FAILED_CAUSE_")
    except ValueError:
        raise InvalidArgument(f"cause has an unknown value {number}") from None
    return WorkflowTaskFailedCause(cause)


def query_answer(request: pb.RespondQueryTaskCompletedRequest) -> tuple[common_pb2.Payloads | None, str | None]:
    """(result, error message) of a worker's answer to a query: exactly one is set."""
    if request.completed_type == pb.QUERY_RESULT_TYPE_ANSWERED:
        return request.query_result, None
    if request.completed_type == pb.QUERY_RESULT_TYPE_FAILED:
        if request.query_result.payloads:
            raise InvalidArgument("a FAILED query answer carries an error_message, not a query_result")
        return None, request.error_message[:MAX_QUERY_ERROR] or "the worker gave no reason"
    raise InvalidArgument("completed_type must be QUERY_RESULT_TYPE_ANSWERED or QUERY_RESULT_TYPE_FAILED")


# ------------------------------------------------------------------ lists and pages


def page_size(requested: int) -> int:
    """A list RPC's page size: 100 when unset, at most 1000."""
    size = requested or 100
    if not 0 < size <= 1000:
        raise InvalidArgument("page_size must be between 1 and 1000")
    return size


def text_page_token(token: bytes) -> str:
    """The key a keyset page continues after, as the previous page returned it (never
    with a NUL: no key holds one, and PostgreSQL refuses it in a parameter)."""
    try:
        key: str | None = token.decode()
    except UnicodeDecodeError:
        key = None
    if key is None or "\x00" in key:
        raise InvalidArgument("next_page_token is malformed; pass back the one the last page returned")
    return key


def list_filters(request: pb.ListWorkflowExecutionsRequest) -> dict[str, str]:
    """The column -> value equality filters of a list request (status, type, id)."""
    status = None
    if request.status:
        try:
            status = ExecutionStatus.from_proto(request.status)
        except ValueError:
            raise InvalidArgument(f"unknown status {request.status}") from None
    return {
        column: value
        for column, value in (
            ("status", status.value if status else ""),
            ("workflow_type", name(request.workflow_type, "workflow_type", required=False)),
            ("workflow_id", name(request.workflow_id, "workflow_id", required=False)),
        )
        if value
    }


def search_attribute_types(request: pb.AddSearchAttributesRequest) -> dict[str, str]:
    """name -> value type name ("" for an unknown type, which the engine refuses by name)."""
    if not request.search_attributes:
        raise InvalidArgument("search_attributes is required: name -> IndexedValueType")
    return {
        attribute: common_pb2.IndexedValueType.Name(value_type).removeprefix("INDEXED_VALUE_TYPE_")
        if value_type in common_pb2.IndexedValueType.values()
        else ""
        for attribute, value_type in request.search_attributes.items()
    }


# ------------------------------------------------------------------ event triggers


def trigger_row_of(request: event_pb2.CreateEventTriggerRequest) -> EventTriggerRow:
    trigger = request.trigger
    return trigger_row(
        namespace=name(request.namespace, "namespace"),
        trigger_id=name(trigger.trigger_id, "trigger.trigger_id"),
        event_type=name(trigger.event_type, "trigger.event_type"),
        filter=list(trigger.filter),
        input_paths=list(trigger.input_paths),
        workflow_type=name(trigger.workflow_type, "trigger.workflow_type"),
        task_queue=name(trigger.task_queue, "trigger.task_queue"),
        workflow_id_prefix=name(trigger.workflow_id_prefix, "trigger.workflow_id_prefix", required=False),
        execution_timeout_s=seconds(trigger.workflow_execution_timeout, "trigger.workflow_execution_timeout"),
        run_timeout_s=seconds(trigger.workflow_run_timeout, "trigger.workflow_run_timeout"),
        task_timeout_s=seconds(trigger.workflow_task_timeout, "trigger.workflow_task_timeout"),
    )


def published_event(event: event_pb2.CloudEvent, max_payload_bytes: int) -> PublishedEvent:
    """A published event's fields, its data decoded from JSON."""
    if len(event.data) > max_payload_bytes:
        raise InvalidArgument(
            f"event.data is {len(event.data)} bytes, over the server's payload limit of {max_payload_bytes} bytes"
        )
    try:
        data = loads_bounded(event.data) if event.data else None
    except JSONTooDeep as error:
        raise InvalidArgument(f"event.data is refused: {error}") from None
    except ValueError:
        raise InvalidArgument("event.data must be UTF-8 JSON text (empty for null)") from None
    try:
        time = event.time.ToJsonString() if event.HasField("time") else None
    except ValueError:
        raise InvalidArgument("event.time is out of range (years 0001 to 9999)") from None
    return PublishedEvent(
        id=name(event.id, "event.id"),
        source=name(event.source, "event.source"),
        type=name(event.type, "event.type"),
        subject=name(event.subject, "event.subject", required=False),
        time=time,
        data=data,
    )


# ------------------------------------------------------------------ schedules


def schedule_key(request: _ScheduleRequest) -> tuple[str, str]:
    return name(request.namespace, "namespace"), name(request.schedule_id, "schedule_id")


def dead_letter_filter(selection: dead_letters_pb2.DeadLetterFilter, now_us: int) -> DeadLetterFilter:
    """Which dead letters a request selects (``older_than`` counted back from ``now_us``)."""
    older_than = seconds(selection.older_than, "filter.older_than")
    return DeadLetterFilter(
        workflow_type=name(selection.workflow_type, "filter.workflow_type", required=False),
        activity_type=name(selection.activity_type, "filter.activity_type", required=False),
        error_type=name(selection.error_type, "filter.error_type", required=False),
        workflow_id=name(selection.workflow_id, "filter.workflow_id", required=False),
        dead_lettered_before_us=now_us - round(older_than * 1e6) if older_than else None,
    )


def dead_letter_target(
    request: dead_letters_pb2.RetryDeadLettersRequest | dead_letters_pb2.DiscardDeadLettersRequest, now_us: int
) -> tuple[str, str, DeadLetterFilter | None, str]:
    """(namespace, id, filter, reason) of a retry or discard: one id or a filter, and a reason."""
    namespace = name(request.namespace, "namespace")
    dead_letter_id = name(request.id, "id", required=False)
    if dead_letter_id and request.HasField("filter"):
        raise InvalidArgument("give either id or filter, not both")
    if not dead_letter_id and not request.HasField("filter"):
        raise InvalidArgument("id (one dead letter) or filter (every one it matches) is required")
    reason = name(request.reason, "reason")
    selection = None if dead_letter_id else dead_letter_filter(request.filter, now_us)
    return namespace, dead_letter_id, selection, reason


def reset_point(request: remediation_pb2.ResetWorkflowExecutionRequest) -> tuple[int, str]:
    """(event_id, reset_type) of a reset: an event id, or ``first`` / ``last``, not both."""
    if request.event_id < 0:
        raise InvalidArgument("event_id must be the id of a WorkflowTaskStarted or WorkflowTaskCompleted event")
    if bool(request.event_id) == bool(request.reset_type):
        raise InvalidArgument("give either event_id or reset_type ('first' or 'last'), exactly one")
    if request.reset_type and request.reset_type not in RESET_TYPES:
        raise InvalidArgument(f"reset_type must be one of {', '.join(RESET_TYPES)}, not {request.reset_type!r}")
    return request.event_id, request.reset_type


MAX_BATCH_RPS = 10_000.0
DEFAULT_BATCH_RPS = 50.0


def batch_start(
    request: remediation_pb2.StartBatchOperationRequest,
) -> tuple[str, str, str, dict[str, str], float]:
    """(namespace, operation, query, arguments, rps) of a batch: a known operation, a
    query (an empty one would act on every execution), its arguments, a sane rate."""
    namespace = name(request.namespace, "namespace")
    if request.operation not in BATCH_OPERATIONS:
        raise InvalidArgument(f"operation must be one of {', '.join(BATCH_OPERATIONS)}, not {request.operation!r}")
    query = name(request.query, "query")
    arguments: dict[str, str] = {}
    if request.operation == "signal":
        arguments["signal_name"] = name(request.signal_name, "signal_name")
        arguments["input"] = base64.b64encode(request.signal_input.SerializeToString()).decode()
    elif request.operation == "reset":
        if request.reset_type not in RESET_TYPES:
            raise InvalidArgument(f"reset_type must be one of {', '.join(RESET_TYPES)} for a batch reset")
        arguments["reset_type"] = request.reset_type
    rps = request.rps or DEFAULT_BATCH_RPS
    if not 0 < rps <= MAX_BATCH_RPS:
        raise InvalidArgument(f"rps must be between 0 and {MAX_BATCH_RPS:g}")
    return namespace, request.operation, query, arguments, rps
