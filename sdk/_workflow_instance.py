"""The deterministic runtime that replays workflow code against its history.

A worker keeps one :class:`WorkflowInstance` per execution it runs (and may
cache it between workflow tasks). ``activate(history)`` replays the history in
batches, as docs/history-events.md ("Workflow tasks and batches") describes,
checks that the code produces the commands history recorded, and returns the
commands of the current workflow task.

Workflow code runs on :class:`_WorkflowEventLoop`: an asyncio loop without I/O
whose clock is the workflow time and whose timers are durable (``call_later``
emits a StartTimer command and fires on the TimerFired event), so plain
``asyncio.sleep``, ``asyncio.wait_for`` and ``asyncio.timeout`` are durable too.
An activation runs synchronously in the caller's thread, inside the worker's
own event loop: it makes the workflow loop the running loop, runs ready
callbacks until every coroutine waits, and restores the worker's loop. It
never awaits anything of the worker's loop.
"""

from __future__ import annotations

import asyncio
import collections
import contextvars
import dataclasses
import functools
import inspect
import itertools
import json
import logging
import random
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from flowforge import exceptions, workflow
from flowforge._determinism import DeterminismGuard
from flowforge.api.v1 import command_pb2, common_pb2
from flowforge.common import _search_attributes_from_proto, _search_attributes_to_proto
from flowforge.converter import (
    DataConverter,
    default_converter,
    error_to_failure,
    failure_to_error,
    json_dict_to_message,
)
from flowforge.workflow import ActivityCancellationType, ActivityHandle

__all__ = ["HistoryContinuityError", "WorkflowInstance"]

_logger = logging.getLogger("flowforge.workflow")

# Events written for the commands of a completed workflow task; replay matches them.
_COMMAND_EVENT_TYPES = frozenset(
    {
        "ActivityTaskScheduled",
        "TimerStarted",
        "TimerCanceled",
        "ActivityTaskCancelRequested",
        "MarkerRecorded",
        "WorkflowExecutionCompleted",
        "WorkflowExecutionFailed",
        "WorkflowExecutionCanceled",
        "UpsertWorkflowSearchAttributes",
        "StartChildWorkflowExecutionInitiated",
        "RequestCancelExternalWorkflowExecutionInitiated",
        "SignalExternalWorkflowExecutionInitiated",
        "WorkflowExecutionContinuedAsNew",
    }
)
# Events that resolve a child workflow's start or its outcome.
_CHILD_EVENT_TYPES = frozenset(
    {
        "StartChildWorkflowExecutionFailed",
        "ChildWorkflowExecutionStarted",
        "ChildWorkflowExecutionCompleted",
        "ChildWorkflowExecutionFailed",
        "ChildWorkflowExecutionCanceled",
        "ChildWorkflowExecutionTerminated",
        "ChildWorkflowExecutionTimedOut",
    }
)
_SIGNAL_CHILD_OUTCOMES = frozenset({"ExternalWorkflowExecutionSignaled", "SignalExternalWorkflowExecutionFailed"})
# Events delivered to workflow code, in batches, when the next workflow task runs.
_DELIVERED_EVENT_TYPES = frozenset(
    {
        "WorkflowExecutionStarted",
        "ActivityTaskCompleted",
        "ActivityTaskFailed",
        "ActivityTaskTimedOut",
        "ActivityTaskCanceled",
        "TimerFired",
        "WorkflowExecutionCancelRequested",
        "WorkflowExecutionSignaled",
        *_CHILD_EVENT_TYPES,
        *_SIGNAL_CHILD_OUTCOMES,
    }
)
_WORKFLOW_TASK_NOT_COMPLETED = frozenset({"WorkflowTaskFailed", "WorkflowTaskTimedOut"})

# Versioning: the marker workflow.patched() records, and the keys of its details.
PATCH_MARKER_NAME = "patch"
_PATCH_ID_DETAIL = "patch_id"
_DEPRECATED_DETAIL = "deprecated"

_TIMEOUT_FIELDS = (
    "schedule_to_close_timeout",
    "schedule_to_start_timeout",
    "start_to_close_timeout",
    "heartbeat_timeout",
)


class HistoryContinuityError(RuntimeError):
    """The history does not continue from where this instance stopped.

    Raised when a new instance gets a history that does not start at event 1,
    when a cached instance gets a history that does not extend the events it
    processed (or that shows the workflow task it ran failed), and when an
    instance is activated again after an activation raised. Replay the full
    history on a new instance.
    """


def _attributes(event: common_pb2.HistoryEvent) -> dict[str, Any]:
    return json.loads(event.attributes_json) if event.attributes_json else {}


def _signature(name: str, fields: dict[str, str]) -> str:
    if not fields:
        return name
    return f"{name}({', '.join(f'{key}={value!r}' for key, value in fields.items())})"


def _command_signature(command: command_pb2.Command) -> tuple[str, str, dict[str, str]]:
    """The command's name, the event type history records for it, and the fields replay compares."""
    kind = command.WhichOneof("attributes")
    if kind == "schedule_activity_task":
        attributes = command.schedule_activity_task
        fields = {"activity_type": attributes.activity_type, "activity_id": attributes.activity_id}
        return "ScheduleActivityTask", "ActivityTaskScheduled", fields
    if kind == "start_timer":
        return "StartTimer", "TimerStarted", {"timer_id": command.start_timer.timer_id}
    if kind == "cancel_timer":
        return "CancelTimer", "TimerCanceled", {"timer_id": command.cancel_timer.timer_id}
    if kind == "request_cancel_activity_task":
        fields = {"activity_id": command.request_cancel_activity_task.activity_id}
        return "RequestCancelActivityTask", "ActivityTaskCancelRequested", fields
    if kind == "record_marker":
        return "RecordMarker", "MarkerRecorded", _marker_fields(command.record_marker.details)
    if kind == "complete_workflow_execution":
        return "CompleteWorkflowExecution", "WorkflowExecutionCompleted", {}
    if kind == "fail_workflow_execution":
        return "FailWorkflowExecution", "WorkflowExecutionFailed", {}
    if kind == "cancel_workflow_execution":
        return "CancelWorkflowExecution", "WorkflowExecutionCanceled", {}
    if kind == "upsert_workflow_search_attributes":
        names = command.upsert_workflow_search_attributes.search_attributes.indexed_fields
        return "UpsertWorkflowSearchAttributes", "UpsertWorkflowSearchAttributes", {"names": ",".join(sorted(names))}
    if kind == "start_child_workflow_execution":
        child = command.start_child_workflow_execution
        fields = {"workflow_type": child.workflow_type, "workflow_id": child.workflow_id}
        return "StartChildWorkflowExecution", "StartChildWorkflowExecutionInitiated", fields
    if kind == "request_cancel_external_workflow_execution":
        fields = {"workflow_id": command.request_cancel_external_workflow_execution.workflow_id}
        return "RequestCancelExternalWorkflowExecution", "RequestCancelExternalWorkflowExecutionInitiated", fields
    if kind == "signal_external_workflow_execution":
        signal = command.signal_external_workflow_execution
        fields = {"workflow_id": signal.workflow_id, "signal_name": signal.signal_name}
        return "SignalExternalWorkflowExecution", "SignalExternalWorkflowExecutionInitiated", fields
    if kind == "continue_as_new_workflow_execution":
        fields = {"workflow_type": command.continue_as_new_workflow_execution.workflow_type}
        return "ContinueAsNewWorkflowExecution", "WorkflowExecutionContinuedAsNew", fields
    raise ValueError(f"unknown command {kind!r}")


