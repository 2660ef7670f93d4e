"""Runs workflow tasks: replays workflow code against history and reports its commands.

Workflow code runs in ``WorkflowInstance.activate``, which is synchronous and CPU-bound;
it runs on a small thread pool so that replaying a long history does not stall the
event loop that carries heartbeats and polls. Instances stay cached by run id between
tasks, so that a run's next task only feeds the new events to the instance instead of
replaying its whole history.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import dataclasses
import itertools
import logging
import time
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from datetime import timedelta

import grpc
from google.protobuf.timestamp_pb2 import Timestamp

from flowforge import workflow
from flowforge._rpc import WorkflowServiceClient
from flowforge._worker_interceptors import Interceptor
from flowforge._workflow_instance import HistoryContinuityError, WorkflowInstance
from flowforge.api.schema import EventType
from flowforge.api.v1 import command_pb2, common_pb2, workflow_service_pb2
from flowforge.converter import DataConverter, error_to_failure
from flowforge.exceptions import ApplicationError, NonDeterminismError, RPCError
from flowforge.worker._activity_worker import ActivityWorker
from flowforge.worker._fold import ActivityCompletions
from flowforge.worker._local_activities import LocalActivityRunner
from flowforge.worker._metrics import WorkerMetrics
from flowforge.worker._polling import LEASE_LOST_STATUSES, TaskSlots, start_handler, start_pollers
from flowforge.worker._stream import WorkerStream, poll_task, send_report

logger = logging.getLogger(__name__)

_Cause = workflow_service_pb2.WorkflowTaskFailedCause


class _RunCache:
    """Least recently used workflow instances by run id.

    A task *takes* its run's instance out and puts it back only when the task
    succeeded, so a failed task leaves nothing stale behind and two tasks of one run
    (possible when a lease expired while the first was still running) never share an
    instance.
    """

    def __init__(self, capacity: int) -> None:
        self._capacity = capacity
        self._instances: collections.OrderedDict[str, WorkflowInstance] = collections.OrderedDict()

    def take(self, run_id: str) -> WorkflowInstance | None:
        return self._instances.pop(run_id, None)

    def put(self, run_id: str, instance: WorkflowInstance) -> None:
        """Caches ``instance``, unless the run's cached one stands at a later event: a task
        that ran meanwhile on a new instance (while a fold had this one out) is newer."""
        cached = self._instances.get(run_id)
        if cached is not None and cached.last_event_id > instance.last_event_id:
            return
        self._instances[run_id] = instance
        while len(self._instances) > self._capacity:
            self._instances.popitem(last=False)

    def peek(self, run_id: str) -> WorkflowInstance | None:
        """The run's cached instance, left in the cache."""
        return self._instances.get(run_id)

    def cached_event_id(self, run_id: str) -> int:
        """The last event the run's cached instance processed; 0 if none is cached."""
        instance = self._instances.get(run_id)
        return 0 if instance is None else instance.last_event_id

    def put_if_absent(self, run_id: str, instance: WorkflowInstance) -> None:
        """Puts back an instance a query borrowed, unless a workflow task put a newer one meanwhile."""
        if run_id not in self._instances:
            self.put(run_id, instance)


_CLOSING_COMMANDS = frozenset(
    {
        "complete_workflow_execution",
        "fail_workflow_execution",
        "cancel_workflow_execution",
        "continue_as_new_workflow_execution",
    }
)


@dataclasses.dataclass(frozen=True)
class Completion:
    """A workflow task's completion request and the slots taken for what its answer may hand back."""

    request: workflow_service_pb2.RespondWorkflowTaskCompletedRequest
    eager_activity_slots: int
    next_task_slot: bool
    closes_run: bool


def _describe(task: workflow_service_pb2.PollWorkflowTaskQueueResponse) -> str:
    """Names a task in logs: ids and type only, never its payloads."""
    execution = task.workflow_execution
    return (
        f"workflow task (attempt {task.attempt}) of {task.workflow_type!r} "
        f"{execution.workflow_id!r} run {execution.run_id!r}"
    )


