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
import os
import socket
import typing
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Generator, Mapping, Sequence
from datetime import timedelta
from typing import Any, Concatenate, Required, TypedDict, Unpack, overload

import grpc

from flowforge import _schedule
from flowforge._async_activity_handle import AsyncActivityHandle, _AsyncActivityCalls
from flowforge._breakers import Breaker, _BreakerCalls
from flowforge._claim_check import wire_codec
from flowforge._client_interceptors import (
    Interceptor,
    OutboundInterceptor,
    QueryWorkflowInput,
    SignalWorkflowInput,
    StartWorkflowInput,
    outbound_chain,
)
from flowforge._dags import DagVersion, _DagCalls
from flowforge._dead_letters import DeadLetter, DeadLetterList, _DeadLetterCalls
from flowforge._event_triggers import EventTrigger, PublishEventResult, TriggeredWorkflow, _EventTriggerCalls
from flowforge._flow_control import ConcurrencyLimit, RateLimit, _FlowControlCalls
from flowforge._namespaces import NamespaceDescription, _NamespaceCalls
from flowforge._remediation import BatchOperation, _RemediationCalls
from flowforge._rpc import MAX_MESSAGE_BYTES, RPCRetryConfig, WorkflowServiceClient
from flowforge._schedule import (
    Schedule,
    ScheduleActionResult,
    ScheduleActionStartWorkflow,
    ScheduleBackfill,
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
    ScheduleUpdate,
    ScheduleUpdateInput,
)
from flowforge._task_queues import TaskQueueBacklog, TaskQueueDescription, TaskQueuePoller, _TaskQueueCalls
from flowforge._tls import TLSConfig, open_channel
from flowforge._workflow_definition import _signal_name, _workflow_type_and_result_hint
from flowforge._workflow_executions import (
    ActivityAttempt,
    DagNode,
    PauseInfo,
    PendingActivity,
    PendingChildWorkflow,
    PendingWorkflowTask,
    WorkflowExecution,
    WorkflowExecutionCount,
    WorkflowExecutionDescription,
)
from flowforge._workflow_handle import WorkflowHandle
from flowforge._workflow_history import HistoryEvent, WorkflowHistory
from flowforge._workflow_update_handle import (
    WithStartWorkflowOperation,
    WorkflowUpdateHandle,
    WorkflowUpdateStage,
    _UpdateWithStartCalls,
)
from flowforge.api.v1 import common_pb2, workflow_service_pb2
from flowforge.common import (
    _LIST_PAGE_SIZE,
    _NO_ARGUMENT,
    Priority,
    SearchAttributeIndexedValueType,
    SearchAttributeValue,
    WorkflowExecutionStatus,
    WorkflowIDConflictPolicy,
    WorkflowIDReusePolicy,
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
    "ActivityAttempt",
    "AsyncActivityHandle",
    "BatchOperation",
    "Breaker",
    "Client",
    "ConcurrencyLimit",
    "DagNode",
    "DagVersion",
    "DeadLetter",
    "DeadLetterList",
    "EventTrigger",
    "HistoryEvent",
    "Interceptor",
    "NamespaceDescription",
    "OutboundInterceptor",
    "PauseInfo",
    "PendingActivity",
    "PendingChildWorkflow",
    "PendingWorkflowTask",
    "PublishEventResult",
    "QueryWorkflowInput",
    "RPCRetryConfig",
    "RateLimit",
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
    "SignalWorkflowInput",
    "StartWorkflowInput",
    "TLSConfig",
    "TaskQueueBacklog",
    "TaskQueueDescription",
    "TaskQueuePoller",
    "TriggeredWorkflow",
    "WithStartWorkflowOperation",
    "WorkflowExecution",
    "WorkflowExecutionCount",
    "WorkflowExecutionDescription",
    "WorkflowHandle",
    "WorkflowHistory",
    "WorkflowUpdateHandle",
    "WorkflowUpdateStage",
]


class _ScheduleListing(AsyncIterator[ScheduleDescription]):
    """The schedules of :meth:`Client.list_schedules`: an async iterator that may also be awaited first."""

    def __init__(self, schedules: AsyncIterator[ScheduleDescription]) -> None:
        self._schedules = schedules

    def __aiter__(self) -> _ScheduleListing:
        return self

    async def __anext__(self) -> ScheduleDescription:
        return await self._schedules.__anext__()

    def __await__(self) -> Generator[Any, None, _ScheduleListing]:
        yield from ()
        return self


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
    result_type: Any
    cron_schedule: str
    id_reuse_policy: WorkflowIDReusePolicy
    id_conflict_policy: WorkflowIDConflictPolicy
    priority: Priority | None


