"""Schedules and the scheduler's status, from the store's rows and documents to their
protobuf form (docs/schedules.md)."""

from __future__ import annotations

import json

from flowforge.api.v1 import common_pb2
from flowforge.api.v1 import workflow_service_pb2 as pb
from flowforge.server.frontend.protos import duration, timestamp
from flowforge.server.scheduler import SchedulerStatus, action_input, action_visibility
from flowforge.server.stores.base import ScheduleRow

__all__ = ["schedule_proto", "status_proto"]


def schedule_proto(row: ScheduleRow, upcoming: list[int]) -> tuple[pb.Schedule, pb.ScheduleInfo]:
    spec, action, policy, state = (json.loads(x) for x in (row.spec, row.action, row.policy, row.state))
    schedule = pb.Schedule(
        spec=pb.ScheduleSpec(
            cron_expressions=spec["cron_expressions"],
            time_zone_name=spec["time_zone_name"],
            intervals=[
                pb.ScheduleIntervalSpec(every=duration(i["every_s"]), offset=duration(i["offset_s"]))
                for i in spec["intervals"]
            ],
        ),
        action=pb.ScheduleActionStartWorkflow(
            workflow_id=action["workflow_id"],
            workflow_type=action["workflow_type"],
            task_queue=action["task_queue"],
            input=action_input(action),
            workflow_execution_timeout=duration(action["execution_timeout_s"]),
            workflow_run_timeout=duration(action["run_timeout_s"]),
            workflow_task_timeout=duration(action["task_timeout_s"]),
            search_attributes=action_visibility(action)[0],
            memo=action_visibility(action)[1],
        ),
        policy=pb.SchedulePolicy(
            # Enum fields take their value's name.
            overlap=f"SCHEDULE_OVERLAP_POLICY_{policy['overlap']}",
            misfire=f"SCHEDULE_MISFIRE_POLICY_{policy['misfire']}",
            catchup_window=duration(policy["catchup_window_s"]),
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
                nominal_time=timestamp(a["nominal_us"]),
                actual_time=timestamp(a["actual_us"]),
                execution=common_pb2.WorkflowExecution(workflow_id=a["workflow_id"], run_id=a["run_id"]),
                trigger=a["trigger"],
            )
            for a in state["recent_actions"]
        ],
        next_action_times=[timestamp(t) for t in upcoming],
        buffered_count=len(state["buffered"]),
        create_time=timestamp(row.create_us),
        update_time=timestamp(row.update_us),
    )
    return schedule, info


def status_proto(status: SchedulerStatus) -> pb.GetSchedulerStatusResponse:
    response = pb.GetSchedulerStatusResponse(
        replica_identity=status.identity,
        replica_is_leader=status.is_leader,
        replica_rejected_writes=status.rejected_writes,
        replica_leader_changes=[
            pb.SchedulerLeaderChange(
                time=timestamp(c["time_us"]), event=c["event"], fencing_token=c["fencing_token"], holder=c["holder"]
            )
            for c in status.leader_changes
        ],
    )
    if status.lease is not None:
        response.leader_identity = status.lease.holder
        response.fencing_token = status.lease.fencing_token
        response.leader_since.CopyFrom(timestamp(status.lease.acquired_us))
        response.lease_expire_time.CopyFrom(timestamp(status.lease.expires_us))
    return response
