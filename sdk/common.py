"""Types shared by workflows, activities, the client and the server."""

from __future__ import annotations

import dataclasses
import enum
import math
import typing
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from flowforge.api.v1 import common_pb2

__all__ = [
    "Priority",
    "RetryPolicy",
    "SearchAttributeIndexedValueType",
    "SearchAttributeValue",
    "WorkflowExecutionStatus",
    "WorkflowIDConflictPolicy",
    "WorkflowIDReusePolicy",
]


@dataclasses.dataclass(frozen=True)
class RetryPolicy:
    """How the server retries a failed activity. Retries happen on the server
    (rule 5: workers report outcomes, the server decides), from the policy
    recorded in the ``ActivityTaskScheduled`` event."""

    initial_interval: timedelta = timedelta(seconds=1)
    """Delay before the first retry."""

    backoff_coefficient: float = 2.0
    """Each retry waits this many times longer than the previous one."""

    maximum_interval: timedelta | None = None
    """Cap on the delay; ``None`` means 100 x ``initial_interval``."""

    maximum_attempts: int = 0
    """Attempts in all, the first included; 0 means unlimited."""

    non_retryable_error_types: Sequence[str] = ()
    """Error types (``ApplicationError.type`` or the exception class name) that
    fail the activity at once."""

    full_jitter: bool = False
    """Draw each delay uniformly in [0, computed delay] so that many failing
    activities do not retry in lockstep."""

    def __post_init__(self) -> None:
        if self.initial_interval <= timedelta(0):
            raise ValueError("RetryPolicy.initial_interval must be positive")
        if self.backoff_coefficient < 1.0:
            raise ValueError("RetryPolicy.backoff_coefficient must be >= 1.0")
        if self.maximum_attempts < 0:
            raise ValueError("RetryPolicy.maximum_attempts must be >= 0 (0 means unlimited)")
        if self.maximum_interval is not None and self.maximum_interval < self.initial_interval:
            raise ValueError("RetryPolicy.maximum_interval must be >= initial_interval")

    def to_proto(self) -> common_pb2.RetryPolicy:
        """The wire form of this policy."""
        proto = common_pb2.RetryPolicy(
            backoff_coefficient=self.backoff_coefficient,
            maximum_attempts=self.maximum_attempts,
            non_retryable_error_types=list(self.non_retryable_error_types),
            full_jitter=self.full_jitter,
        )
        proto.initial_interval.FromTimedelta(self.initial_interval)
        if self.maximum_interval is not None:
            proto.maximum_interval.FromTimedelta(self.maximum_interval)
        return proto


@dataclasses.dataclass(frozen=True)
class Priority:
    """The order in which task queues hand out a workflow's or activity's tasks
    (Temporal's ``Priority``; docs/flow-control.md). A field left ``None`` is
    inherited: activities and child workflows take their workflow's, a workflow
    the default (priority 3, no fairness key)."""

    priority_key: int | None = None
    """1 runs first, 5 last; within a queue a lower key is always handed out first."""

    fairness_key: str | None = None
    """Tasks of one priority are shared among fairness keys (e.g. tenant ids) in
    proportion to their weights, so one key's backlog cannot starve another's."""

    fairness_weight: float | None = None
    """This key's share relative to other keys (default 1)."""

    default: typing.ClassVar[Priority]
    """No field set: everything inherited."""

    def __post_init__(self) -> None:
        if self.priority_key is not None and not 1 <= self.priority_key <= 5:
            raise ValueError("Priority.priority_key must be 1 (first) to 5 (last)")
        if self.fairness_weight is not None and not (math.isfinite(self.fairness_weight) and self.fairness_weight > 0):
            raise ValueError("Priority.fairness_weight must be a positive number")

    def to_proto(self) -> common_pb2.Priority:
        """The wire form (unset fields are 0 or empty: inherited)."""
        return common_pb2.Priority(
            priority_key=self.priority_key or 0,
            fairness_key=self.fairness_key or "",
            fairness_weight=self.fairness_weight or 0.0,
        )


Priority.default = Priority()


# How many entries a list call asks the server for per page, unless told.
_LIST_PAGE_SIZE = 100


class _NoArgument:
    """Marks an omitted ``arg`` so that ``None`` can be passed as a real argument."""

    def __repr__(self) -> str:
        return "<no argument>"


_NO_ARGUMENT: Any = _NoArgument()


def _call_arguments(arg: Any, args: Sequence[Any]) -> list[Any]:
    """The arguments of a call that takes either one ``arg`` or a sequence of ``args``."""
    if arg is not _NO_ARGUMENT and args:
        raise ValueError("pass either arg or args, not both")
    return [arg] if arg is not _NO_ARGUMENT else list(args)


def _set_workflow_timeouts(
    message: Any, execution: timedelta | None, run: timedelta | None, task: timedelta | None
) -> None:
    """Sets the workflow_{execution,run,task}_timeout fields that are given."""
    for field, timeout in (
        (message.workflow_execution_timeout, execution),
        (message.workflow_run_timeout, run),
        (message.workflow_task_timeout, task),
    ):
        if timeout is not None:
            field.FromTimedelta(timeout)


class WorkflowExecutionStatus(enum.IntEnum):
    """Where an execution is in its life; values match the wire enum."""

    RUNNING = 1
    COMPLETED = 2
    FAILED = 3
    CANCELED = 4
    TERMINATED = 5
    CONTINUED_AS_NEW = 6
    TIMED_OUT = 7


