"""Schedules in the SDK, named as Temporal's; re-exported by :mod:`flowforge.client`.

::

    handle = await client.create_schedule(
        "nightly-report",
        Schedule(
            action=ScheduleActionStartWorkflow(NightlyReport.run, "sales", id="nightly-report", task_queue="reports"),
            spec=ScheduleSpec(cron_expressions=["30 2 * * *"], time_zone_name="Europe/Stockholm"),
            policy=SchedulePolicy(overlap=ScheduleOverlapPolicy.SKIP, catchup_window=timedelta(hours=1)),
        ),
    )
    await handle.trigger()
    print((await handle.describe()).info.recent_actions)
"""

from __future__ import annotations

import dataclasses
import enum
import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, cast

from google.protobuf.timestamp_pb2 import Timestamp

from flowforge._workflow_definition import _workflow_type_and_result_hint
from flowforge.api.v1 import common_pb2
from flowforge.api.v1 import workflow_service_pb2 as pb
from flowforge.common import (
    _NO_ARGUMENT,
    SearchAttributeValue,
    _call_arguments,
    _search_attributes_from_proto,
    _search_attributes_to_proto,
    _set_workflow_timeouts,
)

if TYPE_CHECKING:
    from flowforge.client import Client

__all__ = [
    "Schedule",
    "ScheduleActionResult",
    "ScheduleActionStartWorkflow",
    "ScheduleBackfill",
    "ScheduleDescription",
    "ScheduleHandle",
    "ScheduleInfo",
    "ScheduleIntervalSpec",
    "ScheduleMisfirePolicy",
    "ScheduleOverlapPolicy",
    "SchedulePolicy",
    "ScheduleSpec",
    "ScheduleState",
    "ScheduleUpdate",
    "ScheduleUpdateInput",
    "SchedulerLeaderChange",
    "SchedulerStatus",
]


class ScheduleOverlapPolicy(enum.IntEnum):
    """What a fire does while the schedule's previous execution is still running."""

    SKIP = 1
    """Drop the fire (the default)."""
    BUFFER_ONE = 2
    """Start it when the running one closes; at most one fire waits, later ones are dropped."""
    ALLOW_ALL = 3
    """Start it at once, whatever runs."""
    CANCEL_OTHER = 4
    """Request cancellation of the running one and start this fire once it has closed."""
    TERMINATE_OTHER = 5
    """Terminate the running one and start this fire at once."""


class ScheduleMisfirePolicy(enum.IntEnum):
    """What happens to fires missed while no scheduler ran (the server was down)."""

    SKIP = 1
    """Run none of them; the next fire is the next nominal time."""
    RUN_ONCE = 2
    """Run the most recent missed fire once."""
    CATCH_UP = 3
    """Run every missed fire no older than ``SchedulePolicy.catchup_window``, in order (the default)."""


@dataclasses.dataclass(frozen=True)
class ScheduleIntervalSpec:
    """Fire every ``every``, counted from the Unix epoch and shifted by ``offset``.

    Attributes:
        every: The period; at least one second.
        offset: Shift from the epoch-aligned multiples; less than ``every``.
    """

    every: timedelta
    offset: timedelta = timedelta(0)


@dataclasses.dataclass(frozen=True)
class ScheduleSpec:
    """When a schedule fires: the union of its cron expressions and intervals.

    Attributes:
        cron_expressions: Five-field cron expressions (``"30 2 * * *"``) read on the
            wall clock of ``time_zone_name``. A wall-clock time skipped by a DST change
            fires when the clocks jump; one repeated fires at its first occurrence only.
        intervals: Fixed periods, independent of the time zone.
        time_zone_name: An IANA zone, e.g. ``"Europe/Stockholm"``.
    """

    cron_expressions: Sequence[str] = ()
    intervals: Sequence[ScheduleIntervalSpec] = ()
    time_zone_name: str = "UTC"


