"""The Worker: hosts workflows and activities for one task queue."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import hashlib
import inspect
import logging
import signal
import threading
import types
from collections.abc import Callable, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any, Literal, Self

from opentelemetry.metrics import Meter

from flowforge import activity, workflow
from flowforge._worker_interceptors import Interceptor
from flowforge.client import Client
from flowforge.worker._activity_worker import ActivityWorker
from flowforge.worker._metrics import WorkerMetrics
from flowforge.worker._shared_state import SharedStateManager
from flowforge.worker._stream import WorkerStream
from flowforge.worker._workflow_worker import WorkflowWorker

logger = logging.getLogger(__name__)

_SHUTDOWN_SIGNALS = (signal.SIGTERM, signal.SIGINT)

TaskTransport = Literal["stream", "unary"]
_TASK_TRANSPORTS = ("stream", "unary")


def _workflow_definitions(workflows: Sequence[type]) -> dict[str, workflow._Definition]:
    definitions: dict[str, workflow._Definition] = {}
    for workflow_class in workflows:
        definition = workflow._Definition.from_class(workflow_class)
        if definition.name in definitions:
            raise ValueError(f"more than one workflow is registered as {definition.name!r}")
        definitions[definition.name] = definition
    return definitions


def _default_build_id(workflows: Sequence[type]) -> str:
    """Versioning: a stable hash of the workflow code, the default build id.

    It hashes the source file of each workflow class's module (so helpers that
    module defines count too) and the class's own code, so each deployment of
    changed workflow code gets a new build id without anyone choosing one.
    Reading the file, not ``inspect.getsource``, matters: that parses with
    ``ast``, whose recursion guard CPython 3.11 shares between threads
    (gh-106905), so it can fail spuriously while another thread formats a
    traceback.
    """
    digest = hashlib.sha256()
    for definition in sorted((workflow._Definition.from_class(cls) for cls in workflows), key=lambda d: d.name):
        digest.update(f"{definition.name}\0{definition.cls.__qualname__}\0".encode())
        with contextlib.suppress(OSError, TypeError):
            path = inspect.getsourcefile(definition.cls)
            digest.update(Path(path).read_bytes() if path else b"")
        for name, member in sorted(vars(definition.cls).items()):
            code = getattr(member, "__code__", None)
            if code is not None:
                digest.update(name.encode() + b"\0" + _code_fingerprint(code))
    return digest.hexdigest()[:20]


def _code_fingerprint(code: types.CodeType) -> bytes:
    """Bytecode, names and constants (nested functions included), but not the file
    path or line numbers, so the same code hashes the same wherever it is installed."""
    parts = [code.co_code, repr(code.co_names).encode()]
    for constant in code.co_consts:
        parts.append(_code_fingerprint(constant) if isinstance(constant, types.CodeType) else repr(constant).encode())
    return b"\0".join(parts)


def _activity_definitions(
    activities: Sequence[Callable[..., Any]],
) -> dict[str, activity._Definition]:
    definitions: dict[str, activity._Definition] = {}
    for fn in activities:
        definition = activity._Definition.from_callable(fn)
        if definition.name in definitions:
            raise ValueError(f"more than one activity is registered as {definition.name!r}")
        definitions[definition.name] = definition
    return definitions


def _require_positive(**values: int) -> None:
    for name, value in values.items():
        if value < 1:
            raise ValueError(f"{name} must be at least 1, got {value}")


class Worker:
    """Polls a task queue and runs the workflows and activities registered on it.

    Use it as an async context manager, which polls in the background::

        async with Worker(client, task_queue="onboarding", workflows=[Onboarding],
                          activities=[create_customer]):
            ...

    or run it in the foreground until :meth:`shutdown`, SIGTERM or SIGINT::

        await worker.run()

    Shutdown is graceful: polling stops, running workflow tasks and activities get
    ``graceful_shutdown_timeout`` to finish; then activities still running are
    cancelled (``activity.is_cancelled()`` turns true, async activities get
    ``asyncio.CancelledError``) and reported failed with a ``CancelledError``, so the
    server retries them elsewhere.

    Args:
        client: The connection to the server; its namespace is the one polled.
        task_queue: The task queue to poll.
        workflows: Classes decorated with ``@workflow.defn``.
        activities: Functions (or bound methods) decorated with ``@activity.defn``.
        max_concurrent_activities: How many activities may run at once; also the
            size of the thread pool for synchronous activities.
        max_concurrent_workflow_tasks: How many workflow tasks may run at once (also
            the room for workflow tasks handed back eagerly by activity completions).
        max_concurrent_activity_polls: How many activity polls may be open at once
            (on the worker stream: how many activity credits the server may hold).
        max_concurrent_workflow_task_polls: How many workflow task polls may be
            open at once (on the worker stream: how many workflow task credits).
        max_cached_workflows: How many workflow instances stay in memory between
            workflow tasks (least recently used first out). A cached run's next task
            feeds the instance only its new events; a run not cached is replayed from
            its full history. 0 disables the cache. Bounds the worker's memory
            whatever the number of open executions.
        graceful_shutdown_timeout: How long running work may take to finish at
            shutdown before it is cancelled.
        identity: The worker's identity, recorded in history; the client's by default.
        activity_executor: Runs synchronous activities; by default a thread pool
            the worker creates and shuts down. A ``ThreadPoolExecutor`` you pass gets
            cancellation raised inside the activity's thread (Temporal's behaviour); a
            ``ProcessPoolExecutor`` needs ``shared_state_manager``.
        shared_state_manager: For a process pool (Temporal's ``SharedStateManager``):
            carries heartbeats and cancellation between the worker and the pool's processes.
        meter: The OpenTelemetry meter of the worker's own metrics (slots used, poll,
            activity and workflow-task latency, cache hits; docs/observability.md); the
            global meter provider's by default.
        interceptors: Worker interceptors (:class:`flowforge.worker.Interceptor`), after
            those of the client that are worker interceptors too.
        build_id: Names the build of the workflow code this worker runs; recorded
            in every WorkflowTaskCompleted event, and ``describe()`` shows the one
            that ran an execution's first workflow task. Defaults to
            a hash of the source of ``workflows``, which changes with their code.
        task_transport: How tasks reach the worker and reports the server.
            ``"stream"`` (the default): one long-lived ``StreamWorkerTasks`` stream
            carries the polls as credits (one per poller holding a free slot), the
            tasks the server pushes against them, and the completions, failures and
            heartbeats, several to a message (docs/worker-stream.md); a broken stream
            is opened again with backoff, on any replica, and a server without the
            stream (UNIMPLEMENTED) is polled with the unary RPCs instead.
            ``"unary"``: one long-poll call per task and one call per report.
            Tokens, fencing, leases and every guarantee are the same on both.
        fold_workflow_tasks: When an activity of a run this worker holds cached
            completes, run the workflow task its completion schedules at once and
            send both completions in one report, which the server applies in one
            transaction when the run is still as the worker saw it (a commit, a push
            and a report fewer per activity; docs/worker-stream.md, "Folded workflow
            tasks"). The history is the same either way. False sends the completion
            alone and runs the workflow task the server hands back.

    Raises:
        ValueError: Nothing to run, a name registered twice, or a limit below 1.
        TypeError: A workflow or activity is not decorated.
    """

    def __init__(
        self,
        client: Client,
        *,
        task_queue: str,
        workflows: Sequence[type] = (),
        activities: Sequence[Callable[..., Any]] = (),
        max_concurrent_activities: int = 100,
        max_concurrent_workflow_tasks: int = 100,
        max_concurrent_activity_polls: int = 5,
        max_concurrent_workflow_task_polls: int = 5,
        max_cached_workflows: int = 1000,
        graceful_shutdown_timeout: timedelta = timedelta(seconds=10),
        identity: str | None = None,
        activity_executor: concurrent.futures.Executor | None = None,
        build_id: str | None = None,
        interceptors: Sequence[Interceptor] = (),
        meter: Meter | None = None,
        shared_state_manager: SharedStateManager | None = None,
        task_transport: TaskTransport = "stream",
        fold_workflow_tasks: bool = True,
    ) -> None:
        if not task_queue:
            raise ValueError("task_queue must not be empty")
        if not workflows and not activities:
            raise ValueError("a worker needs at least one workflow or activity")
        in_threads = activity_executor is None or isinstance(activity_executor, concurrent.futures.ThreadPoolExecutor)
        if not in_threads and shared_state_manager is None:
            raise ValueError("an activity_executor other than a ThreadPoolExecutor needs shared_state_manager")
        _require_positive(
            max_concurrent_activities=max_concurrent_activities,
            max_concurrent_workflow_tasks=max_concurrent_workflow_tasks,
            max_concurrent_activity_polls=max_concurrent_activity_polls,
            max_concurrent_workflow_task_polls=max_concurrent_workflow_task_polls,
        )
        if max_cached_workflows < 0:
            raise ValueError(f"max_cached_workflows must not be negative, got {max_cached_workflows}")
        if graceful_shutdown_timeout < timedelta(0):
            raise ValueError("graceful_shutdown_timeout must not be negative")
        if task_transport not in _TASK_TRANSPORTS:
            raise ValueError(f"task_transport must be 'stream' or 'unary', got {task_transport!r}")
        workflow_definitions = _workflow_definitions(workflows)
        activity_definitions = _activity_definitions(activities)

        self._task_queue = task_queue
        self._build_id = build_id or _default_build_id(workflows)
        self._graceful_shutdown_timeout = graceful_shutdown_timeout
        worker_identity = identity or client.identity
        # The client's interceptors that are worker interceptors too come first (Temporal's rule).
        worker_interceptors = [
            *(i for i in client.interceptors if isinstance(i, Interceptor)),
            *interceptors,
        ]
        metrics = WorkerMetrics(task_queue, meter)
        self._stream = (
            WorkerStream(
                client.workflow_service, namespace=client.namespace, identity=worker_identity, build_id=self._build_id
            )
            if task_transport == "stream"
            else None
        )
        self._activity_worker: ActivityWorker | None = None
        self._workflow_worker: WorkflowWorker | None = None
        if activity_definitions:
            self._activity_worker = ActivityWorker(
                service=client.workflow_service,
                namespace=client.namespace,
                task_queue=task_queue,
                identity=worker_identity,
                converter=client.data_converter,
                activities=activity_definitions,
                max_concurrent_activities=max_concurrent_activities,
                max_concurrent_polls=max_concurrent_activity_polls,
                executor=activity_executor,
                interceptors=worker_interceptors,
                metrics=metrics,
                shared_state_manager=shared_state_manager,
                stream=self._stream,
            )
        if workflow_definitions:
            self._workflow_worker = WorkflowWorker(
                service=client.workflow_service,
                namespace=client.namespace,
                task_queue=task_queue,
                identity=worker_identity,
                converter=client.data_converter,
                workflows=workflow_definitions,
                max_concurrent_tasks=max_concurrent_workflow_tasks,
                max_concurrent_polls=max_concurrent_workflow_task_polls,
                cache_size=max_cached_workflows,
                activity_worker=self._activity_worker,
                fold_workflow_tasks=fold_workflow_tasks,
                build_id=self._build_id,
                interceptors=worker_interceptors,
                metrics=metrics,
                stream=self._stream,
            )
        self._started = False
        self._shutdown_requested: asyncio.Event | None = None
        self._drained: asyncio.Task[None] | None = None

    @property
    def task_queue(self) -> str:
        """The task queue this worker polls."""
        return self._task_queue

    @property
    def build_id(self) -> str:
        """The build id this worker records in the workflow tasks it completes."""
        return self._build_id

    def _parts(self) -> list[ActivityWorker | WorkflowWorker]:
        return [part for part in (self._workflow_worker, self._activity_worker) if part is not None]

    def _start(self) -> asyncio.Event:
        if self._started:
            raise RuntimeError("a worker can only be started once")
        self._started = True
        self._shutdown_requested = asyncio.Event()
        if self._stream is not None:
            self._stream.start()
        for part in self._parts():
            part.start()
        logger.info("worker started on task queue %r", self._task_queue)
        return self._shutdown_requested

    async def run(self) -> None:
        """Runs until :meth:`shutdown` is called or SIGTERM/SIGINT arrives, then drains.

        Signal handlers are installed only when called in the main thread, and the
        previous ones are restored after the first signal: a second Ctrl-C interrupts
        the drain as it would have interrupted the program.

        Raises:
            RuntimeError: The worker was started before.
        """
        shutdown_requested = self._start()
        remove_signal_handlers = self._install_signal_handlers(shutdown_requested)
        try:
            await shutdown_requested.wait()
        finally:
            remove_signal_handlers()
            await self._drain_once()

    async def shutdown(self) -> None:
        """Stops polling and drains; returns once the worker has stopped.

        Safe to call more than once and from several tasks; does nothing if the
        worker never started.
        """
        if self._shutdown_requested is None:
            return
        self._shutdown_requested.set()
        await self._drain_once()

    async def __aenter__(self) -> Self:
        self._start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.shutdown()

    def _install_signal_handlers(self, shutdown_requested: asyncio.Event) -> Callable[[], None]:
        """Makes SIGTERM/SIGINT request shutdown; returns the function removing that."""
        if threading.current_thread() is not threading.main_thread():
            return lambda: None
        loop = asyncio.get_running_loop()
        installed: list[signal.Signals] = []
        # E.g. asyncio.run()'s own SIGINT handler, which cancels the main task.
        previous_handlers = {received: signal.getsignal(received) for received in _SHUTDOWN_SIGNALS}

        def remove() -> None:
            while installed:
                removed = installed.pop()
                loop.remove_signal_handler(removed)
                if previous_handlers[removed] is not None:
                    signal.signal(removed, previous_handlers[removed])

        def on_signal(received: signal.Signals) -> None:
            logger.info("received %s; shutting down the worker gracefully", received.name)
            remove()
            shutdown_requested.set()

        for shutdown_signal in _SHUTDOWN_SIGNALS:
            try:
                loop.add_signal_handler(shutdown_signal, on_signal, shutdown_signal)
            except (NotImplementedError, RuntimeError):
                continue  # Not supported by this loop or platform: rely on shutdown().
            installed.append(shutdown_signal)
        return remove

    async def _drain_once(self) -> None:
        if self._drained is None:
            self._drained = asyncio.create_task(self._drain(), name="flowforge worker shutdown")
        # Shielded: a caller that gives up waiting must not abort the drain for others.
        await asyncio.shield(self._drained)

    async def _drain(self) -> None:
        logger.info("worker on task queue %r shutting down", self._task_queue)
        parts = self._parts()
        if self._stream is not None:
            # Before the pollers stop: tasks pushed meanwhile are given back, not left to their leases.
            await self._stream.stop_tasks()
        await asyncio.gather(*(part.stop_polling() for part in parts))
        await asyncio.gather(*(part.drain(self._graceful_shutdown_timeout) for part in parts))
        if self._stream is not None:
            await self._stream.close()
        logger.info("worker on task queue %r stopped", self._task_queue)
