"""The folded workflow task: an activity's completion sent with the workflow task it schedules.

A worker that completes an activity and holds the activity's run cached (idle, at the run's
last event) runs the workflow task the completion would schedule before it reports, on the
events the server is going to append (ActivityTaskStarted, ActivityTaskCompleted,
WorkflowTaskScheduled, WorkflowTaskStarted), and sends the activity's completion and that
task's completion in one ``RespondActivityTaskCompleted``: the server applies both in one
transaction when the run is still as the worker saw it, and otherwise ignores the fold
(docs/worker-stream.md, "Folded workflow tasks"). It saves a commit, a push, a report and a
history hand-out per activity.

At most one fold of a run is in flight: another completion of the run waits for its answer
(the fold moves the run's cached instance), then folds on the instance the answer updated.
It waits a short bound at most (nothing extends its lease meanwhile), and not at all for an
answer that only a new stream can bring or while the worker stops: then it is sent unfolded,
which is always right (the fold in flight, if applied, finds the run moved on or is applied first).
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Any

from google.protobuf.timestamp_pb2 import Timestamp

from flowforge.api import schema
from flowforge.api.schema import EventType
from flowforge.api.v1 import common_pb2, workflow_service_pb2
from flowforge.exceptions import RPCError
from flowforge.worker._polling import LEASE_LOST_STATUSES
from flowforge.worker._stream import WorkerStream, send_report

if TYPE_CHECKING:
    from flowforge._rpc import WorkflowServiceClient
    from flowforge._workflow_instance import WorkflowInstance
    from flowforge.worker._workflow_worker import WorkflowWorker

__all__ = ["ActivityCompletions", "HeldActivities", "fold_events", "fold_started_time"]

logger = logging.getLogger(__name__)

_NANOS = 1_000_000_000
# The largest folded report sent: every server takes requests of 1 MiB and more (server/app.py
# max_request_bytes), and a report of an activity's result with a workflow task's commands that
# large would save nothing worth a report the server might refuse whole (ending the stream).
_MAX_FOLDED_REQUEST_BYTES = 1024 * 1024
_NANOS_PER_MICROSECOND = 1_000
# The longest a completion waits for the answer to another fold of its run before it is sent
# unfolded. A fold's answer takes a round trip and a commit (milliseconds; tens under load),
# so a prompt one comes well within it and parallel completions all fold; a late one (a busy
# executor or server, a slow connection) costs the waiting completion no more than this.
_FOLD_WAIT_S = 1.0
# ...and no more than this share of the time left on the waiting attempt's lease, which nothing
# extends while it waits: the rest is for its own report's trip and commit, and for the error
# of the worker's estimate of the lease (counted from the task's arrival, not its lease).
_FOLD_WAIT_LEASE_SHARE = 0.25


def fold_started_time(
    task: workflow_service_pb2.PollActivityTaskQueueResponse, arrived: float, last_event_time: Timestamp
) -> Timestamp:
    """The folded workflow task's start (its ``workflow.now()``), on the server's clock.

    The activity task's lease time (the server's clock when it leased it) plus the worker's
    monotonic time since the task arrived: never the worker's wall clock, which may be skewed
    against the server's. That stays below the server's now (the lease was before the task
    arrived); never before the run's last event, which the server requires. In whole
    microseconds, the precision of the time the server records: the workflow loop's clock
    (``time()``) of the folded task is then the one a replay of the history sets.

    Args:
        task: The activity task (its ``started_time`` is the lease time).
        arrived: ``time.monotonic()`` when the task arrived at the worker.
        last_event_time: The time of the run's last event, as the cached instance saw it.
    """
    elapsed_ns = max(0, int((time.monotonic() - arrived) * _NANOS))
    leased_ns = task.started_time.ToNanoseconds() + elapsed_ns
    started_ns = max(leased_ns - leased_ns % _NANOS_PER_MICROSECOND, last_event_time.ToNanoseconds())
    return Timestamp(seconds=started_ns // _NANOS, nanos=started_ns % _NANOS)


def fold_events(
    *,
    last_event_id: int,
    scheduled_event_id: int,
    task: workflow_service_pb2.PollActivityTaskQueueResponse,
    request: workflow_service_pb2.RespondActivityTaskCompletedRequest,
    started_time: Timestamp,
) -> list[common_pb2.HistoryEvent]:
    """The events the server appends when it applies the fold, as the cached instance reads them.

    Ids and types are the server's (server/history/activities.py ``_record_activity_outcome``
    then the eager WorkflowTaskStarted); of the attributes, the instance reads only the
    ActivityTaskCompleted's ``scheduled_event_id`` and ``result``, and of the times only the
    WorkflowTaskStarted's (``workflow.now()``), so the rest need not be the server's byte for byte.
    """
    started_id = last_event_id + 1
    specs: list[tuple[EventType, dict[str, object], Timestamp]] = [
        (
            EventType.ACTIVITY_TASK_STARTED,
            {"scheduled_event_id": scheduled_event_id, "attempt": task.attempt, "identity": request.identity},
            task.started_time,
        ),
        (
            EventType.ACTIVITY_TASK_COMPLETED,
            {
                "scheduled_event_id": scheduled_event_id,
                "started_event_id": started_id,
                "result": schema.payloads_json(request.result),
                "identity": request.identity,
            },
            started_time,
        ),
        (EventType.WORKFLOW_TASK_SCHEDULED, {"task_queue": task.task_queue, "attempt": 1}, started_time),
        (
            EventType.WORKFLOW_TASK_STARTED,
            {"scheduled_event_id": started_id + 2, "identity": request.identity},
            started_time,
        ),
    ]
    return [
        common_pb2.HistoryEvent(
            event_id=started_id + offset, event_type=event_type, event_time=at, attributes_json=schema.dumps(attributes)
        )
        for offset, (event_type, attributes, at) in enumerate(specs)
    ]


class HeldActivities:
    """The activity tasks a worker holds and has not reported an outcome of yet, by run.

    A fold applies only if nothing moves the run before it lands. Another worker's
    completion of one of the run's activities would (the server then ignores the fold, and
    the worker replays the run's whole history), so a completion folds only when every
    activity the run awaits is held here: running, or a completion waiting to fold. A task
    is released when its outcome is sent any other way, before it is sent, since that report
    moves the run too.
    """

    def __init__(self) -> None:
        self._by_run: dict[str, dict[bytes, str]] = {}  # run id -> task token -> activity id
        self._runs: dict[bytes, str] = {}  # task token -> run id

    def hold(self, task: workflow_service_pb2.PollActivityTaskQueueResponse) -> None:
        """The worker took ``task`` to run it."""
        run_id = task.workflow_execution.run_id
        self._by_run.setdefault(run_id, {})[task.task_token] = task.activity_id
        self._runs[task.task_token] = run_id

    def release(self, task_token: bytes) -> None:
        """The outcome of the task is being sent unfolded, or the worker is done with it (idempotent)."""
        run_id = self._runs.pop(task_token, None)
        if run_id is None:
            return
        held = self._by_run[run_id]
        del held[task_token]
        if not held:
            del self._by_run[run_id]

    def activity_ids(self, run_id: str) -> frozenset[str]:
        """The ids of run ``run_id``'s activities held here."""
        held = self._by_run.get(run_id)
        return frozenset(held.values()) if held else frozenset()