@dataclasses.dataclass(init=False)
class ScheduleActionStartWorkflow:
    """Each fire starts this workflow.

    The execution's id is ``id`` + ``"-"`` + the nominal fire time in UTC
    (``nightly-report-2026-03-29T01:30:00Z``), so one nominal time never starts two
    executions; its ``WorkflowExecutionStarted`` event and ``describe().origin`` say
    which schedule and nominal time started it.

    Attributes:
        workflow: The workflow type name (a ``@workflow.run`` method or class is
            accepted and turned into its name).
        args: The run method's arguments.
        id: The prefix of every started execution's workflow id.
        task_queue: The task queue its workers poll.
        execution_timeout: Limit on each started execution.
        run_timeout: Limit on one run.
        task_timeout: Limit on one workflow task.
        search_attributes: Search attributes of every started execution (each
            registered in the namespace; checked when the schedule is created).
        memo: The memo of every started execution.
    """

    workflow: str
    args: list[Any]
    id: str
    task_queue: str
    execution_timeout: timedelta | None
    run_timeout: timedelta | None
    task_timeout: timedelta | None
    search_attributes: dict[str, SearchAttributeValue]
    memo: dict[str, Any]

    def __init__(
        self,
        workflow: Callable[..., Any] | type | str,
        arg: Any = _NO_ARGUMENT,
        *,
        args: Sequence[Any] = (),
        id: str,
        task_queue: str,
        execution_timeout: timedelta | None = None,
        run_timeout: timedelta | None = None,
        task_timeout: timedelta | None = None,
        search_attributes: Mapping[str, SearchAttributeValue] | None = None,
        memo: Mapping[str, Any] | None = None,
    ) -> None:
        self.workflow = _workflow_type_and_result_hint(workflow)[0]
        self.args = _call_arguments(arg, args)
        self.id = id
        self.task_queue = task_queue
        self.execution_timeout = execution_timeout
        self.run_timeout = run_timeout
        self.task_timeout = task_timeout
        self.search_attributes = dict(search_attributes or {})
        self.memo = dict(memo or {})


@dataclasses.dataclass(frozen=True)
class SchedulePolicy:
    """How fires meet running executions and server downtime.

    Attributes:
        overlap: What a fire does while the previous execution still runs.
        catchup_window: With ``misfire=CATCH_UP``, missed fires older than this are dropped.
        misfire: What happens to fires missed while the server was down.
    """

    overlap: ScheduleOverlapPolicy = ScheduleOverlapPolicy.SKIP
    catchup_window: timedelta = timedelta(days=365)
    misfire: ScheduleMisfirePolicy = ScheduleMisfirePolicy.CATCH_UP


@dataclasses.dataclass(frozen=True)
class ScheduleState:
    """Whether the schedule is paused, and why.

    Attributes:
        paused: A paused schedule does not fire on its spec (trigger and backfill still
            work); fires that fall while paused are not run on unpause.
        note: Who paused it and why, for people.
    """

    paused: bool = False
    note: str = ""


@dataclasses.dataclass
class Schedule:
    """A schedule: what to do, when, and under which policies.

    Attributes:
        action: The workflow each fire starts.
        spec: When it fires.
        policy: Overlap and misfire handling.
        state: Paused or not, with a note.
    """

    action: ScheduleActionStartWorkflow
    spec: ScheduleSpec
    policy: SchedulePolicy = dataclasses.field(default_factory=SchedulePolicy)
    state: ScheduleState = dataclasses.field(default_factory=ScheduleState)


@dataclasses.dataclass(frozen=True)
class ScheduleActionResult:
    """One execution a schedule started.

    Attributes:
        scheduled_at: The nominal fire time (UTC).
        started_at: When the scheduler actually started it (UTC).
        workflow_id: The started execution's workflow id.
        run_id: Its run.
        trigger: ``"scheduled"``, ``"catchup"``, ``"trigger"`` or ``"backfill"``.
    """

    scheduled_at: datetime
    started_at: datetime
    workflow_id: str
    run_id: str
    trigger: str


@dataclasses.dataclass(frozen=True)
class ScheduleInfo:
    """What a schedule has done and will do.

    Attributes:
        num_actions: Executions started so far.
        num_actions_skipped_overlap: Fires dropped by the overlap policy.
        num_actions_missed_catchup_window: Fires dropped by the misfire policy.
        running_workflow_ids: Executions it started that are still running.
        recent_actions: The last ten starts, oldest first.
        next_action_times: The next nominal fire times (none while paused).
        buffered_actions: Fires waiting for a running execution to close.
        created_at: When the schedule was created.
        last_updated_at: When it last changed.
    """

    num_actions: int
    num_actions_skipped_overlap: int
    num_actions_missed_catchup_window: int
    running_workflow_ids: list[str]
    recent_actions: list[ScheduleActionResult]
    next_action_times: list[datetime]
    buffered_actions: int
    created_at: datetime
    last_updated_at: datetime