def _marker_fields(details: Mapping[str, common_pb2.Payloads]) -> dict[str, str]:
    """What replay compares of a marker: its patch id (the deprecated flag may change)."""
    patch_id = details.get(_PATCH_ID_DETAIL)
    return {"patch_id": str(default_converter.from_payloads(patch_id)[0]) if patch_id is not None else ""}


def _recorded_marker_details(attributes: dict[str, Any]) -> dict[str, common_pb2.Payloads]:
    details = attributes.get("details") or {}
    return {key: json_dict_to_message(value, common_pb2.Payloads) for key, value in details.items()}


def _parameter_hints(fn: Callable[..., Any]) -> list[Any]:
    """The type hints of a handler's parameters after ``self``, in order (None where absent)."""
    try:
        hints = typing.get_type_hints(fn)
    except (NameError, TypeError):
        hints = {}
    parameters = list(inspect.signature(fn).parameters.values())[1:]
    return [hints.get(parameter.name) for parameter in parameters]


def _describe_command(command: command_pb2.Command) -> str:
    name, _, fields = _command_signature(command)
    return _signature(name, fields)


def _is_cancellation(error: exceptions.FailureError) -> bool:
    return isinstance(error, exceptions.CancelledError) or (
        isinstance(error, exceptions.ActivityError) and isinstance(error.cause, exceptions.CancelledError)
    )


class _DurableTimer(asyncio.TimerHandle):
    """A ``call_later`` handle backed by a StartTimer command."""

    __slots__ = ("command", "timer_id")

    def __init__(
        self,
        timer_id: str,
        command: command_pb2.Command,
        when: float,
        callback: Callable[..., Any],
        args: Sequence[Any],
        loop: asyncio.AbstractEventLoop,
        context: contextvars.Context | None,
    ) -> None:
        super().__init__(when, callback, args, loop, context)
        self.timer_id = timer_id
        self.command = command


@dataclasses.dataclass(eq=False)
class _Activity:
    activity_id: str
    activity_type: str
    result_type: Any
    cancellation_type: ActivityCancellationType
    command: command_pb2.Command
    # Resolved with the result Payloads, or an ActivityError, by the outcome event.
    outcome: asyncio.Future[common_pb2.Payloads]
    handle: ActivityHandle = dataclasses.field(init=False)
    cancel_requested: bool = False


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
    handle: workflow.ChildWorkflowHandle = dataclasses.field(init=False)
    run_id: str = ""
    started_event_id: int = 0
    cancel_requested: bool = False


class _WorkflowEventLoop(asyncio.AbstractEventLoop):
    """An asyncio loop for workflow code: no I/O, workflow time, durable timers.

    It implements what workflow code may use; the rest of the loop API (sockets,
    subprocesses, executors, ...) raises ``NotImplementedError``.
    """

    def __init__(self, instance: WorkflowInstance) -> None:
        self._instance = instance
        self._ready: collections.deque[asyncio.Handle] = collections.deque()
        self._conditions: list[tuple[Callable[[], bool], asyncio.Future[None]]] = []
        self._running = False

    @property
    def _flowforge_runtime(self) -> WorkflowInstance:
        """The runtime behind the ``flowforge.workflow`` functions while this loop runs."""
        return self._instance

    def run_until_quiescent(self) -> None:
        """Runs ready callbacks, then satisfied wait conditions, until every coroutine waits."""
        outer_loop = asyncio.events._get_running_loop()
        asyncio.events._set_running_loop(self)
        self._running = True
        try:
            while True:
                while self._ready:
                    handle = self._ready.popleft()
                    if not handle.cancelled():
                        handle._run()
                if not self._resolve_first_satisfied_condition():
                    return
        finally:
            self._running = False
            asyncio.events._set_running_loop(outer_loop)

    def ready_count(self) -> int:
        """How many callbacks wait to run."""
        return len(self._ready)

    def discard_ready_after(self, count: int) -> bool:
        """Cancels the callbacks queued after the first ``count``; True if there were any."""
        discarded = False
        while len(self._ready) > count:
            handle = self._ready.pop()
            task = getattr(handle._callback, "__self__", None)  # type: ignore[attr-defined]
            if isinstance(task, asyncio.Task):
                task.get_coro().close()  # it never ran; closing spares a "never awaited" warning
            handle.cancel()
            discarded = True
        return discarded

    def enqueue(self, handle: asyncio.Handle) -> None:
        """Runs ``handle`` in the next ``run_until_quiescent``."""
        self._ready.append(handle)

    def wait_for_condition(self, fn: Callable[[], bool]) -> asyncio.Future[None]:
        """A future resolved once ``fn()`` is true when the loop is otherwise idle."""
        future = self.create_future()
        self._conditions.append((fn, future))
        return future

    def _resolve_first_satisfied_condition(self) -> bool:
        # One at a time: resolving one lets code run that may change the others.
        self._conditions = [(fn, future) for fn, future in self._conditions if not future.done()]
        for entry in self._conditions:
            fn, future = entry
            try:
                satisfied = fn()
            except Exception as error:
                self._conditions.remove(entry)
                future.set_exception(error)
                return True
            if satisfied:
                self._conditions.remove(entry)
                future.set_result(None)
                return True
        return False

    # asyncio.AbstractEventLoop

    def time(self) -> float:
        return self._instance._time

    def call_soon(  # type: ignore[override]
        self, callback: Callable[..., Any], *args: Any, context: contextvars.Context | None = None
    ) -> asyncio.Handle:
        handle = asyncio.Handle(callback, args, self, context)
        self._ready.append(handle)
        return handle

    def call_later(  # type: ignore[override]
        self, delay: float, callback: Callable[..., Any], *args: Any, context: contextvars.Context | None = None
    ) -> asyncio.TimerHandle:
        if delay <= 0:
            handle = asyncio.TimerHandle(self.time(), callback, args, self, context)
            self._ready.append(handle)
            return handle
        return self._instance._start_timer(delay, callback, args, context)

    def call_at(  # type: ignore[override]
        self, when: float, callback: Callable[..., Any], *args: Any, context: contextvars.Context | None = None
    ) -> asyncio.TimerHandle:
        return self.call_later(when - self.time(), callback, *args, context=context)

    def _timer_handle_cancelled(self, handle: asyncio.TimerHandle) -> None:
        if isinstance(handle, _DurableTimer):
            self._instance._cancel_timer(handle)

    def create_future(self) -> asyncio.Future[Any]:
        return asyncio.Future(loop=self)

    def create_task(
        self, coro: Any, *, name: str | None = None, context: contextvars.Context | None = None
    ) -> asyncio.Task[Any]:
        task = asyncio.Task(coro, loop=self, name=name, context=context)
        self._instance._track_task(task)
        return task

    def get_debug(self) -> bool:
        return False

    def is_running(self) -> bool:
        return self._running

    def is_closed(self) -> bool:
        return False

    def call_exception_handler(self, context: dict[str, Any]) -> None:
        # An exception in a plain callback, or one no task retrieved: report it
        # like asyncio's default handler does.
        _logger.error(
            "%s (workflow %s)",
            context.get("message", "unhandled exception in workflow code"),
            self._instance._workflow_id,
            exc_info=context.get("exception"),
        )


