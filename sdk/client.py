"""The client: start workflows, wait for their results, inspect and steer them.

::

    client = await Client.connect("localhost:7233", namespace="default")
    handle = await client.start_workflow(Onboarding.run, req, id="onb-1", task_queue="onboarding")
    result = await handle.result()
    history = await handle.fetch_history()
    open("onb-1.json", "w").write(history.to_json())   # replayable with flowforge.testing.Replayer

Every failed call raises :class:`flowforge.exceptions.RPCError` carrying the server's
gRPC status and message; transient failures are retried first (see
:class:`RPCRetryConfig`).
"""

from __future__ import annotations

import asyncio
import builtins
import dataclasses
import json
import os
import socket
import typing
import uuid
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import grpc

from flowforge._claim_check import wire_codec
from flowforge._rpc import MAX_MESSAGE_BYTES, RPCRetryConfig, WorkflowServiceClient
from flowforge.api.v1 import common_pb2, event_pb2, workflow_service_pb2
from flowforge.common import (
    SearchAttributeIndexedValueType,
    SearchAttributeValue,
    WorkflowExecutionStatus,
    _search_attributes_from_proto,
    _search_attributes_to_proto,
)
from flowforge.converter import (
    DataConverter,
    default_converter,
    failure_to_error,
    json_dict_to_message,
)
from flowforge.exceptions import (
    CancelledError,
    RPCError,
    TerminatedError,
    TimeoutError,
    WorkflowAlreadyStartedError,
    WorkflowFailureError,
)
from flowforge.workflow import ParentClosePolicy, _signal_name, _workflow_type_and_result_hint

__all__ = [
    "Client",
    "DagNode",
    "EventTrigger",
    "HistoryEvent",
    "NamespaceDescription",
    "PendingActivity",
    "PendingChildWorkflow",
    "PendingWorkflowTask",
    "PublishEventResult",
    "RPCRetryConfig",
    "Schedule",
    "ScheduleActionResult",
    "ScheduleActionStartWorkflow",
    "ScheduleDescription",
    "ScheduleHandle",
    "ScheduleInfo",
    "ScheduleIntervalSpec",
    "ScheduleMisfirePolicy",
    "ScheduleOverlapPolicy",
    "SchedulePolicy",
    "ScheduleSpec",
    "ScheduleState",
    "SchedulerLeaderChange",
    "SchedulerStatus",
    "TriggeredWorkflow",
    "WorkflowExecution",
    "WorkflowExecutionCount",
    "WorkflowExecutionDescription",
    "WorkflowHandle",
    "WorkflowHistory",
]

_QUERY_DEFINITION_ATTRIBUTE = "__flowforge_query_definition__"
# How long a query waits for a worker's answer by default.
_QUERY_TIMEOUT = timedelta(seconds=30)
# Matches the server's margin: it answers "no worker answered" this long before the deadline.
_QUERY_ANSWER_MARGIN = timedelta(seconds=1)

# How long one GetWorkflowExecutionHistory long poll waits on the server before
# answering empty, and how much longer the client allows for the answer to arrive.
_RESULT_POLL_WAIT = timedelta(seconds=60)
_LONG_POLL_MARGIN = timedelta(seconds=10)

_LIST_PAGE_SIZE = 100


class _NoArgument:
    """Marks an omitted ``arg`` so that ``None`` can be passed as a real argument."""

    def __repr__(self) -> str:
        return "<no argument>"


_NO_ARGUMENT: Any = _NoArgument()


def _call_arguments(arg: Any, args: Sequence[Any]) -> list[Any]:
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


def _timestamp_to_datetime(timestamp: Any, present: bool) -> datetime | None:
    return timestamp.ToDatetime(tzinfo=UTC) if present else None


def _status_from_proto(value: int) -> WorkflowExecutionStatus:
    try:
        return WorkflowExecutionStatus(value)
    except ValueError:
        raise RPCError(
            f"the server sent an unknown workflow execution status ({value})",
            grpc.StatusCode.UNKNOWN,
        ) from None


def _failure_message(failure: common_pb2.Failure, present: bool) -> str | None:
    return failure.message if present else None


def _query_name_and_result_hint(query: Any) -> tuple[str, Any]:
    if isinstance(query, str):
        if not query:
            raise ValueError("the query name must not be empty")
        return query, None
    definition = getattr(query, _QUERY_DEFINITION_ATTRIBUTE, None)
    if definition is None:
        raise TypeError(f"{query!r} is not a query: pass a @workflow.query method or a query name")
    try:
        hint = typing.get_type_hints(definition.fn).get("return")
    except (NameError, TypeError):
        hint = None
    return definition.name, hint


# ---------------------------------------------------------------------------
# History
# ---------------------------------------------------------------------------


def _format_event_time(value: datetime) -> str:
    # A fixed layout (always microseconds, always "Z") keeps to_json() byte-stable.
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _parse_event_time(text: Any, where: str) -> datetime:
    try:
        value = datetime.fromisoformat(text)
    except (TypeError, ValueError):
        raise ValueError(f"{where}: {text!r} is not an ISO-8601 time") from None
    if value.tzinfo is None:
        raise ValueError(f"{where}: {text!r} has no UTC offset")
    return value.astimezone(UTC)


def _with_sorted_keys(value: Any) -> Any:
    """``value`` with every dict's keys sorted, so equal attributes print equally."""
    if isinstance(value, dict):
        return {key: _with_sorted_keys(value[key]) for key in sorted(value)}
    if isinstance(value, list):
        return [_with_sorted_keys(item) for item in value]
    return value


@dataclasses.dataclass(frozen=True)
class HistoryEvent:
    """One entry of an execution's append-only history.

    Attributes:
        event_id: 1, 2, 3, ... without gaps within a run.
        event_type: Temporal's name, e.g. ``"ActivityTaskScheduled"``.
        event_time: When the server wrote the event (UTC).
        attributes: The event's attributes (see docs/history-events.md); payloads
            and failures inside are in their protobuf JSON form.
    """

    event_id: int
    event_type: str
    event_time: datetime
    attributes: dict[str, Any]

    @classmethod
    def from_proto(cls, proto: common_pb2.HistoryEvent) -> HistoryEvent:
        """Builds an event from its wire form."""
        return cls(
            event_id=proto.event_id,
            event_type=proto.event_type,
            event_time=proto.event_time.ToDatetime(tzinfo=UTC),
            attributes=json.loads(proto.attributes_json) if proto.attributes_json else {},
        )

    def to_proto(self) -> common_pb2.HistoryEvent:
        """The wire form of this event."""
        proto = common_pb2.HistoryEvent(
            event_id=self.event_id,
            event_type=self.event_type,
            attributes_json=json.dumps(self.attributes, sort_keys=True, separators=(",", ":")),
        )
        proto.event_time.FromDatetime(self.event_time)
        return proto