@dataclasses.dataclass(frozen=True)
class ScheduleDescription:
    """A schedule as :meth:`ScheduleHandle.describe` returns it.

    Attributes:
        id: The schedule id.
        schedule: Its action, spec, policy and state (the action's ``args`` decoded
            as plain JSON values).
        info: What it has done and will do.
    """

    id: str
    schedule: Schedule
    info: ScheduleInfo


@dataclasses.dataclass(frozen=True)
class SchedulerLeaderChange:
    """A leadership change the answering replica went through.

    Attributes:
        time: When (server clock, UTC).
        event: ``"acquired"``, ``"lost"`` or ``"released"``.
        fencing_token: The lease's token.
        holder: The replica's identity.
    """

    time: datetime
    event: str
    fencing_token: int
    holder: str


@dataclasses.dataclass(frozen=True)
class SchedulerStatus:
    """Which server replica runs the schedules.

    Attributes:
        leader_identity: The replica holding the scheduler lease ("" if none ever did).
        fencing_token: The lease's fencing token; it grows with every takeover.
        leader_since: When the holder took the lease.
        lease_expires_at: When the lease lapses unless renewed.
        replica_identity: The replica that answered.
        replica_is_leader: Whether it believes it leads.
        replica_rejected_writes: Its writes refused for carrying a superseded token.
        replica_leader_changes: Its leadership changes, oldest first.
    """

    leader_identity: str
    fencing_token: int
    leader_since: datetime | None
    lease_expires_at: datetime | None
    replica_identity: str
    replica_is_leader: bool
    replica_rejected_writes: int
    replica_leader_changes: list[SchedulerLeaderChange]


def _datetime(timestamp: Timestamp) -> datetime:
    return timestamp.ToDatetime(tzinfo=UTC)


def _timestamp_of(moment: datetime, field: str) -> Any:
    if moment.tzinfo is None:
        raise ValueError(f"{field} must be timezone-aware (e.g. datetime(..., tzinfo=timezone.utc))")
    stamp = pb.ScheduleBackfill().start_time
    stamp.FromDatetime(moment.astimezone(UTC))
    return stamp


def _overlap_value(overlap: ScheduleOverlapPolicy | None) -> pb.ScheduleOverlapPolicy:
    # The generated stubs give each enum its own int type; the values are the wire's.
    return cast(pb.ScheduleOverlapPolicy, 0 if overlap is None else int(overlap))


def _schedule_to_proto(schedule: Schedule, client: Client) -> pb.Schedule:
    action = schedule.action
    proto = pb.Schedule(
        spec=pb.ScheduleSpec(
            cron_expressions=list(schedule.spec.cron_expressions),
            time_zone_name=schedule.spec.time_zone_name,
        ),
        action=pb.ScheduleActionStartWorkflow(
            workflow_id=action.id,
            workflow_type=action.workflow,
            task_queue=action.task_queue,
            input=client.data_converter.to_payloads(action.args),
            search_attributes=_search_attributes_to_proto(action.search_attributes),
            memo=common_pb2.Memo(fields={k: client.data_converter.to_payload(v) for k, v in action.memo.items()}),
        ),
        policy=pb.SchedulePolicy(
            overlap=_overlap_value(schedule.policy.overlap),
            misfire=cast(pb.ScheduleMisfirePolicy, int(schedule.policy.misfire)),
        ),
        state=pb.ScheduleState(paused=schedule.state.paused, note=schedule.state.note),
    )
    proto.policy.catchup_window.FromTimedelta(schedule.policy.catchup_window)
    for interval in schedule.spec.intervals:
        added = proto.spec.intervals.add()
        added.every.FromTimedelta(interval.every)
        added.offset.FromTimedelta(interval.offset)
    _set_workflow_timeouts(proto.action, action.execution_timeout, action.run_timeout, action.task_timeout)
    return proto


