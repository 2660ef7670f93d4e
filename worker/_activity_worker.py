"""Runs activity tasks: polls for them, calls the functions, reports the outcome.

Async activities run as asyncio tasks on the worker's loop; synchronous ones run in a
thread pool with the activity's context copied in, so ``activity.info()`` and friends
work in both. While an activity runs, a heartbeater sends its latest heartbeat
details to the server (throttled) and turns a cancellation request in the answer into
``activity.is_cancelled()`` and, for async activities, ``asyncio.CancelledError``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import enum
import functools
import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

import grpc
from google.protobuf.timestamp_pb2 import Timestamp

from flowforge import activity
from flowforge._rpc import WorkflowServiceClient
from flowforge._worker_interceptors import ActivityInboundInterceptor, ExecuteActivityInput, Interceptor, activity_chain
from flowforge.api.v1 import common_pb2, workflow_service_pb2
from flowforge.converter import DataConverter, error_to_failure
from flowforge.exceptions import ApplicationError, ApplicationErrorCategory, CancelledError, RPCError
from flowforge.worker._fold import HeldActivities
from flowforge.worker._metrics import WorkerMetrics
from flowforge.worker._polling import LEASE_LOST_STATUSES, TaskSlots, start_handler, start_pollers
from flowforge.worker._shared_state import SharedStateManager
from flowforge.worker._stream import WorkerStream, poll_task, send_report
from flowforge.worker._thread_cancellation import ThreadInterrupter

logger = logging.getLogger(__name__)

# Heartbeats go out at most once per this fraction of the heartbeat timeout, so a
# throttled heartbeat still lands before the timeout; without a heartbeat timeout they
# only carry progress and pick up cancellation, and once per 30 s is plenty.
_HEARTBEAT_THROTTLE_FRACTION = 0.8
_HEARTBEAT_INTERVAL_WITHOUT_TIMEOUT = timedelta(seconds=30)

# After the graceful shutdown timeout, cancelled activities get this long to report
# before their handlers are abandoned (the server's lease timeout then takes over).
_CANCELLED_REPORT_TIMEOUT = timedelta(seconds=5)


class _CancelReason(enum.Enum):
    SERVER_REQUEST = "the server requested cancellation"
    LEASE_LOST = "the activity's lease was lost"
    TIMED_OUT = "the activity's start-to-close timeout passed"
    WORKER_SHUTDOWN = "the worker is shutting down"


# The server owns these attempts' outcome (a timeout or a new lease): never report them.
_UNREPORTED = (_CancelReason.LEASE_LOST, _CancelReason.TIMED_OUT)


def _optional_duration(message: Any, field: str) -> timedelta | None:
    if not message.HasField(field):
        return None
    value = getattr(message, field).ToTimedelta()
    return value if value > timedelta(0) else None


def _optional_time(message: Any, field: str) -> datetime | None:
    if not message.HasField(field):
        return None
    timestamp: Timestamp = getattr(message, field)
    return timestamp.ToDatetime(tzinfo=UTC)


def _describe(task: workflow_service_pb2.PollActivityTaskQueueResponse) -> str:
    """Names a task in logs: ids and type only, never its payloads."""
    return (
        f"activity {task.activity_type!r} (id {task.activity_id!r}, attempt {task.attempt}) "
        f"of workflow {task.workflow_execution.workflow_id!r}"
    )


async def _call_async(fn: Callable[..., Any], args: Sequence[Any]) -> Any:
    # Calling inside the task makes a bad call (e.g. too many arguments) fail the
    # activity like any other error instead of failing before it started.
    return await fn(*args)


def _outcome(execution: asyncio.Future[Any]) -> str:
    """How an attempt ended, for the worker's metrics."""
    if execution.cancelled():
        return "canceled"
    return "completed" if execution.exception() is None else "failed"


class _RootActivityInbound(ActivityInboundInterceptor):
    """The end of the activity interceptor chain: the activity itself (a synchronous
    one in the executor, with the context variables of the chain's task)."""

    def __init__(
        self, executor: concurrent.futures.Executor | None, is_async: bool, interrupter: ThreadInterrupter | None
    ) -> None:
        super().__init__(None)
        self._executor = executor
        self._is_async = is_async
        self._interrupter = interrupter

    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        if self._is_async:
            return await input.fn(*input.args)
        context = contextvars.copy_context()
        call = _threaded_call(self._executor, self._interrupter, context, input.fn, input.args)
        return await asyncio.get_running_loop().run_in_executor(self._executor, call)