@dataclasses.dataclass(frozen=True)
class WorkflowHistory:
    """The events of one workflow run, as fetched or as read back from a file.

    Attributes:
        workflow_id: The workflow id the events belong to.
        events: The events in order of ``event_id``.
    """

    workflow_id: str
    events: list[HistoryEvent]

    def to_json(self) -> str:
        """The history as stable, human-readable JSON.

        The same history always gives the same text: keys of the attributes are
        sorted and times are written as UTC with microseconds, e.g.
        ``{"workflow_id": "onb-1", "events": [{"event_id": 1, "event_type":
        "WorkflowExecutionStarted", "event_time": "2024-05-01T12:00:00.000000Z",
        "attributes": {...}}]}``. :meth:`from_json` reads it back to an equal history.
        """
        document = {
            "workflow_id": self.workflow_id,
            "events": [
                {
                    "event_id": event.event_id,
                    "event_type": event.event_type,
                    "event_time": _format_event_time(event.event_time),
                    "attributes": _with_sorted_keys(event.attributes),
                }
                for event in self.events
            ],
        }
        return json.dumps(document, indent=2, ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str | bytes) -> WorkflowHistory:
        """Reads a history written by :meth:`to_json` (or ``flowforge workflow show
        --output json``).

        Raises:
            ValueError: The text is not such a history; the message says where.
        """
        try:
            document = json.loads(text)
        except json.JSONDecodeError as error:
            raise ValueError(f"a workflow history must be JSON: {error}") from None
        if not isinstance(document, dict):
            raise ValueError("a workflow history must be a JSON object")
        workflow_id = document.get("workflow_id")
        raw_events = document.get("events")
        if not isinstance(workflow_id, str):
            raise ValueError("workflow_id: expected a string")
        if not isinstance(raw_events, list):
            raise ValueError("events: expected a list")
        events = [_event_from_json(raw, index) for index, raw in enumerate(raw_events)]
        return cls(workflow_id=workflow_id, events=events)


def _event_from_json(raw: Any, index: int) -> HistoryEvent:
    where = f"events[{index}]"
    if not isinstance(raw, dict):
        raise ValueError(f"{where}: expected an object")
    event_id, event_type = raw.get("event_id"), raw.get("event_type")
    attributes = raw.get("attributes", {})
    # bool is an int subclass; an event id of true is a broken file, not 1.
    if not isinstance(event_id, int) or isinstance(event_id, bool):
        raise ValueError(f"{where}.event_id: expected an integer")
    if not isinstance(event_type, str) or not event_type:
        raise ValueError(f"{where}.event_type: expected a non-empty string")
    if not isinstance(attributes, dict):
        raise ValueError(f"{where}.attributes: expected an object")
    return HistoryEvent(
        event_id=event_id,
        event_type=event_type,
        event_time=_parse_event_time(raw.get("event_time"), f"{where}.event_time"),
        attributes=attributes,
    )


# ---------------------------------------------------------------------------
# Execution descriptions
# ---------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class WorkflowExecution:
    """One workflow run as listed by :meth:`Client.list_workflows`.

    Attributes:
        workflow_id: The workflow id.
        run_id: The run.
        workflow_type: The workflow type name.
        task_queue: The task queue its workflow tasks go to.
        status: Where the run is in its life.
        start_time: When the run started (UTC).
        close_time: When it closed (UTC), ``None`` while it runs.
        history_length: The number of events in its history.
        search_attributes: Its custom search attributes as they are now (name ->
            value), set at start and by ``workflow.upsert_search_attributes``.
        memo: The memo given at start, decoded (name -> value).
        raw: The protobuf message this was built from.
    """

    workflow_id: str
    run_id: str
    workflow_type: str
    task_queue: str
    status: WorkflowExecutionStatus
    start_time: datetime | None
    close_time: datetime | None
    history_length: int
    search_attributes: dict[str, SearchAttributeValue]
    memo: dict[str, Any]
    raw: Any

    @classmethod
    def _from_proto(
        cls, proto: workflow_service_pb2.WorkflowExecutionInfo, converter: DataConverter
    ) -> WorkflowExecution:
        return cls(
            workflow_id=proto.execution.workflow_id,
            run_id=proto.execution.run_id,
            workflow_type=proto.workflow_type,
            task_queue=proto.task_queue,
            status=_status_from_proto(proto.status),
            start_time=_timestamp_to_datetime(proto.start_time, proto.HasField("start_time")),
            close_time=_timestamp_to_datetime(proto.close_time, proto.HasField("close_time")),
            history_length=proto.history_length,
            search_attributes=_search_attributes_from_proto(proto.search_attributes),
            memo=_memo_from_proto(proto.memo, converter),
            raw=proto,
        )


def _memo_from_proto(memo: common_pb2.Memo, converter: DataConverter) -> dict[str, Any]:
    return {name: converter.from_payload(memo.fields[name]) for name in sorted(memo.fields)}


@dataclasses.dataclass(frozen=True)
class WorkflowExecutionCount:
    """How many executions a query matched (:meth:`Client.count_workflows`).

    Attributes:
        count: The number of runs.
    """

    count: int


@dataclasses.dataclass(frozen=True)
class PendingActivity:
    """An activity of a run that has not finished yet.

    Attributes:
        activity_id: The activity's id within the run.
        activity_type: The activity's registered name.
        state: ``"SCHEDULED"`` (waiting for a worker) or ``"STARTED"`` (leased).
        attempt: The current attempt, from 1.
        last_heartbeat_time: When it last heartbeated (UTC), if ever.
        next_attempt_schedule_time: When the next retry is due (UTC), if waiting.
        last_failure: The message of the previous attempt's failure, if any.
        last_worker_identity: The worker that leased it last.
    """

    activity_id: str
    activity_type: str
    state: str
    attempt: int
    last_heartbeat_time: datetime | None
    next_attempt_schedule_time: datetime | None
    last_failure: str | None
    last_worker_identity: str


@dataclasses.dataclass(frozen=True)
class PendingWorkflowTask:
    """The workflow task a run is waiting on.

    Attributes:
        state: ``"SCHEDULED"`` or ``"STARTED"``.
        attempt: 1 unless earlier attempts failed.
        last_failure: Why the previous attempt failed (e.g. an unknown workflow
            type or a non-determinism error), ``None`` if it did not.
    """

    state: str
    attempt: int
    last_failure: str | None