def _optional_timedelta(duration: Any) -> timedelta | None:
    value = duration.ToTimedelta()
    return value or None


def _description(schedule_id: str, proto: pb.Schedule, info: pb.ScheduleInfo, client: Client) -> ScheduleDescription:
    action = proto.action
    schedule = Schedule(
        action=ScheduleActionStartWorkflow(
            action.workflow_type,
            args=client.data_converter.from_payloads(action.input),
            id=action.workflow_id,
            task_queue=action.task_queue,
            execution_timeout=_optional_timedelta(action.workflow_execution_timeout),
            run_timeout=_optional_timedelta(action.workflow_run_timeout),
            task_timeout=_optional_timedelta(action.workflow_task_timeout),
            search_attributes=_search_attributes_from_proto(action.search_attributes),
            memo={k: client.data_converter.from_payload(v) for k, v in sorted(action.memo.fields.items())},
        ),
        spec=ScheduleSpec(
            cron_expressions=list(proto.spec.cron_expressions),
            intervals=[
                ScheduleIntervalSpec(i.every.ToTimedelta(), i.offset.ToTimedelta()) for i in proto.spec.intervals
            ],
            time_zone_name=proto.spec.time_zone_name,
        ),
        policy=SchedulePolicy(
            overlap=ScheduleOverlapPolicy(proto.policy.overlap),
            catchup_window=proto.policy.catchup_window.ToTimedelta(),
            misfire=ScheduleMisfirePolicy(proto.policy.misfire),
        ),
        state=ScheduleState(paused=proto.state.paused, note=proto.state.note),
    )
    return ScheduleDescription(
        id=schedule_id,
        schedule=schedule,
        info=ScheduleInfo(
            num_actions=info.action_count,
            num_actions_skipped_overlap=info.skipped_count,
            num_actions_missed_catchup_window=info.missed_count,
            running_workflow_ids=[e.workflow_id for e in info.running_workflows],
            recent_actions=[
                ScheduleActionResult(
                    scheduled_at=_datetime(a.nominal_time),
                    started_at=_datetime(a.actual_time),
                    workflow_id=a.execution.workflow_id,
                    run_id=a.execution.run_id,
                    trigger=a.trigger,
                )
                for a in info.recent_actions
            ],
            next_action_times=[_datetime(t) for t in info.next_action_times],
            buffered_actions=info.buffered_count,
            created_at=_datetime(info.create_time),
            last_updated_at=_datetime(info.update_time),
        ),
    )


def _status(proto: pb.GetSchedulerStatusResponse) -> SchedulerStatus:
    return SchedulerStatus(
        leader_identity=proto.leader_identity,
        fencing_token=proto.fencing_token,
        leader_since=_datetime(proto.leader_since) if proto.HasField("leader_since") else None,
        lease_expires_at=_datetime(proto.lease_expire_time) if proto.HasField("lease_expire_time") else None,
        replica_identity=proto.replica_identity,
        replica_is_leader=proto.replica_is_leader,
        replica_rejected_writes=proto.replica_rejected_writes,
        replica_leader_changes=[
            SchedulerLeaderChange(_datetime(c.time), c.event, c.fencing_token, c.holder)
            for c in proto.replica_leader_changes
        ],
    )


@dataclasses.dataclass(frozen=True)
class ScheduleBackfill:
    """A past time range whose fires a backfill takes (Temporal's ``ScheduleBackfill``).

    Attributes:
        start_at: The range's start (timezone-aware).
        end_at: Its end, included.
        overlap: Overrides the schedule's overlap policy for these fires.
    """

    start_at: datetime
    end_at: datetime
    overlap: ScheduleOverlapPolicy | None = None


@dataclasses.dataclass(frozen=True)
class ScheduleUpdateInput:
    """What an updater of :meth:`ScheduleHandle.update` is given: the schedule as it is now."""

    description: ScheduleDescription


@dataclasses.dataclass(frozen=True)
class ScheduleUpdate:
    """What an updater of :meth:`ScheduleHandle.update` returns: the schedule as it should be."""

    schedule: Schedule


