"""The worker stream, ``StreamWorkerTasks`` (docs/worker-stream.md): one long-lived
bidirectional stream per worker and namespace carrying what the poll and report RPCs
carry, without a call per task.

Per stream, beside the handler that writes answers:

- the reader takes the worker's messages in order: the hello (validated like a
  poll's fields), tasks handed back, credits, ``stop_tasks`` and reports;
- a feed per (task queue, kind) leases through matching while it holds credits,
  with up to :data:`POLLS_PER_QUEUE` polls at once, as a worker's pollers would;
- each report runs in its own task, so reports that arrive together reach group
  commit together; each is answered once, by its id, with what its unary RPC would
  have answered or that RPC's status (``error_status``, the ``@rpc`` mapping).
  Reports of one task (the same task token) run one after another in the order they
  were read, as one worker's unary calls for a task would.

What is ready is written together: the writer takes everything queued into one
message, after waiting (at most :data:`_LINGER_S`) for the answers of reports that have
committed but are still being finished (a workflow task's history read), so reports
committed in one group transaction are answered in one message. A lone answer is
written at once: nothing else is decided. Leases are the unary path's: a pushed task that never reached the stream
(it broke, or the worker half-closed) is released at once, and one the worker held
follows the lease rules.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import logging
import time
from collections.abc import AsyncIterator, Iterable, Sequence
from typing import Any

import grpc
from prometheus_client import Counter, Histogram

from flowforge.api.schema import TaskKind
from flowforge.api.v1 import workflow_service_pb2 as pb
from flowforge.server.auth.interceptor import authorize
from flowforge.server.errors import InvalidArgument, ServiceError
from flowforge.server.frontend import reports
from flowforge.server.frontend._base import Context, ServiceBase, error_status
from flowforge.server.frontend.protos import activity_task_proto, query_task_proto, workflow_task_proto
from flowforge.server.frontend.validation import name
from flowforge.server.history import HistoryEngine, LeasedQuery
from flowforge.server.history.group_commit import on_committed
from flowforge.server.matching import Matching

__all__ = [
    "MAX_CREDIT",
    "MAX_PENDING_REPORTS",
    "MAX_QUEUES",
    "MAX_RETURNED_TOKENS",
    "MAX_STREAM_CREDITS",
    "POLLS_PER_QUEUE",
    "WorkerStreamHandlers",
]

log = logging.getLogger("flowforge.server.frontend.worker_stream")

#: The most one ``TaskCredit`` may grant.
MAX_CREDIT = 10_000
#: The most credits a stream may hold unspent, over all its queues.
MAX_STREAM_CREDITS = 10_000
#: The most (task queue, kind) pairs one stream may hold credits for.
MAX_QUEUES = 100
#: The most task tokens one message may hand back: as many as a stream may hold
#: credits for, so a worker never needs more, and each costs a store write.
MAX_RETURNED_TOKENS = 10_000
#: Leases under way at once per (task queue, kind) of a stream: a worker's default pollers.
POLLS_PER_QUEUE = 5
#: Reports of one stream being run or waiting for their answer to be written. Beyond it
#: the stream is not read until an answer is written, so gRPC's flow control holds back
#: a worker that sends faster than the reports run or than it reads (backpressure).
MAX_PENDING_REPORTS = 1000
# One message carries about this much; a single larger task or answer goes alone.
_MAX_BATCH_BYTES = 1 << 20
# How long one lease attempt waits for a task before it waits again.
_POLL_TIMEOUT_S = 60.0
# A poll that failed (the store unavailable, too many polls on the queue) waits this
# long before it tries again, doubling up to the second figure.
_RETRY_S = (0.1, 5.0)
# The longest the writer holds what is ready for the answers of reports already committed.
_LINGER_S = 0.005
# How long a closing stream waits for the write under way before it cancels it.
_WRITE_GRACE_S = 1.0
_RPC = "StreamWorkerTasks"
_SERVICE = "/flowforge.api.v1.WorkflowService/"
_KINDS = {pb.TASK_QUEUE_TYPE_WORKFLOW: TaskKind.WORKFLOW, pb.TASK_QUEUE_TYPE_ACTIVITY: TaskKind.ACTIVITY}
_CODE_NAMES = {code.value[0]: code.name for code in grpc.StatusCode}
_STOPPED = object()  # queued after the last task: the answer to stop_tasks
_END = object()  # queued last: the writer ends


@dataclasses.dataclass
class _Feed:
    """The credits of one (task queue, kind) and the polls spending them."""

    task_queue: str
    kind: TaskKind
    credits: int = 0  # granted and not yet taken by a poll
    polls: set[asyncio.Task[None]] = dataclasses.field(default_factory=set)


class _WorkerStream:
    """One open stream: see the module docstring."""

    def __init__(self, engine: HistoryEngine, matching: Matching, context: Context) -> None:
        self._engine = engine
        self._received = engine.metrics.worker_stream_messages.labels("received")
        self._sent = engine.metrics.worker_stream_messages.labels("sent")
        # Each report's series, looked up once per RPC and status (labels() locks and builds a key).
        self._requests: dict[tuple[str, int], Counter] = {}
        self._latencies: dict[str, Histogram] = {}
        self._matching = matching
        self._context = context
        self._namespace = ""
        self._identity = ""
        self._build_id = ""
        self._feeds: dict[tuple[str, TaskKind], _Feed] = {}
        self._unspent = 0  # credits granted and not yet spent on a task, over all feeds
        self._stopped = False
        self._half_closed = False
        self._closing = False
        self._reports: dict[int, asyncio.Task[None]] = {}  # by id, until answered
        # The last report started per task token, until it ends: the next one waits for it.
        self._last_of_task: dict[bytes, asyncio.Task[None]] = {}
        self._report_slots = asyncio.Semaphore(MAX_PENDING_REPORTS)
        self._decided: set[int] = set()  # reports committed whose answer is not queued yet
        self._answer_queued = asyncio.Event()
        self._outbox: asyncio.Queue[object] = asyncio.Queue()
        self._unsent: list[object] = []  # taken by the writer but not written
        self._messages_in = 0

    async def serve(self, requests: AsyncIterator[pb.WorkerStreamRequest]) -> None:
        """Serves the stream until the worker half-closes it (then every report is
        answered first), it breaks, or a message breaks the protocol (ServiceError)."""
        writer = asyncio.create_task(self._write())
        reader = asyncio.create_task(self._read(requests))
        try:
            await asyncio.wait({reader, writer}, return_when=asyncio.FIRST_COMPLETED)
            if writer.done():
                writer.result()  # the stream broke
                return
            reader.result()  # a protocol error ends the stream with its status
            self._half_closed = True  # the worker will report nothing more here
            await self._stop_feeds()
            await asyncio.gather(*self._reports.values())
            self._outbox.put_nowait(_END)
            await writer
        finally:
            reader.cancel()
            await asyncio.shield(self._close(writer))

    async def _close(self, writer: asyncio.Task[None]) -> None:
        """Stops pushing, lets running reports finish, and releases every leased task
        that was not written: pushed ones and those answers hand out eagerly."""
        await self._stop_feeds()
        await asyncio.gather(*self._reports.values(), return_exceptions=True)
        # The writer ends after the write under way (cancelling a write gRPC has begun
        # breaks the status that follows); one the worker does not take is cancelled.
        self._closing = True
        self._outbox.put_nowait(_END)
        await asyncio.wait({writer}, timeout=_WRITE_GRACE_S)
        writer.cancel()
        await asyncio.gather(writer, return_exceptions=True)
        while not self._outbox.empty():
            self._unsent.append(self._outbox.get_nowait())
        for piece in self._unsent:
            tasks: Sequence[reports.PushedTask] = []
            if isinstance(piece, pb.PushedTask):
                tasks = [getattr(piece, piece.WhichOneof("task") or "activity_task")]
            elif isinstance(piece, pb.WorkerReportResult) and piece.WhichOneof("response"):
                tasks = reports.eager_tasks(getattr(piece, piece.WhichOneof("response") or ""))
            for task in tasks:
                try:
                    await reports.release(self._engine, task)
                except Exception:
                    log.warning("could not release a task the worker stream did not deliver", exc_info=True)
        self._unsent.clear()

    # ------------------------------------------------------------------ reading

    async def _read(self, requests: AsyncIterator[pb.WorkerStreamRequest]) -> None:
        async for request in requests:
            self._messages_in += 1
            self._received.inc()
            if self._messages_in == 1:
                await self._hello(request)
            elif request.HasField("hello"):
                raise InvalidArgument("hello may be sent only in the first message of the stream")
            if request.returned_task_tokens:
                await self._take_back(request.returned_task_tokens)
            if request.credits:
                self._grant(request.credits)
            if request.stop_tasks:
                await self._stop_tasks()
            for report in request.reports:
                await self._start_report(report)
        if not self._messages_in:
            raise InvalidArgument("the stream ended before its first message, which must carry hello")

    async def _hello(self, request: pb.WorkerStreamRequest) -> None:
        if not request.HasField("hello"):
            raise InvalidArgument(
                "the first message of the stream must carry hello (namespace, identity, worker_build_id)"
            )
        hello = request.hello
        self._namespace = name(hello.namespace, "hello.namespace")
        self._identity = name(hello.identity, "hello.identity", required=False)
        self._build_id = name(hello.worker_build_id, "hello.worker_build_id", required=False)
        await self._engine.ensure_namespace(self._namespace)

    async def _take_back(self, tokens: Sequence[bytes]) -> None:
        """Releases tasks the worker hands back unrun, at once."""
        if len(tokens) > MAX_RETURNED_TOKENS:
            raise InvalidArgument(
                f"returned_task_tokens holds {len(tokens)} tokens; the limit is {MAX_RETURNED_TOKENS}"
                " per message (send the rest in the next)"
            )
        for raw in tokens:
            token = self._engine.signer.verify(raw, None)
            if token.namespace != self._namespace:
                raise InvalidArgument(
                    f"returned_task_tokens holds a task of namespace {token.namespace!r};"
                    f" this stream is for {self._namespace!r}"
                )
            if token.kind == TaskKind.QUERY:
                await self._engine.release_query(raw)
            else:
                await self._engine.release_lease(raw)

    def _grant(self, credits: Iterable[pb.TaskCredit]) -> None:
        for credit in credits:
            task_queue = name(credit.task_queue, "credits.task_queue")
            kind = _KINDS.get(credit.task_queue_type)
            if kind is None:
                raise InvalidArgument(
                    "credits.task_queue_type must be TASK_QUEUE_TYPE_WORKFLOW or TASK_QUEUE_TYPE_ACTIVITY"
                )
            if not 1 <= credit.count <= MAX_CREDIT:
                raise InvalidArgument(f"credits.count must be between 1 and {MAX_CREDIT}, not {credit.count}")
            if self._stopped:
                raise InvalidArgument("credits came after stop_tasks; open a new stream to receive tasks again")
            if self._unspent + credit.count > MAX_STREAM_CREDITS:
                raise InvalidArgument(
                    f"credits would add up to {self._unspent + credit.count} unspent on this stream; the limit is"
                    f" {MAX_STREAM_CREDITS} (grant one credit per free slot)"
                )
            feed = self._feeds.get((task_queue, kind))
            if feed is None:
                if len(self._feeds) >= MAX_QUEUES:
                    raise InvalidArgument(f"credits name more than {MAX_QUEUES} task queues and kinds on one stream")
                feed = self._feeds[task_queue, kind] = _Feed(task_queue, kind)
            feed.credits += credit.count
            self._unspent += credit.count
            while feed.credits and len(feed.polls) < POLLS_PER_QUEUE:
                feed.credits -= 1
                feed.polls.add(asyncio.create_task(self._poll(feed)))

    # ------------------------------------------------------------------ pushing tasks

    async def _poll(self, feed: _Feed) -> None:
        """Leases tasks of the feed's queue, one credit each (taken before it
        leases), while credits are left; every task leased is queued to be written.

        It leaves ``feed.polls`` itself as it ends, not by a done callback: a credit
        granted between its end and that callback would find the feed's polls all
        counted, start none, and wait for the worker's next credit."""
        try:
            await self._poll_while_credited(feed)
        finally:
            if (current := asyncio.current_task()) is not None:
                feed.polls.discard(current)

    async def _poll_while_credited(self, feed: _Feed) -> None:
        retry_s = _RETRY_S[0]
        while True:
            try:
                piece = await self._lease(feed)
            except Exception as error:
                if not isinstance(error, ServiceError):
                    log.exception("a lease for a worker stream failed; trying again in %.1f s", retry_s)
                await asyncio.sleep(retry_s)
                retry_s = min(retry_s * 2, _RETRY_S[1])
                continue
            retry_s = _RETRY_S[0]
            if piece is None:
                continue
            self._unspent -= 1
            self._outbox.put_nowait(piece)
            if not feed.credits:
                return
            feed.credits -= 1

    async def _lease(self, feed: _Feed) -> pb.PushedTask | None:
        if feed.kind == TaskKind.ACTIVITY:
            activity = await self._matching.poll_activity_task(
                self._namespace, feed.task_queue, self._identity, _POLL_TIMEOUT_S
            )
            return (
                None
                if activity is None
                else pb.PushedTask(task_queue=feed.task_queue, activity_task=activity_task_proto(activity))
            )
        leased = await self._matching.poll_workflow_task(
            self._namespace, feed.task_queue, self._identity, _POLL_TIMEOUT_S, claimable=True
        )
        if leased is None:
            return None
        task = query_task_proto(leased) if isinstance(leased, LeasedQuery) else workflow_task_proto(leased)
        return pb.PushedTask(task_queue=feed.task_queue, workflow_task=task)

    async def _stop_feeds(self) -> None:
        polls = [poll for feed in self._feeds.values() for poll in feed.polls]
        for poll in polls:
            poll.cancel()
        await asyncio.gather(*polls, return_exceptions=True)
        self._feeds.clear()
        self._unspent = 0

    async def _stop_tasks(self) -> None:
        self._stopped = True
        await self._stop_feeds()
        self._outbox.put_nowait(_STOPPED)  # after every task leased before the stop

    # ------------------------------------------------------------------ reports

    async def _start_report(self, report: pb.WorkerReport) -> None:
        if report.id in self._reports:
            raise InvalidArgument(f"report id {report.id} is already used by a report not yet answered on this stream")
        await self._report_slots.acquire()
        field = report.WhichOneof("report")
        token: bytes = getattr(report, field).task_token if field else b""
        before = self._last_of_task.get(token) if token else None
        task = self._reports[report.id] = asyncio.create_task(self._run_report(report, before))
        if token:
            self._last_of_task[token] = task
            task.add_done_callback(lambda done: self._forget_task(token, done))

    def _forget_task(self, token: bytes, report: asyncio.Task[None]) -> None:
        if self._last_of_task.get(token) is report:
            del self._last_of_task[token]

    async def _run_report(self, report: pb.WorkerReport, before: asyncio.Task[None] | None) -> None:
        """Runs a report and queues its answer, after ``before`` (the previous report
        of the same task on this stream) has run: a heartbeat sent before its task's
        completion is not refused for a lease that completion ended."""
        if before is not None:
            await asyncio.wait({before})
        on_committed.set(functools.partial(self._decided.add, report.id))
        result = pb.WorkerReportResult(id=report.id)
        field = report.WhichOneof("report")
        rpc = _RPC
        began = time.perf_counter()
        try:
            if field is None:
                raise InvalidArgument(f"report {report.id} carries no request (set one field of WorkerReport.report)")
            kind = reports.REPORTS[field]
            rpc = kind.rpc
            request: Any = getattr(report, field)
            request.namespace = request.namespace or self._namespace
            authorize(_SERVICE + rpc, request)  # what its unary RPC's interceptor checks
            if request.namespace != self._namespace:
                raise InvalidArgument(
                    f"the report names namespace {request.namespace!r}; this stream is for {self._namespace!r}"
                )
            if not request.identity:
                request.identity = self._identity
            completion = _workflow_task_completion(request)
            if completion is not None and not completion.worker_build_id:
                completion.worker_build_id = self._build_id
            getattr(result, field).CopyFrom(await kind.run(self._engine, request))
        except Exception as error:
            code, message = error_status(error, rpc)
            result.status_code, result.status_message = code.value[0], message
        finally:
            del self._reports[report.id]
            self._decided.discard(report.id)
        # Counted as its unary RPC (rpc_observer.py), so dashboards read the same on either path.
        metrics = self._engine.metrics
        requests = self._requests.get((rpc, result.status_code))
        if requests is None:
            code_name = _CODE_NAMES.get(result.status_code, "UNKNOWN")
            requests = self._requests[rpc, result.status_code] = metrics.rpc_requests.labels(rpc, code_name)
        requests.inc()
        latency = self._latencies.get(rpc)
        if latency is None:
            latency = self._latencies[rpc] = metrics.rpc_latency.labels(rpc)
        latency.observe(time.perf_counter() - began)
        self._outbox.put_nowait(result)  # its slot is freed once written
        self._answer_queued.set()

    # ------------------------------------------------------------------ writing

    async def _write(self) -> None:
        """Writes what is queued, everything ready in one message, until :data:`_END`."""
        while True:
            batch = [await self._outbox.get()]
            if self._decided:
                await self._decided_answers()
            size = 0
            while batch[-1] is not _STOPPED and batch[-1] is not _END and size < _MAX_BATCH_BYTES:
                if self._outbox.empty():
                    break
                piece = self._outbox.get_nowait()
                batch.append(piece)
                if isinstance(piece, pb.PushedTask | pb.WorkerReportResult):
                    size += piece.ByteSize()
            if self._closing:
                self._unsent.extend(batch)
                return
            message = pb.WorkerStreamResponse()
            for piece in batch:
                if isinstance(piece, pb.PushedTask):
                    if self._half_closed:  # the worker could not report it here: released on close
                        self._unsent.append(piece)
                    else:
                        message.tasks.append(piece)
                elif isinstance(piece, pb.WorkerReportResult):
                    message.results.append(piece)
                elif piece is _STOPPED:
                    message.tasks_stopped = True
            if message.tasks or message.results or message.tasks_stopped:
                try:
                    await self._context.write(message)
                except BaseException:
                    self._unsent.extend(batch)
                    raise
                self._sent.inc()
                for _ in message.results:
                    self._report_slots.release()
            if batch[-1] is _END:
                return

    async def _decided_answers(self) -> None:
        """Waits, at most :data:`_LINGER_S`, until every report of the stream that has
        committed has queued its answer (they leave together)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + _LINGER_S
        while self._decided and (remaining := deadline - loop.time()) > 0:
            self._answer_queued.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._answer_queued.wait(), remaining)


def _workflow_task_completion(request: Any) -> pb.RespondWorkflowTaskCompletedRequest | None:
    """The workflow task completion a report carries: itself, or the one folded into an activity's completion."""
    if isinstance(request, pb.RespondWorkflowTaskCompletedRequest):
        return request
    if isinstance(request, pb.RespondActivityTaskCompletedRequest) and request.HasField("folded_workflow_task"):
        return request.folded_workflow_task.completion
    return None


class WorkerStreamHandlers(ServiceBase):
    async def StreamWorkerTasks(self, requests: AsyncIterator[pb.WorkerStreamRequest], context: Context) -> None:
        """The worker stream; see the module docstring and docs/worker-stream.md."""
        open_streams = self._engine.metrics.worker_streams
        open_streams.inc()
        try:
            await _WorkerStream(self._engine, self._matching, context).serve(requests)
        except Exception as error:
            await context.abort(*error_status(error, _RPC))
        finally:
            open_streams.dec()
