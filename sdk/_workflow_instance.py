"""The deterministic runtime that replays workflow code against its history.

A worker keeps one :class:`WorkflowInstance` per execution it runs (and may
cache it between workflow tasks). ``activate(history)`` replays the history in
batches, as docs/history-events.md ("Workflow tasks and batches") describes,
checks that the code produces the commands history recorded, and returns the
commands of the current workflow task.

Workflow code runs on :class:`~flowforge._workflow_loop.WorkflowEventLoop`: an
asyncio loop without I/O whose clock is the workflow time and whose timers are
durable. An activation runs synchronously in the caller's thread, inside the
worker's own event loop: it makes the workflow loop the running loop, runs
ready callbacks until every coroutine waits, and restores the worker's loop. It
never awaits anything of the worker's loop.

The instance replays and delivers events; what each kind of command needs lives
beside it: activities (``_workflow_activities``), child workflows
(``_workflow_children``), timers (``_workflow_loop``), versioning
(``_workflow_patches``), the activity DAG (``_workflow_dag``) and the matching of
commands with their events (``_workflow_commands``).
"""

from __future__ import annotations

import asyncio
import collections
import itertools
import random
import types
from collections.abc import Callable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from datetime import UTC, datetime
from typing import Any, cast

from google.protobuf.timestamp_pb2 import Timestamp

from flowforge import exceptions, workflow
from flowforge._activity_calls import ActivityHandle, _ActivityCall
from flowforge._child_workflow_calls import ChildWorkflowHandle, _ChildWorkflowCall
from flowforge._determinism import DeterminismGuard
from flowforge._local_activity_calls import LocalActivityOutcome, LocalActivityRequest, _LocalActivityCall
from flowforge._worker_interceptors import (
    ExecuteWorkflowInput,
    HandleSignalInput,
    Interceptor,
    WorkflowInboundInterceptor,
    WorkflowOutboundInterceptor,
    workflow_chain,
)
from flowforge._workflow_activities import Activities
from flowforge._workflow_children import Children
from flowforge._workflow_commands import (
    CHILD_EVENT_TYPES,
    COMMAND_EVENT_TYPES,
    DELIVERED_EVENT_TYPES,
    SIGNAL_CHILD_OUTCOMES,
    WORKFLOW_TASK_NOT_COMPLETED,
    ActivityOutcomeAttributes,
    ChildEventAttributes,
    CommandBuffer,
    SignalChildOutcomeAttributes,
    attributes_of,
    close_command,
    command_event_fields,
    command_signature,
    cron_continuation,
    describe_command,
    fail_command,
    signature,
)
from flowforge._workflow_dag import DagTracker
from flowforge._workflow_definition import _Definition
from flowforge._workflow_local_activities import LocalActivities
from flowforge._workflow_loop import WorkflowEventLoop
from flowforge._workflow_patches import Patches
from flowforge._workflow_queries import QueryChangedWorkflowError, answer_query
from flowforge._workflow_runtime import _Runtime
from flowforge._workflow_signals import Signals
from flowforge._workflow_update_definition import UPDATE_SIGNAL
from flowforge._workflow_updates import Updates
from flowforge.api import schema
from flowforge.api.schema import EventType
from flowforge.api.v1 import command_pb2, common_pb2
from flowforge.common import _search_attributes_from_proto, _search_attributes_to_proto
from flowforge.converter import (
    DataConverter,
    default_converter,
    failure_to_error,
)

__all__ = ["HistoryContinuityError", "WorkflowInstance"]


class HistoryContinuityError(RuntimeError):
    """The history does not continue from where this instance stopped.

    Raised when a new instance gets a history that does not start at event 1,
    when a cached instance gets a history that does not extend the events it
    processed (or that shows the workflow task it ran failed), and when an
    instance is activated again after an activation raised. Replay the full
    history on a new instance.
    """


