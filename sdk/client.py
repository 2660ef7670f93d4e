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
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Concatenate, Required, TypedDict, Unpack, overload

import grpc

from flowforge import _schedule
from flowforge._claim_check import wire_codec
from flowforge._event_triggers import EventTrigger, PublishEventResult, TriggeredWorkflow
from flowforge._rpc import MAX_MESSAGE_BYTES, RPCRetryConfig, WorkflowServiceClient
from flowforge._schedule import (
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
from flowforge._tls import TLSConfig, open_channel
from flowforge._workflow_definition import _signal_name, _workflow_type_and_result_hint
from flowforge._workflow_executions import (
    DagNode,
    PendingActivity,
    PendingChildWorkflow,
    PendingWorkflowTask,
    WorkflowExecution,
    WorkflowExecutionCount,
    WorkflowExecutionDescription,
    _timestamp_to_datetime,
)
from flowforge._workflow_handle import WorkflowHandle
from flowforge._workflow_history import HistoryEvent, WorkflowHistory
from flowforge.api.v1 import common_pb2, event_pb2, workflow_service_pb2
from flowforge.common import (
    _NO_ARGUMENT,
    SearchAttributeIndexedValueType,
    SearchAttributeValue,
    WorkflowExecutionStatus,
    _call_arguments,
    _search_attributes_to_proto,
    _set_workflow_timeouts,
)
from flowforge.converter import DataConverter, default_converter
from flowforge.exceptions import RPCError, WorkflowAlreadyStartedError
from flowforge.types import (
    MethodAsyncNoParam,
    MethodAsyncSingleParam,
    MultiParamSpec,
    ParamType,
    ReturnType,
    SelfType,
)

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
    "TLSConfig",
    "TriggeredWorkflow",
    "WorkflowExecution",
    "WorkflowExecutionCount",
    "WorkflowExecutionDescription",
    "WorkflowHandle",
    "WorkflowHistory",
]

_LIST_PAGE_SIZE = 100


class _StartWorkflowOptions(TypedDict, total=False):
    """The keyword options of :meth:`Client.start_workflow` and :meth:`Client.execute_workflow`, for their overloads."""

    id: Required[str]
    task_queue: Required[str]
    request_id: str | None
    execution_timeout: timedelta | None
    run_timeout: timedelta | None
    task_timeout: timedelta | None
    start_signal: Callable[..., Any] | str | None
    start_signal_args: Sequence[Any]
    search_attributes: Mapping[str, SearchAttributeValue] | None
    memo: Mapping[str, Any] | None