@dataclasses.dataclass(frozen=True)
class DagNode:
    """One activity of a run's DAG.

    Attributes:
        activity_id: The activity's id within the run.
        activity_type: The activity's registered name.
        scheduled_event_id: The ``ActivityTaskScheduled`` event that created it.
        depends_on: Ids of the activities whose results the workflow had observed
            when it scheduled this one: the DAG's edges.
        state: ``SCHEDULED``, ``STARTED``, ``RETRYING``, ``COMPLETED``, ``FAILED``,
            ``TIMED_OUT`` or ``CANCELED``.
        attempt: The current or last attempt.
    """

    activity_id: str
    activity_type: str
    scheduled_event_id: int
    depends_on: list[str]
    state: str
    attempt: int


@dataclasses.dataclass(frozen=True)
class PendingChildWorkflow:
    """A child workflow a run started that has not closed yet.

    Attributes:
        workflow_id: The child's workflow id.
        run_id: The child's current run (it may have continued as new).
        workflow_type: The child's workflow type name.
        initiated_event_id: The parent's ``StartChildWorkflowExecutionInitiated`` event.
        parent_close_policy: What happens to the child if the parent closes first.
    """

    workflow_id: str
    run_id: str
    workflow_type: str
    initiated_event_id: int
    parent_close_policy: ParentClosePolicy


@dataclasses.dataclass(frozen=True)
class WorkflowExecutionDescription(WorkflowExecution):
    """A run as described by :meth:`WorkflowHandle.describe`.

    Attributes:
        pending_activities: Activities not finished yet.
        pending_workflow_task: The outstanding workflow task, ``None`` if there is none.
        dag: Every activity the run scheduled, with its dependencies.
        origin: What started the run when it was not a direct start, as recorded
            in ``WorkflowExecutionStarted`` (e.g. ``{"kind": "schedule",
            "schedule_id": ..., "nominal_time": ...}``); ``None`` for a direct start.
        first_worker_build_id: The build id of the worker that completed the
            run's first workflow task (``Worker(build_id=...)``); empty until then.
        pending_children: Child workflows the run started that have not closed yet.
        parent_workflow_id: The parent's workflow id, when the run is a child workflow.
        parent_run_id: The parent run that started this child.
        continued_run_id: The run this one continued as new from, if any.
    """

    pending_activities: list[PendingActivity]
    pending_workflow_task: PendingWorkflowTask | None
    dag: list[DagNode]
    origin: dict[str, Any] | None = None
    first_worker_build_id: str = ""
    pending_children: list[PendingChildWorkflow] = dataclasses.field(default_factory=list)
    parent_workflow_id: str | None = None
    parent_run_id: str | None = None
    continued_run_id: str | None = None

    @classmethod
    def _from_describe_response(
        cls, proto: workflow_service_pb2.DescribeWorkflowExecutionResponse, converter: DataConverter
    ) -> WorkflowExecutionDescription:
        pending_task: PendingWorkflowTask | None = None
        if proto.HasField("pending_workflow_task"):
            task = proto.pending_workflow_task
            pending_task = PendingWorkflowTask(
                state=task.state,
                attempt=task.attempt,
                last_failure=_failure_message(task.last_failure, task.HasField("last_failure")),
            )
        return cls(
            workflow_id=proto.execution.workflow_id,
            run_id=proto.execution.run_id,
            workflow_type=proto.workflow_type,
            task_queue=proto.task_queue,
            status=_status_from_proto(proto.status),
            start_time=_timestamp_to_datetime(proto.start_time, proto.HasField("start_time")),
            close_time=_timestamp_to_datetime(proto.close_time, proto.HasField("close_time")),
            history_length=proto.history_length,
            search_attributes=_search_attributes_from_proto(proto.search_attributes),
            memo=_memo_from_proto(proto.memo, converter),
            raw=proto,
            pending_activities=[
                PendingActivity(
                    activity_id=a.activity_id,
                    activity_type=a.activity_type,
                    state=a.state,
                    attempt=a.attempt,
                    last_heartbeat_time=_timestamp_to_datetime(
                        a.last_heartbeat_time, a.HasField("last_heartbeat_time")
                    ),
                    next_attempt_schedule_time=_timestamp_to_datetime(
                        a.next_attempt_schedule_time, a.HasField("next_attempt_schedule_time")
                    ),
                    last_failure=_failure_message(a.last_failure, a.HasField("last_failure")),
                    last_worker_identity=a.last_worker_identity,
                )
                for a in proto.pending_activities
            ],
            pending_workflow_task=pending_task,
            dag=[
                DagNode(
                    activity_id=node.activity_id,
                    activity_type=node.activity_type,
                    scheduled_event_id=node.scheduled_event_id,
                    depends_on=list(node.depends_on_activity_ids),
                    state=node.state,
                    attempt=node.attempt,
                )
                for node in proto.dag
            ],
            origin=json.loads(proto.origin_json) if proto.origin_json else None,
            first_worker_build_id=proto.first_worker_build_id,
            pending_children=[
                PendingChildWorkflow(
                    workflow_id=child.workflow_id,
                    run_id=child.run_id,
                    workflow_type=child.workflow_type,
                    initiated_event_id=child.initiated_event_id,
                    parent_close_policy=ParentClosePolicy(child.parent_close_policy),
                )
                for child in proto.pending_children
            ],
            parent_workflow_id=proto.parent_execution.workflow_id or None,
            parent_run_id=proto.parent_execution.run_id or None,
            continued_run_id=proto.continued_execution_run_id or None,
        )


# ---------------------------------------------------------------------------
# Event triggers
# ---------------------------------------------------------------------------


def _optional_duration(proto: Any, field: str) -> timedelta | None:
    return getattr(proto, field).ToTimedelta() if proto.HasField(field) else None


@dataclasses.dataclass(frozen=True)
class NamespaceDescription:
    """A namespace as :meth:`Client.describe_namespace` and :meth:`Client.list_namespaces` return it.

    Attributes:
        name: The namespace's name.
        description: What it is for, for people.
        retention: How long closed executions are kept.
        create_time: When it was created (UTC).
    """

    name: str
    description: str
    retention: timedelta
    create_time: datetime | None

    @classmethod
    def _from_proto(cls, proto: workflow_service_pb2.Namespace) -> NamespaceDescription:
        return cls(
            name=proto.name,
            description=proto.description,
            retention=proto.retention.ToTimedelta(),
            create_time=_timestamp_to_datetime(proto.create_time, proto.HasField("create_time")),
        )