class ScheduleHandle:
    """A schedule on the server; no call is made until a method is awaited.

    Every method raises :class:`flowforge.exceptions.RPCError` (``NOT_FOUND`` for
    an unknown schedule id) when the server refuses.
    """

    def __init__(self, client: Client, schedule_id: str) -> None:
        self._client = client
        self.id = schedule_id

    def __repr__(self) -> str:
        return f"ScheduleHandle({self.id!r})"

    async def _patch(self, **fields: Any) -> None:
        await self._client.workflow_service.call(
            "PatchSchedule",
            pb.PatchScheduleRequest(
                namespace=self._client.namespace, schedule_id=self.id, identity=self._client.identity, **fields
            ),
        )

    async def describe(self) -> ScheduleDescription:
        """The schedule's definition, its recent and running executions and its next fire times."""
        response = await self._client.workflow_service.call(
            "DescribeSchedule", pb.DescribeScheduleRequest(namespace=self._client.namespace, schedule_id=self.id)
        )
        return _description(self.id, response.schedule, response.info, self._client)

    async def pause(self, note: str = "") -> None:
        """Stops fires on the spec until :meth:`unpause`; ``note`` says why."""
        await self._patch(pause=True, note=note)

    async def unpause(self, note: str = "") -> None:
        """Resumes fires from now on (fires that fell while paused are not run)."""
        await self._patch(unpause=True, note=note)

    async def trigger(self, overlap: ScheduleOverlapPolicy | None = None) -> None:
        """Fires now, paused or not; ``overlap`` overrides the schedule's policy."""
        await self._patch(trigger=pb.ScheduleTrigger(overlap=_overlap_value(overlap)))

    async def backfill(
        self,
        *ranges: ScheduleBackfill | datetime,
        end: datetime | None = None,
        overlap: ScheduleOverlapPolicy | None = None,
    ) -> None:
        """Fires every nominal time of the spec in each range, at most 1000 per range;
        ``overlap`` overrides the schedule's policy. Times that already fired are not
        started again. Either Temporal's ``backfill(ScheduleBackfill(start_at, end_at), ...)``
        or ``backfill(start, end)`` (timezone-aware datetimes).

        Raises:
            TypeError: Neither form.
        """
        if len(ranges) == 2 and all(isinstance(r, datetime) for r in ranges) and end is None:
            ranges = (ScheduleBackfill(cast(datetime, ranges[0]), cast(datetime, ranges[1]), overlap),)
        elif len(ranges) == 1 and isinstance(ranges[0], datetime) and end is not None:
            ranges = (ScheduleBackfill(ranges[0], end, overlap),)
        if not ranges or not all(isinstance(r, ScheduleBackfill) for r in ranges):
            raise TypeError("pass ScheduleBackfill(start_at, end_at) ranges, or a start and an end datetime")
        backfills = []
        for r in cast(tuple[ScheduleBackfill, ...], ranges):
            backfill = pb.ScheduleBackfill(overlap=_overlap_value(r.overlap if r.overlap is not None else overlap))
            backfill.start_time.CopyFrom(_timestamp_of(r.start_at, "start"))
            backfill.end_time.CopyFrom(_timestamp_of(r.end_at, "end"))
            backfills.append(backfill)
        await self._patch(backfills=backfills)

    async def update(
        self, updater: Callable[[ScheduleUpdateInput], ScheduleUpdate | Awaitable[ScheduleUpdate | None] | None]
    ) -> None:
        """Changes the schedule (Temporal's ``update``): ``updater`` gets the current description
        and returns a :class:`ScheduleUpdate` with the new schedule (or ``None`` to change
        nothing); spec, action, policies and state are replaced, and the new spec fires from now on.
        """
        update = updater(ScheduleUpdateInput(await self.describe()))
        if inspect.isawaitable(update):
            update = await update
        if update is None:
            return
        await self._patch(schedule=_schedule_to_proto(update.schedule, self._client))

    async def delete(self) -> None:
        """Deletes the schedule; executions it started keep running."""
        await self._client.workflow_service.call(
            "DeleteSchedule",
            pb.DeleteScheduleRequest(
                namespace=self._client.namespace, schedule_id=self.id, identity=self._client.identity
            ),
        )
