"""Worker interceptors (``flowforge.worker.Interceptor`` and friends), shaped like
Temporal's ``temporalio.worker`` interceptors: an interceptor wraps the next one of
a chain and may read or add headers, or do something around the call.

- Activities: :meth:`Interceptor.intercept_activity` wraps an
  :class:`ActivityInboundInterceptor` whose :meth:`~ActivityInboundInterceptor.execute_activity`
  runs the activity (its input carries the headers of the ScheduleActivityTask command).
- Workflows: :meth:`Interceptor.workflow_interceptor_class` names a
  :class:`WorkflowInboundInterceptor` class, made once per run: it sees the run start
  (:meth:`~WorkflowInboundInterceptor.execute_workflow`, with the start's headers) and
  each signal (:meth:`~WorkflowInboundInterceptor.handle_signal`), and in
  :meth:`~WorkflowInboundInterceptor.init` may wrap the :class:`WorkflowOutboundInterceptor`
  that starts activities and child workflows (and may add headers to them).

Differences from Temporal, kept minimal on purpose: ``handle_signal`` and the outbound
``start_*`` methods are plain (not ``async``) functions, because FlowForge's runtime
schedules signal handlers and commands synchronously; the outbound inputs are the
validated calls (:class:`StartActivityInput`, :class:`StartChildWorkflowInput`).
Workflow interceptors run inside the workflow: they must be deterministic, except for
what they only emit (a span, a log line), which replay may skip (check
:func:`is_replaying`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from flowforge._activity_calls import _ActivityCall
from flowforge._child_workflow_calls import _ChildWorkflowCall
from flowforge._workflow_runtime import _Runtime
from flowforge.api.v1 import common_pb2

if TYPE_CHECKING:
    from flowforge._activity_calls import ActivityHandle
    from flowforge._child_workflow_calls import ChildWorkflowHandle

__all__ = [
    "ActivityInboundInterceptor",
    "ExecuteActivityInput",
    "ExecuteWorkflowInput",
    "HandleSignalInput",
    "Interceptor",
    "StartActivityInput",
    "StartChildWorkflowInput",
    "WorkflowInboundInterceptor",
    "WorkflowInterceptorClassInput",
    "WorkflowOutboundInterceptor",
    "is_replaying",
]

#: The validated ``workflow.start_activity`` call: ``activity_type``, ``args``, the
#: options, and ``headers`` (name → Payload) an interceptor may add to.
StartActivityInput = _ActivityCall
#: The validated ``workflow.start_child_workflow`` call: ``workflow_type``, ``id``,
#: ``args``, the options, and ``headers`` an interceptor may add to.
StartChildWorkflowInput = _ChildWorkflowCall


def is_replaying() -> bool:
    """True while the running workflow code replays history it already produced
    (Temporal's ``workflow.unsafe.is_replaying()``); False outside a workflow."""
    runtime = _Runtime.current_or_none()
    return runtime is not None and runtime.workflow_is_replaying()


@dataclasses.dataclass
class ExecuteActivityInput:
    """An activity attempt about to run.

    Attributes:
        fn: The activity function.
        args: Its decoded arguments.
        headers: The headers of the ScheduleActivityTask command (name → Payload).
    """

    fn: Callable[..., Any]
    args: Sequence[Any]
    headers: Mapping[str, common_pb2.Payload]


class ActivityInboundInterceptor:
    """Runs an activity attempt; subclass and call ``self.next`` to wrap it."""

    def __init__(self, next: ActivityInboundInterceptor | None) -> None:
        self.next = next

    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        """Runs the activity and returns its result."""
        assert self.next is not None
        return await self.next.execute_activity(input)


@dataclasses.dataclass
class WorkflowInterceptorClassInput:
    """What :meth:`Interceptor.workflow_interceptor_class` is told (reserved for later use)."""


@dataclasses.dataclass
class ExecuteWorkflowInput:
    """A run about to start its run method.

    Attributes:
        type: The workflow class.
        workflow_type: The workflow type name.
        args: The decoded arguments of the run method.
        headers: The headers of the start (name → Payload), as recorded in history.
    """

    type: type
    workflow_type: str
    args: Sequence[Any]
    headers: Mapping[str, common_pb2.Payload]


@dataclasses.dataclass
class HandleSignalInput:
    """A signal about to be handed to its handler.

    Attributes:
        signal: The signal name.
        args: The decoded arguments.
        headers: The headers of the signal (name → Payload), as recorded in history.
    """

    signal: str
    args: Sequence[Any]
    headers: Mapping[str, common_pb2.Payload]


class WorkflowOutboundInterceptor:
    """Starts activities and child workflows for workflow code; subclass to wrap."""

    def __init__(self, next: WorkflowOutboundInterceptor | None) -> None:
        self.next = next

    def start_activity(self, input: StartActivityInput) -> ActivityHandle[Any]:
        """Schedules the activity (its command goes out with ``input.headers``)."""
        assert self.next is not None
        return self.next.start_activity(input)

    def start_child_workflow(self, input: StartChildWorkflowInput) -> ChildWorkflowHandle[Any, Any]:
        """Starts the child workflow (its command goes out with ``input.headers``)."""
        assert self.next is not None
        return self.next.start_child_workflow(input)


class WorkflowInboundInterceptor:
    """Sees a run start and its signals; subclass and call ``self.next`` to wrap."""

    def __init__(self, next: WorkflowInboundInterceptor | None) -> None:
        self.next = next

    def init(self, outbound: WorkflowOutboundInterceptor) -> None:
        """Called once before the run starts, with the outbound chain to wrap."""
        assert self.next is not None
        self.next.init(outbound)

    async def execute_workflow(self, input: ExecuteWorkflowInput) -> Any:
        """Runs the run method and returns its result."""
        assert self.next is not None
        return await self.next.execute_workflow(input)

    def handle_signal(self, input: HandleSignalInput) -> None:
        """Hands the signal to its handler (which runs on the workflow's loop)."""
        assert self.next is not None
        self.next.handle_signal(input)


class Interceptor:
    """A worker interceptor (Temporal's ``temporalio.worker.Interceptor``).

    Pass it to ``Worker(..., interceptors=[...])``, or to ``Client.connect(...,
    interceptors=[...])``: a client interceptor that is also a worker interceptor
    is used by every worker built on that client.
    """

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        """The activity chain with this interceptor in front of ``next``."""
        return next

    def workflow_interceptor_class(
        self, input: WorkflowInterceptorClassInput
    ) -> type[WorkflowInboundInterceptor] | None:
        """The class wrapping each run's inbound chain, or None."""
        return None


def activity_chain(interceptors: Sequence[Interceptor], root: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
    """``root`` wrapped by each interceptor, the first outermost."""
    chain = root
    for interceptor in reversed(interceptors):
        chain = interceptor.intercept_activity(chain)
    return chain


def workflow_chain(
    interceptors: Sequence[Interceptor], root: WorkflowInboundInterceptor, outbound: WorkflowOutboundInterceptor
) -> WorkflowInboundInterceptor:
    """``root`` wrapped by each interceptor's workflow class, the first outermost, initialised."""
    chain = root
    for interceptor in reversed(interceptors):
        cls = interceptor.workflow_interceptor_class(WorkflowInterceptorClassInput())
        if cls is not None:
            chain = cls(chain)
    chain.init(outbound)
    return chain