def _threaded_call(
    executor: concurrent.futures.Executor | None,
    interrupter: ThreadInterrupter | None,
    context: contextvars.Context,
    fn: Callable[..., Any],
    args: Sequence[Any],
) -> Callable[[], Any]:
    """What the executor runs for a synchronous activity: in a thread pool, the call with the
    activity's context, through ``interrupter`` if given (so cancellation raises in the thread);
    elsewhere (a process pool) the bare call, which must be picklable and cannot use ``activity.info()``."""
    if executor is None or isinstance(executor, concurrent.futures.ThreadPoolExecutor):
        if interrupter is not None:
            return functools.partial(context.run, interrupter.call, fn, *args)
        return functools.partial(context.run, fn, *args)
    return functools.partial(fn, *args)  # the context does not cross into another process


class _Heartbeater:
    """Sends an activity's heartbeats: the first at once, then at most one per interval.

    ``record`` may be called from any thread; it encodes the details right away (so a
    detail that cannot be serialized fails the caller, and later mutation of the
    values does not change what is sent) and hands them to the loop.

    Args:
        send: Sends one heartbeat; returns False when it failed and should be
            resent with the next round unless newer details arrive first.
        interval: The minimum time between two heartbeats, in seconds.
        converter: Encodes the details.
        loop: The worker's event loop.
    """

    def __init__(
        self,
        send: Callable[[common_pb2.Payloads], Any],
        interval: float,
        converter: DataConverter,
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        self._send = send
        self._interval = interval
        self._converter = converter
        self._loop = loop
        self._pending: common_pb2.Payloads | None = None
        self._has_pending = asyncio.Event()

    def record(self, details: Sequence[Any]) -> None:
        payloads = self._converter.to_payloads(details)
        # A closed loop means a synchronous activity abandoned at shutdown is still
        # running: nobody is left to send its heartbeats.
        with contextlib.suppress(RuntimeError):
            self._loop.call_soon_threadsafe(self._store, payloads)

    def _store(self, payloads: common_pb2.Payloads) -> None:
        self._pending = payloads
        self._has_pending.set()

    async def _send_pending(self) -> None:
        details, self._pending = self._pending, None
        self._has_pending.clear()
        assert details is not None
        if not await self._send(details) and self._pending is None:
            self._pending = details
            self._has_pending.set()

    async def run(self) -> None:
        """Sends heartbeats until cancelled."""
        while True:
            await self._has_pending.wait()
            await self._send_pending()
            await asyncio.sleep(self._interval)

    async def flush(self) -> None:
        """Sends details recorded but not sent yet (call after stopping :meth:`run`)."""
        if self._pending is not None:
            await self._send_pending()


class _RunningActivity:
    """One activity attempt in progress and the means to cancel it."""

    def __init__(
        self, task: workflow_service_pb2.PollActivityTaskQueueResponse, is_async: bool, arrived: float
    ) -> None:
        self.task = task
        self.arrived = arrived  # time.monotonic() when the task arrived
        self.heartbeat_sent = arrived  # time.monotonic() when the last heartbeat the server took went out
        self.is_async = is_async
        self.context: activity._Context | None = None
        self.execution: asyncio.Future[Any] | None = None
        self.cancel_reason: _CancelReason | None = None
        # Set for a synchronous activity in a thread pool the worker was given (Temporal's setup).
        self.interrupter: ThreadInterrupter | None = None
        # Set for a synchronous activity in a process pool: tells the child it is cancelled.
        self.cancel_in_process: Callable[[], None] | None = None

    def lease_ends(self) -> float | None:
        """When the attempt's lease runs out, on ``time.monotonic()`` (None: no timeout): the
        earliest of the server's start-to-close, schedule-to-close and heartbeat deadlines
        (server/history/mutation.py ``activity_lease_expiry``), counted from the task's arrival
        or the last heartbeat's sending: a little later than the server's."""
        task = self.task
        ends = []
        start_to_close = _optional_duration(task, "start_to_close_timeout")
        if start_to_close is not None:
            ends.append(self.arrived + start_to_close.total_seconds())
        schedule_to_close = _optional_duration(task, "schedule_to_close_timeout")
        if schedule_to_close is not None and task.HasField("scheduled_time") and task.HasField("started_time"):
            waited_ns = task.started_time.ToNanoseconds() - task.scheduled_time.ToNanoseconds()  # before the lease
            ends.append(self.arrived + schedule_to_close.total_seconds() - waited_ns / 1e9)
        heartbeat_timeout = _optional_duration(task, "heartbeat_timeout")
        if heartbeat_timeout is not None:
            ends.append(self.heartbeat_sent + heartbeat_timeout.total_seconds())
        return min(ends, default=None)

    def cancel(self, reason: _CancelReason) -> None:
        """Requests cancellation; the first reason given is the one reported."""
        if self.cancel_reason is None:
            self.cancel_reason = reason
        if self.context is not None:
            self.context.cancel()
        if self.interrupter is not None:
            # Temporal's way: CancelledError raised inside the activity's thread.
            self.interrupter.interrupt()
        if self.cancel_in_process is not None:
            self.cancel_in_process()
        if self.execution is None:
            return
        # A thread cannot be stopped from outside: only at shutdown does the worker stop waiting for it.
        if self.is_async or reason is _CancelReason.WORKER_SHUTDOWN:
            self.execution.cancel()


class CompletionSender(Protocol):
    """Sends successful completions for a worker that runs the queue's workflows too
    (flowforge.worker._fold.ActivityCompletions): each asks for the workflow task it
    schedules, or carries it folded in."""

    async def complete(
        self,
        task: workflow_service_pb2.PollActivityTaskQueueResponse,
        request: workflow_service_pb2.RespondActivityTaskCompletedRequest,
        arrived: float,
        lease_ends: float | None = None,
    ) -> None:
        """Sends ``request``; raises RPCError as RespondActivityTaskCompleted would."""


class ActivityWorker:
    """Polls one task queue for activity tasks and runs them.

    Args:
        service: The RPC layer.
        namespace: The namespace to poll in.
        task_queue: The task queue to poll.
        identity: The worker's identity, recorded in history.
        converter: Decodes arguments and encodes results and failures.
        activities: The registered activities by name.
        max_concurrent_activities: How many activities may run at once.
        max_concurrent_polls: How many polls may be open at once.
        executor: Runs synchronous activities; the worker creates (and later shuts
            down) a thread pool of ``max_concurrent_activities`` threads when None.
        interceptors: Worker interceptors.
        shared_state_manager: Carries heartbeats and cancellation to a process pool's activities.
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
        activities: Mapping[str, activity._Definition],
        max_concurrent_activities: int,
        max_concurrent_polls: int,
        executor: concurrent.futures.Executor | None,
        interceptors: Sequence[Interceptor] = (),
        shared_state_manager: SharedStateManager | None = None,
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
        self._activities = dict(activities)
        self._max_concurrent_activities = max_concurrent_activities
        self._max_concurrent_polls = max_concurrent_polls
        self._executor = executor
        self._owns_executor = False
        # Temporal code passes its own thread pool (Temporal requires one for synchronous
        # activities); there, cancellation is raised in the activity's thread as Temporal does.
        # In the worker's default pool a synchronous activity checks activity.is_cancelled().
        self._interrupts_threads = isinstance(executor, concurrent.futures.ThreadPoolExecutor)
        self._shared_state = shared_state_manager
        self._shutting_down = threading.Event()
        self.slots = TaskSlots(max_concurrent_activities, lambda delta: self._metrics.slots_changed("activity", delta))
        self._pollers: list[asyncio.Task[None]] = []
        self._handlers: set[asyncio.Task[None]] = set()
        self._running: dict[asyncio.Task[None], _RunningActivity] = {}
        #: The tasks taken and not reported yet, by run: what a completion may fold past.
        self.held = HeldActivities()
        #: Sends completions when the worker runs the queue's workflows too (they
        #: hand back, or fold in, the workflow task they schedule); None if it does not.
        self.completions: CompletionSender | None = None

    @property
    def activity_names(self) -> frozenset[str]:
        """The names of the registered activities."""
        return frozenset(self._activities)

    @property
    def activities(self) -> Mapping[str, activity._Definition]:
        """The registered activities by name (local activities run them too)."""
        return self._activities

    @property
    def executor(self) -> concurrent.futures.Executor | None:
        """Where synchronous activities run (set once started)."""
        return self._executor

    def start(self) -> None:
        """Starts the pollers."""
        needs_threads = any(not d.is_async for d in self._activities.values())
        if self._executor is None and needs_threads:
            self._executor = concurrent.futures.ThreadPoolExecutor(
                max_workers=self._max_concurrent_activities, thread_name_prefix="flowforge-activity"
            )
            self._owns_executor = True
        self._pollers = start_pollers(
            self._max_concurrent_polls,
            kind="activity",
            task_queue=self._task_queue,
            slots=self.slots,
            poll=self._poll,
            dispatch=self.run_task,
            polled=lambda seconds, result: self._metrics.polled("activity", seconds, result),
        )

    async def _poll(self) -> workflow_service_pb2.PollActivityTaskQueueResponse:
        request = workflow_service_pb2.PollActivityTaskQueueRequest(
            namespace=self._namespace, task_queue=self._task_queue, identity=self._identity
        )
        return await poll_task(
            self._service,
            self._stream,
            "PollActivityTaskQueue",
            request,
            workflow_service_pb2.PollActivityTaskQueueResponse,
            self._fail_undecodable,
        )

    async def _fail_undecodable(
        self, task: workflow_service_pb2.PollActivityTaskQueueResponse, error: ApplicationError
    ) -> None:
        # Retryable: another attempt may reach a worker that can decode it.
        await self._respond(task, "RespondActivityTaskFailed", failure=self._failure(error))

    def run_task(self, task: workflow_service_pb2.PollActivityTaskQueueResponse) -> None:
        """Starts running a leased task; the caller has taken a slot for it."""
        # When it arrived: a folded workflow task's time is counted from the task's lease time by it.
        arrived = time.monotonic()
        self.held.hold(task)
        start_handler(self._handlers, self._handle(task, arrived), f"flowforge {_describe(task)}")

    async def stop_polling(self) -> None:
        """Cancels the pollers (and so their open polls) and waits until they stopped."""
        for poller in self._pollers:
            poller.cancel()
        await asyncio.gather(*self._pollers, return_exceptions=True)

    async def drain(self, graceful_timeout: timedelta) -> None:
        """Lets running activities finish, then cancels the rest and waits for reports.

        Args:
            graceful_timeout: How long running activities may take to finish before
                they are cancelled and reported failed with a ``CancelledError``.
        """
        self._shutting_down.set()  # activity.is_worker_shutdown()
        loop = asyncio.get_running_loop()
        give_up_at = loop.time() + graceful_timeout.total_seconds()
        # Eager tasks from a workflow task completing right now can still arrive,
        # so keep waiting on whatever is running until the deadline.
        while self._handlers and loop.time() < give_up_at:
            await asyncio.wait(set(self._handlers), timeout=give_up_at - loop.time())
        if self._handlers:
            logger.warning(
                "cancelling %d activities still running after the graceful shutdown timeout",
                len(self._handlers),
            )
            for running in self._running.values():
                running.cancel(_CancelReason.WORKER_SHUTDOWN)
            _, abandoned = await asyncio.wait(set(self._handlers), timeout=_CANCELLED_REPORT_TIMEOUT.total_seconds())
            for handler in abandoned:
                handler.cancel()
            await asyncio.gather(*abandoned, return_exceptions=True)
        if self._owns_executor and self._executor is not None:
            # Threads of abandoned synchronous activities finish on their own.
            self._executor.shutdown(wait=False, cancel_futures=True)

    async def _handle(self, task: workflow_service_pb2.PollActivityTaskQueueResponse, arrived: float) -> None:
        try:
            definition = self._activities.get(task.activity_type)
            if definition is None:
                registered = ", ".join(sorted(self._activities))
                error = ApplicationError(
                    f"activity type {task.activity_type!r} is not registered on this worker "
                    f"(task queue {self._task_queue!r}; registered: {registered})",
                    type="ActivityTypeNotRegistered",
                )
                await self._respond(task, "RespondActivityTaskFailed", failure=self._failure(error))
                return
            await self._run(task, definition, arrived)
        except Exception:
            logger.exception("unexpected error while handling %s", _describe(task))
        finally:
            self.held.release(task.task_token)
            self.slots.release()

    async def _run(
        self,
        task: workflow_service_pb2.PollActivityTaskQueueResponse,
        definition: activity._Definition,
        arrived: float,
    ) -> None:
        loop = asyncio.get_running_loop()
        running = _RunningActivity(task, definition.is_async, arrived)
        if self._interrupts_threads and not definition.is_async:
            running.interrupter = ThreadInterrupter()
        heartbeater = _Heartbeater(
            lambda details: self._heartbeat(running, details),
            self._heartbeat_interval(task),
            self._converter,
            loop,
        )
        try:
            running.context = activity._Context(self._info(task), heartbeater.record, self._shutting_down)
            args = self._converter.from_payloads(task.input, definition.arg_type_hints)
        except Exception as error:
            logger.warning("could not decode the input of %s: %s", _describe(task), error)
            await self._respond(task, "RespondActivityTaskFailed", failure=self._failure(error))
            return

        handler = asyncio.current_task()
        assert handler is not None
        self._running[handler] = running
        # The copied context carries the activity context into the asyncio task or
        # pool thread, along with the caller's other context variables.
        context = contextvars.copy_context()
        context.run(activity._current_context.set, running.context)
        execution: asyncio.Future[Any]
        release: Callable[[], None] | None = None  # a process pool's heartbeat channel
        if self._interceptors:
            root = _RootActivityInbound(self._executor, definition.is_async, running.interrupter)
            chain = activity_chain(self._interceptors, root)
            execution = asyncio.create_task(
                chain.execute_activity(ExecuteActivityInput(definition.fn, args, task.header.fields)),
                name=f"flowforge {_describe(task)}",
                context=context,
            )
        elif definition.is_async:
            execution = asyncio.create_task(
                _call_async(definition.fn, args),
                name=f"flowforge {_describe(task)}",
                context=context,
            )
        else:
            call = _threaded_call(self._executor, running.interrupter, context, definition.fn, args)
            if self._shared_state is not None and not isinstance(self._executor, concurrent.futures.ThreadPoolExecutor):
                assert running.context is not None
                call, running.cancel_in_process, release = self._shared_state.call(
                    definition.fn, args, running.context.info, heartbeater.record
                )
            execution = loop.run_in_executor(self._executor, call)
        running.execution = execution
        began = time.monotonic()
        heartbeating = asyncio.create_task(heartbeater.run())
        try:
            # wait() rather than await: an activity that was cancelled must not look
            # like this handler being cancelled.
            done, _ = await asyncio.wait({execution}, timeout=self._start_to_close_s(task))
            if not done:
                # The server times the attempt out now (and retries or fails it), so
                # nobody would accept its outcome: stop it and free its slot.
                logger.warning("%s ran past its start-to-close timeout; cancelling it", _describe(task))
                running.cancel(_CancelReason.TIMED_OUT)
                await asyncio.wait({execution})
        finally:
            heartbeating.cancel()
            if release is not None:
                release()
            self._running.pop(handler, None)
            if not execution.done():
                execution.cancel()
        self._metrics.activity_ran(task.activity_type, time.monotonic() - began, _outcome(execution))
        await self._report(running, heartbeater)

    async def _report(self, running: _RunningActivity, heartbeater: _Heartbeater) -> None:
        """Tells the server how the attempt ended (or nothing, if its lease is gone)."""
        task, execution, reason = running.task, running.execution, running.cancel_reason
        assert execution is not None
        if reason in _UNREPORTED:
            logger.warning("not reporting %s: %s", _describe(task), reason.value)
            return
        error = None if execution.cancelled() else execution.exception()
        if isinstance(error, activity._CompleteAsyncError):
            logger.info("%s completes asynchronously (its lease stays with the task token)", _describe(task))
            return
        if not execution.cancelled() and error is None:
            try:
                result = self._converter.to_payloads([execution.result()])
            except Exception as encode_error:
                logger.warning("could not encode the result of %s: %s", _describe(task), encode_error)
                await self._respond(task, "RespondActivityTaskFailed", failure=self._failure(encode_error))
                return
            await self._respond(task, "RespondActivityTaskCompleted", running=running, result=result)
            return
        cancelled = execution.cancelled() or isinstance(error, asyncio.CancelledError)
        acknowledges_cancel = cancelled or isinstance(error, CancelledError)
        if reason is _CancelReason.SERVER_REQUEST and acknowledges_cancel:
            details = error.details if isinstance(error, CancelledError) else ()
            logger.info("%s was cancelled", _describe(task))
            await self._respond(task, "RespondActivityTaskCanceled", details=self._converter.to_payloads(details))
            return
        if cancelled:
            cause = reason.value if reason is not None else "its task was cancelled"
            error = CancelledError(f"activity cancelled: {cause}")
        assert error is not None
        # A benign ApplicationError is expected (e.g. "not ready yet"): no warning for it.
        benign = isinstance(error, ApplicationError) and error.category == ApplicationErrorCategory.BENIGN
        logger.log(logging.DEBUG if benign else logging.WARNING, "%s failed", _describe(task), exc_info=error)
        # Progress recorded just before failing belongs to the next attempt.
        await heartbeater.flush()
        await self._respond(task, "RespondActivityTaskFailed", failure=self._failure(error))

    def _failure(self, error: BaseException) -> common_pb2.Failure:
        return error_to_failure(error, self._converter)

    def _info(self, task: workflow_service_pb2.PollActivityTaskQueueResponse) -> activity.Info:
        heartbeat_details = (
            tuple(self._converter.from_payloads(task.heartbeat_details)) if task.HasField("heartbeat_details") else ()
        )
        return activity.Info(
            activity_id=task.activity_id,
            activity_type=task.activity_type,
            attempt=task.attempt,
            idempotency_key=task.idempotency_key,
            heartbeat_details=heartbeat_details,
            workflow_id=task.workflow_execution.workflow_id,
            run_id=task.workflow_execution.run_id,
            workflow_type=task.workflow_type,
            namespace=self._namespace,
            task_queue=task.task_queue or self._task_queue,
            scheduled_time=_optional_time(task, "scheduled_time"),
            started_time=_optional_time(task, "started_time"),
            start_to_close_timeout=_optional_duration(task, "start_to_close_timeout"),
            heartbeat_timeout=_optional_duration(task, "heartbeat_timeout"),
            task_token=task.task_token,
        )

    @staticmethod
    def _start_to_close_s(task: workflow_service_pb2.PollActivityTaskQueueResponse) -> float | None:
        """How long this attempt may run, counted from now (a little after the server's
        count began, so the server's timeout always comes first)."""
        timeout = _optional_duration(task, "start_to_close_timeout")
        return timeout.total_seconds() if timeout is not None else None

    @staticmethod
    def _heartbeat_interval(task: workflow_service_pb2.PollActivityTaskQueueResponse) -> float:
        heartbeat_timeout = _optional_duration(task, "heartbeat_timeout")
        if heartbeat_timeout is None:
            return _HEARTBEAT_INTERVAL_WITHOUT_TIMEOUT.total_seconds()
        return heartbeat_timeout.total_seconds() * _HEARTBEAT_THROTTLE_FRACTION

    async def _heartbeat(self, running: _RunningActivity, details: common_pb2.Payloads) -> bool:
        request = workflow_service_pb2.RecordActivityTaskHeartbeatRequest(
            namespace=self._namespace,
            task_token=running.task.task_token,
            details=details,
            identity=self._identity,
        )
        sent = time.monotonic()
        try:
            # No retry loop here: the next heartbeat round is the retry.
            response = await send_report(
                self._service, self._stream, "RecordActivityTaskHeartbeat", request, retry=False
            )
        except RPCError as error:
            if error.status in LEASE_LOST_STATUSES:
                logger.warning("heartbeat of %s rejected: lease lost (%s)", _describe(running.task), error)
                running.cancel(_CancelReason.LEASE_LOST)
                return True
            logger.warning("heartbeat of %s failed (%s)", _describe(running.task), error)
            return False
        running.heartbeat_sent = sent  # the server's heartbeat deadline moved on (it took it later)
        if response.cancel_requested:
            running.cancel(_CancelReason.SERVER_REQUEST)
        return True

    async def _respond(
        self,
        task: workflow_service_pb2.PollActivityTaskQueueResponse,
        rpc: str,
        *,
        running: _RunningActivity | None = None,
        **fields: Any,
    ) -> None:
        """Reports an attempt's outcome (``running``: the attempt, given with a completion)."""
        request_type = getattr(workflow_service_pb2, f"{rpc}Request")
        request = request_type(namespace=self._namespace, task_token=task.task_token, identity=self._identity, **fields)
        try:
            if rpc == "RespondActivityTaskCompleted" and self.completions is not None and running is not None:
                await self.completions.complete(task, request, running.arrived, running.lease_ends())
            else:
                self.held.release(task.task_token)  # the report moves the run: no fold of it applies after
                await send_report(self._service, self._stream, rpc, request)
        except RPCError as error:
            if error.status in LEASE_LOST_STATUSES:
                logger.warning("%s for %s rejected: lease lost (%s)", rpc, _describe(task), error)
            elif error.status == grpc.StatusCode.INVALID_ARGUMENT and rpc == "RespondActivityTaskCompleted":
                # The server refused the result (e.g. over the payload limit): report the
                # attempt as failed, so the retry policy decides instead of a timeout.
                logger.error("%s for %s refused (%s)", rpc, _describe(task), error)
                refused = ApplicationError(
                    f"the server refused the activity result: {error.message}", type="ActivityResultRefused"
                )
                await self._respond(task, "RespondActivityTaskFailed", failure=self._failure(refused))
            else:
                logger.error("%s for %s failed (%s)", rpc, _describe(task), error)
