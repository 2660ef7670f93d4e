"""The command-attribute validator: what a workflow task's commands must satisfy
before any of them is applied (Temporal's ``commandAttrValidator``).

Everything here is checked without state, so a bad completion is refused with
INVALID_ARGUMENT before its transaction reads anything (rule 8 of
docs/architecture.md). Checks against the execution's state (an id already in use)
are made when the commands are applied.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from flowforge.api.schema import duration_s
from flowforge.api.v1 import command_pb2, common_pb2
from flowforge.server.errors import InvalidArgument
from flowforge.server.history.data import DEFAULT_PRIORITY
from flowforge.server.history.flow_control import priority_from_proto
from flowforge.server.history.input_checks import (
    check_failure,
    check_name,
    check_payloads,
    check_search_attribute_names,
    check_visibility_input,
)

__all__ = ["CLOSE_COMMANDS", "MAX_COMMANDS_PER_COMPLETION", "CommandValidator"]

# Commands that close the run: each must be the task's last.
CLOSE_COMMANDS = frozenset(
    {
        "complete_workflow_execution",
        "fail_workflow_execution",
        "cancel_workflow_execution",
        "continue_as_new_workflow_execution",
    }
)
#: Commands one workflow task completion may carry.
MAX_COMMANDS_PER_COMPLETION = 1000
MAX_NON_RETRYABLE_ERROR_TYPES = 100
_ACTIVITY_TIMEOUTS = (
    "start_to_close_timeout",
    "schedule_to_close_timeout",
    "schedule_to_start_timeout",
    "heartbeat_timeout",
)


class CommandValidator:
    """Checks a workflow task's commands, each by the rules of its type."""

    def __init__(self, max_payload_bytes: int) -> None:
        self._max_bytes = max_payload_bytes
        self._checks: dict[str, Callable[[str, command_pb2.Command], None]] = {
            "schedule_activity_task": self._schedule_activity_task,
            "start_timer": self._start_timer,
            "record_marker": self._record_marker,
            "complete_workflow_execution": self._complete_workflow_execution,
            "fail_workflow_execution": self._fail_workflow_execution,
            "upsert_workflow_search_attributes": self._upsert_workflow_search_attributes,
            "start_child_workflow_execution": self._start_child_workflow_execution,
            "request_cancel_external_workflow_execution": self._request_cancel_external_workflow_execution,
            "signal_external_workflow_execution": self._signal_external_workflow_execution,
            "continue_as_new_workflow_execution": self._continue_as_new_workflow_execution,
        }

    def validate(self, commands: Sequence[command_pb2.Command]) -> None:
        """Raises INVALID_ARGUMENT naming the first bad command and what is wrong with it."""
        if len(commands) > MAX_COMMANDS_PER_COMPLETION:
            raise InvalidArgument(
                f"the workflow task completion carries {len(commands)} commands; the limit is"
                f" {MAX_COMMANDS_PER_COMPLETION} per completion (schedule fewer things at once)"
            )
        activity_ids: set[str] = set()
        timer_ids: set[str] = set()
        for index, command in enumerate(commands):
            kind = command.WhichOneof("attributes")
            if kind is None:
                raise InvalidArgument(f"command {index} has no attributes set")
            where = f"command {index} ({kind})"
            if kind in CLOSE_COMMANDS and index != len(commands) - 1:
                raise InvalidArgument(f"{where} closes the workflow but is not the last command")
            check = self._checks.get(kind)
            if check is not None:
                check(where, command)
            if kind == "schedule_activity_task":
                _unique(where, "activity_id", command.schedule_activity_task.activity_id, activity_ids)
            elif kind == "start_timer":
                _unique(where, "timer_id", command.start_timer.timer_id, timer_ids)

    def _payloads(self, payloads: common_pb2.Payloads, what: str) -> None:
        check_payloads(payloads, what, self._max_bytes)

    def _schedule_activity_task(self, where: str, command: command_pb2.Command) -> None:
        a = command.schedule_activity_task
        if not a.activity_id or not a.activity_type:
            raise InvalidArgument(f"{where}: activity_id and activity_type are required")
        if duration_s(a.start_to_close_timeout) <= 0 and duration_s(a.schedule_to_close_timeout) <= 0:
            raise InvalidArgument(
                f"{where}: activity {a.activity_type!r} needs start_to_close_timeout or schedule_to_close_timeout"
            )
        _not_negative(where, a, _ACTIVITY_TIMEOUTS)
        check_name(where, "activity_id", a.activity_id, required=True)
        check_name(where, "activity_type", a.activity_type, required=True)
        check_name(where, "task_queue", a.task_queue, required=False)
        if a.HasField("retry_policy"):
            _retry_policy(where, a.retry_policy)
        priority_from_proto(a.priority, DEFAULT_PRIORITY, where)
        check_name(where, "concurrency_key", a.concurrency_key, required=False)
        self._payloads(a.input, f"the input of activity {a.activity_type!r}")

    def _start_timer(self, where: str, command: command_pb2.Command) -> None:
        t = command.start_timer
        if not t.timer_id or duration_s(t.start_to_fire_timeout) <= 0:
            raise InvalidArgument(f"{where}: timer_id and a positive start_to_fire_timeout are required")

    def _record_marker(self, where: str, command: command_pb2.Command) -> None:
        marker = command.record_marker
        if not marker.marker_name:
            raise InvalidArgument(f"{where}: marker_name is required")
        for key, payloads in marker.details.items():
            self._payloads(payloads, f"the detail {key!r} of marker {marker.marker_name!r}")

    def _complete_workflow_execution(self, where: str, command: command_pb2.Command) -> None:
        self._payloads(command.complete_workflow_execution.result, "the workflow result")

    def _fail_workflow_execution(self, where: str, command: command_pb2.Command) -> None:
        check_failure(command.fail_workflow_execution.failure, "the workflow failure", self._max_bytes)

    def _upsert_workflow_search_attributes(self, where: str, command: command_pb2.Command) -> None:
        check_search_attribute_names(command.upsert_workflow_search_attributes.search_attributes, where)

    def _start_child_workflow_execution(self, where: str, command: command_pb2.Command) -> None:
        a = command.start_child_workflow_execution
        check_name(where, "workflow_id", a.workflow_id, required=True)
        check_name(where, "workflow_type", a.workflow_type, required=True)
        check_name(where, "task_queue", a.task_queue, required=False)
        priority_from_proto(a.priority, DEFAULT_PRIORITY, where)
        _not_negative(where, a, ("workflow_execution_timeout", "workflow_run_timeout", "workflow_task_timeout"))
        if a.parent_close_policy not in common_pb2.ParentClosePolicy.values():
            raise InvalidArgument(f"{where}: unknown parent_close_policy {a.parent_close_policy}")
        self._payloads(a.input, f"the input of child workflow {a.workflow_id!r}")
        check_visibility_input(a.search_attributes, a.memo, where, self._max_bytes)

    def _request_cancel_external_workflow_execution(self, where: str, command: command_pb2.Command) -> None:
        a = command.request_cancel_external_workflow_execution
        check_name(where, "workflow_id", a.workflow_id, required=True)
        if not a.child_workflow_only:
            raise InvalidArgument(f"{where}: workflow code may only cancel its own children; set child_workflow_only")

    def _signal_external_workflow_execution(self, where: str, command: command_pb2.Command) -> None:
        a = command.signal_external_workflow_execution
        check_name(where, "workflow_id", a.workflow_id, required=True)
        check_name(where, "signal_name", a.signal_name, required=True)
        if not a.child_workflow_only:
            raise InvalidArgument(f"{where}: workflow code may only signal its own children; set child_workflow_only")
        self._payloads(a.input, f"the input of signal {a.signal_name!r}")

    def _continue_as_new_workflow_execution(self, where: str, command: command_pb2.Command) -> None:
        a = command.continue_as_new_workflow_execution
        check_name(where, "workflow_type", a.workflow_type, required=False)
        check_name(where, "task_queue", a.task_queue, required=False)
        _not_negative(where, a, ("workflow_run_timeout", "workflow_task_timeout"))
        self._payloads(a.input, "the input of the continued run")
        self._payloads(a.last_completion_result, "the last completion result of the continued run")
        check_failure(a.last_failure, "the last failure of the continued run", self._max_bytes)