class Client(
    _NamespaceCalls,
    _EventTriggerCalls,
    _TaskQueueCalls,
    _DeadLetterCalls,
    _FlowControlCalls,
    _BreakerCalls,
    _UpdateWithStartCalls,
    _AsyncActivityCalls,
    _RemediationCalls,
    _DagCalls,
):
    """A connection to a FlowForge server, bound to one namespace.

    Create it with :meth:`connect`. It is safe to share between tasks and workers;
    close it with :meth:`close` or use it as an async context manager.
    Its namespace, event trigger, task queue and dead-letter calls are defined beside
    their types, in ``flowforge._namespaces``, ``flowforge._event_triggers``,
    ``flowforge._task_queues`` and ``flowforge._dead_letters``.

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
        interceptors: Sequence[object] = (),
    ) -> None:
        self._workflow_service = workflow_service
        self._namespace = namespace
        self._identity = identity
        self._data_converter = data_converter
        self._interceptors = list(interceptors)
        self._outbound = outbound_chain(self._interceptors)

    @classmethod
    async def connect(
        cls,
        target_host: str,
        namespace: str = "default",
        api_key: str | None = None,
        identity: str | None = None,
        *,
        tls: bool | TLSConfig | grpc.ChannelCredentials = False,
        data_converter: DataConverter = default_converter,
        rpc_retry: RPCRetryConfig = RPCRetryConfig(),
        connect_timeout: timedelta | None = timedelta(seconds=10),
        rpc_metadata: Mapping[str, str] | None = None,
        lazy: bool = False,
        interceptors: Sequence[object] = (),
    ) -> Client:
        """Connects to a server.

        Args:
            target_host: ``host:port`` of the server, e.g. ``"localhost:7233"``
                (Temporal's name, so ``Client.connect(**ClientConfig.load_client_connect_config())`` works).
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
            rpc_metadata: gRPC headers sent on every call (lower-case names).
            lazy: Temporal's switch for ``connect_timeout=None``: connect on the first call.
            interceptors: Client interceptors (:class:`Interceptor`), the first
                outermost; those that are also worker interceptors
                (``flowforge.worker.Interceptor``, e.g.
                ``flowforge.contrib.opentelemetry.TracingInterceptor``) are used by every
                worker built on this client.

        Returns:
            The connected client.

        Raises:
            RPCError: ``UNAVAILABLE`` when the server could not be reached within
                ``connect_timeout``.
        """
        options = [
            ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
            ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
            # Each client its own connection (gRPC would share one between equal
            # channels), so clients spread over server processes sharing a port.
            ("grpc.use_local_subchannel_pool", 1),
        ]
        channel = open_channel(target_host, tls, options)
        if connect_timeout is not None and not lazy:
            try:
                await asyncio.wait_for(channel.channel_ready(), connect_timeout.total_seconds())
            except builtins.TimeoutError:
                await channel.close()
                raise RPCError(
                    f"could not connect to {target_host} within {connect_timeout.total_seconds():g}s",
                    grpc.StatusCode.UNAVAILABLE,
                ) from None
        metadata = [("authorization", f"Bearer {api_key}")] if api_key else []
        metadata += [(name.lower(), value) for name, value in (rpc_metadata or {}).items()]
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
            interceptors=interceptors,
        )

    @property
    def interceptors(self) -> list[object]:
        """The interceptors given to :meth:`connect`."""
        return list(self._interceptors)

    @property
    def namespace(self) -> str:
        """The namespace every call is made in."""
        return self._namespace

    @property
    def identity(self) -> str:
        """Who this client is, as recorded in history."""
        return self._identity

    @property
    def api_key(self) -> str | None:
        """The API key sent on every call of this client and the workers built on it.

        Setting it switches every later call to the new key without reconnecting
        (Temporal's ``Client.api_key``): deploy a new key, then revoke the old one.
        """
        return self._workflow_service.api_key

    @api_key.setter
    def api_key(self, key: str | None) -> None:
        self._workflow_service.api_key = key

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
        result_type: Any = None,
        cron_schedule: str = "",
        id_reuse_policy: WorkflowIDReusePolicy = WorkflowIDReusePolicy.UNSPECIFIED,
        id_conflict_policy: WorkflowIDConflictPolicy = WorkflowIDConflictPolicy.UNSPECIFIED,
        priority: Priority | None = None,
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
            result_type: The type to decode the result into, when ``workflow`` is a
                class or a name (a run method's return hint is used otherwise).
            cron_schedule: Temporal's cron on start (five-field, UTC): the first run
                starts at the next matching time and each run that completes or fails
                continues as new (same id and input) to the next one, until the
                execution is cancelled or terminated; ``result()`` follows the runs.
            id_reuse_policy: Whether the id of a closed execution may be used again
                (default: yes); ``REJECT_DUPLICATE`` / ``ALLOW_DUPLICATE_FAILED_ONLY`` make
                such a start ``WorkflowAlreadyStartedError``.
            id_conflict_policy: When the id has a running execution: ``FAIL`` (default,
                ``WorkflowAlreadyStartedError``), ``USE_EXISTING`` (the handle points at it;
                nothing starts) or ``TERMINATE_EXISTING`` (terminate it, then start).
            priority: The run's dispatch order, inherited by its activities and
                children (docs/flow-control.md); default priority 3, no fairness key.

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
        request.cron_schedule = cron_schedule
        request.workflow_id_reuse_policy = typing.cast(
            "workflow_service_pb2.WorkflowIdReusePolicy", WorkflowIDReusePolicy(id_reuse_policy).value
        )
        request.workflow_id_conflict_policy = typing.cast(
            "workflow_service_pb2.WorkflowIdConflictPolicy", WorkflowIDConflictPolicy(id_conflict_policy).value
        )
        if start_signal is not None:
            request.start_signal = _signal_name(start_signal)
            request.start_signal_input.CopyFrom(self._data_converter.to_payloads(start_signal_args))
        elif start_signal_args:
            raise ValueError("start_signal_args needs start_signal")
        if search_attributes:
            request.search_attributes.CopyFrom(_search_attributes_to_proto(search_attributes))
        for name, value in (memo or {}).items():
            request.memo.fields[name].CopyFrom(self._data_converter.to_payload(value))
        if priority is not None:
            request.priority.CopyFrom(priority.to_proto())

        async def send(header: common_pb2.Header) -> workflow_service_pb2.StartWorkflowExecutionResponse:
            request.header.CopyFrom(header)
            answer: workflow_service_pb2.StartWorkflowExecutionResponse = await self._workflow_service.call(
                "StartWorkflowExecution", request
            )
            return answer

        try:
            response = await self._outbound.start_workflow(StartWorkflowInput(workflow_type, id, task_queue, {}, send))
        except RPCError as error:
            if error.status == grpc.StatusCode.ALREADY_EXISTS:
                raise WorkflowAlreadyStartedError(error.message) from None
            raise
        result_type = result_hint if result_type is None else result_type
        return WorkflowHandle(self, id, run_id=response.run_id, result_type=result_type)

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
        result_type: Any = None,
        cron_schedule: str = "",
        id_reuse_policy: WorkflowIDReusePolicy = WorkflowIDReusePolicy.UNSPECIFIED,
        id_conflict_policy: WorkflowIDConflictPolicy = WorkflowIDConflictPolicy.UNSPECIFIED,
        priority: Priority | None = None,
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
            result_type=result_type,
            cron_schedule=cron_schedule,
            id_reuse_policy=id_reuse_policy,
            id_conflict_policy=id_conflict_policy,
            priority=priority,
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
        """Iterates over the runs of the namespace matching a query, newest first or in
        the query's ``ORDER BY``.

        Use it with ``async for``; pages of ``page_size`` runs are fetched as the
        iteration needs them. Paging is by keyset (the order's attribute, start time,
        run id), so a run started while you iterate never makes another appear twice or
        go missing.

        ::

            async for run in client.list_workflows(
                    "WorkflowType = 'Order' AND ExecutionStatus = 'Running' AND Amount >= 100"):
                print(run.workflow_id, run.search_attributes, run.memo)

        Args:
            query: A visibility query over ``WorkflowId``, ``RunId``, ``WorkflowType``,
                ``TaskQueue``, ``ExecutionStatus``, ``StartTime``, ``CloseTime`` and
                the namespace's custom search attributes, with ``=``, ``!=``, ``<``,
                ``<=``, ``>``, ``>=``, ``BETWEEN``, ``IN``, ``STARTS_WITH``, ``IS [NOT]
                NULL``, ``AND``, ``OR``, ``NOT`` and parentheses, optionally ending with
                ``ORDER BY`` ``StartTime``, ``CloseTime``, ``WorkflowId``, ``WorkflowType``
                or ``ExecutionStatus`` ``ASC``/``DESC`` (docs/visibility.md). ``None`` or
                empty lists every run.
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

    def list_schedules(self, *, page_size: int = _LIST_PAGE_SIZE) -> _ScheduleListing:
        """Iterates over the namespace's schedules in id order: ``async for s in client.list_schedules()``,
        or Temporal's ``async for s in await client.list_schedules()``.

        Raises:
            RPCError: The server refused the listing (when iterated).
        """
        return _ScheduleListing(self._schedules(page_size))

    async def _schedules(self, page_size: int) -> AsyncIterator[ScheduleDescription]:
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
