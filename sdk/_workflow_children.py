"""Child workflows of a run: starting, awaiting, cancelling and signalling them, resolved from history.

A child is known by its command until history matches that command with its
``StartChildWorkflowExecutionInitiated`` event, then by that event's id (which
the child's later events refer to). Signals to children go the same way.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
from collections.abc import Sequence
from typing import Any, cast

from flowforge import exceptions
from flowforge._child_workflow_calls import ChildWorkflowHandle, _ChildWorkflowCall
from flowforge._workflow_commands import ChildEventAttributes, CommandBuffer, SignalChildOutcomeAttributes
from flowforge._workflow_dag import DagTracker
from flowforge.api import schema
from flowforge.api.schema import EventType
from flowforge.api.v1 import command_pb2, common_pb2
from flowforge.common import _search_attributes_to_proto
from flowforge.converter import DataConverter, failure_to_error

__all__ = ["Children"]

_ChildSignal = tuple[command_pb2.Command, asyncio.Future[None]]


@dataclasses.dataclass(eq=False)
class _Child:
    workflow_id: str
    workflow_type: str
    result_type: Any
    command: command_pb2.Command
    # Resolved with the child's run id by ChildWorkflowExecutionStarted.
    started: asyncio.Future[str]
    # Resolved with the result Payloads, or a ChildWorkflowError, by the close event.
    outcome: asyncio.Future[common_pb2.Payloads]
    handle: ChildWorkflowHandle[Any, Any] = dataclasses.field(init=False)
    run_id: str = ""
    started_event_id: int = 0
    cancel_requested: bool = False


class Children:
    """The child workflows a run started, and the signals it sent them.

    Args:
        loop: The workflow loop the child handles run on.
        commands: Where start, cancel and signal commands go.
        dag: Tracks the child handles as tasks of the loop.
        converter: Encodes arguments and decodes results.
        namespace: The parent's namespace (named in errors).
    """

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        commands: CommandBuffer,
        dag: DagTracker,
        converter: DataConverter,
        *,
        namespace: str,
    ) -> None:
        self._loop = loop
        self._commands = commands
        self._dag = dag
        self._converter = converter
        self._namespace = namespace
        self._by_command: dict[int, _Child] = {}
        self._by_initiated_event: dict[int, _Child] = {}
        self._signals_by_command: dict[int, _ChildSignal] = {}
        self._signals_by_initiated_event: dict[int, _ChildSignal] = {}

    def start(self, call: _ChildWorkflowCall) -> ChildWorkflowHandle[Any, Any]:
        """Issues the StartChildWorkflowExecution command; the handle resolves with the outcome."""
        attributes = command_pb2.StartChildWorkflowExecutionCommandAttributes(
            workflow_id=call.id,
            workflow_type=call.workflow_type,
            task_queue=call.task_queue,
            input=self._converter.to_payloads(call.args),
            parent_close_policy=call.parent_close_policy.value,
        )
        if call.search_attributes:
            attributes.search_attributes.CopyFrom(_search_attributes_to_proto(call.search_attributes))
        for name, value in (call.memo or {}).items():
            attributes.memo.fields[name].CopyFrom(self._converter.to_payload(value))
        if call.priority is not None:
            attributes.priority.CopyFrom(call.priority.to_proto())
        for field, timeout in (
            (attributes.workflow_execution_timeout, call.execution_timeout),
            (attributes.workflow_run_timeout, call.run_timeout),
            (attributes.workflow_task_timeout, call.task_timeout),
        ):
            if timeout is not None:
                field.FromTimedelta(timeout)
        if call.retry_policy is not None:
            attributes.retry_policy.CopyFrom(call.retry_policy.to_proto())
        for name, value in call.headers.items():
            attributes.header.fields[name].CopyFrom(value)
        command = command_pb2.Command(start_child_workflow_execution=attributes)
        self._commands.append(command)
        child = _Child(
            workflow_id=call.id,
            workflow_type=call.workflow_type,
            result_type=call.result_type,
            command=command,
            started=self._loop.create_future(),
            outcome=self._loop.create_future(),
        )
        self._by_command[id(command)] = child
        child.handle = ChildWorkflowHandle(
            self._await(child),
            loop=self._loop,
            id=call.id,
            workflow_type=call.workflow_type,
            started=child.started,
        )
        child.handle.add_done_callback(functools.partial(self._on_handle_done, child))
        self._dag.track_task(child.handle)
        return child.handle

    def signal(self, workflow_id: str, signal_name: str, args: Sequence[Any]) -> asyncio.Future[None]:
        """Issues a SignalExternalWorkflowExecution command; the future resolves once it is delivered."""
        command = command_pb2.Command(
            signal_external_workflow_execution=command_pb2.SignalExternalWorkflowExecutionCommandAttributes(
                workflow_id=workflow_id,
                signal_name=signal_name,
                input=self._converter.to_payloads(args),
                child_workflow_only=True,
            )
        )
        self._commands.append(command)
        delivered: asyncio.Future[None] = self._loop.create_future()
        self._signals_by_command[id(command)] = (command, delivered)
        delivered.add_done_callback(functools.partial(self._on_signal_done, command))
        return delivered

    def on_initiated(self, event_id: int, command: command_pb2.Command) -> None:
        """History matched a start command with its StartChildWorkflowExecutionInitiated event."""
        self._by_initiated_event[event_id] = self._by_command.pop(id(command))

    def on_signal_initiated(self, event_id: int, command: command_pb2.Command) -> None:
        """History matched a signal command with its SignalExternalWorkflowExecutionInitiated event."""
        self._signals_by_initiated_event[event_id] = self._signals_by_command.pop(id(command))

    def resolve(self, event: common_pb2.HistoryEvent, attributes: ChildEventAttributes) -> None:
        """Delivers an event of a child's start or close."""
        initiated_event_id = attributes["initiated_event_id"]
        child = self._by_initiated_event.get(initiated_event_id)
        if child is None:
            raise ValueError(
                f"malformed history: event {event.event_id} {event.event_type} refers to event "
                f"{initiated_event_id}, which is not a StartChildWorkflowExecutionInitiated event of this run"
            )
        if event.event_type == EventType.CHILD_WORKFLOW_EXECUTION_STARTED:
            attributes = cast(schema.ChildWorkflowExecutionStartedAttributes, attributes)
            child.run_id = attributes["run_id"]
            child.started_event_id = event.event_id
            if not child.started.done():
                child.started.set_result(child.run_id)
            return
        if child.outcome.done():
            return
        if event.event_type == EventType.CHILD_WORKFLOW_EXECUTION_COMPLETED:
            attributes = cast(schema.ChildWorkflowExecutionCompletedAttributes, attributes)
            child.outcome.set_result(schema.payloads_from_json(attributes.get("result")))
            return
        error = self._error(child, event, attributes, initiated_event_id)
        if not child.started.done():
            child.started.set_exception(error)
        child.outcome.set_exception(error)

    def resolve_signal(self, event: common_pb2.HistoryEvent, attributes: SignalChildOutcomeAttributes) -> None:
        """Delivers the outcome of a signal to a child."""
        initiated_event_id = attributes["initiated_event_id"]
        entry = self._signals_by_initiated_event.pop(initiated_event_id, None)
        if entry is None:
            raise ValueError(
                f"malformed history: event {event.event_id} {event.event_type} refers to event "
                f"{initiated_event_id}, which is not a SignalExternalWorkflowExecutionInitiated event of this run"
            )
        command, delivered = entry
        if delivered.done():
            return  # the awaiting code was cancelled meanwhile
        if event.event_type == EventType.EXTERNAL_WORKFLOW_EXECUTION_SIGNALED:
            delivered.set_result(None)
            return
        signal = command.signal_external_workflow_execution
        delivered.set_exception(
            exceptions.ApplicationError(
                f"could not signal {signal.signal_name!r} to child workflow {signal.workflow_id!r}: it has closed",
                type="ExternalWorkflowExecutionNotFound",
                non_retryable=True,
            )
        )

    async def _await(self, child: _Child) -> Any:
        """The body of a child's handle: waits for its outcome, applies cancellation."""
        while True:
            try:
                # Shielded: cancelling the handle asks the child to cancel and keeps waiting.
                payloads = await asyncio.shield(child.outcome)
            except asyncio.CancelledError:
                if self._cancel(child):
                    continue
                raise
            except exceptions.ChildWorkflowError as error:
                if child.cancel_requested and isinstance(error.cause, exceptions.CancelledError):
                    raise asyncio.CancelledError(str(error)) from error
                raise
            if not payloads.payloads:
                return None
            return self._converter.from_payload(payloads.payloads[0], child.result_type)

    def _on_handle_done(self, child: _Child, handle: ChildWorkflowHandle[Any, Any]) -> None:
        # A handle cancelled before its first step never ran _await.
        if handle.cancelled():
            self._cancel(child)

    def _cancel(self, child: _Child) -> bool:
        """Asks the child to cancel; returns whether to keep waiting for its outcome."""
        if child.outcome.done():
            return False
        if self._commands.discard_unsent(child.command):
            # The server never heard of it: no outcome will come.
            self._by_command.pop(id(child.command), None)
            child.started.cancel()
            child.outcome.cancel()
            return False
        if not child.cancel_requested:
            child.cancel_requested = True
            self._commands.append(
                command_pb2.Command(
                    request_cancel_external_workflow_execution=(
                        command_pb2.RequestCancelExternalWorkflowExecutionCommandAttributes(
                            workflow_id=child.workflow_id, run_id=child.run_id, child_workflow_only=True
                        )
                    )
                )
            )
        return True

    def _on_signal_done(self, command: command_pb2.Command, delivered: asyncio.Future[None]) -> None:
        # Cancelled before it was sent: the signal is not sent at all.
        if delivered.cancelled() and self._commands.discard_unsent(command):
            del self._signals_by_command[id(command)]

    def _error(
        self, child: _Child, event: common_pb2.HistoryEvent, attributes: ChildEventAttributes, initiated_event_id: int
    ) -> exceptions.ChildWorkflowError:
        event_type = event.event_type
        cause: exceptions.FailureError
        retry_state = exceptions.RetryState.NON_RETRYABLE_FAILURE
        # The child's last run, as the close event names it (StartChildWorkflowExecutionFailed names none).
        run_id = child.run_id
        if event_type == EventType.START_CHILD_WORKFLOW_EXECUTION_FAILED:
            outcome = "could not start: its workflow id already has a running execution"
            cause = exceptions.ApplicationError(
                f"workflow id {child.workflow_id!r} already has a running execution",
                type="WorkflowAlreadyStartedError",
                non_retryable=True,
            )
        elif event_type == EventType.CHILD_WORKFLOW_EXECUTION_FAILED:
            attributes = cast(schema.ChildWorkflowExecutionFailedAttributes, attributes)
            outcome = "failed"
            cause = failure_to_error(schema.failure_from_json(attributes.get("failure")), self._converter)
            retry_state = _retry_state(attributes.get("retry_state"), retry_state)
            run_id = attributes.get("run_id", run_id)
        elif event_type == EventType.CHILD_WORKFLOW_EXECUTION_CANCELED:
            attributes = cast(schema.ChildWorkflowExecutionCanceledAttributes, attributes)
            outcome = "was cancelled"
            details = self._converter.from_payloads(schema.payloads_from_json(attributes.get("details")))
            cause = exceptions.CancelledError("child workflow cancelled", *details)
            retry_state = exceptions.RetryState.CANCEL_REQUESTED
            run_id = attributes.get("run_id", run_id)
        elif event_type == EventType.CHILD_WORKFLOW_EXECUTION_TERMINATED:
            attributes = cast(schema.ChildWorkflowExecutionTerminatedAttributes, attributes)
            outcome = "was terminated"
            cause = exceptions.TerminatedError(attributes.get("reason") or "terminated")
            run_id = attributes.get("run_id", run_id)
        else:
            attributes = cast(schema.ChildWorkflowExecutionTimedOutAttributes, attributes)
            outcome = "timed out"
            timeout_type = attributes.get("timeout_type", "EXECUTION")
            cause = exceptions.TimeoutError(f"child workflow timed out ({timeout_type})", type=None)
            if "retry_state" in attributes:
                retry_state = _retry_state(attributes["retry_state"], retry_state)
            else:
                retry_state = exceptions.RetryState.TIMEOUT
            run_id = attributes.get("run_id", run_id)
        error = exceptions.ChildWorkflowError(
            f"child workflow {child.workflow_type!r} (id {child.workflow_id}) {outcome}",
            namespace=self._namespace,
            workflow_id=child.workflow_id,
            run_id=run_id,
            workflow_type=child.workflow_type,
            initiated_event_id=initiated_event_id,
            started_event_id=child.started_event_id,
            retry_state=retry_state,
        )
        error.__cause__ = cause
        return error


def _retry_state(recorded: str | None, default: exceptions.RetryState) -> exceptions.RetryState:
    """The RetryState member a close event records, or ``default`` when it records none (or an unknown one)."""
    return exceptions.RetryState.__members__.get(recorded or "", default)
