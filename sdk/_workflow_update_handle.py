"""Workflow updates from the client: sending one, waiting for its stage, update-with-start.

Sending is a ``SignalWorkflowExecution`` of the ``__update`` signal whose request id is the
update id (so a retried call is recorded once, and the workflow ignores an update id it has
seen); waiting long-polls the run's history for the ``update`` markers the workflow records
(see :mod:`flowforge._workflow_update_definition`). Both survive restarts of the server and
the workers: nothing about an update lives only in memory.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Generic, cast

import grpc

from flowforge._workflow_commands import UPDATE_ID_DETAIL, UPDATE_MARKER_NAME, UPDATE_STAGE_DETAIL, attributes_of
from flowforge._workflow_update_definition import UPDATE_SIGNAL, WorkflowUpdateStage, _update_name_and_result_hint
from flowforge._workflow_updates import UPDATE_FAILURE_DETAIL, UPDATE_RESULT_DETAIL
from flowforge.api import schema
from flowforge.api.schema import EventType
from flowforge.api.v1 import common_pb2, workflow_service_pb2
from flowforge.common import _NO_ARGUMENT, WorkflowIDConflictPolicy, _call_arguments
from flowforge.converter import default_converter, failure_to_error
from flowforge.exceptions import ApplicationError, RPCError, WorkflowUpdateFailedError
from flowforge.types import LocalReturnType

if TYPE_CHECKING:
    from flowforge._workflow_handle import WorkflowHandle
    from flowforge.client import Client

__all__ = ["WithStartWorkflowOperation", "WorkflowUpdateHandle", "WorkflowUpdateStage"]

_POLL_WAIT = timedelta(seconds=20)
_CLOSE_EVENTS = frozenset(
    {
        EventType.WORKFLOW_EXECUTION_COMPLETED,
        EventType.WORKFLOW_EXECUTION_FAILED,
        EventType.WORKFLOW_EXECUTION_CANCELED,
        EventType.WORKFLOW_EXECUTION_TERMINATED,
        EventType.WORKFLOW_EXECUTION_TIMED_OUT,
        EventType.WORKFLOW_EXECUTION_CONTINUED_AS_NEW,
    }
)
_STAGES = {"accepted": WorkflowUpdateStage.ACCEPTED, "rejected": WorkflowUpdateStage.COMPLETED}


class WorkflowUpdateHandle(Generic[LocalReturnType]):
    """An update sent to a workflow (Temporal's ``WorkflowUpdateHandle``); ``await result()`` for its outcome.

    Args:
        client: The client to wait with.
        id: The update id.
        workflow_id: The workflow it was sent to.
        workflow_run_id: The run, when known.
        result_type: The type to decode the result into.
    """

    def __init__(
        self,
        client: Client,
        id: str,
        workflow_id: str,
        *,
        workflow_run_id: str | None = None,
        result_type: Any = None,
    ) -> None:
        self._client = client
        self._id = id
        self._workflow_id = workflow_id
        self._workflow_run_id = workflow_run_id
        self._result_type = result_type

    @property
    def id(self) -> str:
        """The update id (unique within the workflow)."""
        return self._id

    @property
    def workflow_id(self) -> str:
        """The workflow the update was sent to."""
        return self._workflow_id

    @property
    def workflow_run_id(self) -> str | None:
        """The run the update was sent to, once known."""
        return self._workflow_run_id

    async def result(self) -> LocalReturnType:
        """Waits until the update completed and returns the handler's result.

        Raises:
            WorkflowUpdateFailedError: The validator rejected it, the handler raised a
                ``FailureError``, or the run closed first; ``cause`` says which.
        """
        details = await self._wait_for(WorkflowUpdateStage.COMPLETED)
        converter = self._client.data_converter
        failure = details.get(UPDATE_FAILURE_DETAIL)
        if failure is not None:
            proto = schema.json_dict_to_message(default_converter.from_payloads(failure)[0], common_pb2.Failure)
            raise WorkflowUpdateFailedError(self._id, failure_to_error(proto, converter))
        values = converter.from_payloads(details.get(UPDATE_RESULT_DETAIL, common_pb2.Payloads()), [self._result_type])
        return cast(LocalReturnType, values[0] if values else None)

    async def _wait_for(self, stage: WorkflowUpdateStage) -> dict[str, common_pb2.Payloads]:
        """Long-polls the run's history until the update reached ``stage``; the marker's details."""
        request = workflow_service_pb2.GetWorkflowExecutionHistoryRequest(
            namespace=self._client.namespace,
            execution=common_pb2.WorkflowExecution(workflow_id=self._workflow_id, run_id=self._workflow_run_id or ""),
            wait_new_event=True,
        )
        request.wait_timeout.FromTimedelta(_POLL_WAIT)
        while True:
            response = await self._client.workflow_service.call(
                "GetWorkflowExecutionHistory", request, timeout=_POLL_WAIT + timedelta(seconds=10)
            )
            if response.run_id:
                request.execution.run_id = self._workflow_run_id = response.run_id
            for event in response.events:
                request.after_event_id = event.event_id
                if event.event_type in _CLOSE_EVENTS:
                    closed = ApplicationError(
                        f"workflow {self._workflow_id!r} closed ({event.event_type}) before update {self._id!r} "
                        f"reached stage {stage.name}",
                        type="WorkflowClosed",
                    )
                    raise WorkflowUpdateFailedError(self._id, closed)
                details = _update_marker(event, self._id)
                if details is not None and _STAGES.get(_stage(details), WorkflowUpdateStage.COMPLETED) >= stage:
                    return details


def _stage(details: Mapping[str, common_pb2.Payloads]) -> str:
    return str(default_converter.from_payloads(details[UPDATE_STAGE_DETAIL])[0])


def _update_marker(event: common_pb2.HistoryEvent, update_id: str) -> dict[str, common_pb2.Payloads] | None:
    """The details of ``event`` if it is a marker of update ``update_id``."""
    if event.event_type != EventType.MARKER_RECORDED:
        return None
    attributes = cast(schema.MarkerRecordedAttributes, attributes_of(event))
    if attributes["marker_name"] != UPDATE_MARKER_NAME:
        return None
    details = {key: schema.payloads_from_json(value) for key, value in (attributes.get("details") or {}).items()}
    if str(default_converter.from_payloads(details[UPDATE_ID_DETAIL])[0]) != update_id:
        return None
    return details


async def send_update(
    handle: WorkflowHandle[Any, Any],
    update: Callable[..., Any] | str,
    arg: Any,
    args: Sequence[Any],
    *,
    id: str | None,
    result_type: Any,
    wait_for_stage: WorkflowUpdateStage,
) -> WorkflowUpdateHandle[Any]:
    """Sends an update to ``handle``'s workflow and waits until it reached ``wait_for_stage``."""
    client = handle._client
    name, hint = _update_name_and_result_hint(update)
    update_id = id or str(uuid.uuid4())
    request = workflow_service_pb2.SignalWorkflowExecutionRequest(
        namespace=client.namespace,
        execution=common_pb2.WorkflowExecution(workflow_id=handle.id, run_id=handle.run_id or ""),
        signal_name=UPDATE_SIGNAL,
        input=client.data_converter.to_payloads([update_id, name, *_call_arguments(arg, args)]),
        identity=client.identity,
        # The update id is the request id: a retried call (or a second call with the same
        # update id) is recorded once.
        request_id=f"update/{handle.id}/{update_id}",
    )
    try:
        await client.workflow_service.call("SignalWorkflowExecution", request)
    except RPCError as error:
        # A closed run takes no new update, but may hold this one's outcome already.
        if error.status != grpc.StatusCode.FAILED_PRECONDITION:
            raise
    update_handle = WorkflowUpdateHandle[Any](
        client, update_id, handle.id, workflow_run_id=handle.run_id, result_type=result_type or hint
    )
    if wait_for_stage > WorkflowUpdateStage.ADMITTED:
        await update_handle._wait_for(wait_for_stage)
    return update_handle


class WithStartWorkflowOperation:
    """The workflow start of an update-with-start (Temporal's ``WithStartWorkflowOperation``).

    Give it to ``Client.execute_update_with_start_workflow`` / ``start_update_with_start_workflow``:
    in one atomic call the workflow is started if ``id`` has no running execution, and the
    update is sent to the running (or new) one.

    Args:
        workflow: The ``@workflow.run`` method, the class, or the type name.
        arg: Its single argument.
        args: Its arguments, when it takes several.
        id: The workflow id.
        task_queue: The task queue.
        id_conflict_policy: ``USE_EXISTING`` (or unspecified): a running execution takes the update.
        options: Other ``start_workflow`` keyword arguments (timeouts, memo, search attributes, ...).
    """

    def __init__(
        self,
        workflow: Any,
        arg: Any = _NO_ARGUMENT,
        *,
        args: Sequence[Any] = (),
        id: str,
        task_queue: str,
        id_conflict_policy: WorkflowIDConflictPolicy = WorkflowIDConflictPolicy.UNSPECIFIED,
        **options: Any,
    ) -> None:
        if id_conflict_policy not in (WorkflowIDConflictPolicy.UNSPECIFIED, WorkflowIDConflictPolicy.USE_EXISTING):
            raise ValueError("update-with-start sends the update to a running execution: use USE_EXISTING")
        self.workflow, self.arg, self.args, self.id, self.task_queue = workflow, arg, args, id, task_queue
        self.id_conflict_policy, self.options = id_conflict_policy, options
        self._handle: WorkflowHandle[Any, Any] | None = None

    async def workflow_handle(self) -> WorkflowHandle[Any, Any]:
        """The handle of the started (or running) workflow, once the operation ran.

        Raises:
            RuntimeError: The operation was not given to an update-with-start call yet.
        """
        if self._handle is None:
            raise RuntimeError("the operation has not run: pass it to execute_update_with_start_workflow first")
        return self._handle


class _UpdateWithStartCalls:
    """Update-with-start, on :class:`flowforge.client.Client` (a base class of it)."""

    async def start_update_with_start_workflow(
        self,
        update: Callable[..., Any] | str,
        arg: Any = _NO_ARGUMENT,
        *,
        args: Sequence[Any] = (),
        start_workflow_operation: WithStartWorkflowOperation,
        wait_for_stage: WorkflowUpdateStage,
        id: str | None = None,
        result_type: Any = None,
    ) -> WorkflowUpdateHandle[Any]:
        """Starts the operation's workflow unless it runs, sends it the update, waits for ``wait_for_stage``.

        One atomic call (signal-with-start of the update), so the update is never lost
        between the start and the send.
        """
        client = cast("Client", self)
        operation = start_workflow_operation
        name, hint = _update_name_and_result_hint(update)
        update_id = id or str(uuid.uuid4())
        handle = await client.start_workflow(
            operation.workflow,
            operation.arg,
            args=operation.args,
            id=operation.id,
            task_queue=operation.task_queue,
            start_signal=UPDATE_SIGNAL,
            start_signal_args=[update_id, name, *_call_arguments(arg, args)],
            **operation.options,
        )
        operation._handle = handle
        update_handle = WorkflowUpdateHandle[Any](
            client, update_id, handle.id, workflow_run_id=handle.run_id, result_type=result_type or hint
        )
        if wait_for_stage > WorkflowUpdateStage.ADMITTED:
            await update_handle._wait_for(wait_for_stage)
        return update_handle

    async def execute_update_with_start_workflow(
        self,
        update: Callable[..., Any] | str,
        arg: Any = _NO_ARGUMENT,
        *,
        args: Sequence[Any] = (),
        start_workflow_operation: WithStartWorkflowOperation,
        id: str | None = None,
        result_type: Any = None,
    ) -> Any:
        """:meth:`start_update_with_start_workflow`, then the update's result.

        Raises:
            WorkflowUpdateFailedError: The update was rejected or failed.
        """
        update_handle = await self.start_update_with_start_workflow(
            update,
            arg,
            args=args,
            start_workflow_operation=start_workflow_operation,
            wait_for_stage=WorkflowUpdateStage.COMPLETED,
            id=id,
            result_type=result_type,
        )
        return await update_handle.result()
