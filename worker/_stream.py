"""The worker stream (``StreamWorkerTasks``): polls as credits, pushed tasks, batched reports.

One :class:`WorkerStream` per :class:`~flowforge.worker.Worker` carries what the poll and
report RPCs carry, without a call per task:

- A poller that holds a task slot asks :meth:`WorkerStream.next_task`; that grants the
  server one credit of the poller's queue and kind, and the task the server pushes
  against it goes to the oldest poller waiting on that queue and kind. The slot
  discipline of polling stays: never more credits than pollers holding a slot, so never
  more tasks than free slots. A task pushed with nobody waiting for it (its poller was
  cancelled) is given back at once through ``returned_task_tokens``.
- Reports (:meth:`WorkerStream.report`) are queued; the writer sends whatever is ready
  (credits, given-back tokens, reports) in one message per flush. While tasks handed
  over moments ago are still running (those of the last message, which report soon),
  a flush waits for their reports, at most :data:`_LINGER_S`; with none, it goes at
  once, so a lone report is never held. A credit the server does not need at once (it
  holds others of the queue and kind) rides with the next message. Each
  ``WorkerReportResult`` is turned back into the response, or the :class:`RPCError`, the
  unary RPC would have given, so callers keep their lease-lost handling.
- When the stream breaks it is opened again with backoff, on any replica. Tokens, fencing
  and leases are the unary RPCs': reports sent but not answered are sent again on the
  new stream (the server answers a stale lease FAILED_PRECONDITION; completing twice is
  a no-op), heartbeats are not (the next heartbeat round is the retry), and tasks pushed
  on the broken stream but not received are left to their lease timeouts.
- A server without the stream (UNIMPLEMENTED: an older server) turns the worker back to
  the unary RPCs for the rest of its life.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import itertools
import logging
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any, TypeVar

import grpc

from flowforge._codec import UndecodableResponse
from flowforge._rpc import WorkflowServiceClient, rpc_error
from flowforge.api.v1 import workflow_service_pb2 as pb
from flowforge.exceptions import ApplicationError, RPCError
from flowforge.worker._polling import TRANSIENT_STATUSES, failing_undecodable, long_poll, retry_delay

__all__ = ["StreamUnsupported", "WorkerStream", "poll_task", "send_report"]

logger = logging.getLogger(__name__)

_RPC = "StreamWorkerTasks"

# The WorkerReport field of each report RPC (the same name in WorkerReportResult).
_REPORT_FIELDS = {
    "RespondWorkflowTaskCompleted": "workflow_task_completed",
    "RespondWorkflowTaskFailed": "workflow_task_failed",
    "RespondQueryTaskCompleted": "query_task_completed",
    "RecordActivityTaskHeartbeat": "activity_task_heartbeat",
    "RespondActivityTaskCompleted": "activity_task_completed",
    "RespondActivityTaskFailed": "activity_task_failed",
    "RespondActivityTaskCanceled": "activity_task_canceled",
}

_POLL_RPCS = {
    pb.TASK_QUEUE_TYPE_WORKFLOW: "PollWorkflowTaskQueue",
    pb.TASK_QUEUE_TYPE_ACTIVITY: "PollActivityTaskQueue",
}
_PUSHED_KINDS = {"workflow_task": pb.TASK_QUEUE_TYPE_WORKFLOW, "activity_task": pb.TASK_QUEUE_TYPE_ACTIVITY}

# Reports ready together share a message up to this size; a larger report travels alone.
_BATCH_BYTES = 4 * 1024 * 1024
# The most credits one TaskCredit may carry (the proto's bound).
_MAX_CREDIT = 10_000
# How long shutdown waits for the server's tasks_stopped, and then for the stream to end.
_STOP_TIMEOUT_S = 5.0
_CLOSE_TIMEOUT_S = 5.0
# The longest a flush waits for the reports of tasks handed over moments ago.
_LINGER_S = 0.0005
# A task handed over this long ago is not waited for (it is no quick one).
_FRESH_S = 0.05
# The longest a credit the server does not need at once waits for a message to ride with.
_CREDIT_LINGER_S = 0.01
# A stream that received nothing for this long is renewed (stop_tasks, then a new stream),
# which proves the connection alive or finds it dead, as a long poll's deadline would.
_IDLE_RENEW_S = 60.0

_STATUS_CODES = {code.value[0]: code for code in grpc.StatusCode}

_Lane = tuple[str, int]  # (task queue, TaskQueueType)
_Response = TypeVar("_Response", pb.PollWorkflowTaskQueueResponse, pb.PollActivityTaskQueueResponse)


class StreamUnsupported(Exception):
    """The server has no worker stream (an older server): use the unary RPCs."""


@dataclasses.dataclass(eq=False)
class _Report:
    """One report waiting for its answer."""

    rpc: str
    id: int
    request: Any
    """The request as it goes on the wire (payloads encoded), copied into a message once per sending."""
    answer: asyncio.Future[Any]
    retry: bool
    give_up_at: float
    sent: bool = False
    sent_at: float = 0.0


class WorkerStream:
    """The stream of one worker and namespace; see the module docstring.

    Args:
        service: The RPC layer (its payload codec encodes reports and decodes tasks).
        namespace: The namespace of every queue the stream polls.
        identity: The worker's identity, recorded in history.
        build_id: The build of the worker's workflow code.
    """

    def __init__(self, service: WorkflowServiceClient, *, namespace: str, identity: str, build_id: str) -> None:
        self._service = service
        self._hello = pb.WorkerStreamHello(namespace=namespace, identity=identity, worker_build_id=build_id)
        self._waiters: collections.defaultdict[_Lane, collections.deque[asyncio.Future[Any]]] = collections.defaultdict(
            collections.deque
        )
        # Credits the server holds for this stream (sent or about to be), per lane.
        self._outstanding: collections.Counter[_Lane] = collections.Counter()
        self._unsent_credits: collections.Counter[_Lane] = collections.Counter()
        self._returned: list[bytes] = []
        self._urgent = False  # something unsent must leave without lingering
        self._credit_timer: asyncio.TimerHandle | None = None
        # Tokens of tasks handed over in the last _FRESH_S and not yet reported, oldest first.
        self._fresh: dict[bytes, float] = {}
        self._reports: dict[int, _Report] = {}
        self._report_ids = itertools.count(1)
        self._wake = asyncio.Event()
        self._connected = False
        # Set while no stream is open (cleared with _connected set): wakes who waits on an answer.
        self._ended = asyncio.Event()
        self._ended.set()
        self._needs_hello = False
        self._received = False
        self._last_received = 0.0
        self._renewing = False
        self._unsupported = False
        self._stopping = False
        self._stop_unsent = False
        self._tasks_stopped = asyncio.Event()
        self._closing = asyncio.Event()
        self._runner: asyncio.Task[None] | None = None

    @property
    def supported(self) -> bool:
        """False once the server answered that it has no worker stream."""
        return not self._unsupported

    @property
    def reconnecting(self) -> bool:
        """Whether reports wait for a new stream (one broke or is being renewed, or none opened
        yet): an answer to one sent before comes only once it is open."""
        open_stream = self._connected and not self._renewing
        return not (open_stream or self._unsupported or self._closing.is_set())

    @property
    def open(self) -> bool:
        """Whether a stream is open (:meth:`ended` waits for it to end)."""
        return self._connected

    async def ended(self) -> None:
        """Returns once no stream is open (at once if none is)."""
        await self._ended.wait()

    def start(self) -> None:
        """Opens the stream (and keeps it open) in the background."""
        if self._runner is None:
            self._runner = asyncio.create_task(self._run(), name="flowforge worker stream")

    # -- what the pollers and task handlers call ------------------------------------

    async def next_task(self, task_queue: str, kind: int) -> Any:
        """Grants one credit of ``task_queue`` and ``kind`` and returns the task pushed for it.

        The caller holds the task slot the credit stands for.

        Raises:
            StreamUnsupported: The server has no worker stream.
            UndecodableResponse: The codec could not decode the task (it still carries its token).
        """
        if self._unsupported:
            raise StreamUnsupported()
        lane = (task_queue, kind)
        waiter: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        waiters = self._waiters[lane]
        waiters.append(waiter)
        # A credit left by a poller that was cancelled serves this one.
        if self._connected and not (self._stopping or self._renewing) and self._outstanding[lane] < len(waiters):
            self._grant(lane)
        try:
            return await waiter
        except asyncio.CancelledError:
            # Cancelled just as its task arrived: give the task back rather than sit on its lease.
            if waiter.done() and not waiter.cancelled() and waiter.exception() is None:
                self._give_back(waiter.result().task_token)
            raise
        finally:
            with contextlib.suppress(ValueError):
                waiters.remove(waiter)

    def _grant(self, lane: _Lane) -> None:
        """One more credit of ``lane``: sent at once if the server holds none of it,
        else with the next message (or after :data:`_CREDIT_LINGER_S`)."""
        held_by_server = self._outstanding[lane] - self._unsent_credits[lane]
        self._outstanding[lane] += 1
        self._unsent_credits[lane] += 1
        if held_by_server <= 0:
            self._send_now()
        elif self._credit_timer is None:
            self._credit_timer = asyncio.get_running_loop().call_later(_CREDIT_LINGER_S, self._send_now)

    def _send_now(self) -> None:
        """Wakes the writer to send what is ready without lingering."""
        self._stop_credit_timer()
        self._urgent = True
        self._wake.set()

    def _stop_credit_timer(self) -> None:
        if self._credit_timer is not None:
            self._credit_timer.cancel()
            self._credit_timer = None

    async def report(self, rpc: str, request: Any, *, retry: bool = True) -> Any:
        """Sends a report (the request of ``rpc``) and returns what the unary RPC would.

        Args:
            rpc: One of the report RPCs (``RespondActivityTaskCompleted``, ...).
            request: Its request.
            retry: Whether to send it again on a new stream if the stream breaks
                before the answer (like a unary call's retries, for as long).

        Raises:
            RPCError: The status the unary RPC would have ended with.
        """
        if self._unsupported or self._closing.is_set():
            return await self._service.call(rpc, request, retry=retry)
        if not retry and not self._connected:
            raise RPCError("the worker stream is reconnecting", grpc.StatusCode.UNAVAILABLE)
        encoded = await self._service.encode_request(rpc, request)
        report_id = next(self._report_ids)
        loop = asyncio.get_running_loop()
        pending = _Report(
            rpc=rpc,
            id=report_id,
            request=encoded,
            answer=loop.create_future(),
            retry=retry,
            give_up_at=loop.time() + self._service.retry_config.maximum_elapsed.total_seconds(),
        )
        self._reports[report_id] = pending
        if rpc != "RecordActivityTaskHeartbeat":
            self._fresh.pop(request.task_token, None)
        self._wake.set()
        # A server that stops answering without the stream breaking: the unary call's deadlines.
        # A timer that settles the answer, not wait_for(shield(...)): that costs three
        # more futures and loop callbacks on every report.
        config = self._service.retry_config
        patience_s = (config.rpc_timeout + (config.maximum_elapsed if retry else timedelta(0))).total_seconds()
        deadline = loop.call_later(patience_s, _answer_late, pending.answer, rpc, patience_s)
        try:
            return await pending.answer
        except StreamUnsupported:
            return await self._service.call(rpc, request, retry=retry)
        finally:
            deadline.cancel()
            self._reports.pop(report_id, None)

    async def stop_tasks(self) -> None:
        """Asks the server to push nothing more and waits (a bounded time) until it
        says so; tasks pushed meanwhile are given back."""
        self._stopping = True
        if self._unsupported or not self._connected:
            return
        self._stop_unsent = True
        self._wake.set()
        try:
            await asyncio.wait_for(self._tasks_stopped.wait(), _STOP_TIMEOUT_S)
        except TimeoutError:
            logger.warning("the server did not confirm stop_tasks within %.0fs", _STOP_TIMEOUT_S)

    async def close(self) -> None:
        """Waits (a bounded time) for reports still unanswered, half-closes the stream
        and waits for the server to end it."""
        self._stopping = True
        if self._runner is None:
            return
        unanswered = [report.answer for report in self._reports.values()]
        if unanswered:
            await asyncio.wait(unanswered, timeout=_CLOSE_TIMEOUT_S)
        self._closing.set()
        self._wake.set()
        done, _ = await asyncio.wait({self._runner}, timeout=_CLOSE_TIMEOUT_S)
        if not done:
            self._runner.cancel()
        await asyncio.gather(self._runner, return_exceptions=True)
        for report in list(self._reports.values()):
            _settle(report.answer, RPCError("the worker stream is closed", grpc.StatusCode.UNAVAILABLE))

    # -- the stream's life -------------------------------------------------------------

    async def _run(self) -> None:
        failures = 0
        while not self._closing.is_set():
            call: Any = None
            error: RPCError | None = None
            renewed = False
            try:
                call = self._service.open_stream(_RPC)
                self._begin()
                renewed = await self._serve(call)
            except grpc.aio.AioRpcError as failed:
                error = rpc_error(failed)
            except RPCError as stalled:
                error = stalled
            except Exception:  # a bug must not end the worker's stream for good
                logger.exception("the worker stream failed")
                error = RPCError("the worker stream failed", grpc.StatusCode.UNKNOWN)
            finally:
                if call is not None:
                    call.cancel()
                self._connected = False
                self._ended.set()
            if error is not None and _without_stream(error):
                self._fall_back()
                return
            if self._closing.is_set():
                return
            if renewed:
                self._on_break(RPCError("the worker stream was renewed", grpc.StatusCode.UNAVAILABLE))
                logger.debug("the worker stream was idle for %.0fs and is renewed", _IDLE_RENEW_S)
                failures = 0
                continue
            error = error or RPCError("the server ended the worker stream", grpc.StatusCode.UNAVAILABLE)
            failures = 1 if self._received else failures + 1
            delay = retry_delay(failures)
            self._on_break(error)
            level = logging.WARNING if error.status in TRANSIENT_STATUSES else logging.ERROR
            logger.log(level, "the worker stream broke (%s); reconnecting in %.1fs", error, delay)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._closing.wait(), delay)

    def _begin(self) -> None:
        """A new stream: the hello first, then every live poller's credit and every report unanswered."""
        self._connected = True
        self._ended.clear()
        self._needs_hello = True
        self._received = False
        self._last_received = asyncio.get_running_loop().time()
        self._renewing = False
        self._tasks_stopped.clear()
        self._outstanding.clear()
        self._unsent_credits.clear()
        if not self._stopping:
            for lane, waiters in self._waiters.items():
                live = sum(not waiter.done() for waiter in waiters)
                if live:
                    self._outstanding[lane] = self._unsent_credits[lane] = live
        self._send_now()

    async def _serve(self, call: Any) -> bool:
        """Serves one stream until it ends; True when it ended to be renewed."""
        reader = asyncio.create_task(self._read(call))
        writer = asyncio.create_task(self._write(call))
        stalled = asyncio.create_task(self._watch())
        try:
            done, _ = await asyncio.wait({reader, writer, stalled}, return_when=asyncio.FIRST_COMPLETED)
            if stalled in done:
                if stalled.result():
                    return True
                raise RPCError("the server stopped answering on the worker stream", grpc.StatusCode.DEADLINE_EXCEEDED)
            if reader not in done:
                # A write to a stream that has ended: the reader has its status.
                with contextlib.suppress(asyncio.InvalidStateError):
                    writer.result()  # a failed write raises the stream's status
                await reader  # half-closed: the server ends the stream once it has answered
            reader.result()
            return False
        finally:
            for task in (reader, writer, stalled):
                task.cancel()
            await asyncio.gather(reader, writer, stalled, return_exceptions=True)

    async def _watch(self) -> bool:
        """Watches the open stream for a dead connection (one that died without a reset).

        Returns False when a report sent on it has waited longer than a unary call's
        deadline for its answer (it is sent again on a new stream). After
        :data:`_IDLE_RENEW_S` with nothing received it asks the server to stop pushing:
        True once the server confirms (the stream is renewed), False if it does not.
        """
        deadline = self._service.retry_config.rpc_timeout.total_seconds()
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(min(deadline, _IDLE_RENEW_S) / 4)
            now = loop.time()
            if any(report.sent and now - report.sent_at > deadline for report in self._reports.values()):
                return False
            # With no report awaiting an answer, so none needs sending again on the new stream.
            idle = now - self._last_received > _IDLE_RENEW_S
            if idle and not self._stopping and not any(report.sent for report in self._reports.values()):
                self._renewing = True
                self._stop_unsent = True
                self._wake.set()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._tasks_stopped.wait(), _STOP_TIMEOUT_S)
                return self._tasks_stopped.is_set()

    def _on_break(self, error: RPCError) -> None:
        self._returned.clear()  # their leases were this stream's; they run out
        self._tasks_stopped.set()  # nothing more arrives on a broken stream
        now = asyncio.get_running_loop().time()
        for report_id, report in list(self._reports.items()):
            if (report.sent and not report.retry) or now >= report.give_up_at:
                del self._reports[report_id]
                _settle(report.answer, error)
            report.sent = False

    def _fall_back(self) -> None:
        logger.info("the server has no worker stream (an older server); polling and reporting with unary RPCs")
        self._unsupported = True
        for waiters in self._waiters.values():
            for waiter in waiters:
                _settle(waiter, StreamUnsupported())
        for report in self._reports.values():
            _settle(report.answer, StreamUnsupported())

    # -- the two directions ---------------------------------------------------------------

    async def _read(self, call: Any) -> None:
        while True:
            response = await call.read()
            if response is grpc.aio.EOF:
                return
            self._received = True
            self._last_received = asyncio.get_running_loop().time()
            for pushed in response.tasks:
                await self._take(pushed)
            for result in response.results:
                await self._answer(result)
            if response.tasks_stopped:
                self._tasks_stopped.set()

    async def _take(self, pushed: pb.PushedTask) -> None:
        field = pushed.WhichOneof("task")
        if field is None:
            logger.warning("the server pushed a task of no kind on queue %r; ignored", pushed.task_queue)
            return
        kind = _PUSHED_KINDS[field]
        task = getattr(pushed, field)
        lane = (pushed.task_queue, kind)
        self._outstanding[lane] = max(0, self._outstanding[lane] - 1)
        outcome: Any
        try:
            outcome = await self._service.decode_response(_POLL_RPCS[kind], task)
        except UndecodableResponse as error:
            outcome = error
        waiters = self._waiters.get(lane)
        while waiters and not self._stopping:
            waiter = waiters.popleft()
            if not waiter.done():
                _settle(waiter, outcome, result=not isinstance(outcome, UndecodableResponse))
                self._handed_over([task.task_token])
                return
        self._give_back(task.task_token)

    async def _answer(self, result: pb.WorkerReportResult) -> None:
        report = self._reports.pop(result.id, None)
        if report is None or report.answer.done():
            return  # its caller gave up (cancelled or timed out)
        if result.status_code != 0:
            status = _STATUS_CODES.get(result.status_code, grpc.StatusCode.UNKNOWN)
            _settle(report.answer, RPCError(result.status_message or status.name, status))
            return
        answer = getattr(result, _REPORT_FIELDS[report.rpc])
        self._handed_over(_eager_tokens(answer))
        try:
            response = await self._service.decode_response(report.rpc, answer)
        except UndecodableResponse as error:
            _settle(report.answer, error)
            return
        _settle(report.answer, response, result=True)

    def _handed_over(self, tokens: list[bytes]) -> None:
        now = asyncio.get_running_loop().time()
        for token in tokens:
            self._fresh[token] = now

    def _give_back(self, token: bytes) -> None:
        self._fresh.pop(token, None)
        if token and self._connected:
            self._returned.append(token)
            self._send_now()

    async def _write(self, call: Any) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            await asyncio.sleep(0)  # reports made ready in this same turn of the loop join the message
            await self._linger()
            for message in self._messages():
                await call.write(message)
            if self._closing.is_set() and not self._wake.is_set():
                await call.done_writing()
                return

    async def _linger(self) -> None:
        """Waits, at most :data:`_LINGER_S`, for the reports of tasks handed over
        moments ago, unless something must leave at once."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + _LINGER_S
        while not (self._urgent or self._stop_unsent or self._closing.is_set()) and self._expecting_reports():
            remaining = deadline - loop.time()
            if remaining <= 0:
                return
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), remaining)

    def _expecting_reports(self) -> bool:
        """Whether a task handed over in the last :data:`_FRESH_S` has not reported yet
        (forgetting older ones: they are no quick tasks, or were never reported)."""
        stale_before = asyncio.get_running_loop().time() - _FRESH_S
        while self._fresh:
            oldest = next(iter(self._fresh))
            if self._fresh[oldest] >= stale_before:
                return True
            del self._fresh[oldest]
        return False

    def _messages(self) -> list[pb.WorkerStreamRequest]:
        """Everything ready, in as few messages as the batch size allows."""
        self._urgent = False
        self._stop_credit_timer()
        first = pb.WorkerStreamRequest()
        if self._needs_hello:
            first.hello.CopyFrom(self._hello)
            self._needs_hello = False
        first.returned_task_tokens.extend(self._returned)
        self._returned.clear()
        for (task_queue, kind), count in self._unsent_credits.items():
            for start in range(0, count, _MAX_CREDIT):
                first.credits.add(task_queue=task_queue, task_queue_type=kind, count=min(_MAX_CREDIT, count - start))
        self._unsent_credits.clear()
        if self._stop_unsent:
            first.stop_tasks = True
            self._stop_unsent = False
        messages = [first]
        # Sizes are worked out (each a serialization) only for a message taking a second report.
        size = -1
        now = asyncio.get_running_loop().time()
        for report in self._reports.values():
            if report.sent or self._renewing:  # while renewing, reports wait for the new stream
                continue
            report.sent = True
            report.sent_at = now
            if messages[-1].reports:
                size = messages[-1].ByteSize() if size < 0 else size
                report_size = report.request.ByteSize()
                if size + report_size > _BATCH_BYTES:
                    messages.append(pb.WorkerStreamRequest())
                    size = 0
                size += report_size
            getattr(messages[-1].reports.add(id=report.id), _REPORT_FIELDS[report.rpc]).CopyFrom(report.request)
        # A later message is started only after a report, so an empty first one is the only one.
        return messages if first.ListFields() else []


def _eager_tokens(answer: Any) -> list[bytes]:
    """The tokens of the tasks a report's answer hands over (leased eagerly), a folded
    workflow task's answer's included."""
    tokens = [task.task_token for task in getattr(answer, "activity_tasks", ())]
    fields = answer.DESCRIPTOR.fields_by_name
    if fields.get("workflow_task") is not None and answer.HasField("workflow_task"):
        tokens.append(answer.workflow_task.task_token)
    if fields.get("folded_workflow_task_completed") is not None and answer.HasField("folded_workflow_task_completed"):
        tokens += _eager_tokens(answer.folded_workflow_task_completed)
    return tokens


def _without_stream(error: RPCError) -> bool:
    """Whether ``error`` says the server has no worker stream: UNIMPLEMENTED, or the
    PERMISSION_DENIED that servers from before the stream answer for a method their
    authorization table does not list."""
    if error.status == grpc.StatusCode.UNIMPLEMENTED:
        return True
    return error.status == grpc.StatusCode.PERMISSION_DENIED and "not in the authorization table" in error.message


def _answer_late(answer: asyncio.Future[Any], rpc: str, patience_s: float) -> None:
    """Fails a report the server has not answered within ``patience_s``."""
    message = f"the server did not answer {rpc} on the worker stream within {patience_s:g}s"
    _settle(answer, RPCError(message, grpc.StatusCode.DEADLINE_EXCEEDED))


def _settle(future: asyncio.Future[Any], outcome: Any, *, result: bool = False) -> None:
    """Resolves ``future`` with ``outcome`` (a result, or else an exception) unless it is done."""
    if future.done():
        return
    if result:
        future.set_result(outcome)
    else:
        future.set_exception(outcome)


async def poll_task(
    service: WorkflowServiceClient,
    stream: WorkerStream | None,
    rpc: str,
    request: Any,
    response_type: type[_Response],
    fail_undecodable: Callable[[_Response, ApplicationError], Awaitable[None]],
) -> _Response:
    """The next task of ``request``'s queue: pushed on ``stream`` (if the server has
    one), else by one long poll of ``rpc``. The caller holds a task slot for it."""
    if stream is not None and stream.supported:
        kind = pb.TASK_QUEUE_TYPE_WORKFLOW if rpc == "PollWorkflowTaskQueue" else pb.TASK_QUEUE_TYPE_ACTIVITY
        with contextlib.suppress(StreamUnsupported):
            return await failing_undecodable(
                stream.next_task(request.task_queue, kind), response_type, fail_undecodable
            )
    return await long_poll(service, rpc, request, response_type, fail_undecodable)


async def send_report(
    service: WorkflowServiceClient, stream: WorkerStream | None, rpc: str, request: Any, *, retry: bool = True
) -> Any:
    """Sends a report on ``stream``, or as its unary RPC without one; same answer, same errors."""
    if stream is None:
        return await service.call(rpc, request, retry=retry)
    return await stream.report(rpc, request, retry=retry)