@dataclasses.dataclass(frozen=True)
class EventTrigger:
    """A subscription that starts a workflow for each matching published event
    (see :meth:`Client.create_trigger` and docs/events.md).

    Attributes:
        trigger_id: The trigger's id in the namespace.
        event_type: The event type it subscribes to.
        filter: Conditions (canonical form) that must all hold, e.g. ``data.amount != 0``.
        input_paths: One event path per workflow argument.
        workflow_type: The workflow type it starts.
        task_queue: The task queue of the started workflows.
        workflow_id_prefix: Started workflow ids are this prefix plus a digest of
            (trigger, event source, event id).
        execution_timeout: Execution timeout of the started workflows, if any.
        run_timeout: Run timeout of the started workflows, if any.
        task_timeout: Workflow task timeout, if not the server's default.
        create_time: When the trigger was created (UTC).
    """

    trigger_id: str
    event_type: str
    filter: list[str]
    input_paths: list[str]
    workflow_type: str
    task_queue: str
    workflow_id_prefix: str
    execution_timeout: timedelta | None
    run_timeout: timedelta | None
    task_timeout: timedelta | None
    create_time: datetime | None

    @classmethod
    def _from_proto(cls, proto: event_pb2.EventTrigger) -> EventTrigger:
        return cls(
            trigger_id=proto.trigger_id,
            event_type=proto.event_type,
            filter=list(proto.filter),
            input_paths=list(proto.input_paths),
            workflow_type=proto.workflow_type,
            task_queue=proto.task_queue,
            workflow_id_prefix=proto.workflow_id_prefix,
            execution_timeout=_optional_duration(proto, "workflow_execution_timeout"),
            run_timeout=_optional_duration(proto, "workflow_run_timeout"),
            task_timeout=_optional_duration(proto, "workflow_task_timeout"),
            create_time=_timestamp_to_datetime(proto.create_time, proto.HasField("create_time")),
        )


@dataclasses.dataclass(frozen=True)
class TriggeredWorkflow:
    """A workflow a published event led to.

    Attributes:
        trigger_id: The trigger that matched.
        workflow_id: The workflow id (deterministic per trigger and event).
        run_id: The run.
        started: ``False`` if that workflow id was already running, so nothing new
            was started for this trigger.
    """

    trigger_id: str
    workflow_id: str
    run_id: str
    started: bool


@dataclasses.dataclass(frozen=True)
class PublishEventResult:
    """What :meth:`Client.publish_event` did.

    Attributes:
        duplicate: The event's (source, id) was published before within the
            server's dedupe window: nothing was started, and :attr:`workflows` are
            those the first publish started.
        workflows: One entry per matching trigger.
    """

    duplicate: bool
    workflows: list[TriggeredWorkflow]


# ---------------------------------------------------------------------------
# Client and handles
# ---------------------------------------------------------------------------


