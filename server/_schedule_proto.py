"""Schedules between their protobuf form and the JSON documents the store keeps,
with the frontend's validation of every field."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any

from google.protobuf import duration_pb2, timestamp_pb2
from google.protobuf.internal.enum_type_wrapper import EnumTypeWrapper

from flowforge.api.schema import duration_s
from flowforge.api.v1 import common_pb2
from flowforge.api.v1 import workflow_service_pb2 as pb
from flowforge.server.errors import InvalidArgument
from flowforge.server.scheduler import SchedulerStatus, action_input, action_visibility
from flowforge.server.stores.base import ScheduleRow

__all__ = ["action_document", "overlap_name", "policy_document", "schedule_proto", "spec_document", "status_proto"]

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


def _positive_seconds(duration: duration_pb2.Duration, field: str) -> float:
    seconds = duration_s(duration)
    if seconds < 0:
        raise InvalidArgument(f"{field} must not be negative")
    return seconds


def spec_document(spec: pb.ScheduleSpec) -> dict[str, Any]:
    """The spec as stored; the scheduler's parser validates it further."""
    return {
        "cron_expressions": list(spec.cron_expressions),
        "intervals": [
            {
                "every_s": _positive_seconds(i.every, "interval every"),
                "offset_s": _positive_seconds(i.offset, "interval offset"),
            }
            for i in spec.intervals
        ],
        "time_zone_name": spec.time_zone_name or "UTC",
    }


def action_document(action: pb.ScheduleActionStartWorkflow, check_name: Callable[[str, str], str]) -> dict[str, Any]:
    return {
        "workflow_id": check_name(action.workflow_id, "action.workflow_id"),
        "workflow_type": check_name(action.workflow_type, "action.workflow_type"),
        "task_queue": check_name(action.task_queue, "action.task_queue"),
        "input": base64.b64encode(action.input.SerializeToString()).decode(),
        "execution_timeout_s": _positive_seconds(action.workflow_execution_timeout, "workflow_execution_timeout"),
        "run_timeout_s": _positive_seconds(action.workflow_run_timeout, "workflow_run_timeout"),
        "task_timeout_s": _positive_seconds(action.workflow_task_timeout, "workflow_task_timeout"),
        "search_attributes": base64.b64encode(action.search_attributes.SerializeToString(deterministic=True)).decode(),
        "memo": base64.b64encode(action.memo.SerializeToString(deterministic=True)).decode(),
    }


def policy_document(policy: pb.SchedulePolicy) -> dict[str, Any]:
    return {
        "overlap": overlap_name(policy.overlap, "SKIP"),
        "misfire": _enum_name(
            pb.ScheduleMisfirePolicy, "SCHEDULE_MISFIRE_POLICY_", policy.misfire, "CATCH_UP", "misfire"
        ),
        "catchup_window_s": _positive_seconds(policy.catchup_window, "catchup_window") or _DEFAULT_CATCHUP_WINDOW_S,
    }


def _timestamp(us: int) -> timestamp_pb2.Timestamp:
    stamp = timestamp_pb2.Timestamp()
    stamp.FromMicroseconds(us)
    return stamp


def _duration(seconds: float) -> duration_pb2.Duration:
    duration = duration_pb2.Duration()
    duration.FromMicroseconds(round(seconds * 1_000_000))
    return duration


def schedule_proto(row: ScheduleRow, upcoming: list[int]) -> tuple[pb.Schedule, pb.ScheduleInfo]:
    spec, action, policy, state = (json.loads(x) for x in (row.spec, row.action, row.policy, row.state))
    schedule = pb.Schedule(
        spec=pb.ScheduleSpec(
            cron_expressions=spec["cron_expressions"],
            time_zone_name=spec["time_zone_name"],
            intervals=[
                pb.ScheduleIntervalSpec(every=_duration(i["every_s"]), offset=_duration(i["offset_s"]))
                for i in spec["intervals"]
            ],
        ),
        action=pb.ScheduleActionStartWorkflow(
            workflow_id=action["workflow_id"],
            workflow_type=action["workflow_type"],
            task_queue=action["task_queue"],
            input=action_input(action),
            workflow_execution_timeout=_duration(action["execution_timeout_s"]),
            workflow_run_timeout=_duration(action["run_timeout_s"]),
            workflow_task_timeout=_duration(action["task_timeout_s"]),
            search_attributes=action_visibility(action)[0],
            memo=action_visibility(action)[1],
        ),
        policy=pb.SchedulePolicy(
            # Enum fields take their value's name.
            overlap=f"SCHEDULE_OVERLAP_POLICY_{policy['overlap']}",
            misfire=f"SCHEDULE_MISFIRE_POLICY_{policy['misfire']}",
            catchup_window=_duration(policy["catchup_window_s"]),
        ),
        state=pb.ScheduleState(paused=bool(row.paused), note=row.note),
    )
    info = pb.ScheduleInfo(
        action_count=state["action_count"],
        skipped_count=state["skipped_count"],
        missed_count=state["missed_count"],
        running_workflows=[
            common_pb2.WorkflowExecution(workflow_id=r["workflow_id"], run_id=r["run_id"]) for r in state["running"]
        ],
        recent_actions=[
            pb.ScheduleActionResult(
                nominal_time=_timestamp(a["nominal_us"]),
                actual_time=_timestamp(a["actual_us"]),
                execution=common_pb2.WorkflowExecution(workflow_id=a["workflow_id"], run_id=a["run_id"]),
                trigger=a["trigger"],
            )
            for a in state["recent_actions"]
        ],
        next_action_times=[_timestamp(t) for t in upcoming],
        buffered_count=len(state["buffered"]),
        create_time=_timestamp(row.create_us),
        update_time=_timestamp(row.update_us),
    )
    return schedule, info


def status_proto(status: SchedulerStatus) -> pb.GetSchedulerStatusResponse:
    response = pb.GetSchedulerStatusResponse(
        replica_identity=status.identity,
        replica_is_leader=status.is_leader,
        replica_rejected_writes=status.rejected_writes,
        replica_leader_changes=[
            pb.SchedulerLeaderChange(
                time=_timestamp(c["time_us"]), event=c["event"], fencing_token=c["fencing_token"], holder=c["holder"]
            )
            for c in status.leader_changes
        ],
    )
    if status.lease is not None:
        response.leader_identity = status.lease.holder
        response.fencing_token = status.lease.fencing_token
        response.leader_since.CopyFrom(_timestamp(status.lease.acquired_us))
        response.lease_expire_time.CopyFrom(_timestamp(status.lease.expires_us))
    return response