class ActivityCompletions:
    """Sends the successful activity completions of a worker that also runs the queue's workflows.

    Each asks for the workflow task it schedules (leased eagerly, into a reserved workflow
    slot) and, when the run's instance is cached here and idle, folds that task in.

    Args:
        workflows: The workflow worker of the same task queue.
        service: The RPC layer.
        stream: The worker stream; None reports with unary RPCs.
        task_queue: The task queue (eager workflow tasks are leased from it).
        held: The activity tasks the worker holds: a completion folds only when they are
            all the run awaits.
    """

    def __init__(
        self,
        workflows: WorkflowWorker,
        service: WorkflowServiceClient,
        stream: WorkerStream | None,
        task_queue: str,
        held: HeldActivities,
    ) -> None:
        self._workflows = workflows
        self._held = held
        self._service = service
        self._stream = stream
        self._task_queue = task_queue
        # Runs with a fold in flight: set (and dropped) when its answer has been handled.
        self._in_flight: dict[str, asyncio.Event] = {}

    async def complete(
        self,
        task: workflow_service_pb2.PollActivityTaskQueueResponse,
        request: workflow_service_pb2.RespondActivityTaskCompletedRequest,
        arrived: float,
        lease_ends: float | None = None,
    ) -> None:
        """Reports the completion, folded when it can be.

        Args:
            task: The activity task.
            request: Its completion (namespace, token, identity, result).
            arrived: ``time.monotonic()`` when the task arrived at the worker.
            lease_ends: ``time.monotonic()`` when the attempt's lease runs out, as the worker
                estimates it (None: it has no timeout); bounds the wait for another fold.

        Raises:
            RPCError: As ``RespondActivityTaskCompleted`` (unfolded) would.
        """
        run_id = task.workflow_execution.run_id
        may_fold = await self._no_fold_in_flight(run_id, lease_ends)
        workflows = self._workflows
        if not workflows.reserve_eager_slot():
            self._held.release(request.task_token)
            await send_report(self._service, self._stream, "RespondActivityTaskCompleted", request)
            return
        foldable = (
            workflows.take_foldable(run_id, task.activity_id, self._held.activity_ids(run_id))
            if may_fold and task.HasField("started_time") and request.ByteSize() <= _MAX_FOLDED_REQUEST_BYTES
            else None
        )
        if foldable is None:
            await self._send_unfolded(request, cached_event_id=workflows.cached_event_id(run_id))
            return
        instance, scheduled_event_id, last_event_time = foldable
        done = self._in_flight[run_id] = asyncio.Event()
        try:
            started_time = fold_started_time(task, arrived, last_event_time)
            await self._fold(task, request, instance, scheduled_event_id, started_time)
        finally:
            del self._in_flight[run_id]
            done.set()

    async def _no_fold_in_flight(self, run_id: str, lease_ends: float | None) -> bool:
        """Waits until no fold of run ``run_id`` is in flight; False if one still is when waiting
        longer could cost the waiting attempt its lease or wait on an answer that is not coming
        soon (the stream is down, the worker stops): the completion then goes unfolded."""
        if run_id not in self._in_flight:
            return True
        now = time.monotonic()
        bound = _FOLD_WAIT_S if lease_ends is None else min(_FOLD_WAIT_S, (lease_ends - now) * _FOLD_WAIT_LEASE_SHARE)
        give_up_at = now + bound
        stream = self._stream
        while (in_flight := self._in_flight.get(run_id)) is not None:
            left = give_up_at - time.monotonic()
            if left <= 0 or self._workflows.stopping or (stream is not None and stream.reconnecting):
                return False
            wakers: list[asyncio.Task[Any]] = [asyncio.create_task(in_flight.wait())]
            if stream is not None and stream.open:  # a break sends the fold again on a new stream
                wakers.append(asyncio.create_task(stream.ended()))
            try:
                await asyncio.wait(wakers, timeout=left, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for waker in wakers:
                    waker.cancel()
        return True

    async def _fold(
        self,
        task: workflow_service_pb2.PollActivityTaskQueueResponse,
        request: workflow_service_pb2.RespondActivityTaskCompletedRequest,
        instance: WorkflowInstance,
        scheduled_event_id: int,
        started_time: Timestamp,
    ) -> None:
        """Runs the workflow task on ``instance`` (taken from the cache) and sends both completions."""
        workflows = self._workflows
        last_event_id = instance.last_event_id
        events = fold_events(
            last_event_id=last_event_id,
            scheduled_event_id=scheduled_event_id,
            task=task,
            request=request,
            started_time=started_time,
        )
        commands = await workflows.run_folded_task(task, instance, events)
        if commands is None:  # discarded: the normal path replays and reports what went wrong
            await self._send_unfolded(request, cached_event_id=0)
            return
        completion = workflows.completion(b"", commands, instance)
        folded = request.folded_workflow_task
        folded.last_event_id = last_event_id
        folded.started_time.CopyFrom(started_time)
        folded.completion.CopyFrom(completion.request)
        if request.ByteSize() > _MAX_FOLDED_REQUEST_BYTES:
            workflows.release_completion(completion)
            request.ClearField("folded_workflow_task")
            await self._send_unfolded(request, cached_event_id=0)  # the instance ran past the run: spoiled
            return
        request.eager_workflow_task_queue = self._task_queue
        request.eager_workflow_task_cached_event_id = 0  # if ignored, the instance is spoiled: full history
        try:
            response = await send_report(self._service, self._stream, "RespondActivityTaskCompleted", request)
        except RPCError as error:
            workflows.release_completion(completion)
            if error.status in LEASE_LOST_STATUSES:
                workflows.release_eager_slot()
                raise
            logger.warning(
                "the folded completion of activity %r of run %r failed (%s); sending it unfolded",
                task.activity_id,
                task.workflow_execution.run_id,
                error,
            )
            request.ClearField("folded_workflow_task")
            await self._send_unfolded(request, cached_event_id=0)
            return
        except BaseException:  # an answer not decoded, a cancellation: nothing it hands over runs
            workflows.release_completion(completion)
            workflows.release_eager_slot()
            raise
        workflows.metrics.workflow_task_folded(applied=response.workflow_task_folded)
        if response.workflow_task_folded:
            workflows.release_eager_slot()  # the folded task ran in it
            workflows.completed(completion, response.folded_workflow_task_completed, task.workflow_execution, instance)
            return
        workflows.release_completion(completion)
        self._run_eager(response)

    async def _send_unfolded(
        self,
        request: workflow_service_pb2.RespondActivityTaskCompletedRequest,
        *,
        cached_event_id: int,
    ) -> None:
        """Sends the completion asking for its workflow task eagerly (a workflow slot is reserved)."""
        self._held.release(request.task_token)  # it moves the run: no fold of it applies after
        request.eager_workflow_task_queue = self._task_queue
        request.eager_workflow_task_cached_event_id = cached_event_id
        try:
            response = await send_report(self._service, self._stream, "RespondActivityTaskCompleted", request)
        except BaseException:  # an error answer, one not decoded, a cancellation: no task comes
            self._workflows.release_eager_slot()
            raise
        self._run_eager(response)

    def _run_eager(self, response: workflow_service_pb2.RespondActivityTaskCompletedResponse) -> None:
        if response.workflow_task.task_token:
            self._workflows.run_eager(response.workflow_task)
        else:
            self._workflows.release_eager_slot()