class WorkflowInstance(workflow._Runtime):
    """One workflow run, replayed from its history by a worker.

    Create one per run. A worker may keep it after a workflow task and call
    :meth:`activate` again with the longer history; after :meth:`activate`
    raises, the instance is spent and the next call raises
    :class:`HistoryContinuityError`.

    Args:
        definition: The workflow, e.g. ``workflow._Definition.from_class(Onboarding)``.
        namespace: The execution's namespace.
        workflow_id: The execution's workflow id.
        run_id: The run's id; it seeds ``workflow.random()``, so replays must use the same one.
        task_queue: The workflow's task queue.
        converter: Encodes arguments and results.
    """

    def __init__(
        self,
        definition: workflow._Definition,
        *,
        namespace: str,
        workflow_id: str,
        run_id: str,
        task_queue: str,
        converter: DataConverter = default_converter,
    ) -> None:
        self._definition = definition
        self._namespace = namespace
        self._workflow_id = workflow_id
        self._run_id = run_id
        self._task_queue = task_queue
        self._converter = converter
        self._loop = _WorkflowEventLoop(self)  # type: ignore[abstract]  # see its docstring
        self._random = random.Random(run_id)
        self._info: workflow.Info | None = None
        self._memo = common_pb2.Memo()
        self._run_task: asyncio.Task[Any] | None = None
        self._cancel_requested = False
        self._closed = False
        self._object: Any = None
        # A FailureError raised by a signal handler: it fails the workflow.
        self._handler_failure: exceptions.FailureError | None = None
        # Any other exception of a signal handler: it fails the workflow task.
        self._handler_error: BaseException | None = None

        # Where replay stands.
        self._last_event_id = 0
        self._last_event_type = ""
        self._spent = False
        self._pending_batch: list[common_pb2.HistoryEvent] = []
        self._time = 0.0
        self._now = datetime.fromtimestamp(0, UTC)
        self._replaying = False
        # Commands of the running activation, in order.
        self._commands: list[command_pb2.Command] = []
        # Commands of the last activation that history has not matched yet.
        self._unmatched: collections.deque[command_pb2.Command] = collections.deque()
        self._unmatched_task_started_event_id = 0
        # The last activation was the current workflow task: the next event must complete it.
        self._awaiting_task_close = False

        # Versioning: the WorkflowTaskCompleted event id of each patch marker in the
        # history given to activate() (so replay knows where each was recorded), and
        # what patched() answered per patch id.
        self._patch_markers: dict[str, int] = {}
        self._patches_memo: dict[str, bool] = {}
        self._running_task_completed_event_id = 0

        # Activities and timers, by their deterministic ids.
        self._activity_seq = 0
        self._timer_seq = 0
        self._activities: dict[str, _Activity] = {}
        self._activities_by_scheduled_event: dict[int, _Activity] = {}
        self._timers: dict[str, _DurableTimer] = {}

        # Child workflows: by their command until history matches it, then by the
        # StartChildWorkflowExecutionInitiated event id.
        self._children_by_command: dict[int, _Child] = {}
        self._children_by_initiated_event: dict[int, _Child] = {}
        # Signals to children, the same way.
        self._child_signals_by_command: dict[int, tuple[command_pb2.Command, asyncio.Future[None]]] = {}
        self._child_signals_by_initiated_event: dict[int, tuple[command_pb2.Command, asyncio.Future[None]]] = {}

        # DAG edges. Each task keeps the frontier of the activities whose
        # outcome it observed (those no other observed activity depends on);
        # each activity keeps the frontier it was scheduled with.
        self._frontiers: dict[asyncio.Task[Any] | None, set[int]] = {}
        self._dependencies: dict[int, tuple[int, ...]] = {}

    @property
    def last_event_id(self) -> int:
        """The id of the last history event processed; 0 for a new instance."""
        return self._last_event_id

    def activate(self, history: Sequence[common_pb2.HistoryEvent]) -> list[command_pb2.Command]:
        """Replays the whole history (the first call) or the events past the last one
        it processed (later calls, for a worker cache), runs the last batch, and
        returns the new commands of the current workflow task.

        Args:
            history: The run's history from event 1, or (for a cached instance)
                at least the events after :attr:`last_event_id`.

        Returns:
            The commands of the current workflow task (the last
            ``WorkflowTaskStarted``, if nothing closes it), else an empty list.

        Raises:
            NonDeterminismError: The code did not produce the commands history
                recorded, or called a nondeterministic function.
            HistoryContinuityError: The history does not continue from where
                this instance stopped; replay it on a new instance.
            Exception: Any other exception from workflow code that is not a
                ``FailureError`` (it fails the workflow task, not the workflow).
        """
        if self._spent:
            raise HistoryContinuityError(
                "this instance failed an earlier activation; replay the history on a new instance"
            )
        try:
            events = self._new_events_with_successors(history)
            self._note_patch_markers(event for event, _ in events)
            for event, following in events:
                self._process(event, following)
                self._last_event_id = event.event_id
                self._last_event_type = event.event_type
            if self._awaiting_task_close:
                return list(self._unmatched)
            self._check_all_commands_matched()
            return []
        except BaseException:
            self._spent = True
            raise

    def _new_events_with_successors(
        self, history: Sequence[common_pb2.HistoryEvent]
    ) -> list[tuple[common_pb2.HistoryEvent, common_pb2.HistoryEvent | None]]:
        """The events after the last processed one, each with the event that follows it."""
        history = list(history)
        processed = next((e for e in history if e.event_id == self._last_event_id), None)
        if processed is not None and processed.event_type != self._last_event_type:
            raise HistoryContinuityError(
                f"history event {processed.event_id} is {processed.event_type}, but this "
                f"instance processed {self._last_event_type} as that event"
            )
        events = [e for e in history if e.event_id > self._last_event_id]
        expected_id = self._last_event_id + 1
        if not events:
            raise HistoryContinuityError(
                f"the history has no event after event {self._last_event_id}, which this instance already processed"
            )
        if events[0].event_id != expected_id:
            raise HistoryContinuityError(
                f"the history continues with event {events[0].event_id}, but this instance "
                f"needs event {expected_id} next"
            )
        for previous, event in itertools.pairwise(events):
            if event.event_id != previous.event_id + 1:
                raise ValueError(f"history has a gap: event {event.event_id} follows event {previous.event_id}")
        return list(zip(events, [*events[1:], None], strict=True))

    # ----------------------------------------------------------------- replay

    def _process(self, event: common_pb2.HistoryEvent, following: common_pb2.HistoryEvent | None) -> None:
        event_type = event.event_type
        if self._awaiting_task_close:
            self._awaiting_task_close = False
            if event_type != "WorkflowTaskCompleted":
                raise HistoryContinuityError(
                    f"the workflow task this instance ran (started at event "
                    f"{self._unmatched_task_started_event_id}) ended with event {event.event_id} "
                    f"{event_type}, so the state it left behind was discarded"
                )
        elif event_type in _COMMAND_EVENT_TYPES:
            self._match_command_event(event)
        elif event_type == "WorkflowTaskStarted":
            self._on_workflow_task_started(event, following)
        elif event_type in _DELIVERED_EVENT_TYPES:
            self._pending_batch.append(event)

    def _on_workflow_task_started(
        self, event: common_pb2.HistoryEvent, following: common_pb2.HistoryEvent | None
    ) -> None:
        self._check_all_commands_matched()
        if following is not None and following.event_type in _WORKFLOW_TASK_NOT_COMPLETED:
            return  # It produced no commands; its events are delivered with the next task.
        if following is not None and following.event_type != "WorkflowTaskCompleted":
            raise ValueError(
                f"malformed history: event {following.event_id} {following.event_type} follows "
                f"WorkflowTaskStarted event {event.event_id}"
            )
        self._run_workflow_task(event, replaying=following is not None)
        self._awaiting_task_close = following is None

    def _run_workflow_task(self, started: common_pb2.HistoryEvent, *, replaying: bool) -> None:
        # Nothing is written between a WorkflowTaskStarted and the event that closes it.
        self._running_task_completed_event_id = started.event_id + 1
        self._time = started.event_time.ToNanoseconds() / 1e9
        self._now = started.event_time.ToDatetime(tzinfo=UTC)
        self._replaying = replaying
        self._commands = []
        self._deliver_pending_batch_and_run()
        if self._handler_error is not None:
            raise self._handler_error
        self._close_if_finished()
        self._unmatched = collections.deque(self._commands)
        self._unmatched_task_started_event_id = started.event_id

    def _match_command_event(self, event: common_pb2.HistoryEvent) -> None:
        attributes = _attributes(event)
        event_fields = self._command_event_fields(event, attributes)
        if self._is_unclaimed_deprecated_patch(event, attributes, event_fields):
            return
        recorded = f"history event {event.event_id} {_signature(event.event_type, event_fields)}"
        if not self._unmatched:
            raise exceptions.NonDeterminismError(
                f"{recorded} has no matching command: the workflow produced no further command "
                f"in the workflow task started at event {self._unmatched_task_started_event_id}"
            )
        command = self._unmatched.popleft()
        _, expected_event_type, command_fields = _command_signature(command)
        if (event.event_type, event_fields) != (expected_event_type, command_fields):
            raise exceptions.NonDeterminismError(
                f"{recorded} does not match the command the workflow produced: {_describe_command(command)}"
            )
        if event.event_type == "ActivityTaskScheduled":
            self._activities_by_scheduled_event[event.event_id] = self._activities[event_fields["activity_id"]]
        elif event.event_type == "StartChildWorkflowExecutionInitiated":
            self._children_by_initiated_event[event.event_id] = self._children_by_command.pop(id(command))
        elif event.event_type == "SignalExternalWorkflowExecutionInitiated":
            self._child_signals_by_initiated_event[event.event_id] = self._child_signals_by_command.pop(id(command))

    def _command_event_fields(self, event: common_pb2.HistoryEvent, attributes: dict[str, Any]) -> dict[str, str]:
        """The fields of a command event that replay compares with the command."""
        if event.event_type == "ActivityTaskScheduled":
            return {
                "activity_type": str(attributes.get("activity_type", "")),
                "activity_id": str(attributes.get("activity_id", "")),
            }
        if event.event_type in ("TimerStarted", "TimerCanceled"):
            return {"timer_id": str(attributes.get("timer_id", ""))}
        if event.event_type == "MarkerRecorded":
            return _marker_fields(_recorded_marker_details(attributes))
        if event.event_type == "ActivityTaskCancelRequested":
            activity = self._activities_by_scheduled_event.get(int(attributes.get("scheduled_event_id", 0)))
            return {"activity_id": activity.activity_id if activity is not None else ""}
        if event.event_type == "UpsertWorkflowSearchAttributes":
            # Names only: a new deployment may compute other values without breaking replay.
            names = (attributes.get("search_attributes") or {}).get("indexed_fields") or {}
            return {"names": ",".join(sorted(names))}
        if event.event_type in ("StartChildWorkflowExecutionInitiated", "WorkflowExecutionContinuedAsNew"):
            fields = {"workflow_type": str(attributes.get("workflow_type", ""))}
            if event.event_type == "StartChildWorkflowExecutionInitiated":
                fields["workflow_id"] = str(attributes.get("workflow_id", ""))
            return fields
        if event.event_type == "RequestCancelExternalWorkflowExecutionInitiated":
            return {"workflow_id": str(attributes.get("workflow_id", ""))}
        if event.event_type == "SignalExternalWorkflowExecutionInitiated":
            return {
                "workflow_id": str(attributes.get("workflow_id", "")),
                "signal_name": str(attributes.get("signal_name", "")),
            }
        return {}

    def _check_all_commands_matched(self) -> None:
        if self._unmatched:
            raise exceptions.NonDeterminismError(
                f"the workflow produced {_describe_command(self._unmatched[0])} in the workflow "
                f"task started at event {self._unmatched_task_started_event_id}, but history "
                "records no event for it: the task's recorded commands end before it"
            )

    # ----------------------------------------------------------------- delivering events

    def _deliver(self, event: common_pb2.HistoryEvent) -> None:
        attributes = _attributes(event)
        if event.event_type == "WorkflowExecutionStarted":
            self._start(event, attributes)
        elif event.event_type == "TimerFired":
            self._fire_timer(str(attributes["timer_id"]))
        elif event.event_type == "WorkflowExecutionCancelRequested":
            self._request_cancel()
        elif event.event_type == "WorkflowExecutionSignaled":
            self._deliver_signal(attributes)
        elif event.event_type in _CHILD_EVENT_TYPES:
            self._resolve_child(event, attributes)
        elif event.event_type in _SIGNAL_CHILD_OUTCOMES:
            self._resolve_child_signal(event, attributes)
        else:
            self._resolve_activity(event, attributes)

    def _start(self, event: common_pb2.HistoryEvent, attributes: dict[str, Any]) -> None:
        self._info = workflow.Info(
            workflow_id=self._workflow_id,
            run_id=self._run_id,
            workflow_type=self._definition.name,
            task_queue=self._task_queue,
            namespace=self._namespace,
            attempt=int(attributes.get("attempt", 1)),
            start_time=event.event_time.ToDatetime(tzinfo=UTC),
            search_attributes=_search_attributes_from_proto(
                json_dict_to_message(attributes.get("search_attributes"), common_pb2.SearchAttributes)
            ),
            parent=workflow.ParentInfo(
                namespace=attributes.get("parent_workflow_namespace", self._namespace),
                workflow_id=attributes["parent_workflow_id"],
                run_id=attributes["parent_run_id"],
            )
            if attributes.get("parent_run_id")
            else None,
            continued_run_id=attributes.get("continued_execution_run_id") or None,
        )
        self._memo = json_dict_to_message(attributes.get("memo"), common_pb2.Memo)
        payloads = json_dict_to_message(attributes.get("input"), common_pb2.Payloads)
        args = self._converter.from_payloads(payloads, self._definition.run_arg_types())
        self._run_task = self._loop.create_task(
            self._run_workflow(args), name=f"workflow {self._definition.name} {self._workflow_id}"
        )

    async def _run_workflow(self, args: list[Any]) -> Any:
        return await self._definition.run_fn(self._workflow_object(), *args)

    def _workflow_object(self) -> Any:
        """The instance of the workflow class, made on first use inside the loop
        (by the run method or a signal handler, whichever runs first)."""
        if self._object is None:
            self._object = self._definition.cls()
        return self._object

    def _request_cancel(self) -> None:
        if self._cancel_requested:
            return
        self._cancel_requested = True
        if self._run_task is not None:
            self._run_task.cancel()

    def _fire_timer(self, timer_id: str) -> None:
        timer = self._timers.pop(timer_id, None)
        if timer is not None:  # else the workflow cancelled it before it fired
            self._loop.enqueue(timer)

    def _resolve_activity(self, event: common_pb2.HistoryEvent, attributes: dict[str, Any]) -> None:
        scheduled_event_id = int(attributes["scheduled_event_id"])
        activity = self._activities_by_scheduled_event.get(scheduled_event_id)
        if activity is None:
            raise ValueError(
                f"malformed history: event {event.event_id} {event.event_type} refers to event "
                f"{scheduled_event_id}, which is not an ActivityTaskScheduled event of this run"
            )
        if activity.handle.done():
            return  # abandoned, or cancelled without waiting: nobody wants the outcome
        if event.event_type == "ActivityTaskCompleted":
            activity.outcome.set_result(json_dict_to_message(attributes.get("result"), common_pb2.Payloads))
        else:
            activity.outcome.set_exception(self._activity_error(activity, event, attributes))

    def _activity_error(
        self, activity: _Activity, event: common_pb2.HistoryEvent, attributes: dict[str, Any]
    ) -> exceptions.ActivityError:
        cause: exceptions.FailureError
        if event.event_type == "ActivityTaskCanceled":
            details = json_dict_to_message(attributes.get("details"), common_pb2.Payloads)
            cause = exceptions.CancelledError("activity cancelled", *self._converter.from_payloads(details))
            outcome = "was cancelled"
        else:
            failure = json_dict_to_message(attributes.get("failure"), common_pb2.Failure)
            cause = failure_to_error(failure, self._converter)
            outcome = "timed out" if event.event_type == "ActivityTaskTimedOut" else "failed"
        retry_state = attributes.get("retry_state")
        error = exceptions.ActivityError(
            f"activity {activity.activity_type!r} (id {activity.activity_id}) {outcome}",
            activity_type=activity.activity_type,
            activity_id=activity.activity_id,
            scheduled_event_id=int(attributes["scheduled_event_id"]),
            retry_state=exceptions.RetryState[retry_state] if retry_state else exceptions.RetryState.UNSPECIFIED,
        )
        error.__cause__ = cause
        return error

    def _close_if_finished(self) -> None:
        if self._handler_failure is not None and not self._closed:
            self._closed = True
            self._commands.append(
                command_pb2.Command(
                    fail_workflow_execution=command_pb2.FailWorkflowExecutionCommandAttributes(
                        failure=error_to_failure(self._handler_failure, self._converter)
                    )
                )
            )
            return
        task = self._run_task
        if self._closed or task is None or not task.done():
            return
        self._closed = True
        try:
            result = task.result()
        except asyncio.CancelledError as error:
            if not self._cancel_requested:
                raise RuntimeError(
                    "workflow code let asyncio.CancelledError escape, but nobody asked to cancel the workflow"
                ) from error
            self._commands.append(
                command_pb2.Command(cancel_workflow_execution=command_pb2.CancelWorkflowExecutionCommandAttributes())
            )
        except workflow.ContinueAsNewError as error:
            self._commands.append(self._continue_as_new_command(error))
        except exceptions.FailureError as error:
            if self._cancel_requested and _is_cancellation(error):
                self._commands.append(
                    command_pb2.Command(
                        cancel_workflow_execution=command_pb2.CancelWorkflowExecutionCommandAttributes()
                    )
                )
            else:
                failure = error_to_failure(error, self._converter)
                self._commands.append(
                    command_pb2.Command(
                        fail_workflow_execution=command_pb2.FailWorkflowExecutionCommandAttributes(failure=failure)
                    )
                )
        else:
            result_payloads = self._converter.to_payloads([result])
            self._commands.append(
                command_pb2.Command(
                    complete_workflow_execution=command_pb2.CompleteWorkflowExecutionCommandAttributes(
                        result=result_payloads
                    )
                )
            )

    # ----------------------------------------------------------------- signals and queries

    def _deliver_signal(self, attributes: dict[str, Any]) -> None:
        """Runs the signal's handler on the workflow loop, in history order.

        A signal the workflow has no handler for, or whose input does not fit the
        handler's parameters, is dropped with a warning (as Temporal does when no
        handler is ever registered); the execution goes on.
        """
        name = str(attributes.get("signal_name", ""))
        payloads = json_dict_to_message(attributes.get("input"), common_pb2.Payloads)
        definition = self._definition.signals.get(name)
        if definition is None:
            known = ", ".join(sorted(self._definition.signals)) or "none"
            self._loop.enqueue(
                asyncio.Handle(
                    workflow.logger.warning,
                    (f"dropping signal {name!r}: the workflow has no handler for it (handlers: {known})",),
                    self._loop,
                )
            )
            return
        try:
            args = self._converter.from_payloads(payloads, _parameter_hints(definition.fn))
            inspect.signature(definition.fn).bind(None, *args)
        except (TypeError, ValueError) as error:
            self._loop.enqueue(
                asyncio.Handle(
                    workflow.logger.warning,
                    (f"dropping signal {name!r}: its input does not fit the handler ({error})",),
                    self._loop,
                )
            )
            return
        if inspect.iscoroutinefunction(definition.fn):
            self._loop.create_task(self._run_async_signal_handler(definition.fn, args), name=f"signal {name}")
        else:
            self._loop.enqueue(asyncio.Handle(self._run_signal_handler, (definition.fn, args), self._loop))

    def _run_signal_handler(self, fn: Callable[..., Any], args: list[Any]) -> None:
        try:
            fn(self._workflow_object(), *args)
        except Exception as error:
            self._on_signal_handler_error(error)

    async def _run_async_signal_handler(self, fn: Callable[..., Any], args: list[Any]) -> None:
        try:
            await fn(self._workflow_object(), *args)
        except asyncio.CancelledError:
            if not self._cancel_requested:
                raise
        except Exception as error:
            self._on_signal_handler_error(error)

    def _on_signal_handler_error(self, error: Exception) -> None:
        # Temporal's rule, as for the run method: a FailureError fails the workflow,
        # anything else (a bug) fails the workflow task, which is retried.
        if isinstance(error, exceptions.FailureError):
            self._handler_failure = self._handler_failure or error
        else:
            self._handler_error = self._handler_error or error

    def query(self, query_type: str, args: common_pb2.Payloads) -> common_pb2.Payloads:
        """Answers a query from the state the last activation left.

        The handler runs on the workflow loop (so ``workflow.info()`` and friends
        work) under the determinism guard; it must not await or issue commands. A
        handler that tried leaves the instance spent (see :meth:`activate`).

        Raises:
            KeyError: The workflow has no query handler of that name; the message
                lists the ones it has.
            Exception: Whatever the handler raised, or a RuntimeError if it tried
                to change the execution (issue a command) or returned an awaitable.
        """
        definition = self._definition.queries.get(query_type)
        if definition is None:
            known = ", ".join(sorted(self._definition.queries)) or "none"
            raise KeyError(f"workflow {self._definition.name!r} has no query {query_type!r} (queries: {known})")
        values = self._converter.from_payloads(args, _parameter_hints(definition.fn))
        commands_before = len(self._commands)
        ready_before = self._loop.ready_count()
        outer_loop = asyncio.events._get_running_loop()
        asyncio.events._set_running_loop(self._loop)
        guard = self._determinism_guard(WorkflowInstance.query.__code__)
        try:
            with guard:
                result = definition.fn(self._workflow_object(), *values)
        finally:
            asyncio.events._set_running_loop(outer_loop)
            added = self._commands[commands_before:]
            del self._commands[commands_before:]
            scheduled = self._loop.discard_ready_after(ready_before)
        if guard.violation is not None:
            raise exceptions.NonDeterminismError(guard.violation)
        if added or scheduled or inspect.isawaitable(result):
            if inspect.iscoroutine(result):
                result.close()
            # What it started (an activity's sequence number, a task) is half undone:
            # the next activation must replay from scratch.
            self._spent = True
            raise RuntimeError(
                f"query handler {query_type!r} tried to change the workflow (awaited, or started an activity "
                "or a timer); a query handler only reads state"
            )
        return self._converter.to_payloads([result])

    def is_current(self, history: Sequence[common_pb2.HistoryEvent]) -> bool:
        """Whether this instance's state is what a replay of ``history`` would give:
        it processed every event of it that workflow code sees, and its last workflow
        task completed (the events after are only that task's completion and commands)."""
        if self._spent or self._last_event_id == 0:
            return False
        later = [e for e in history if e.event_id > self._last_event_id]
        return all(
            e.event_type in _COMMAND_EVENT_TYPES or e.event_type in ("WorkflowTaskCompleted", "WorkflowTaskScheduled")
            for e in later
        ) and (not self._awaiting_task_close or (bool(later) and later[0].event_type == "WorkflowTaskCompleted"))

    def run_pending_events(self) -> None:
        """Delivers events history holds past the last workflow task (e.g. a signal
        not yet processed) and runs the code on them, discarding its commands.

        For queries on a throw-away instance only: afterwards the instance no
        longer matches history and must not be activated again.
        """
        if not self._pending_batch:
            return
        self._spent = True
        self._replaying = True
        self._deliver_pending_batch_and_run()

    def _deliver_pending_batch_and_run(self) -> None:
        """Delivers the pending events and runs workflow code until it waits, under the guard.

        Raises:
            NonDeterminismError: The code called a nondeterministic function.
        """
        batch, self._pending_batch = self._pending_batch, []
        if any(event.event_type == "WorkflowExecutionStarted" for event in batch):
            # Temporal's order for the first activation: the handlers of signals that
            # came with the start (signal-with-start, or sent before any worker ran)
            # run before the run method begins. Stable: signals keep their order.
            batch.sort(key=lambda event: event.event_type != "WorkflowExecutionSignaled")
        for event in batch:
            self._deliver(event)
        guard = self._determinism_guard(_WorkflowEventLoop.run_until_quiescent.__code__)
        with guard:
            self._loop.run_until_quiescent()
        if guard.violation is not None:
            if self._run_task is not None and self._run_task.done() and not self._run_task.cancelled():
                self._run_task.exception()  # e.g. the refused connection: reported as the violation instead
            raise exceptions.NonDeterminismError(guard.violation)

    def _determinism_guard(self, boundary: types.CodeType) -> DeterminismGuard:
        """The guard for running this workflow's code from the function ``boundary``."""
        return DeterminismGuard(boundary=boundary, workflow_module=self._definition.cls.__module__)

    # ----------------------------------------------------------------- timers (for the loop)

    def _start_timer(
        self, delay: float, callback: Callable[..., Any], args: Sequence[Any], context: contextvars.Context | None
    ) -> _DurableTimer:
        self._timer_seq += 1
        timer_id = str(self._timer_seq)
        command = command_pb2.Command(start_timer=command_pb2.StartTimerCommandAttributes(timer_id=timer_id))
        command.start_timer.start_to_fire_timeout.FromTimedelta(timedelta(seconds=delay))
        self._commands.append(command)
        timer = _DurableTimer(timer_id, command, self._time + delay, callback, args, self._loop, context)
        self._timers[timer_id] = timer
        return timer

    def _cancel_timer(self, timer: _DurableTimer) -> None:
        if self._timers.pop(timer.timer_id, None) is None:
            return  # it already fired
        if not self._discard_unsent(timer.command):
            self._commands.append(
                command_pb2.Command(cancel_timer=command_pb2.CancelTimerCommandAttributes(timer_id=timer.timer_id))
            )

    def _discard_unsent(self, command: command_pb2.Command) -> bool:
        """Drops a command of the running activation; False when it was already sent."""
        for index, candidate in enumerate(self._commands):
            if candidate is command:
                del self._commands[index]
                return True
        return False

    # ----------------------------------------------------------------- DAG tracking (for the loop)

    def _track_task(self, task: asyncio.Task[Any]) -> None:
        """A new task inherits what its creator observed and hands back what it observes."""
        creator = asyncio.current_task(self._loop)
        self._frontiers[task] = set(self._frontiers.get(creator, ()))
        task.add_done_callback(functools.partial(self._merge_frontier, creator))
        # The pending tasks of an evicted instance are garbage, not a bug worth a log line.
        task._log_destroy_pending = False  # type: ignore[attr-defined]

    def _merge_frontier(self, creator: asyncio.Task[Any] | None, task: asyncio.Task[Any]) -> None:
        observed = self._frontiers.pop(task)
        creator_frontier = self._frontiers.get(creator)
        if creator_frontier is not None:
            for activity_seq in observed:
                self._add_to_frontier(creator_frontier, activity_seq)

    def _observe(self, activity: _Activity) -> None:
        self._add_to_frontier(self._frontiers[asyncio.current_task(self._loop)], int(activity.activity_id))

    def _add_to_frontier(self, frontier: set[int], observed: int) -> None:
        if any(self._depends_on(member, observed) for member in frontier):
            return  # already implied
        frontier.difference_update([member for member in frontier if self._depends_on(observed, member)])
        frontier.add(observed)

    def _depends_on(self, activity: int, candidate: int) -> bool:
        """Whether ``activity`` depends, directly or not, on ``candidate``."""
        # An activity is scheduled after its dependencies, so it has a higher
        # sequence number: the search never needs to go below ``candidate``.
        pending = [activity]
        visited: set[int] = set()
        while pending:
            for dependency in self._dependencies[pending.pop()]:
                if dependency == candidate:
                    return True
                if dependency > candidate and dependency not in visited:
                    visited.add(dependency)
                    pending.append(dependency)
        return False

    # ----------------------------------------------------------------- versioning (patched)

    def _note_patch_markers(self, events: Any) -> None:
        for event in events:
            if event.event_type != "MarkerRecorded":
                continue
            attributes = _attributes(event)
            if attributes.get("marker_name") != PATCH_MARKER_NAME:
                continue
            patch_id = _marker_fields(_recorded_marker_details(attributes))["patch_id"]
            completed_event_id = int(attributes.get("workflow_task_completed_event_id", 0))
            self._patch_markers.setdefault(patch_id, completed_event_id)

    def _is_unclaimed_deprecated_patch(
        self, event: common_pb2.HistoryEvent, attributes: dict[str, Any], event_fields: dict[str, str]
    ) -> bool:
        """A deprecated patch marker the code no longer asks for: replay skips it.

        That is what lets ``deprecate_patch(id)`` be deleted once the executions
        that ran the ``patched(id)`` version are gone.
        """
        if event.event_type != "MarkerRecorded" or attributes.get("marker_name") != PATCH_MARKER_NAME:
            return False
        deprecated = _recorded_marker_details(attributes).get(_DEPRECATED_DETAIL)
        if deprecated is None or not default_converter.from_payloads(deprecated)[0]:
            return False
        return not (self._unmatched and _command_signature(self._unmatched[0])[1:] == ("MarkerRecorded", event_fields))

    def workflow_patch(self, patch_id: str, *, deprecated: bool) -> bool:
        memoized = self._patches_memo.get(patch_id)
        if memoized is not None:
            return memoized
        recorded_at = self._patch_markers.get(patch_id)
        use_patch = not self._replaying or (
            recorded_at is not None and recorded_at <= self._running_task_completed_event_id
        )
        if use_patch:
            details = {
                _PATCH_ID_DETAIL: default_converter.to_payloads([patch_id]),
                _DEPRECATED_DETAIL: default_converter.to_payloads([deprecated]),
            }
            self._commands.append(
                command_pb2.Command(
                    record_marker=command_pb2.RecordMarkerCommandAttributes(
                        marker_name=PATCH_MARKER_NAME, details=details
                    )
                )
            )
        self._patches_memo[patch_id] = use_patch
        return use_patch

    # ----------------------------------------------------------------- workflow._Runtime

    def workflow_info(self) -> workflow.Info:
        if self._info is None:
            raise RuntimeError("the workflow has not started")
        return self._info

    def workflow_now(self) -> datetime:
        return self._now

    def workflow_is_replaying(self) -> bool:
        return self._replaying

    def workflow_random(self) -> random.Random:
        return self._random

    def workflow_wait_condition(self, fn: Callable[[], bool]) -> asyncio.Future[None]:
        return self._loop.wait_for_condition(fn)

    def workflow_upsert_search_attributes(self, attributes: Any) -> None:
        proto = _search_attributes_to_proto(attributes)
        if not proto.indexed_fields:
            raise ValueError("upsert_search_attributes needs at least one attribute")
        current = self.workflow_info().search_attributes
        for name in proto.indexed_fields:
            current.pop(name, None)
        # Through the wire form, so values read the same as after a replay from history.
        current.update(_search_attributes_from_proto(proto))
        self._commands.append(
            command_pb2.Command(
                upsert_workflow_search_attributes=command_pb2.UpsertWorkflowSearchAttributesCommandAttributes(
                    search_attributes=proto
                )
            )
        )

    def workflow_memo_value(self, key: str, type_hint: Any) -> Any:
        if key not in self._memo.fields:
            raise KeyError(key)
        return self._converter.from_payload(self._memo.fields[key], type_hint)

    def workflow_memo_keys(self) -> list[str]:
        return sorted(self._memo.fields)

    def workflow_start_activity(self, call: workflow._ActivityCall) -> ActivityHandle:
        input_payloads = self._converter.to_payloads(call.args)
        self._activity_seq += 1
        activity_id = str(self._activity_seq)
        dependencies = tuple(sorted(self._frontiers.get(asyncio.current_task(self._loop), ())))
        self._dependencies[self._activity_seq] = dependencies
        attributes = command_pb2.ScheduleActivityTaskCommandAttributes(
            activity_id=activity_id,
            activity_type=call.activity_type,
            task_queue=call.task_queue,
            input=input_payloads,
            depends_on_activity_ids=[str(seq) for seq in dependencies],
            cancellation_type=call.cancellation_type.value,
        )
        for field in _TIMEOUT_FIELDS:
            timeout = getattr(call, field)
            if timeout is not None:
                getattr(attributes, field).FromTimedelta(timeout)
        if call.retry_policy is not None:
            attributes.retry_policy.CopyFrom(call.retry_policy.to_proto())
        command = command_pb2.Command(schedule_activity_task=attributes)
        self._commands.append(command)

        activity = _Activity(
            activity_id=activity_id,
            activity_type=call.activity_type,
            result_type=call.result_type,
            cancellation_type=call.cancellation_type,
            command=command,
            outcome=self._loop.create_future(),
        )
        self._activities[activity_id] = activity
        activity.handle = ActivityHandle(
            self._await_activity(activity),
            loop=self._loop,
            activity_id=activity_id,
            activity_type=call.activity_type,
        )
        activity.handle.add_done_callback(functools.partial(self._on_activity_handle_done, activity))
        self._track_task(activity.handle)
        return activity.handle

    async def _await_activity(self, activity: _Activity) -> Any:
        """The body of an activity's handle: waits for the outcome, applies cancellation."""
        while True:
            try:
                # Shielded: cancelling the handle must not cancel the outcome,
                # which WAIT_CANCELLATION_COMPLETED still waits for.
                payloads = await asyncio.shield(activity.outcome)
            except asyncio.CancelledError:
                if self._cancel_activity(activity):
                    continue
                raise
            except exceptions.ActivityError as error:
                self._observe(activity)
                if activity.cancel_requested and isinstance(error.cause, exceptions.CancelledError):
                    # WAIT_CANCELLATION_COMPLETED, acknowledged: the await ends as
                    # every cancelled await does, whatever the cancellation type, so
                    # one `except asyncio.CancelledError` handles them all.
                    raise asyncio.CancelledError(str(error)) from error
                raise
            self._observe(activity)
            if not payloads.payloads:
                return None
            return self._converter.from_payload(payloads.payloads[0], activity.result_type)

    def _on_activity_handle_done(self, activity: _Activity, handle: ActivityHandle) -> None:
        # A handle cancelled before its first step never ran _await_activity.
        if handle.cancelled():
            self._cancel_activity(activity)

    def _cancel_activity(self, activity: _Activity) -> bool:
        """Applies the activity's cancellation type; returns whether to keep waiting for its outcome."""
        if activity.outcome.done():
            return False
        if self._discard_unsent(activity.command):
            activity.outcome.cancel()  # the server never heard of it: no outcome will come
            return False
        if activity.cancellation_type is ActivityCancellationType.ABANDON:
            return False
        if not activity.cancel_requested:
            activity.cancel_requested = True
            self._commands.append(
                command_pb2.Command(
                    request_cancel_activity_task=command_pb2.RequestCancelActivityTaskCommandAttributes(
                        activity_id=activity.activity_id
                    )
                )
            )
        return activity.cancellation_type is ActivityCancellationType.WAIT_CANCELLATION_COMPLETED

    # ----------------------------------------------------------------- child workflows and continue-as-new

    def workflow_start_child_workflow(self, call: workflow._ChildWorkflowCall) -> workflow.ChildWorkflowHandle:
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
        for field, timeout in (
            (attributes.workflow_execution_timeout, call.execution_timeout),
            (attributes.workflow_run_timeout, call.run_timeout),
            (attributes.workflow_task_timeout, call.task_timeout),
        ):
            if timeout is not None:
                field.FromTimedelta(timeout)
        if call.retry_policy is not None:
            attributes.retry_policy.CopyFrom(call.retry_policy.to_proto())
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
        self._children_by_command[id(command)] = child
        child.handle = workflow.ChildWorkflowHandle(
            self._await_child(child),
            loop=self._loop,
            id=call.id,
            workflow_type=call.workflow_type,
            started=child.started,
        )
        child.handle.add_done_callback(functools.partial(self._on_child_handle_done, child))
        self._track_task(child.handle)
        return child.handle

    async def _await_child(self, child: _Child) -> Any:
        """The body of a child's handle: waits for its outcome, applies cancellation."""
        while True:
            try:
                # Shielded: cancelling the handle asks the child to cancel and keeps waiting.
                payloads = await asyncio.shield(child.outcome)
            except asyncio.CancelledError:
                if self._cancel_child(child):
                    continue
                raise
            except exceptions.ChildWorkflowError as error:
                if child.cancel_requested and isinstance(error.cause, exceptions.CancelledError):
                    raise asyncio.CancelledError(str(error)) from error
                raise
            if not payloads.payloads:
                return None
            return self._converter.from_payload(payloads.payloads[0], child.result_type)

    def _on_child_handle_done(self, child: _Child, handle: workflow.ChildWorkflowHandle) -> None:
        # A handle cancelled before its first step never ran _await_child.
        if handle.cancelled():
            self._cancel_child(child)

    def _cancel_child(self, child: _Child) -> bool:
        """Asks the child to cancel; returns whether to keep waiting for its outcome."""
        if child.outcome.done():
            return False
        if self._discard_unsent(child.command):
            # The server never heard of it: no outcome will come.
            self._children_by_command.pop(id(child.command), None)
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

    def _resolve_child(self, event: common_pb2.HistoryEvent, attributes: dict[str, Any]) -> None:
        initiated_event_id = int(attributes["initiated_event_id"])
        child = self._children_by_initiated_event.get(initiated_event_id)
        if child is None:
            raise ValueError(
                f"malformed history: event {event.event_id} {event.event_type} refers to event "
                f"{initiated_event_id}, which is not a StartChildWorkflowExecutionInitiated event of this run"
            )
        if event.event_type == "ChildWorkflowExecutionStarted":
            child.run_id = str(attributes["run_id"])
            child.started_event_id = event.event_id
            if not child.started.done():
                child.started.set_result(child.run_id)
            return
        if child.outcome.done():
            return
        if event.event_type == "ChildWorkflowExecutionCompleted":
            child.outcome.set_result(json_dict_to_message(attributes.get("result"), common_pb2.Payloads))
            return
        error = self._child_error(child, event, attributes, initiated_event_id)
        if not child.started.done():
            child.started.set_exception(error)
        child.outcome.set_exception(error)

    def _child_error(
        self, child: _Child, event: common_pb2.HistoryEvent, attributes: dict[str, Any], initiated_event_id: int
    ) -> exceptions.ChildWorkflowError:
        event_type = event.event_type
        cause: exceptions.FailureError
        retry_state = exceptions.RetryState.__members__.get(
            attributes.get("retry_state", ""), exceptions.RetryState.NON_RETRYABLE_FAILURE
        )
        if event_type == "StartChildWorkflowExecutionFailed":
            outcome = "could not start: its workflow id already has a running execution"
            cause = exceptions.ApplicationError(
                f"workflow id {child.workflow_id!r} already has a running execution",
                type="WorkflowAlreadyStartedError",
                non_retryable=True,
            )
        elif event_type == "ChildWorkflowExecutionFailed":
            outcome = "failed"
            failure = json_dict_to_message(attributes.get("failure"), common_pb2.Failure)
            cause = failure_to_error(failure, self._converter)
        elif event_type == "ChildWorkflowExecutionCanceled":
            outcome = "was cancelled"
            details = json_dict_to_message(attributes.get("details"), common_pb2.Payloads)
            cause = exceptions.CancelledError("child workflow cancelled", *self._converter.from_payloads(details))
            retry_state = exceptions.RetryState.CANCEL_REQUESTED
        elif event_type == "ChildWorkflowExecutionTerminated":
            outcome = "was terminated"
            cause = exceptions.TerminatedError(str(attributes.get("reason") or "terminated"))
        else:
            outcome = "timed out"
            cause = exceptions.TimeoutError(
                f"child workflow timed out ({attributes.get('timeout_type', 'EXECUTION')})", type=None
            )
            if "retry_state" not in attributes:
                retry_state = exceptions.RetryState.TIMEOUT
        error = exceptions.ChildWorkflowError(
            f"child workflow {child.workflow_type!r} (id {child.workflow_id}) {outcome}",
            namespace=self._namespace,
            workflow_id=child.workflow_id,
            run_id=str(attributes.get("run_id", child.run_id)),
            workflow_type=child.workflow_type,
            initiated_event_id=initiated_event_id,
            started_event_id=child.started_event_id,
            retry_state=retry_state,
        )
        error.__cause__ = cause
        return error

    def workflow_signal_child(self, workflow_id: str, signal_name: str, args: Sequence[Any]) -> asyncio.Future[None]:
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
        self._child_signals_by_command[id(command)] = (command, delivered)
        delivered.add_done_callback(functools.partial(self._on_child_signal_done, command))
        return delivered

    def _on_child_signal_done(self, command: command_pb2.Command, delivered: asyncio.Future[None]) -> None:
        # Cancelled before it was sent: the signal is not sent at all.
        if delivered.cancelled() and self._discard_unsent(command):
            del self._child_signals_by_command[id(command)]

    def _resolve_child_signal(self, event: common_pb2.HistoryEvent, attributes: dict[str, Any]) -> None:
        initiated_event_id = int(attributes["initiated_event_id"])
        entry = self._child_signals_by_initiated_event.pop(initiated_event_id, None)
        if entry is None:
            raise ValueError(
                f"malformed history: event {event.event_id} {event.event_type} refers to event "
                f"{initiated_event_id}, which is not a SignalExternalWorkflowExecutionInitiated event of this run"
            )
        command, delivered = entry
        if delivered.done():
            return  # the awaiting code was cancelled meanwhile
        if event.event_type == "ExternalWorkflowExecutionSignaled":
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

    def _continue_as_new_command(self, error: workflow.ContinueAsNewError) -> command_pb2.Command:
        attributes = command_pb2.ContinueAsNewWorkflowExecutionCommandAttributes(
            workflow_type=error.workflow_type,
            task_queue=error.task_queue,
            input=self._converter.to_payloads(error.input),
        )
        if error.run_timeout is not None:
            attributes.workflow_run_timeout.FromTimedelta(error.run_timeout)
        if error.task_timeout is not None:
            attributes.workflow_task_timeout.FromTimedelta(error.task_timeout)
        return command_pb2.Command(continue_as_new_workflow_execution=attributes)