# --------------------------------------------------------------------------- visibility


class WorkflowIDConflictPolicy(enum.IntEnum):
    """What a start does when the workflow id has a running execution (Temporal's enum)."""

    UNSPECIFIED = 0
    """The default: ``FAIL``."""
    FAIL = 1
    """Raise ``WorkflowAlreadyStartedError``."""
    USE_EXISTING = 2
    """Return a handle to the running execution; start nothing."""
    TERMINATE_EXISTING = 3
    """Terminate the running execution, then start a new one."""


class WorkflowIDReusePolicy(enum.IntEnum):
    """Whether a start may reuse the id of a closed execution (Temporal's enum)."""

    UNSPECIFIED = 0
    """The default: ``ALLOW_DUPLICATE``."""
    ALLOW_DUPLICATE = 1
    """Any closed execution's id may be used again."""
    ALLOW_DUPLICATE_FAILED_ONLY = 2
    """Only the id of an execution that did not complete (failed, cancelled, terminated, timed out)."""
    REJECT_DUPLICATE = 3
    """Never: a start with the id of any earlier execution is ``WorkflowAlreadyStartedError``."""
    TERMINATE_IF_RUNNING = 4
    """Terminate a running execution of the id first (Temporal's older ``TERMINATE_EXISTING``)."""


class SearchAttributeIndexedValueType(enum.IntEnum):
    """The type of a custom search attribute, fixed when it is registered in a
    namespace (``client.add_search_attributes``). Values match the wire enum."""

    KEYWORD = common_pb2.INDEXED_VALUE_TYPE_KEYWORD
    """An exact-match string (``str``): ids, states, tags."""

    INT = common_pb2.INDEXED_VALUE_TYPE_INT
    """A signed 64-bit integer (``int``)."""

    DOUBLE = common_pb2.INDEXED_VALUE_TYPE_DOUBLE
    """A finite floating-point number (``float``; an ``int`` is accepted too)."""

    BOOL = common_pb2.INDEXED_VALUE_TYPE_BOOL
    """``True`` or ``False``."""

    DATETIME = common_pb2.INDEXED_VALUE_TYPE_DATETIME
    """A timezone-aware ``datetime``, stored in UTC with microseconds."""


SearchAttributeValue = str | int | float | bool | datetime
"""A search attribute value; its Python type picks the indexed type (see
:class:`SearchAttributeIndexedValueType`)."""

_INT64_RANGE = (-(2**63), 2**63 - 1)


def _search_attribute_value_to_proto(name: str, value: Any) -> common_pb2.SearchAttributeValue:
    """The typed wire value of one attribute; ``None`` is an empty value (remove it, in an upsert).

    Raises:
        TypeError: The value is not one of the supported types.
        ValueError: It is out of range, not finite, or a naive datetime.
    """
    proto = common_pb2.SearchAttributeValue()
    if isinstance(value, (list, tuple)):
        # Temporal's older dict form gives each value as a list: accept a list of one.
        if len(value) != 1:
            raise TypeError(
                f"search attribute {name!r} is a list of {len(value)} values; give one value"
                " (list-valued KeywordList attributes are not supported)"
            )
        value = value[0]
    if value is None:
        return proto
    if isinstance(value, bool):
        proto.bool_value = value
    elif isinstance(value, int):
        if not _INT64_RANGE[0] <= value <= _INT64_RANGE[1]:
            raise ValueError(f"search attribute {name!r}: {value} does not fit in a 64-bit Int")
        proto.int_value = value
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"search attribute {name!r} must be a finite number, not {value}")
        proto.double_value = value
    elif isinstance(value, str):
        proto.keyword_value = value
    elif isinstance(value, datetime):
        if value.tzinfo is None:
            raise ValueError(
                f"search attribute {name!r}: {value.isoformat()} is a naive datetime; give it a timezone"
                " (e.g. datetime.now(timezone.utc) or workflow.now())"
            )
        proto.datetime_value.FromDatetime(value.astimezone(UTC))
    else:
        raise TypeError(
            f"search attribute {name!r} is a {type(value).__name__}; use str (Keyword), int (Int), float"
            " (Double), bool (Bool) or an aware datetime (Datetime)"
        )
    return proto


def _search_attributes_to_proto(
    attributes: Mapping[str, SearchAttributeValue | None],
) -> common_pb2.SearchAttributes:
    proto = common_pb2.SearchAttributes()
    for name, value in attributes.items():
        if not isinstance(name, str) or not name:
            raise TypeError(f"search attribute names are non-empty strings, not {name!r}")
        proto.indexed_fields[name].CopyFrom(_search_attribute_value_to_proto(name, value))
    return proto


def _search_attribute_value_from_proto(proto: common_pb2.SearchAttributeValue) -> SearchAttributeValue | None:
    kind = proto.WhichOneof("value")
    if kind == "datetime_value":
        return proto.datetime_value.ToDatetime(tzinfo=UTC)
    return getattr(proto, kind) if kind is not None else None


def _search_attributes_from_proto(proto: common_pb2.SearchAttributes) -> dict[str, SearchAttributeValue]:
    """name -> value, sorted by name; entries without a value are left out."""
    values = {
        name: _search_attribute_value_from_proto(proto.indexed_fields[name]) for name in sorted(proto.indexed_fields)
    }
    return {name: value for name, value in values.items() if value is not None}