def _retry_policy(where: str, policy: common_pb2.RetryPolicy) -> None:
    """Temporal's rules: a coefficient of at least 1 (0: the default), a maximum interval
    not below the initial one, no negative attempts, a bounded list of error types."""
    if policy.backoff_coefficient and not policy.backoff_coefficient >= 1:
        raise InvalidArgument(f"{where}: retry_policy.backoff_coefficient must be at least 1 (0 for the default 2)")
    if policy.maximum_attempts < 0:
        raise InvalidArgument(f"{where}: retry_policy.maximum_attempts must not be negative (0: unlimited)")
    if (
        policy.HasField("maximum_interval")
        and policy.HasField("initial_interval")
        and duration_s(policy.maximum_interval) < duration_s(policy.initial_interval)
    ):
        raise InvalidArgument(f"{where}: retry_policy.maximum_interval must not be below initial_interval")
    if len(policy.non_retryable_error_types) > MAX_NON_RETRYABLE_ERROR_TYPES:
        raise InvalidArgument(
            f"{where}: retry_policy lists {len(policy.non_retryable_error_types)} non-retryable error types;"
            f" the limit is {MAX_NON_RETRYABLE_ERROR_TYPES}"
        )
    for error_type in policy.non_retryable_error_types:
        check_name(where, "retry_policy.non_retryable_error_types[]", error_type, required=True)


def _unique(where: str, field: str, value: str, seen: set[str]) -> None:
    """Refuses an id a previous command of the same task already used."""
    if value in seen:
        raise InvalidArgument(f"{where}: {field} {value!r} is used twice")
    seen.add(value)


def _not_negative(where: str, attributes: object, durations: Sequence[str]) -> None:
    for name in durations:
        if duration_s(getattr(attributes, name)) < 0:
            raise InvalidArgument(f"{where}: {name} must not be negative")