@dataclasses.dataclass(frozen=True)
class NamespaceDescription:
    """A namespace as :meth:`Client.describe_namespace` and :meth:`Client.list_namespaces` return it.

    Attributes:
        name: The namespace's name.
        description: What it is for, for people.
        retention: How long closed executions are kept.
        create_time: When it was created (UTC).
        max_running_executions: Starts are refused while this many runs are running (0: no limit).
        start_rate: Starts admitted per second, in bursts of up to ``max(1, start_rate)`` (0: no limit).
        max_concurrent_activities: Activity tasks leased at once at most; more wait in
            their queue (0: no limit).
        last_purge_time: When the retention sweeper last purged closed runs, if ever (UTC).
        purged_executions: How many closed runs retention has purged in all.
    """

    name: str
    description: str
    retention: timedelta
    create_time: datetime | None
    max_running_executions: int = 0
    start_rate: float = 0.0
    max_concurrent_activities: int = 0
    last_purge_time: datetime | None = None
    purged_executions: int = 0

    @classmethod
    def _from_proto(cls, proto: workflow_service_pb2.Namespace) -> NamespaceDescription:
        return cls(
            name=proto.name,
            description=proto.description,
            retention=proto.retention.ToTimedelta(),
            create_time=_timestamp_to_datetime(proto.create_time, proto.HasField("create_time")),
            max_running_executions=proto.max_running_executions,
            start_rate=proto.start_rate,
            max_concurrent_activities=proto.max_concurrent_activities,
            last_purge_time=_timestamp_to_datetime(proto.last_purge_time, proto.HasField("last_purge_time")),
            purged_executions=proto.purged_executions,
        )


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
        tls: bool | TLSConfig | grpc.ChannelCredentials = False,
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
            tls: ``True`` for TLS with the system's roots, a :class:`TLSConfig`
                (server CA, server name, client certificate for mTLS), or explicit
                channel credentials; ``False`` for plaintext.
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
        channel = open_channel(target, tls, options)
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

    @overload
    async def start_workflow(
        self, workflow: MethodAsyncNoParam[SelfType, ReturnType], **options: Unpack[_StartWorkflowOptions]
    ) -> WorkflowHandle[SelfType, ReturnType]: ...

    @overload
    async def start_workflow(
        self,
        workflow: MethodAsyncSingleParam[SelfType, ParamType, ReturnType],
        arg: ParamType,
        **options: Unpack[_StartWorkflowOptions],
    ) -> WorkflowHandle[SelfType, ReturnType]: ...

    @overload
    async def start_workflow(
        self,
        workflow: Callable[Concatenate[SelfType, MultiParamSpec], Awaitable[ReturnType]],
        *,
        args: Sequence[Any],
        **options: Unpack[_StartWorkflowOptions],
    ) -> WorkflowHandle[SelfType, ReturnType]: ...

    @overload
    async def start_workflow(
        self,
        workflow: type | str,
        arg: Any = _NO_ARGUMENT,
        *,
        args: Sequence[Any] = (),
        **options: Unpack[_StartWorkflowOptions],
    ) -> WorkflowHandle[Any, Any]: ...

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
    ) -> WorkflowHandle[Any, Any]:
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

    @overload
    async def execute_workflow(
        self, workflow: MethodAsyncNoParam[SelfType, ReturnType], **options: Unpack[_StartWorkflowOptions]
    ) -> ReturnType: ...

    @overload
    async def execute_workflow(
        self,
        workflow: MethodAsyncSingleParam[SelfType, ParamType, ReturnType],
        arg: ParamType,
        **options: Unpack[_StartWorkflowOptions],
    ) -> ReturnType: ...

    @overload
    async def execute_workflow(
        self,
        workflow: Callable[Concatenate[SelfType, MultiParamSpec], Awaitable[ReturnType]],
        *,
        args: Sequence[Any],
        **options: Unpack[_StartWorkflowOptions],
    ) -> ReturnType: ...

    @overload
    async def execute_workflow(
        self,
        workflow: type | str,
        arg: Any = _NO_ARGUMENT,
        *,
        args: Sequence[Any] = (),
        **options: Unpack[_StartWorkflowOptions],
    ) -> Any: ...

    async def execute_workflow(
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
    ) -> Any:
        """Starts a workflow execution and waits for its result (Temporal's
        ``execute_workflow``): :meth:`start_workflow`, then ``handle.result()``.

        Takes the arguments of :meth:`start_workflow`.

        Returns:
            The workflow's return value, decoded with the run method's return hint.

        Raises:
            WorkflowAlreadyStartedError: The workflow id already has a running execution.
            WorkflowFailureError: The execution did not complete (see ``WorkflowHandle.result``).
            RPCError: The server refused the start or could not be asked.
        """
        # The overloads typed the caller's call; this one passes whatever shape it was.
        any_workflow: Any = workflow
        handle = await self.start_workflow(
            any_workflow,
            arg,
            args=args,
            id=id,
            task_queue=task_queue,
            request_id=request_id,
            execution_timeout=execution_timeout,
            run_timeout=run_timeout,
            task_timeout=task_timeout,
            start_signal=start_signal,
            start_signal_args=start_signal_args,
            search_attributes=search_attributes,
            memo=memo,
        )
        return await handle.result()

    def get_workflow_handle(
        self, workflow_id: str, *, run_id: str | None = None, result_type: Any = None
    ) -> WorkflowHandle[Any, Any]:
        """A handle to an existing execution; no call is made.

        Args:
            workflow_id: The workflow id.
            run_id: A specific run; ``None`` means the latest run of ``workflow_id``.
            result_type: The type to decode the result into (e.g. a dataclass);
                ``None`` gives plain JSON values.
        """
        return WorkflowHandle(self, workflow_id, run_id=run_id, result_type=result_type)

    def get_workflow_handle_for(
        self,
        workflow: MethodAsyncNoParam[SelfType, ReturnType]
        | MethodAsyncSingleParam[SelfType, Any, ReturnType]
        | Callable[Concatenate[SelfType, MultiParamSpec], Awaitable[ReturnType]],
        workflow_id: str,
        *,
        run_id: str | None = None,
    ) -> WorkflowHandle[SelfType, ReturnType]:
        """A typed handle to an existing execution of ``workflow``; no call is made.

        Like :meth:`get_workflow_handle`, but the handle knows the workflow class
        (its signal and query methods are type-checked) and decodes the result
        with the run method's return hint (Temporal's ``get_workflow_handle_for``).

        Args:
            workflow: The workflow's ``@workflow.run`` method.
            workflow_id: The workflow id.
            run_id: A specific run; ``None`` means the latest run of ``workflow_id``.
        """
        _, result_hint = _workflow_type_and_result_hint(workflow)
        return WorkflowHandle(self, workflow_id, run_id=run_id, result_type=result_hint)

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
            # The generated stubs give each enum its own int type; the values are the wire's.
            status=typing.cast(common_pb2.WorkflowExecutionStatus, status.value if status is not None else 0),
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
                search_attributes={
                    name: typing.cast(common_pb2.IndexedValueType, int(value_type))
                    for name, value_type in attributes.items()
                },
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

    async def register_namespace(
        self,
        name: str,
        *,
        description: str = "",
        retention: timedelta | None = None,
        max_running_executions: int = 0,
        start_rate: float = 0.0,
        max_concurrent_activities: int = 0,
    ) -> None:
        """Creates a namespace.

        Args:
            name: The namespace's name.
            description: What it is for, for people.
            retention: How long closed executions are kept; the server's default
                when ``None``.
            max_running_executions: Quota: starts are refused (``RESOURCE_EXHAUSTED``)
                while this many runs are running; 0 is no limit.
            start_rate: Quota: starts admitted per second; 0 is no limit.
            max_concurrent_activities: Quota: activity tasks leased at once; more
                wait in their queue; 0 is no limit.

        Raises:
            RPCError: ``ALREADY_EXISTS`` when the namespace exists, or another refusal.
        """
        request = workflow_service_pb2.RegisterNamespaceRequest(
            name=name,
            description=description,
            max_running_executions=max_running_executions,
            start_rate=start_rate,
            max_concurrent_activities=max_concurrent_activities,
        )
        if retention is not None:
            request.retention.FromTimedelta(retention)
        await self._workflow_service.call("RegisterNamespace", request)

    async def update_namespace(
        self,
        name: str,
        *,
        description: str | None = None,
        retention: timedelta | None = None,
        max_running_executions: int | None = None,
        start_rate: float | None = None,
        max_concurrent_activities: int | None = None,
    ) -> NamespaceDescription:
        """Changes the settings given (``None`` keeps one) and returns the namespace.

        Args are those of :meth:`register_namespace`; a quota of 0 removes it.

        Raises:
            RPCError: ``NOT_FOUND`` when there is no such namespace, or another refusal.
        """
        request = workflow_service_pb2.UpdateNamespaceRequest(name=name)
        if description is not None:
            request.description = description
        if retention is not None:
            request.retention.FromTimedelta(retention)
        if max_running_executions is not None:
            request.max_running_executions = max_running_executions
        if start_rate is not None:
            request.start_rate = start_rate
        if max_concurrent_activities is not None:
            request.max_concurrent_activities = max_concurrent_activities
        response = await self._workflow_service.call("UpdateNamespace", request)
        return NamespaceDescription._from_proto(response.namespace)

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