class Client:
    """A connection to a FlowForge server, bound to one namespace.

    Create it with :meth:`connect`. It is safe to share between tasks and workers;
    close it with :meth:`close` or use it as an async context manager.

    Args:
        workflow_service: The RPC layer (see :meth:`connect`).
        namespace: The namespace every call is made in.
        identity: Who is calling, recorded in history (e.g. ``WorkflowExecutionStarted``).
        data_converter: Turns arguments and results into payloads and back.
    """

    def __init__(
        self,
        workflow_service: WorkflowServiceClient,
        *,
        namespace: str,
        identity: str,
        data_converter: DataConverter = default_converter,
    ) -> None:
        self._workflow_service = workflow_service
        self._namespace = namespace
        self._identity = identity
        self._data_converter = data_converter

    @classmethod
    async def connect(
        cls,
        target: str,
        namespace: str = "default",
        api_key: str | None = None,
        identity: str | None = None,
        *,
        tls: bool | grpc.ChannelCredentials = False,
        data_converter: DataConverter = default_converter,
        rpc_retry: RPCRetryConfig = RPCRetryConfig(),
        connect_timeout: timedelta | None = timedelta(seconds=10),
    ) -> Client:
        """Connects to a server.

        Args:
            target: ``host:port`` of the server, e.g. ``"localhost:7233"``.
            namespace: The namespace to work in.
            api_key: Sent as ``authorization: Bearer <api_key>`` on every call.
            identity: Recorded in history as the caller; defaults to ``pid@hostname``.
            tls: ``True`` for TLS with the system's roots, or explicit channel
                credentials; ``False`` for plaintext.
            data_converter: Turns values into payloads and back; its ``payload_codec``,
                if set, is applied to every payload this client and the workers
                using it exchange with the server, so the server never sees them plain,
                and its ``payload_storage`` keeps large payloads out of the server.
            rpc_retry: How transient RPC failures are retried.
            connect_timeout: How long to wait for the server to accept the
                connection; ``None`` connects lazily on the first call.

        Returns:
            The connected client.

        Raises:
            RPCError: ``UNAVAILABLE`` when the server could not be reached within
                ``connect_timeout``.
        """
        options = [
            ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
            ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
        ]
        if tls is False:
            channel = grpc.aio.insecure_channel(target, options=options)
        else:
            credentials = grpc.ssl_channel_credentials() if tls is True else tls
            channel = grpc.aio.secure_channel(target, credentials, options=options)
        if connect_timeout is not None:
            try:
                await asyncio.wait_for(channel.channel_ready(), connect_timeout.total_seconds())
            except builtins.TimeoutError:
                await channel.close()
                raise RPCError(
                    f"could not connect to {target} within {connect_timeout.total_seconds():g}s",
                    grpc.StatusCode.UNAVAILABLE,
                ) from None
        metadata = [("authorization", f"Bearer {api_key}")] if api_key else []
        service = WorkflowServiceClient(
            channel,
            metadata=metadata,
            retry_config=rpc_retry,
            payload_codec=wire_codec(data_converter),
            encode_failure_attributes=data_converter.encode_failure_attributes,
        )
        return cls(
            service,
            namespace=namespace,
            identity=identity or f"{os.getpid()}@{socket.gethostname()}",
            data_converter=data_converter,
        )

    @property
    def namespace(self) -> str:
        """The namespace every call is made in."""
        return self._namespace

    @property
    def identity(self) -> str:
        """Who this client is, as recorded in history."""
        return self._identity

    @property
    def data_converter(self) -> DataConverter:
        """Turns values into payloads and back."""
        return self._data_converter

    @property
    def workflow_service(self) -> WorkflowServiceClient:
        """The raw RPC layer, for calls this class has no method for."""
        return self._workflow_service

    async def start_workflow(
        self,
        workflow: Callable[..., Any] | type | str,
        arg: Any = _NO_ARGUMENT,
        *,
        args: Sequence[Any] = (),
        id: str,
        task_queue: str,
        request_id: str | None = None,
        execution_timeout: timedelta | None = None,
        run_timeout: timedelta | None = None,
        task_timeout: timedelta | None = None,
        start_signal: Callable[..., Any] | str | None = None,
        start_signal_args: Sequence[Any] = (),
        search_attributes: Mapping[str, SearchAttributeValue] | None = None,
        memo: Mapping[str, Any] | None = None,
    ) -> WorkflowHandle:
        """Starts a workflow execution (or, with ``start_signal``, signals it).

        Args:
            workflow: The ``@workflow.run`` method (its return hint then decodes the
                result), the ``@workflow.defn`` class, or the workflow type name.
            arg: The single argument of the run method, if it takes one.
            args: All arguments, for a run method taking several; not with ``arg``.
            id: The workflow id, chosen by you (e.g. a business key).
            task_queue: The task queue whose workers run the workflow.
            request_id: Makes the start idempotent: a repeated start with the same
                request id returns the run the first one created. Defaults to a fresh
                UUID, which still makes the client's own retries idempotent.
            execution_timeout: Limit on the whole execution, retries and
                continue-as-new included.
            run_timeout: Limit on one run.
            task_timeout: Limit on one workflow task.
            start_signal: Signal-with-start: the ``@workflow.signal`` method or signal
                name to deliver. In one atomic call the server signals the running
                execution of ``id`` if there is one (nothing is started, and the
                handle points at that run), else starts a new run whose first event
                after the start is this signal. Never ``WorkflowAlreadyStartedError``.
            start_signal_args: The signal's arguments.
            search_attributes: Indexed values to find the run by with
                :meth:`list_workflows` (name -> ``str``, ``int``, ``float``, ``bool``
                or aware ``datetime``); each name must be registered in the namespace
                with that type (:meth:`add_search_attributes`).
            memo: Unindexed values shown with the run (describe, list), encoded
                with the data converter.

        Returns:
            A handle to the started (or, with ``start_signal``, the signalled) run.

        Raises:
            WorkflowAlreadyStartedError: The workflow id already has a running execution.
            RPCError: The server refused the start (``INVALID_ARGUMENT`` for an
                unregistered search attribute or a value of the wrong type).
            TypeError: A search attribute value is of an unsupported type.
            ValueError: A search attribute value is out of range or a naive datetime.
        """
        workflow_type, result_hint = _workflow_type_and_result_hint(workflow)
        request = workflow_service_pb2.StartWorkflowExecutionRequest(
            namespace=self._namespace,
            workflow_id=id,
            workflow_type=workflow_type,
            task_queue=task_queue,
            input=self._data_converter.to_payloads(_call_arguments(arg, args)),
            request_id=request_id or str(uuid.uuid4()),
            identity=self._identity,
        )
        _set_workflow_timeouts(request, execution_timeout, run_timeout, task_timeout)
        if start_signal is not None:
            request.start_signal = _signal_name(start_signal)
            request.start_signal_input.CopyFrom(self._data_converter.to_payloads(start_signal_args))
        elif start_signal_args:
            raise ValueError("start_signal_args needs start_signal")
        if search_attributes:
            request.search_attributes.CopyFrom(_search_attributes_to_proto(search_attributes))
        for name, value in (memo or {}).items():
            request.memo.fields[name].CopyFrom(self._data_converter.to_payload(value))
        try:
            response = await self._workflow_service.call("StartWorkflowExecution", request)
        except RPCError as error:
            if error.status == grpc.StatusCode.ALREADY_EXISTS:
                raise WorkflowAlreadyStartedError(error.message) from None
            raise
        return WorkflowHandle(self, id, run_id=response.run_id, result_type=result_hint)

    def get_workflow_handle(
        self, workflow_id: str, *, run_id: str | None = None, result_type: Any = None
    ) -> WorkflowHandle:
        """A handle to an existing execution; no call is made.

        Args:
            workflow_id: The workflow id.
            run_id: A specific run; ``None`` means the latest run of ``workflow_id``.
            result_type: The type to decode the result into (e.g. a dataclass);
                ``None`` gives plain JSON values.
        """
        return WorkflowHandle(self, workflow_id, run_id=run_id, result_type=result_type)

    async def list_workflows(
        self,
        query: str | None = None,
        *,
        status: WorkflowExecutionStatus | None = None,
        workflow_type: str | None = None,
        workflow_id: str | None = None,
        page_size: int = _LIST_PAGE_SIZE,
    ) -> AsyncIterator[WorkflowExecution]:
        """Iterates over the runs of the namespace matching a query, newest first.

        Use it with ``async for``; pages of ``page_size`` runs are fetched as the
        iteration needs them. Paging is by (start time, run id), so a run started
        while you iterate never makes another appear twice or go missing.

        ::

            async for run in client.list_workflows(
                    "WorkflowType = 'Order' AND ExecutionStatus = 'Running' AND Amount >= 100"):
                print(run.workflow_id, run.search_attributes, run.memo)

        Args:
            query: A visibility query over ``WorkflowId``, ``RunId``, ``WorkflowType``,
                ``TaskQueue``, ``ExecutionStatus``, ``StartTime``, ``CloseTime`` and
                the namespace's custom search attributes, with ``=``, ``!=``, ``<``,
                ``<=``, ``>``, ``>=``, ``BETWEEN``, ``IN``, ``STARTS_WITH``, ``IS [NOT]
                NULL``, ``AND``, ``OR``, ``NOT`` and parentheses (docs/visibility.md).
                ``None`` or empty lists every run.
            status: Only runs with this status (ANDed with the query).
            workflow_type: Only runs of this workflow type (ANDed with the query).
            workflow_id: Only runs of this workflow id (ANDed with the query).
            page_size: Runs fetched per call, 1 to 1000.

        Yields:
            One :class:`WorkflowExecution` per run, with its search attributes and memo.

        Raises:
            RPCError: ``INVALID_ARGUMENT`` for a malformed query (the message names
                the position and what was expected there), or another refusal.
        """
        request = workflow_service_pb2.ListWorkflowExecutionsRequest(
            namespace=self._namespace,
            page_size=page_size,
            status=status.value if status is not None else 0,
            workflow_type=workflow_type or "",
            workflow_id=workflow_id or "",
            query=query or "",
        )
        while True:
            response = await self._workflow_service.call("ListWorkflowExecutions", request)
            for info in response.executions:
                yield WorkflowExecution._from_proto(info, self._data_converter)
            if not response.next_page_token:
                return
            request.next_page_token = response.next_page_token

    async def count_workflows(self, query: str | None = None) -> WorkflowExecutionCount:
        """Counts the runs of the namespace matching a query (see :meth:`list_workflows`).

        Raises:
            RPCError: ``INVALID_ARGUMENT`` for a malformed query, or another refusal.
        """
        response = await self._workflow_service.call(
            "CountWorkflowExecutions",
            workflow_service_pb2.CountWorkflowExecutionsRequest(namespace=self._namespace, query=query or ""),
        )
        return WorkflowExecutionCount(count=response.count)

    async def add_search_attributes(self, attributes: Mapping[str, SearchAttributeIndexedValueType]) -> None:
        """Registers custom search attributes of the namespace with their types.

        An attribute must be registered before executions use it. Registering one
        again with the same type does nothing, so a deployment can run this at
        every start; a type never changes.

        Args:
            attributes: name -> type, e.g. ``{"CustomerId": SearchAttributeIndexedValueType.KEYWORD}``.

        Raises:
            RPCError: ``ALREADY_EXISTS`` when a name is registered with another
                type; ``INVALID_ARGUMENT`` for a bad or reserved name.
        """
        await self._workflow_service.call(
            "AddSearchAttributes",
            workflow_service_pb2.AddSearchAttributesRequest(
                namespace=self._namespace,
                search_attributes={name: int(value_type) for name, value_type in attributes.items()},
            ),
        )

    async def list_search_attributes(self) -> dict[str, SearchAttributeIndexedValueType]:
        """The custom search attributes registered in the namespace: name -> type."""
        response = await self._workflow_service.call(
            "ListSearchAttributes", workflow_service_pb2.ListSearchAttributesRequest(namespace=self._namespace)
        )
        return {
            name: SearchAttributeIndexedValueType(value_type)
            for name, value_type in sorted(response.custom_attributes.items())
        }

    async def register_namespace(self, name: str, *, description: str = "", retention: timedelta | None = None) -> None:
        """Creates a namespace.

        Args:
            name: The namespace's name.
            description: What it is for, for people.
            retention: How long closed executions are kept; the server's default
                when ``None``.

        Raises:
            RPCError: ``ALREADY_EXISTS`` when the namespace exists, or another refusal.
        """
        request = workflow_service_pb2.RegisterNamespaceRequest(name=name, description=description)
        if retention is not None:
            request.retention.FromTimedelta(retention)
        await self._workflow_service.call("RegisterNamespace", request)

    async def describe_namespace(self, name: str) -> NamespaceDescription:
        """One namespace.

        Raises:
            RPCError: ``NOT_FOUND`` when there is no such namespace.
        """
        request = workflow_service_pb2.DescribeNamespaceRequest(name=name)
        response = await self._workflow_service.call("DescribeNamespace", request)
        return NamespaceDescription._from_proto(response.namespace)

    async def list_namespaces(self) -> list[NamespaceDescription]:
        """Every namespace of the server, by name."""
        response = await self._workflow_service.call("ListNamespaces", workflow_service_pb2.ListNamespacesRequest())
        return [NamespaceDescription._from_proto(namespace) for namespace in response.namespaces]

    # event triggers

    async def create_trigger(
        self,
        trigger_id: str,
        *,
        event_type: str,
        workflow: Callable[..., Any] | type | str,
        task_queue: str,
        filter: Sequence[str] = (),
        input_paths: Sequence[str] = (),
        id_prefix: str | None = None,
        execution_timeout: timedelta | None = None,
        run_timeout: timedelta | None = None,
        task_timeout: timedelta | None = None,
    ) -> EventTrigger:
        """Subscribes a workflow to published events.

        Every event of ``event_type`` for which all ``filter`` conditions hold starts
        one ``workflow`` execution whose arguments are the values at
        ``input_paths``; a re-published event (same source and id, within the
        server's dedupe window) starts nothing. See docs/events.md.

        Args:
            trigger_id: The trigger's id, unique in the namespace.
            event_type: The event type to subscribe to, e.g. ``"order.paid"``.
            workflow: The ``@workflow.run`` method, the ``@workflow.defn`` class, or
                the workflow type name.
            task_queue: The task queue of the started workflows.
            filter: Conditions ``PATH OP JSON`` (OP one of ``==``, ``!=``, ``in``,
                ``not in``), all of which must hold, e.g. ``'data.currency == "EUR"'``.
            input_paths: One event path per workflow argument, e.g.
                ``["data.order_id", "subject"]``; a missing path gives ``None``.
            id_prefix: Prefix of the started workflow ids (default ``trigger_id + "-"``).
            execution_timeout: Execution timeout of the started workflows.
            run_timeout: Run timeout of the started workflows.
            task_timeout: Workflow task timeout of the started workflows.

        Returns:
            The trigger as stored (filter in canonical form).

        Raises:
            RPCError: ``ALREADY_EXISTS`` when the id is taken, ``INVALID_ARGUMENT``
                for a malformed filter or path (the message says which).
        """
        workflow_type, _ = _workflow_type_and_result_hint(workflow)
        trigger = event_pb2.EventTrigger(
            trigger_id=trigger_id,
            event_type=event_type,
            filter=list(filter),
            input_paths=list(input_paths),
            workflow_type=workflow_type,
            task_queue=task_queue,
            workflow_id_prefix=id_prefix or "",
        )
        _set_workflow_timeouts(trigger, execution_timeout, run_timeout, task_timeout)
        response = await self._workflow_service.call(
            "CreateEventTrigger", event_pb2.CreateEventTriggerRequest(namespace=self._namespace, trigger=trigger)
        )
        return EventTrigger._from_proto(response.trigger)

    async def describe_trigger(self, trigger_id: str) -> EventTrigger:
        """The trigger with this id.

        Raises:
            RPCError: ``NOT_FOUND`` when there is none.
        """
        response = await self._workflow_service.call(
            "DescribeEventTrigger",
            event_pb2.DescribeEventTriggerRequest(namespace=self._namespace, trigger_id=trigger_id),
        )
        return EventTrigger._from_proto(response.trigger)

    async def list_triggers(self, *, page_size: int = _LIST_PAGE_SIZE) -> AsyncIterator[EventTrigger]:
        """Iterates over the namespace's triggers by id, fetching pages as needed.

        Yields:
            One :class:`EventTrigger` per trigger.
        """
        request = event_pb2.ListEventTriggersRequest(namespace=self._namespace, page_size=page_size)
        while True:
            response = await self._workflow_service.call("ListEventTriggers", request)
            for trigger in response.triggers:
                yield EventTrigger._from_proto(trigger)
            if not response.next_page_token:
                return
            request.next_page_token = response.next_page_token

    async def delete_trigger(self, trigger_id: str) -> None:
        """Deletes a trigger; workflows it started go on.

        Raises:
            RPCError: ``NOT_FOUND`` when there is no such trigger.
        """
        await self._workflow_service.call(
            "DeleteEventTrigger", event_pb2.DeleteEventTriggerRequest(namespace=self._namespace, trigger_id=trigger_id)
        )

    async def publish_event(
        self,
        *,
        id: str,
        source: str,
        type: str,
        data: Any = None,
        subject: str | None = None,
        time: datetime | None = None,
    ) -> PublishEventResult:
        """Publishes a CloudEvents-shaped event: one workflow starts per matching trigger.

        Publishing is idempotent on ``(source, id)`` within the server's dedupe
        window (24 h by default), so retrying a publish whose answer was lost is
        safe: the retry reports ``duplicate=True`` and the workflows of the first.

        Args:
            id: The event's id, unique within ``source``.
            source: Who produced the event, e.g. ``"https://shop.example.com"``.
            type: What happened, e.g. ``"order.paid"``.
            data: The payload: any JSON-serializable value.
            subject: What the event is about, within ``source``.
            time: When it happened (a naive datetime is taken as UTC).

        Returns:
            Whether it was a duplicate, and the workflows it led to.

        Raises:
            RPCError: ``INVALID_ARGUMENT`` for a missing id/source/type or oversize data.
        """
        event = event_pb2.CloudEvent(id=id, source=source, type=type, subject=subject or "")
        if data is not None:
            event.data = json.dumps(data, separators=(",", ":")).encode()
        if time is not None:
            event.time.FromDatetime(time if time.tzinfo else time.replace(tzinfo=UTC))
        response = await self._workflow_service.call(
            "PublishEvent",
            event_pb2.PublishEventRequest(namespace=self._namespace, event=event, identity=self._identity),
        )
        return PublishEventResult(
            duplicate=response.duplicate,
            workflows=[
                TriggeredWorkflow(
                    trigger_id=w.trigger_id, workflow_id=w.workflow_id, run_id=w.run_id, started=w.started
                )
                for w in response.workflows
            ],
        )

    # schedules (docs/schedules.md)

    async def create_schedule(self, id: str, schedule: Schedule) -> ScheduleHandle:
        """Creates a schedule; the server's leader-elected scheduler fires it.

        Args:
            id: The schedule id, unique in the namespace.
            schedule: What to start, when, and under which policies.

        Returns:
            A handle to the new schedule.

        Raises:
            RPCError: ``INVALID_ARGUMENT`` for an invalid cron expression, unknown time
                zone or bad interval; ``ALREADY_EXISTS`` if the id is taken (nothing is
                changed either way).
        """
        await self._workflow_service.call(
            "CreateSchedule",
            workflow_service_pb2.CreateScheduleRequest(
                namespace=self._namespace,
                schedule_id=id,
                identity=self._identity,
                schedule=_schedule._schedule_to_proto(schedule, self),
            ),
        )
        return ScheduleHandle(self, id)

    def get_schedule_handle(self, id: str) -> ScheduleHandle:
        """A handle to an existing schedule; no call is made."""
        return ScheduleHandle(self, id)

    async def list_schedules(self, *, page_size: int = _LIST_PAGE_SIZE) -> AsyncIterator[ScheduleDescription]:
        """Iterates over the namespace's schedules in id order (use ``async for``).

        Raises:
            RPCError: The server refused the listing.
        """
        request = workflow_service_pb2.ListSchedulesRequest(namespace=self._namespace, page_size=page_size)
        while True:
            response = await self._workflow_service.call("ListSchedules", request)
            for entry in response.schedules:
                yield _schedule._description(entry.schedule_id, entry.schedule, entry.info, self)
            if not response.next_page_token:
                return
            request.next_page_token = response.next_page_token

    async def get_scheduler_status(self) -> SchedulerStatus:
        """Which server replica leads the scheduler, with which fencing token, and
        the answering replica's own view (leader changes, refused writes)."""
        response = await self._workflow_service.call(
            "GetSchedulerStatus", workflow_service_pb2.GetSchedulerStatusRequest()
        )
        return _schedule._status(response)

    async def close(self) -> None:
        """Closes the connection; calls in flight are cancelled."""
        await self._workflow_service.close()

    async def __aenter__(self) -> typing.Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()


