"""A handle to one workflow execution: wait for its result, inspect it, steer it."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Concatenate, Generic, cast, overload

import grpc

from flowforge._client_interceptors import QueryWorkflowInput, SignalWorkflowInput
from flowforge._workflow_definition import _query_name_and_result_hint, _signal_name
from flowforge._workflow_executions import WorkflowExecutionDescription
from flowforge._workflow_history import HistoryEvent, WorkflowHistory
from flowforge._workflow_update_definition import WorkflowUpdateStage, _update_name_and_result_hint
from flowforge._workflow_update_handle import WorkflowUpdateHandle, send_update
from flowforge.api import schema
from flowforge.api.schema import EventType
from flowforge.api.v1 import common_pb2, workflow_service_pb2
from flowforge.common import _NO_ARGUMENT, _call_arguments
from flowforge.converter import DataConverter, failure_to_error
from flowforge.exceptions import CancelledError, RPCError, TerminatedError, TimeoutError, WorkflowFailureError
from flowforge.types import (
    LocalReturnType,
    MethodSyncNoParam,
    MethodSyncOrAsyncNoParam,
    MethodSyncOrAsyncSingleParam,
    MethodSyncSingleParam,
    MultiParamSpec,
    ParamType,
    ReturnType,
    SelfType,
)

if TYPE_CHECKING:
    from flowforge.client import Client

__all__ = ["WorkflowHandle"]

# How long a query waits for a worker's answer by default.
_QUERY_TIMEOUT = timedelta(seconds=30)
# Matches the server's margin: it answers "no worker answered" this long before the deadline.
_QUERY_ANSWER_MARGIN = timedelta(seconds=1)

# How long one GetWorkflowExecutionHistory long poll waits on the server before
# answering empty, and how much longer the client allows for the answer to arrive.
_RESULT_POLL_WAIT = timedelta(seconds=60)
_LONG_POLL_MARGIN = timedelta(seconds=10)


class WorkflowHandle(Generic[SelfType, ReturnType]):
    """Refers to one workflow execution: wait for it, inspect it, steer it.

    Get one from :meth:`Client.start_workflow` or :meth:`Client.get_workflow_handle`.
    ``WorkflowHandle[SelfType, ReturnType]``: the workflow class (whose signal and
    query methods it takes) and what :meth:`result` returns, as in Temporal; a
    handle made from a workflow type name is ``WorkflowHandle[Any, Any]``.

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

    async def result(self) -> ReturnType:
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
            converter = self._client.data_converter
            event_type = close_event.event_type
            attributes: Mapping[str, Any] = close_event.attributes
            if event_type == EventType.WORKFLOW_EXECUTION_COMPLETED:
                attributes = cast(schema.WorkflowExecutionCompletedAttributes, attributes)
                values = converter.from_payloads(
                    schema.payloads_from_json(attributes.get("result")), [self._result_type]
                )
                # Decoded with the run method's return hint: the type the handle promises.
                return cast(ReturnType, values[0] if values else None)
            if event_type == EventType.WORKFLOW_EXECUTION_CONTINUED_AS_NEW:
                attributes = cast(schema.WorkflowExecutionContinuedAsNewAttributes, attributes)
                run_id = attributes["new_execution_run_id"]
                continue
            raise self._failure_error(close_event, converter)

    def _failure_error(self, close_event: HistoryEvent, converter: DataConverter) -> WorkflowFailureError:
        attributes: Mapping[str, Any] = close_event.attributes
        event_type = close_event.event_type
        if event_type == EventType.WORKFLOW_EXECUTION_FAILED:
            attributes = cast(schema.WorkflowExecutionFailedAttributes, attributes)
            failure = schema.failure_from_json(attributes.get("failure"))
            return WorkflowFailureError("workflow execution failed", failure_to_error(failure, converter))
        if event_type == EventType.WORKFLOW_EXECUTION_CANCELED:
            attributes = cast(schema.WorkflowExecutionCanceledAttributes, attributes)
            details = converter.from_payloads(schema.payloads_from_json(attributes.get("details")))
            cause = CancelledError("workflow execution canceled", *details)
            return WorkflowFailureError("workflow execution canceled", cause)
        if event_type == EventType.WORKFLOW_EXECUTION_TERMINATED:
            attributes = cast(schema.WorkflowExecutionTerminatedAttributes, attributes)
            reason = attributes.get("reason") or "terminated"
            return WorkflowFailureError("workflow execution terminated", TerminatedError(reason))
        if event_type == EventType.WORKFLOW_EXECUTION_TIMED_OUT:
            attributes = cast(schema.WorkflowExecutionTimedOutAttributes, attributes)
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
        return WorkflowHistory(workflow_id=self.id, events=[event async for event in self.fetch_history_events()])

    async def fetch_history_events(self, *, page_size: int = 0) -> AsyncIterator[HistoryEvent]:
        """The run's history events one by one, fetched a page at a time (Temporal's
        ``fetch_history_events``; use ``async for``).

        Args:
            page_size: Events per page; the server's default when 0.

        Raises:
            RPCError: ``NOT_FOUND`` for an unknown execution, or another refusal.
        """
        request = workflow_service_pb2.GetWorkflowExecutionHistoryRequest(
            namespace=self._client.namespace, execution=self._execution(), maximum_page_size=page_size
        )
        while True:
            response = await self._client.workflow_service.call("GetWorkflowExecutionHistory", request)
            for event in response.events:
                yield HistoryEvent.from_proto(event)
            # Later pages must come from the same run even when the handle names none.
            if response.run_id:
                request.execution.run_id = response.run_id
            if not response.has_more or not response.events:
                return
            request.after_event_id = response.events[-1].event_id

    async def execute_update(
        self,
        update: Callable[..., Any] | str,
        arg: Any = _NO_ARGUMENT,
        *,
        args: Sequence[Any] = (),
        id: str | None = None,
        result_type: Any = None,
    ) -> Any:
        """Sends an update and waits for its result (Temporal's ``execute_update``).

        Args:
            update: The ``@workflow.update`` method or the update's name.
            arg: The update's single argument, if it takes one.
            args: All arguments, for an update taking several; not with ``arg``.
            id: The update id (a fresh UUID by default); an update id the workflow has seen is
                not run again: its first outcome is returned.
            result_type: The type to decode the result into (default: the handler's return hint).

        Raises:
            WorkflowUpdateFailedError: The validator rejected the update, the handler raised a
                ``FailureError``, or the run closed before the update completed.
            RPCError: ``NOT_FOUND`` for an unknown execution, or another refusal.
        """
        handle = await self.start_update(
            update, arg, args=args, id=id, result_type=result_type, wait_for_stage=WorkflowUpdateStage.COMPLETED
        )
        return await handle.result()

    async def start_update(
        self,
        update: Callable[..., Any] | str,
        arg: Any = _NO_ARGUMENT,
        *,
        args: Sequence[Any] = (),
        wait_for_stage: WorkflowUpdateStage,
        id: str | None = None,
        result_type: Any = None,
    ) -> WorkflowUpdateHandle[Any]:
        """Sends an update and waits until it reached ``wait_for_stage`` (``ADMITTED``: the server
        recorded it; ``ACCEPTED``: the validator passed; ``COMPLETED``); takes the arguments of
        :meth:`execute_update`.

        Returns:
            The update's handle; ``await handle.result()`` for its outcome.
        """
        return await send_update(self, update, arg, args, id=id, result_type=result_type, wait_for_stage=wait_for_stage)

    def get_update_handle(
        self, id: str, *, workflow_run_id: str | None = None, result_type: Any = None
    ) -> WorkflowUpdateHandle[Any]:
        """A handle to an update sent earlier (e.g. by another process), by its id; no call is made."""
        return WorkflowUpdateHandle(
            self._client, id, self.id, workflow_run_id=workflow_run_id or self.run_id, result_type=result_type
        )

    def get_update_handle_for(
        self, update: Callable[..., Any] | str, id: str, *, workflow_run_id: str | None = None
    ) -> WorkflowUpdateHandle[Any]:
        """:meth:`get_update_handle` with the result decoded by the update method's return hint."""
        _, hint = _update_name_and_result_hint(update)
        return self.get_update_handle(id, workflow_run_id=workflow_run_id, result_type=hint)

    @overload
    async def signal(self, signal: MethodSyncOrAsyncNoParam[SelfType, None]) -> None: ...

    @overload
    async def signal(self, signal: MethodSyncOrAsyncSingleParam[SelfType, ParamType, None], arg: ParamType) -> None: ...

    @overload
    async def signal(
        self,
        signal: Callable[Concatenate[SelfType, MultiParamSpec], Awaitable[None] | None],
        *,
        args: Sequence[Any],
    ) -> None: ...

    @overload
    async def signal(self, signal: str, arg: Any = _NO_ARGUMENT, *, args: Sequence[Any] = ()) -> None: ...

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

        async def send(header: common_pb2.Header) -> None:
            request.header.CopyFrom(header)
            await self._client.workflow_service.call("SignalWorkflowExecution", request)

        await self._client._outbound.signal_workflow(
            SignalWorkflowInput(self.id, self.run_id, request.signal_name, {}, send)
        )

    @overload
    async def query(
        self,
        query: MethodSyncNoParam[SelfType, LocalReturnType],
        *,
        result_type: Any = None,
        timeout: timedelta = _QUERY_TIMEOUT,
    ) -> LocalReturnType: ...

    @overload
    async def query(
        self,
        query: MethodSyncSingleParam[SelfType, ParamType, LocalReturnType],
        arg: ParamType,
        *,
        result_type: Any = None,
        timeout: timedelta = _QUERY_TIMEOUT,
    ) -> LocalReturnType: ...

    @overload
    async def query(
        self,
        query: Callable[Concatenate[SelfType, MultiParamSpec], LocalReturnType],
        *,
        args: Sequence[Any],
        result_type: Any = None,
        timeout: timedelta = _QUERY_TIMEOUT,
    ) -> LocalReturnType: ...

    @overload
    async def query(
        self,
        query: str,
        arg: Any = _NO_ARGUMENT,
        *,
        args: Sequence[Any] = (),
        result_type: Any = None,
        timeout: timedelta = _QUERY_TIMEOUT,
    ) -> Any: ...

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
        async def send() -> workflow_service_pb2.QueryWorkflowResponse:
            answer: workflow_service_pb2.QueryWorkflowResponse = await self._client.workflow_service.call(
                "QueryWorkflow", request, retry=False, timeout=timeout + _QUERY_ANSWER_MARGIN
            )
            return answer

        response = await self._client._outbound.query_workflow(QueryWorkflowInput(self.id, self.run_id, name, send))
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