class WorkflowInstance(_Runtime):
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
        interceptors: Worker interceptors whose workflow classes see the run start and
            its signals, and its activity and child starts (flowforge.worker.Interceptor).
    """

    def __init__(
        self,
        definition: _Definition,
        *,
        namespace: str,
        workflow_id: str,
        run_id: str,
        task_queue: str,
        converter: DataConverter = default_converter,
        interceptors: Sequence[Interceptor] = (),
    ) -> None:
        self._definition = definition
        self._interceptors = interceptors
        # The inbound and outbound interceptor chains, made when the run starts.
        self._inbound: WorkflowInboundInterceptor = _RootInbound(self)
        self._outbound: WorkflowOutboundInterceptor = _RootOutbound(self)
        self._namespace = namespace
        self._workflow_id = workflow_id
        self._run_id = run_id
        self._task_queue = task_queue
        self._converter = converter
        # Commands of the running activation, in order.
        self._commands = CommandBuffer()
        self._loop = WorkflowEventLoop(  # type: ignore[abstract]  # see its docstring
            self, self._commands, workflow_id=workflow_id, on_task_created=self._track_task
        )
        self._dag = DagTracker(self._loop)
        self._activities = Activities(self._loop, self._commands, self._dag, converter)
        self._children = Children(self._loop, self._commands, self._dag, converter, namespace=namespace)
        self._patches = Patches(self._commands)
        self._local_activities = LocalActivities(self._loop, self._commands, converter)
        self._signals = Signals(
            self._loop,
            converter,
            definition.signals,
            self._workflow_object,
            self._on_signal_handler_error,
            lambda: self._cancel_requested,
            (lambda: self._inbound) if interceptors else None,
        )
        self._updates = Updates(
            self._loop,
            self._commands,
            converter,
            definition.updates,
            self._workflow_object,
            self._on_signal_handler_error,
        )
        # Made on first use: seeding hashes the run id (SHA-512), and most runs never ask.
        self._random: random.Random | None = None
        self._info: workflow.Info | None = None
        self._memo = common_pb2.Memo()
        self._input = common_pb2.Payloads()
        self._run_args: Sequence[Any] = ()
        # Cron on start: what the previous runs left (workflow.get_last_completion_result / get_last_failure).
        self._last_completion_result: common_pb2.Payloads | None = None
        self._last_failure: common_pb2.Failure | None = None
        self._run_task: asyncio.Task[Any] | None = None
        self._cancel_requested = False
        self._closed = False
        self._object: Any = None
        # A FailureError raised by a signal handler: it fails the workflow.
        self._handler_failure: exceptions.FailureError | None = None
        # Any other exception of a signal handler: it fails the workflow task.
        self._handler_error: BaseException | None = None

        # Where replay stands.
        # The last event processed (its id, type and time); event id 0 before any.
        self._last_event = common_pb2.HistoryEvent()
        self._spent = False
        self._pending_batch: list[common_pb2.HistoryEvent] = []
        self._now = datetime.fromtimestamp(0, UTC)
        self._replaying = False
        # Commands of the last activation that history has not matched yet.
        self._unmatched: collections.deque[command_pb2.Command] = collections.deque()
        self._unmatched_task_started_event_id = 0
        # The last activation was the current workflow task: the next event must complete it.
        self._awaiting_task_close = False

        # The WorkflowTaskCompleted event id of the running workflow task.
        self._running_task_completed_event_id = 0

    @property
    def last_event_id(self) -> int:
        """The id of the last history event processed; 0 for a new instance."""
        return self._last_event.event_id

    def fold_point(self, activity_id: str, held: AbstractSet[str]) -> tuple[int, Timestamp, bool] | None:
        """Whether an outcome of activity ``activity_id`` may be folded here (see
        docs/worker-stream.md): the activity's ActivityTaskScheduled event id, the time of the
        last event processed, and whether every activity the run awaits (scheduled, no outcome
        yet) is in ``held`` (a fold is worth trying only then: another worker's completion of
        one would move the run first), when the activity awaits its outcome, the last workflow
        task completed (the instance stands where a replay of its history would) and no event
        waits for the next task; else None."""
        scheduled = self._activities.pending_scheduled_event_id(activity_id)
        foldable = scheduled and not self._pending_batch and self.is_current(())
        return (scheduled, self._last_event.event_time, self._activities.all_awaited_in(held)) if foldable else None

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
            self._patches.note_markers(event for event, _ in events)
            self._local_activities.note_markers(event for event, _ in events)
            for event, following in events:
                self._process(event, following)
                self._last_event = event
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
        processed = next((e for e in history if e.event_id == self._last_event.event_id), None)
        if processed is not None and processed.event_type != self._last_event.event_type:
            raise HistoryContinuityError(
                f"history event {processed.event_id} is {processed.event_type}, but this "
                f"instance processed {self._last_event.event_type} as that event"
            )
        events = [e for e in history if e.event_id > self._last_event.event_id]
        expected_id = self._last_event.event_id + 1
        if not events:
            raise HistoryContinuityError(
                f"the history has no event after event {self._last_event.event_id}, which this instance already processed"
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
            if event_type != EventType.WORKFLOW_TASK_COMPLETED:
                raise HistoryContinuityError(
                    f"the workflow task this instance ran (started at event "
                    f"{self._unmatched_task_started_event_id}) ended with event {event.event_id} "
                    f"{event_type}, so the state it left behind was discarded"
                )
        elif event_type in COMMAND_EVENT_TYPES:
            self._match_command_event(event)
        elif event_type == EventType.WORKFLOW_TASK_STARTED:
            self._on_workflow_task_started(event, following)
        elif event_type in DELIVERED_EVENT_TYPES:
            self._pending_batch.append(event)

    def _on_workflow_task_started(
        self, event: common_pb2.HistoryEvent, following: common_pb2.HistoryEvent | None
    ) -> None:
        self._check_all_commands_matched()
        if following is not None and following.event_type in WORKFLOW_TASK_NOT_COMPLETED:
            return  # It produced no commands; its events are delivered with the next task.
        if following is not None and following.event_type != EventType.WORKFLOW_TASK_COMPLETED:
            raise ValueError(
                f"malformed history: event {following.event_id} {following.event_type} follows "
                f"WorkflowTaskStarted event {event.event_id}"
            )
        self._run_workflow_task(event, replaying=following is not None)
        self._awaiting_task_close = following is None

    def _run_workflow_task(self, started: common_pb2.HistoryEvent, *, replaying: bool) -> None:
        # Nothing is written between a WorkflowTaskStarted and the event that closes it.
        self._running_task_completed_event_id = started.event_id + 1
        self._loop.set_time(started.event_time.ToNanoseconds() / 1e9)
        self._now = started.event_time.ToDatetime(tzinfo=UTC)
        self._replaying = replaying
        self._commands.clear()
        self._unmatched_task_started_event_id = started.event_id
        self._run_and_close()

    def _run_and_close(self) -> None:
        """Runs the code on the pending events until it waits; the task's commands become the unmatched ones."""
        self._deliver_pending_batch_and_run()
        if self._handler_error is not None:
            raise self._handler_error
        self._close_if_finished()
        self._unmatched = collections.deque(self._commands)

    def local_activities_to_run(self) -> list[LocalActivityRequest]:
        """The local activities the current workflow task waits for, not yet handed out.

        The worker runs them and gives their outcomes to :meth:`resolve_local_activities`
        before it completes the task. Empty when the run closed or no task is current.
        """
        if not self._awaiting_task_close or self._closed:
            return []
        return self._local_activities.to_run()

    def resolve_local_activities(self, outcomes: Sequence[LocalActivityOutcome]) -> list[command_pb2.Command]:
        """Delivers local activity outcomes, runs the code on, and returns the current task's commands
        (those :meth:`activate` returned, then a marker per outcome and what the code did next).

        Raises:
            NonDeterminismError: The code called a nondeterministic function.
            Exception: As :meth:`activate`; the instance is then spent.
        """
        try:
            self._local_activities.resolve(outcomes)
            self._run_and_close()
            return list(self._unmatched)
        except BaseException:
            self._spent = True
            raise

    def _match_command_event(self, event: common_pb2.HistoryEvent) -> None:
        attributes = attributes_of(event)
        event_fields = command_event_fields(event, attributes, self._activities.activity_id_scheduled_at)
        next_command = self._unmatched[0] if self._unmatched else None
        if self._patches.is_unclaimed_deprecated(event, attributes, event_fields, next_command):
            return
        if not self._unmatched:
            raise exceptions.NonDeterminismError(
                f"{_recorded(event, event_fields)} has no matching command: the workflow produced no "
                f"further command in the workflow task started at event {self._unmatched_task_started_event_id}"
            )
        command = self._unmatched.popleft()
        _, expected_event_type, command_fields = command_signature(command)
        event_type = event.event_type  # protobuf makes a new str on every read
        if (event_type, event_fields) != (expected_event_type, command_fields):
            raise exceptions.NonDeterminismError(
                f"{_recorded(event, event_fields)} does not match the command the workflow produced: "
                f"{describe_command(command)}"
            )
        if event_type == EventType.ACTIVITY_TASK_SCHEDULED:
            self._activities.on_scheduled(event.event_id, event_fields["activity_id"])
        elif event_type == EventType.START_CHILD_WORKFLOW_EXECUTION_INITIATED:
            self._children.on_initiated(event.event_id, command)
        elif event_type == EventType.SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED:
            self._children.on_signal_initiated(event.event_id, command)

    def _check_all_commands_matched(self) -> None:
        if self._unmatched:
            raise exceptions.NonDeterminismError(
                f"the workflow produced {describe_command(self._unmatched[0])} in the workflow "
                f"task started at event {self._unmatched_task_started_event_id}, but history "
                "records no event for it: the task's recorded commands end before it"
            )

    # ----------------------------------------------------------------- delivering events

    def _deliver(self, event: common_pb2.HistoryEvent) -> None:
        # Each kind of event is read through its attributes' type in flowforge.api.schema.
        attributes = attributes_of(event)
        event_type = event.event_type
        if event_type == EventType.WORKFLOW_EXECUTION_STARTED:
            self._start(event, cast(schema.WorkflowExecutionStartedAttributes, attributes))
        elif event_type == EventType.TIMER_FIRED:
            self._loop.fire_timer(cast(schema.TimerFiredAttributes, attributes)["timer_id"])
        elif event_type == EventType.WORKFLOW_EXECUTION_CANCEL_REQUESTED:
            self._request_cancel()
        elif event_type == EventType.WORKFLOW_EXECUTION_SIGNALED:
            self._deliver_signal(cast(schema.WorkflowExecutionSignaledAttributes, attributes))
        elif event_type in CHILD_EVENT_TYPES:
            self._children.resolve(event, cast(ChildEventAttributes, attributes))
        elif event_type in SIGNAL_CHILD_OUTCOMES:
            self._children.resolve_signal(event, cast(SignalChildOutcomeAttributes, attributes))
        else:
            self._activities.resolve(event, cast(ActivityOutcomeAttributes, attributes))

    def _start(self, event: common_pb2.HistoryEvent, attributes: schema.WorkflowExecutionStartedAttributes) -> None:
        self._info = _run_info(
            event,
            attributes,
            workflow_id=self._workflow_id,
            run_id=self._run_id,
            workflow_type=self._definition.name,
            task_queue=self._task_queue,
            namespace=self._namespace,
        )
        self._memo = schema.json_dict_to_message(attributes.get("memo"), common_pb2.Memo)
        payloads = schema.payloads_from_json(attributes.get("input"))
        self._input = payloads
        if "last_completion_result" in attributes:
            self._last_completion_result = schema.payloads_from_json(attributes["last_completion_result"])
        if "last_failure" in attributes:
            self._last_failure = schema.failure_from_json(attributes["last_failure"])
        args = self._converter.from_payloads(payloads, self._definition.run_arg_types())
        self._run_args = args
        if self._interceptors:
            self._inbound = workflow_chain(self._interceptors, _RootInbound(self), _RootOutbound(self))
        run = ExecuteWorkflowInput(self._definition.cls, self._definition.name, args, _headers(attributes))
        self._run_task = self._loop.create_task(
            self._inbound.execute_workflow(run), name=f"workflow {self._definition.name} {self._workflow_id}"
        )

    async def _run_workflow(self, args: Sequence[Any]) -> Any:
        return await self._definition.run_fn(self._workflow_object(), *args)

    def _workflow_object(self) -> Any:
        """The instance of the workflow class, made on first use inside the loop
        (by the run method or a signal handler, whichever runs first)."""
        if self._object is None:
            args = self._run_args if self._definition.init_takes_arguments else ()
            self._object = self._definition.cls(*args)
        return self._object

    def _request_cancel(self) -> None:
        if self._cancel_requested:
            return
        self._cancel_requested = True
        if self._run_task is not None:
            self._run_task.cancel()

    def _close_if_finished(self) -> None:
        if self._closed:
            return
        if self._handler_failure is not None:
            self._closed = True
            self._commands.append(fail_command(self._handler_failure, self._converter))
            return
        task = self._run_task
        if task is None or not task.done():
            return
        self._closed = True
        command = close_command(task, cancel_requested=self._cancel_requested, converter=self._converter)
        if self._info is not None and self._info.cron_schedule:
            command = cron_continuation(command, self._input, self._last_completion_result)
        self._commands.append(command)

    # ----------------------------------------------------------------- signals and queries

    def _deliver_signal(self, attributes: schema.WorkflowExecutionSignaledAttributes) -> None:
        """Hands a signal to its handler (signals.py), or an update to the update machinery."""
        payloads = schema.payloads_from_json(attributes.get("input"))
        if attributes["signal_name"] == UPDATE_SIGNAL:
            self._updates.deliver(payloads)
        else:
            self._signals.deliver(attributes["signal_name"], payloads, _headers(attributes))

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
        try:
            return answer_query(
                query_type,
                args,
                definition=self._definition,
                loop=self._loop,
                commands=self._commands,
                converter=self._converter,
                workflow_object=self._workflow_object,
                guard=self._determinism_guard,
            )
        except QueryChangedWorkflowError:
            self._spent = True  # what the handler started is half undone: replay from scratch
            raise

    def is_current(self, history: Sequence[common_pb2.HistoryEvent]) -> bool:
        """Whether this instance's state is what a replay of ``history`` would give:
        it processed every event of it that workflow code sees, and its last workflow
        task completed (the events after are only that task's completion and commands)."""
        if self._spent or self.last_event_id == 0:
            return False
        later = [e for e in history if e.event_id > self.last_event_id]
        return all(
            e.event_type in COMMAND_EVENT_TYPES
            or e.event_type in (EventType.WORKFLOW_TASK_COMPLETED, EventType.WORKFLOW_TASK_SCHEDULED)
            for e in later
        ) and (
            not self._awaiting_task_close or (bool(later) and later[0].event_type == EventType.WORKFLOW_TASK_COMPLETED)
        )

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
        if any(event.event_type == EventType.WORKFLOW_EXECUTION_STARTED for event in batch):
            # Temporal's order for the first activation: the handlers of signals that
            # came with the start (signal-with-start, or sent before any worker ran)
            # run before the run method begins. Stable: signals keep their order.
            batch.sort(key=lambda event: event.event_type != EventType.WORKFLOW_EXECUTION_SIGNALED)
        for event in batch:
            self._deliver(event)
        guard = self._determinism_guard(WorkflowEventLoop.run_until_quiescent.__code__)
        with guard:
            self._loop.run_until_quiescent()
            # Recorded local activity outcomes arrive once the code waits, as they did live.
            while self._local_activities.resolve_recorded():
                self._loop.run_until_quiescent()
        if guard.violation is not None:
            if self._run_task is not None and self._run_task.done() and not self._run_task.cancelled():
                self._run_task.exception()  # e.g. the refused connection: reported as the violation instead
            raise exceptions.NonDeterminismError(guard.violation)

    def _determinism_guard(self, boundary: types.CodeType) -> DeterminismGuard:
        """The guard for running this workflow's code from the function ``boundary``."""
        return DeterminismGuard(boundary=boundary, workflow_module=self._definition.cls.__module__)

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
        if self._random is None:
            self._random = random.Random(self._run_id)
        return self._random

    def workflow_instance(self) -> Any:
        return self._workflow_object()

    def workflow_last_completion_result(self, type_hint: Any) -> Any:
        payloads = self._last_completion_result
        if payloads is None or not payloads.payloads:
            return None
        return self._converter.from_payload(payloads.payloads[0], type_hint)

    def workflow_last_failure(self) -> BaseException | None:
        return failure_to_error(self._last_failure, self._converter) if self._last_failure is not None else None

    def workflow_all_handlers_finished(self) -> bool:
        return self._updates.all_handlers_finished

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

    def workflow_start_activity(self, call: _ActivityCall) -> ActivityHandle[Any]:
        return self._outbound.start_activity(call)

    def workflow_start_local_activity(self, call: _LocalActivityCall) -> ActivityHandle[Any]:
        return self._local_activities.start(call)

    def workflow_start_child_workflow(self, call: _ChildWorkflowCall) -> ChildWorkflowHandle[Any, Any]:
        return self._outbound.start_child_workflow(call)

    def workflow_signal_child(self, workflow_id: str, signal_name: str, args: Sequence[Any]) -> asyncio.Future[None]:
        return self._children.signal(workflow_id, signal_name, args)

    def workflow_patch(self, patch_id: str, *, deprecated: bool) -> bool:
        return self._patches.patched(
            patch_id,
            deprecated=deprecated,
            replaying=self._replaying,
            task_completed_event_id=self._running_task_completed_event_id,
        )

    def _track_task(self, task: asyncio.Task[Any]) -> None:
        self._dag.track_task(task)