class WorkflowHandle:
    """Refers to one workflow execution: wait for it, inspect it, steer it.

    Get one from :meth:`Client.start_workflow` or :meth:`Client.get_workflow_handle`.

    Attributes:
        id: The workflow id.
        run_id: The run the handle refers to; ``None`` means the latest run.
    """

    def __init__(self, client: Client, id: str, *, run_id: str | None = None, result_type: Any = None) -> None:
        self._client = client
        self.id = id
        self.run_id = run_id
        self._result_type = result_type

    def __repr__(self) -> str:
        return f"WorkflowHandle(id={self.id!r}, run_id={self.run_id!r})"

    def _execution(self) -> common_pb2.WorkflowExecution:
        return common_pb2.WorkflowExecution(workflow_id=self.id, run_id=self.run_id or "")

    async def result(self) -> Any:
        """Waits for the execution to close and returns its result.

        If the run continued as new, waits for the run it continued as, like Temporal.

        Returns:
            The workflow's return value, decoded with the run method's return hint
            when the handle came from ``start_workflow`` with the run method.

        Raises:
            WorkflowFailureError: The execution did not complete; ``cause`` is the
                workflow's failure (its error rebuilt from history),
                :class:`CancelledError`, :class:`TerminatedError` or
                :class:`TimeoutError`.
            RPCError: The server could not be asked.
        """
        run_id = self.run_id or ""
        while True:
            close_event, run_id = await self._wait_for_close_event(run_id)
            attributes = close_event.attributes
            converter = self._client.data_converter
            event_type = close_event.event_type
            if event_type == "WorkflowExecutionCompleted":
                result = json_dict_to_message(attributes.get("result"), common_pb2.Payloads)
                values = converter.from_payloads(result, [self._result_type])
                return values[0] if values else None
            if event_type == "WorkflowExecutionContinuedAsNew":
                run_id = attributes["new_execution_run_id"]
                continue
            raise self._failure_error(close_event, converter)

    def _failure_error(self, close_event: HistoryEvent, converter: DataConverter) -> WorkflowFailureError:
        attributes = close_event.attributes
        event_type = close_event.event_type
        if event_type == "WorkflowExecutionFailed":
            failure = json_dict_to_message(attributes.get("failure"), common_pb2.Failure)
            return WorkflowFailureError("workflow execution failed", failure_to_error(failure, converter))
        if event_type == "WorkflowExecutionCanceled":
            details = converter.from_payloads(json_dict_to_message(attributes.get("details"), common_pb2.Payloads))
            cause = CancelledError("workflow execution canceled", *details)
            return WorkflowFailureError("workflow execution canceled", cause)
        if event_type == "WorkflowExecutionTerminated":
            reason = attributes.get("reason") or "terminated"
            return WorkflowFailureError("workflow execution terminated", TerminatedError(reason))
        if event_type == "WorkflowExecutionTimedOut":
            timeout_type = attributes.get("timeout_type", "EXECUTION")
            return WorkflowFailureError(
                "workflow execution timed out",
                TimeoutError(f"workflow execution timed out ({timeout_type})", type=None),
            )
        raise RPCError(
            f"the server returned {event_type!r} as the close event of workflow {self.id!r}",
            grpc.StatusCode.INTERNAL,
        )

    async def _wait_for_close_event(self, run_id: str) -> tuple[HistoryEvent, str]:
        """Long-polls until the run closes; returns its close event and run id."""
        request = workflow_service_pb2.GetWorkflowExecutionHistoryRequest(
            namespace=self._client.namespace,
            execution=common_pb2.WorkflowExecution(workflow_id=self.id, run_id=run_id),
            wait_new_event=True,
            close_event_only=True,
        )
        request.wait_timeout.FromTimedelta(_RESULT_POLL_WAIT)
        while True:
            response = await self._client.workflow_service.call(
                "GetWorkflowExecutionHistory",
                request,
                timeout=_RESULT_POLL_WAIT + _LONG_POLL_MARGIN,
            )
            # Pin the run the server resolved, so a handle to "the latest run" keeps
            # waiting on the run it started waiting on.
            if response.run_id:
                request.execution.run_id = response.run_id
            if response.events:
                return HistoryEvent.from_proto(response.events[-1]), request.execution.run_id

    async def describe(self) -> WorkflowExecutionDescription:
        """Fetches the execution's status, pending work and DAG.

        Raises:
            RPCError: ``NOT_FOUND`` for an unknown execution, or another refusal.
        """
        response = await self._client.workflow_service.call(
            "DescribeWorkflowExecution",
            workflow_service_pb2.DescribeWorkflowExecutionRequest(
                namespace=self._client.namespace, execution=self._execution()
            ),
        )
        return WorkflowExecutionDescription._from_describe_response(response, self._client.data_converter)

    async def fetch_history(self) -> WorkflowHistory:
        """Fetches the run's whole history, page by page.

        Raises:
            RPCError: ``NOT_FOUND`` for an unknown execution, or another refusal.
        """
        request = workflow_service_pb2.GetWorkflowExecutionHistoryRequest(
            namespace=self._client.namespace, execution=self._execution()
        )
        events: list[HistoryEvent] = []
        while True:
            response = await self._client.workflow_service.call("GetWorkflowExecutionHistory", request)
            events.extend(HistoryEvent.from_proto(event) for event in response.events)
            # Later pages must come from the same run even when the handle names none.
            if response.run_id:
                request.execution.run_id = response.run_id
            if not response.has_more or not response.events:
                return WorkflowHistory(workflow_id=self.id, events=events)
            request.after_event_id = response.events[-1].event_id

    async def signal(
        self, signal: Callable[..., Any] | str, arg: Any = _NO_ARGUMENT, *, args: Sequence[Any] = ()
    ) -> None:
        """Sends a signal to the execution.

        Args:
            signal: The ``@workflow.signal`` method or the signal's name.
            arg: The signal's single argument, if it takes one.
            args: All arguments, for a signal taking several; not with ``arg``.

        Raises:
            RPCError: ``NOT_FOUND`` for an unknown execution, ``FAILED_PRECONDITION``
                for a closed one; the signal is then not recorded.
        """
        request = workflow_service_pb2.SignalWorkflowExecutionRequest(
            namespace=self._client.namespace,
            execution=self._execution(),
            signal_name=_signal_name(signal),
            input=self._client.data_converter.to_payloads(_call_arguments(arg, args)),
            identity=self._client.identity,
            # One id for all retries of this call: the server records the signal once.
            request_id=str(uuid.uuid4()),
        )
        await self._client.workflow_service.call("SignalWorkflowExecution", request)

    async def query(
        self,
        query: Callable[..., Any] | str,
        arg: Any = _NO_ARGUMENT,
        *,
        args: Sequence[Any] = (),
        result_type: Any = None,
        timeout: timedelta = _QUERY_TIMEOUT,
    ) -> Any:
        """Asks the execution a question, answered by its ``@workflow.query`` handler.

        A worker of the workflow's task queue answers from the run's current state
        (its cached instance, or a replay of the history); closed runs can be queried
        too, as long as such a worker runs. A query adds nothing to history.

        Args:
            query: The ``@workflow.query`` method or the query's name.
            arg: The query's single argument, if it takes one.
            args: All arguments, for a query taking several; not with ``arg``.
            result_type: The type to decode the answer into; defaults to the
                method's return hint (plain JSON for a name).
            timeout: How long to wait for a worker to answer.

        Returns:
            The handler's return value.

        Raises:
            RPCError: ``INVALID_ARGUMENT`` when the workflow has no such query (the
                message lists the ones it has) or the handler raised;
                ``DEADLINE_EXCEEDED`` when no worker answered within ``timeout``;
                ``NOT_FOUND`` for an unknown execution.
        """
        name, hint = _query_name_and_result_hint(query)
        request = workflow_service_pb2.QueryWorkflowRequest(
            namespace=self._client.namespace,
            execution=self._execution(),
            query=workflow_service_pb2.WorkflowQuery(
                query_type=name,
                query_args=self._client.data_converter.to_payloads(_call_arguments(arg, args)),
            ),
        )
        # The server waits for a worker until just before the call's deadline, then
        # answers DEADLINE_EXCEEDED itself; not retried, as waiting again would
        # double the caller's timeout.
        response = await self._client.workflow_service.call(
            "QueryWorkflow", request, retry=False, timeout=timeout + _QUERY_ANSWER_MARGIN
        )
        values = self._client.data_converter.from_payloads(
            response.query_result, [result_type if result_type is not None else hint]
        )
        return values[0] if values else None

    async def cancel(self, reason: str = "") -> None:
        """Asks the execution to cancel; the workflow code decides how.

        Raises:
            RPCError: ``NOT_FOUND`` when there is no such running execution.
        """
        await self._client.workflow_service.call(
            "RequestCancelWorkflowExecution",
            workflow_service_pb2.RequestCancelWorkflowExecutionRequest(
                namespace=self._client.namespace,
                execution=self._execution(),
                reason=reason,
                identity=self._client.identity,
            ),
        )

    async def terminate(self, reason: str = "") -> None:
        """Ends the execution at once, without running any more workflow code.

        Raises:
            RPCError: ``NOT_FOUND`` when there is no such running execution.
        """
        await self._client.workflow_service.call(
            "TerminateWorkflowExecution",
            workflow_service_pb2.TerminateWorkflowExecutionRequest(
                namespace=self._client.namespace,
                execution=self._execution(),
                reason=reason,
                identity=self._client.identity,
            ),
        )


# Schedules live in their own module, which builds on the helpers above.
from flowforge import _schedule  # noqa: E402
from flowforge._schedule import (  # noqa: E402
    Schedule,
    ScheduleActionResult,
    ScheduleActionStartWorkflow,
    ScheduleDescription,
    ScheduleHandle,
    ScheduleInfo,
    ScheduleIntervalSpec,
    ScheduleMisfirePolicy,
    ScheduleOverlapPolicy,
    SchedulePolicy,
    SchedulerLeaderChange,
    SchedulerStatus,
    ScheduleSpec,
    ScheduleState,
)