class WorkflowWorker:
    """Polls one task queue for workflow tasks and runs them.

    Args:
        service: The RPC layer.
        namespace: The namespace to poll in.
        task_queue: The task queue to poll.
        identity: The worker's identity, recorded in history.
        converter: Handed to workflow instances; encodes task failures.
        workflows: The registered workflow definitions by workflow type name.
        max_concurrent_tasks: How many workflow tasks may run at once.
        max_concurrent_polls: How many polls may be open at once.
        cache_size: How many workflow instances to keep between tasks.
        activity_worker: The activity worker of the same task queue, if this worker
            runs activities too; it takes activity tasks handed back eagerly.
        fold_workflow_tasks: Whether its completions carry the workflow task they
            schedule when the run is cached here (worker/_fold.py).
        build_id: The build of the workflow code, reported with each completed task.
        stream: The worker stream that carries polls and reports; None polls and
            reports with unary RPCs.
    """

    def __init__(
        self,
        *,
        service: WorkflowServiceClient,
        namespace: str,
        task_queue: str,
        identity: str,
        converter: DataConverter,
        workflows: Mapping[str, workflow._Definition],
        max_concurrent_tasks: int,
        max_concurrent_polls: int,
        cache_size: int,
        activity_worker: ActivityWorker | None,
        build_id: str,
        fold_workflow_tasks: bool = True,
        interceptors: Sequence[Interceptor] = (),
        metrics: WorkerMetrics | None = None,
        stream: WorkerStream | None = None,
    ) -> None:
        self._service = service
        self._stream = stream
        self._interceptors = interceptors
        self._metrics = metrics or WorkerMetrics(task_queue)
        self._namespace = namespace
        self._task_queue = task_queue
        self._identity = identity
        self._converter = converter
        self._workflows = dict(workflows)
        self._max_concurrent_tasks = max_concurrent_tasks
        self._max_concurrent_polls = max_concurrent_polls
        self._activity_worker = activity_worker
        self._build_id = build_id
        self._folds = fold_workflow_tasks
        self._cache = _RunCache(cache_size)
        self._slots = TaskSlots(max_concurrent_tasks, lambda delta: self._metrics.slots_changed("workflow", delta))
        self._executor: concurrent.futures.ThreadPoolExecutor | None = None
        self._pollers: list[asyncio.Task[None]] = []
        self._handlers: set[asyncio.Task[None]] = set()
        self._stopping = False
        if activity_worker is not None:  # same task queue (one Worker)
            activity_worker.completions = ActivityCompletions(self, service, stream, task_queue, activity_worker.held)

    def start(self) -> None:
        """Starts the pollers."""
        self._executor = concurrent.futures.ThreadPoolExecutor(
            max_workers=self._max_concurrent_tasks, thread_name_prefix="flowforge-workflow-task"
        )
        self._pollers = start_pollers(
            self._max_concurrent_polls,
            kind="workflow",
            task_queue=self._task_queue,
            slots=self._slots,
            poll=self._poll,
            dispatch=self._dispatch,
            polled=lambda seconds, result: self._metrics.polled("workflow", seconds, result),
        )

    async def stop_polling(self) -> None:
        """Cancels the pollers (and so their open polls) and waits until they stopped."""
        self._stopping = True
        for poller in self._pollers:
            poller.cancel()
        await asyncio.gather(*self._pollers, return_exceptions=True)

    async def drain(self, graceful_timeout: timedelta) -> None:
        """Lets running workflow tasks finish; abandons the rest after the timeout.

        An abandoned task is not reported: the server's workflow task timeout
        schedules it again, for this or another worker.
        """
        if self._handlers:
            _, abandoned = await asyncio.wait(set(self._handlers), timeout=graceful_timeout.total_seconds())
            if abandoned:
                logger.warning("abandoning %d unfinished workflow tasks", len(abandoned))
            for handler in abandoned:
                handler.cancel()
            await asyncio.gather(*abandoned, return_exceptions=True)
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)

    # Eager workflow tasks: handed back by an activity completion of this task queue, or folded into it.

    @property
    def metrics(self) -> WorkerMetrics:
        """The worker's metrics."""
        return self._metrics

    def cached_event_id(self, run_id: str) -> int:
        """Where this worker's cached instance of ``run_id`` stands (0: not cached), for
        a report that asks for the run's next workflow task (sticky execution)."""
        return self._cache.cached_event_id(run_id)

    @property
    def stopping(self) -> bool:
        """Whether the worker is shutting down (it takes no more workflow tasks)."""
        return self._stopping

    def reserve_eager_slot(self) -> bool:
        """Takes a slot for a workflow task an activity completion may hand back."""
        return not self._stopping and self._slots.try_acquire(1) == 1

    def release_eager_slot(self) -> None:
        """Frees a slot reserved for an eager workflow task that did not come."""
        self._slots.release()

    def run_eager(self, task: workflow_service_pb2.PollWorkflowTaskQueueResponse) -> None:
        """Runs an eagerly leased workflow task in its reserved slot."""
        self._dispatch(task)

    def take_foldable(
        self, run_id: str, activity_id: str, held_here: AbstractSet[str]
    ) -> tuple[WorkflowInstance, int, Timestamp] | None:
        """Takes the run's cached instance out of the cache if it can fold the completion of
        activity ``activity_id`` with every activity the run awaits in ``held_here`` (run by this
        worker, not reported yet; see ``WorkflowInstance.fold_point``): the instance, the activity's scheduled event id
        and the time of the run's last event; else None."""
        instance = self._cache.peek(run_id) if self._folds else None
        point = instance.fold_point(activity_id, held_here) if instance is not None else None
        if instance is None or point is None:
            return None
        scheduled_event_id, last_event_time, all_held = point
        if not all_held:
            self._metrics.workflow_task_fold_not_attempted()
            return None
        self._cache.take(run_id)
        self._metrics.cache_lookup(hit=True)
        return instance, scheduled_event_id, last_event_time

    async def run_folded_task(
        self,
        task: workflow_service_pb2.PollActivityTaskQueueResponse,
        instance: WorkflowInstance,
        events: Sequence[common_pb2.HistoryEvent],
    ) -> list[command_pb2.Command] | None:
        """Runs the workflow task ``task``'s completion schedules on ``instance``, taken from the
        cache, with the events the fold appends; None discards the instance (the activation
        raised, or the task needs local activities): the task then runs unfolded."""
        loop = asyncio.get_running_loop()
        began = time.monotonic()
        try:
            commands = await loop.run_in_executor(self._executor, instance.activate, events)
        except asyncio.CancelledError:
            handler = asyncio.current_task()
            if handler is None or handler.cancelling():
                raise
            return None  # the executor was shut down under it (the worker stops): report unfolded
        except Exception as error:  # the unfolded task fails (or succeeds) on its own, and says why
            logger.info(
                "a folded workflow task of %r run %r was discarded (%s); it runs unfolded",
                task.workflow_type,
                task.workflow_execution.run_id,
                type(error).__name__,
            )
            return None
        finally:
            self._metrics.workflow_task_ran(task.workflow_type, time.monotonic() - began)
        return None if instance.local_activities_to_run() else commands

    async def _poll(self) -> workflow_service_pb2.PollWorkflowTaskQueueResponse:
        request = workflow_service_pb2.PollWorkflowTaskQueueRequest(
            namespace=self._namespace, task_queue=self._task_queue, identity=self._identity
        )
        return await poll_task(
            self._service,
            self._stream,
            "PollWorkflowTaskQueue",
            request,
            workflow_service_pb2.PollWorkflowTaskQueueResponse,
            self._fail_undecodable,
        )

    async def _fail_undecodable(
        self, task: workflow_service_pb2.PollWorkflowTaskQueueResponse, error: ApplicationError
    ) -> None:
        await self._fail(task, _Cause.WORKFLOW_TASK_FAILED_CAUSE_WORKFLOW_WORKER_UNHANDLED_FAILURE, error)

    def _dispatch(self, task: workflow_service_pb2.PollWorkflowTaskQueueResponse) -> None:
        start_handler(self._handlers, self._handle(task), f"flowforge {_describe(task)}")

    async def _handle(self, task: workflow_service_pb2.PollWorkflowTaskQueueResponse) -> None:
        try:
            await self._run(task)
        except Exception:
            logger.exception("unexpected error while handling %s", _describe(task))
        finally:
            self._slots.release()

    async def _run(self, task: workflow_service_pb2.PollWorkflowTaskQueueResponse) -> None:
        if task.HasField("query"):
            await self._answer_query(task)
            return
        definition = self._workflows.get(task.workflow_type)
        if definition is None:
            registered = ", ".join(sorted(self._workflows))
            error = ApplicationError(
                f"workflow type {task.workflow_type!r} is not registered on this worker "
                f"(task queue {self._task_queue!r}; registered: {registered})",
                type="WorkflowTypeNotRegistered",
            )
            logger.error("%s", error)
            await self._fail(task, _Cause.WORKFLOW_TASK_FAILED_CAUSE_UNKNOWN_WORKFLOW_TYPE, error)
            return

        try:
            instance, commands = await self._activate(task, definition)
            commands = await self._run_local_activities(task, instance, commands)
        except NonDeterminismError as error:
            logger.error("%s: %s", _describe(task), error)
            await self._fail(task, _Cause.WORKFLOW_TASK_FAILED_CAUSE_NON_DETERMINISTIC_ERROR, error)
            return
        except Exception as error:
            # A bug in workflow code fails the task, not the execution: it is retried
            # and shows in describe() until a fixed worker is deployed.
            logger.error("%s failed", _describe(task), exc_info=error)
            await self._fail(task, _Cause.WORKFLOW_TASK_FAILED_CAUSE_WORKFLOW_WORKER_UNHANDLED_FAILURE, error)
            return
        await self._complete(task, commands, instance)

    async def _activate(
        self,
        task: workflow_service_pb2.PollWorkflowTaskQueueResponse,
        definition: workflow._Definition,
    ) -> tuple[WorkflowInstance, list[command_pb2.Command]]:
        """Runs the task's history through the cached instance, or a new one.

        A cached instance only consumes the events it has not seen. If the history
        does not continue from where it stopped (its last task failed or timed out,
        or another worker ran the run meanwhile and diverged), the whole history is
        replayed on a new instance instead.
        """
        loop = asyncio.get_running_loop()
        history = list(task.history)
        execution = task.workflow_execution
        began = time.monotonic()
        cached = self._cache.take(execution.run_id)
        self._metrics.cache_lookup(hit=cached is not None)
        try:
            if cached is not None:
                try:
                    return cached, await loop.run_in_executor(self._executor, cached.activate, history)
                except HistoryContinuityError as error:
                    logger.debug("%s: replaying from the start (%s)", _describe(task), error)
            if history and history[0].event_id > 1:
                # A sticky (incremental) history whose instance is gone: read the rest.
                history = await self._history_before(execution, history[0].event_id) + history
            instance = self._new_instance(definition, task)
            return instance, await loop.run_in_executor(self._executor, instance.activate, history)
        finally:
            self._metrics.workflow_task_ran(task.workflow_type, time.monotonic() - began)

    async def _history_before(
        self, execution: common_pb2.WorkflowExecution, event_id: int
    ) -> list[common_pb2.HistoryEvent]:
        """The run's events before ``event_id``, read page by page (all are committed:
        they come before what a workflow task handed out)."""
        events: list[common_pb2.HistoryEvent] = []
        while not events or events[-1].event_id < event_id - 1:
            request = workflow_service_pb2.GetWorkflowExecutionHistoryRequest(
                namespace=self._namespace,
                execution=execution,
                after_event_id=events[-1].event_id if events else 0,
            )
            page = list((await self._service.call("GetWorkflowExecutionHistory", request)).events)
            if not page:
                raise HistoryContinuityError(f"the server has no event before {event_id} of run {execution.run_id}")
            events += page
        return [e for e in events if e.event_id < event_id]

    async def _run_local_activities(
        self,
        task: workflow_service_pb2.PollWorkflowTaskQueueResponse,
        instance: WorkflowInstance,
        commands: list[command_pb2.Command],
    ) -> list[command_pb2.Command]:
        """Runs the local activities the task waits for, until it waits for none; its final commands."""
        loop = asyncio.get_running_loop()
        while requests := instance.local_activities_to_run():
            activities = self._activity_worker.activities if self._activity_worker is not None else {}
            executor = self._activity_worker.executor if self._activity_worker is not None else self._executor
            runner = LocalActivityRunner(activities, executor, self._converter, self._namespace)
            outcomes = await runner.run_all(requests, task)
            commands = await loop.run_in_executor(self._executor, instance.resolve_local_activities, outcomes)
        return commands

    def _new_instance(
        self, definition: workflow._Definition, task: workflow_service_pb2.PollWorkflowTaskQueueResponse
    ) -> WorkflowInstance:
        """A fresh instance of the task's run, to replay its history from the start."""
        execution = task.workflow_execution
        return WorkflowInstance(
            definition,
            namespace=self._namespace,
            workflow_id=execution.workflow_id,
            run_id=execution.run_id,
            task_queue=task.task_queue or self._task_queue,
            converter=self._converter,
            interceptors=self._interceptors,
        )

    # queries (signals and queries feature)

    async def _answer_query(self, task: workflow_service_pb2.PollWorkflowTaskQueueResponse) -> None:
        """Answers a query from the run's cached instance when it has seen every event
        that matters, else from a replay of the history on a throw-away instance."""
        request = workflow_service_pb2.RespondQueryTaskCompletedRequest(
            namespace=self._namespace, task_token=task.task_token, identity=self._identity
        )
        try:
            request.query_result.CopyFrom(await self._run_query(task))
            request.completed_type = workflow_service_pb2.QUERY_RESULT_TYPE_ANSWERED
        except Exception as error:  # the caller gets the reason; nothing else changes
            request.completed_type = workflow_service_pb2.QUERY_RESULT_TYPE_FAILED
            request.error_message = error.args[0] if isinstance(error, KeyError) else f"{type(error).__name__}: {error}"
        try:
            await send_report(self._service, self._stream, "RespondQueryTaskCompleted", request)
        except RPCError as rpc_error:
            level = logging.WARNING if rpc_error.status in LEASE_LOST_STATUSES else logging.ERROR
            logger.log(level, "answering a query of %s failed (%s)", _describe(task), rpc_error)

    async def _run_query(self, task: workflow_service_pb2.PollWorkflowTaskQueueResponse) -> common_pb2.Payloads:
        definition = self._workflows.get(task.workflow_type)
        if definition is None:
            raise KeyError(
                f"workflow type {task.workflow_type!r} is not registered on the worker that took the query"
                f" (task queue {self._task_queue!r}; registered: {', '.join(sorted(self._workflows))})"
            )
        loop = asyncio.get_running_loop()
        history = list(task.history)
        execution = task.workflow_execution
        cached = self._cache.take(execution.run_id)
        query = task.query
        if cached is not None and cached.is_current(history):
            try:
                return await loop.run_in_executor(self._executor, cached.query, query.query_type, query.query_args)
            finally:
                self._cache.put_if_absent(execution.run_id, cached)
        if cached is not None:
            self._cache.put_if_absent(execution.run_id, cached)
        instance = self._new_instance(definition, task)

        def replay_and_query() -> common_pb2.Payloads:
            instance.activate(history)
            instance.run_pending_events()
            return instance.query(query.query_type, query.query_args)

        return await loop.run_in_executor(self._executor, replay_and_query)

    async def _complete(
        self,
        task: workflow_service_pb2.PollWorkflowTaskQueueResponse,
        commands: Sequence[command_pb2.Command],
        instance: WorkflowInstance,
    ) -> None:
        """Reports the commands of ``task``, which ran on ``instance``, and takes the answer (:meth:`completed`)."""
        completion = self.completion(task.task_token, commands, instance)
        try:
            response = await send_report(
                self._service, self._stream, "RespondWorkflowTaskCompleted", completion.request
            )
        except RPCError as error:
            self.release_completion(completion)
            await self._on_completion_rejected(task, error)
            return
        except BaseException:  # an answer not decoded, a cancellation: nothing it hands over runs
            self.release_completion(completion)
            raise
        self.completed(completion, response, task.workflow_execution, instance)

    def completion(
        self, task_token: bytes, commands: Sequence[command_pb2.Command], instance: WorkflowInstance
    ) -> Completion:
        """The completion of a workflow task that ran on ``instance`` (a folded task's has no
        token), with slots taken for the activity tasks it schedules here and, unless it closes
        the run, for the run's next workflow task: the server hands them back eagerly.

        The instance is kept (cached) through its last event unless the commands close the
        run, so a next task handed back needs only the events from there.
        """
        closes_run = any(command.WhichOneof("attributes") in _CLOSING_COMMANDS for command in commands)
        eager_slots = self._reserve_eager_activity_slots(commands)
        next_task_slot = not closes_run and self.reserve_eager_slot()
        request = workflow_service_pb2.RespondWorkflowTaskCompletedRequest(
            namespace=self._namespace,
            task_token=task_token,
            commands=commands,
            identity=self._identity,
            eager_activity_slots=eager_slots,
            worker_build_id=self._build_id,
            return_new_workflow_task=next_task_slot,
            cached_event_id=0 if closes_run else instance.last_event_id,
        )
        return Completion(request, eager_slots, next_task_slot, closes_run)

    def release_completion(self, completion: Completion) -> None:
        """Frees the slots of a completion the server did not accept."""
        if self._activity_worker is not None:
            self._activity_worker.slots.release(completion.eager_activity_slots)
        if completion.next_task_slot:
            self.release_eager_slot()

    def completed(
        self,
        completion: Completion,
        response: workflow_service_pb2.RespondWorkflowTaskCompletedResponse,
        execution: common_pb2.WorkflowExecution,
        instance: WorkflowInstance,
    ) -> None:
        """Takes the answer of an accepted completion: runs the activity tasks handed back,
        brings ``instance`` to the run's last event (the answer's appended events) and caches
        it unless the run closed, then runs the run's next workflow task if one was handed back."""
        next_task = response.workflow_task if response.workflow_task.task_token else None
        if completion.next_task_slot and next_task is None:
            self.release_eager_slot()
        eager_slots = completion.eager_activity_slots
        handed_back = list(response.activity_tasks)
        if len(handed_back) > eager_slots:
            # Each task needs a slot; leases beyond them expire and get retried.
            logger.error(
                "the server handed back %d activity tasks for %d eager slots; dropping %d",
                len(handed_back),
                eager_slots,
                len(handed_back) - eager_slots,
            )
            handed_back = handed_back[:eager_slots]
        if self._activity_worker is not None:
            for activity_task in handed_back:
                self._activity_worker.run_task(activity_task)
            self._activity_worker.slots.release(eager_slots - len(handed_back))
        if not completion.closes_run and _catch_up(instance, response.appended_events, execution.run_id):
            self._cache.put(execution.run_id, instance)
        if next_task is not None:
            # After the put: the next task of the run continues the cached instance.
            self.run_eager(next_task)

    def _reserve_eager_activity_slots(self, commands: Sequence[command_pb2.Command]) -> int:
        """Takes activity slots for the activities the commands schedule on this queue.

        Only activities of types this worker runs count: a task of another type
        handed back here would only fail.
        """
        if self._activity_worker is None or self._stopping:
            return 0
        names = self._activity_worker.activity_names
        wanted = sum(
            1
            for command in commands
            if command.WhichOneof("attributes") == "schedule_activity_task"
            and command.schedule_activity_task.task_queue in ("", self._task_queue)
            and command.schedule_activity_task.activity_type in names
        )
        return self._activity_worker.slots.try_acquire(wanted)

    async def _on_completion_rejected(
        self, task: workflow_service_pb2.PollWorkflowTaskQueueResponse, error: RPCError
    ) -> None:
        if error.status in LEASE_LOST_STATUSES:
            logger.warning("completion of %s rejected: lease lost (%s)", _describe(task), error)
        elif error.status == grpc.StatusCode.INVALID_ARGUMENT:
            # E.g. a payload over the server's limit: retrying the same commands can
            # only fail again, so fail the task with the server's reason, where
            # describe() shows it, instead of waiting for the task to time out.
            logger.error("completion of %s refused (%s)", _describe(task), error)
            await self._fail(
                task,
                _Cause.WORKFLOW_TASK_FAILED_CAUSE_BAD_COMMAND,
                ApplicationError(f"the server refused the workflow task's commands: {error.message}"),
            )
        else:
            logger.error("completion of %s failed (%s)", _describe(task), error)

    async def _fail(
        self,
        task: workflow_service_pb2.PollWorkflowTaskQueueResponse,
        cause: workflow_service_pb2.WorkflowTaskFailedCause,
        error: BaseException,
    ) -> None:
        request = workflow_service_pb2.RespondWorkflowTaskFailedRequest(
            namespace=self._namespace,
            task_token=task.task_token,
            cause=cause,
            failure=error_to_failure(error, self._converter),
            identity=self._identity,
        )
        try:
            await send_report(self._service, self._stream, "RespondWorkflowTaskFailed", request)
        except RPCError as rpc_error:
            level = logging.WARNING if rpc_error.status in LEASE_LOST_STATUSES else logging.ERROR
            logger.log(level, "reporting the failure of %s failed (%s)", _describe(task), rpc_error)


def _catch_up(instance: WorkflowInstance, appended: Sequence[common_pb2.HistoryEvent], run_id: str) -> bool:
    """Feeds ``instance`` the events its task's completion appended (its commands' events, then
    any that waited for the task to end) up to the run's next workflow task, if any, so that it
    stands at the run's last event. Events that do not continue where it stopped are not fed.

    Returns:
        Whether the instance is still good to keep (False: it is spent).
    """
    events = list(
        itertools.takewhile(
            lambda e: e.event_type not in (EventType.WORKFLOW_TASK_SCHEDULED, EventType.WORKFLOW_TASK_STARTED),
            appended,
        )
    )
    if not events or events[0].event_id != instance.last_event_id + 1:
        return True
    if events[0].event_type != EventType.WORKFLOW_TASK_COMPLETED:
        return False  # the server refused the completion (WorkflowTaskFailed): the instance's task is void
    try:
        instance.activate(events)
    except Exception as error:  # the server's events do not match the commands: replay next time
        logger.warning("the events a completion appended to run %r do not continue its instance (%s)", run_id, error)
        return False
    return True
