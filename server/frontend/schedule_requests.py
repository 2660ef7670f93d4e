"""Schedule requests validated into the JSON documents the store keeps (docs/schedules.md).

Every field is checked here; the scheduler's parser validates the spec further.
"""

from __future__ import annotations

import base64
from typing import Any

from google.protobuf.internal.enum_type_wrapper import EnumTypeWrapper

from flowforge.api.v1 import workflow_service_pb2 as pb
from flowforge.server.errors import InvalidArgument
from flowforge.server.frontend.validation import name, seconds

__all__ = ["backfills", "documents", "overlap_name", "patch_trigger", "require_action"]

_DEFAULT_CATCHUP_WINDOW_S = 365 * 24 * 3600.0


def _enum_name(enum: EnumTypeWrapper, prefix: str, value: int, default: str, field: str) -> str:
    if value == 0:
        return default
    try:
        return enum.Name(value).removeprefix(prefix)
    except ValueError:
        raise InvalidArgument(f"{field} has an unknown value {value}") from None


def overlap_name(value: int, default: str = "") -> str:
    """The overlap policy's name ("" = unspecified, i.e. the schedule's own)."""
    return _enum_name(pb.ScheduleOverlapPolicy, "SCHEDULE_OVERLAP_POLICY_", value, default, "overlap")


def _spec_document(spec: pb.ScheduleSpec) -> dict[str, Any]:
    """The spec as stored; the scheduler's parser validates it further."""
    return {
        "cron_expressions": list(spec.cron_expressions),
        "intervals": [
            {"every_s": seconds(i.every, "interval every"), "offset_s": seconds(i.offset, "interval offset")}
            for i in spec.intervals
        ],
        "time_zone_name": spec.time_zone_name or "UTC",
    }


def _action_document(action: pb.ScheduleActionStartWorkflow) -> dict[str, Any]:
    """The workflow each fire starts, as stored (payloads and visibility as base64 protobuf)."""
    return {
        "workflow_id": name(action.workflow_id, "action.workflow_id"),
        "workflow_type": name(action.workflow_type, "action.workflow_type"),
        "task_queue": name(action.task_queue, "action.task_queue"),
        "input": base64.b64encode(action.input.SerializeToString()).decode(),
        "execution_timeout_s": seconds(action.workflow_execution_timeout, "workflow_execution_timeout"),
        "run_timeout_s": seconds(action.workflow_run_timeout, "workflow_run_timeout"),
        "task_timeout_s": seconds(action.workflow_task_timeout, "workflow_task_timeout"),
        "search_attributes": base64.b64encode(action.search_attributes.SerializeToString(deterministic=True)).decode(),
        "memo": base64.b64encode(action.memo.SerializeToString(deterministic=True)).decode(),
    }


def _policy_document(policy: pb.SchedulePolicy) -> dict[str, Any]:
    return {
        "overlap": overlap_name(policy.overlap, "SKIP"),
        "misfire": _enum_name(
            pb.ScheduleMisfirePolicy, "SCHEDULE_MISFIRE_POLICY_", policy.misfire, "CATCH_UP", "misfire"
        ),
        "catchup_window_s": seconds(policy.catchup_window, "catchup_window") or _DEFAULT_CATCHUP_WINDOW_S,
    }


def require_action(schedule: pb.Schedule) -> None:
    if not schedule.HasField("action"):
        raise InvalidArgument("schedule.action is required: the workflow each fire starts")


def documents(schedule: pb.Schedule) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """The (spec, action, policy) documents of a schedule to create."""
    return _spec_document(schedule.spec), _action_document(schedule.action), _policy_document(schedule.policy)


def backfills(request: pb.PatchScheduleRequest) -> tuple[tuple[int, int, str], ...]:
    """(start µs, end µs, overlap policy name) of each backfill a patch asks for."""
    result = []
    for backfill in request.backfills:
        if not backfill.HasField("start_time") or not backfill.HasField("end_time"):
            raise InvalidArgument("a backfill needs start_time and end_time")
        result.append(
            (backfill.start_time.ToMicroseconds(), backfill.end_time.ToMicroseconds(), overlap_name(backfill.overlap))
        )
    return tuple(result)


def patch_trigger(request: pb.PatchScheduleRequest) -> str | None:
    """The overlap policy of an immediate run the patch asks for, or None."""
    return overlap_name(request.trigger.overlap) if request.HasField("trigger") else None