def _recorded(event: common_pb2.HistoryEvent, fields: Mapping[str, str]) -> str:
    """How a non-determinism message names a recorded command event (made only for one)."""
    return f"history event {event.event_id} {signature(event.event_type, fields)}"


def _headers(attributes: Mapping[str, Any]) -> Mapping[str, common_pb2.Payload]:
    """The header an event recorded (start, signal), as name → Payload."""
    return schema.json_dict_to_message(attributes.get("header"), common_pb2.Header).fields


def _run_info(
    event: common_pb2.HistoryEvent,
    attributes: schema.WorkflowExecutionStartedAttributes,
    *,
    workflow_id: str,
    run_id: str,
    workflow_type: str,
    task_queue: str,
    namespace: str,
) -> workflow.Info:
    """What ``workflow.info()`` tells the run, from its WorkflowExecutionStarted event."""
    return workflow.Info(
        workflow_id=workflow_id,
        run_id=run_id,
        workflow_type=workflow_type,
        task_queue=task_queue,
        namespace=namespace,
        attempt=attributes.get("attempt", 1),
        start_time=event.event_time.ToDatetime(tzinfo=UTC),
        search_attributes=_search_attributes_from_proto(
            schema.json_dict_to_message(attributes.get("search_attributes"), common_pb2.SearchAttributes)
        ),
        parent=workflow.ParentInfo(
            namespace=attributes.get("parent_workflow_namespace", namespace),
            workflow_id=attributes["parent_workflow_id"],
            run_id=attributes["parent_run_id"],
        )
        if attributes.get("parent_run_id")
        else None,
        continued_run_id=attributes.get("continued_execution_run_id") or None,
        cron_schedule=attributes.get("cron_schedule", ""),
    )


class _RootInbound(WorkflowInboundInterceptor):
    """The end of a run's inbound chain: the run method and the signal handlers themselves."""

    def __init__(self, instance: WorkflowInstance) -> None:
        super().__init__(None)
        self._instance = instance

    def init(self, outbound: WorkflowOutboundInterceptor) -> None:
        self._instance._outbound = outbound

    async def execute_workflow(self, input: ExecuteWorkflowInput) -> Any:
        return await self._instance._run_workflow(input.args)

    def handle_signal(self, input: HandleSignalInput) -> None:
        self._instance._signals.schedule(input.signal, input.args, on_loop=True)


class _RootOutbound(WorkflowOutboundInterceptor):
    """The end of a run's outbound chain: the commands themselves."""

    def __init__(self, instance: WorkflowInstance) -> None:
        super().__init__(None)
        self._instance = instance

    def start_activity(self, input: _ActivityCall) -> ActivityHandle[Any]:
        return self._instance._activities.start(input)

    def start_child_workflow(self, input: _ChildWorkflowCall) -> ChildWorkflowHandle[Any, Any]:
        return self._instance._children.start(input)
