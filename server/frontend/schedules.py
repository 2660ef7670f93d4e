"""Schedule RPCs (docs/schedules.md): create, describe, list, patch, delete, and the
scheduler's status."""

from __future__ import annotations

from typing import Any

from flowforge.api.v1 import workflow_service_pb2 as pb
from flowforge.server.errors import InvalidArgument
from flowforge.server.frontend import schedule_requests
from flowforge.server.frontend._base import Context, ServiceBase, rpc
from flowforge.server.frontend.schedule_protos import schedule_proto, status_proto
from flowforge.server.frontend.validation import name, page_size, schedule_key, text, text_page_token

__all__ = ["ScheduleHandlers"]


class ScheduleHandlers(ServiceBase):
    @rpc
    async def CreateSchedule(self, request: pb.CreateScheduleRequest, context: Context) -> pb.CreateScheduleResponse:
        namespace, schedule_id = schedule_key(request)
        schedule = request.schedule
        spec, action, policy = await self._checked_documents(namespace, schedule)
        await self._schedules.create(
            namespace, schedule_id, spec, action, policy, schedule.state.paused, text(schedule.state.note, "note")
        )
        return pb.CreateScheduleResponse()

    async def _checked_documents(
        self, namespace: str, schedule: pb.Schedule
    ) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
        """The stored spec, action and policy of a schedule a create or an update gives."""
        schedule_requests.require_action(schedule)
        self._engine.check_payloads(schedule.action.input, "the schedule's workflow input")
        await self._engine.check_visibility(namespace, schedule.action.search_attributes, schedule.action.memo)
        return schedule_requests.documents(schedule)

    @rpc
    async def DescribeSchedule(
        self, request: pb.DescribeScheduleRequest, context: Context
    ) -> pb.DescribeScheduleResponse:
        row, upcoming = await self._schedules.describe(*schedule_key(request))
        schedule, info = schedule_proto(row, upcoming)
        return pb.DescribeScheduleResponse(schedule=schedule, info=info)

    @rpc
    async def ListSchedules(self, request: pb.ListSchedulesRequest, context: Context) -> pb.ListSchedulesResponse:
        namespace = name(request.namespace, "namespace")
        size = page_size(request.page_size)
        after = text_page_token(request.next_page_token)
        rows = await self._schedules.list(namespace, after=after, limit=size)
        response = pb.ListSchedulesResponse(next_page_token=rows[-1].schedule_id.encode() if len(rows) == size else b"")
        for row in rows:
            schedule, info = schedule_proto(row, [])
            response.schedules.add(schedule_id=row.schedule_id, schedule=schedule, info=info)
        return response

    @rpc
    async def PatchSchedule(self, request: pb.PatchScheduleRequest, context: Context) -> pb.PatchScheduleResponse:
        namespace, schedule_id = schedule_key(request)
        backfills = schedule_requests.backfills(request)
        trigger = schedule_requests.patch_trigger(request)
        replacement = None
        if request.HasField("schedule"):
            spec, action, policy = await self._checked_documents(namespace, request.schedule)
            state = request.schedule.state
            replacement = (spec, action, policy, state.paused, text(state.note, "schedule.state.note"))
        if not (request.pause or request.unpause or trigger is not None or backfills or replacement):
            raise InvalidArgument("nothing to do: set pause, unpause, trigger, backfills or schedule")
        await self._schedules.update(
            namespace,
            schedule_id,
            pause=request.pause,
            unpause=request.unpause,
            note=text(request.note, "note"),
            trigger=trigger,
            backfills=backfills,
            replacement=replacement,
        )
        return pb.PatchScheduleResponse()

    @rpc
    async def DeleteSchedule(self, request: pb.DeleteScheduleRequest, context: Context) -> pb.DeleteScheduleResponse:
        await self._schedules.delete(*schedule_key(request))
        return pb.DeleteScheduleResponse()

    @rpc
    async def GetSchedulerStatus(
        self, request: pb.GetSchedulerStatusRequest, context: Context
    ) -> pb.GetSchedulerStatusResponse:
        return status_proto(await self._scheduler.status())
