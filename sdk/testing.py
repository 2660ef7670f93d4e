"""Testing workflows and activities.

- :class:`Replayer` replays recorded histories against the current code. A
  replay test guards a deploy: record a history (``handle.fetch_history()`` or
  ``flowforge workflow show --output json``), keep it with the tests, and replay
  it whenever the workflow changes::

      await Replayer(workflows=[Onboarding]).replay_workflow(history)

  If the changed code would not produce the commands the history recorded, the
  replay raises ``NonDeterminismError`` naming the first mismatch.
  :func:`replay_histories_in` turns a folder of such files into a pytest test.
- :class:`ActivityEnvironment` runs one activity function with
  ``activity.info()``, heartbeats and cancellation, without a server or worker.
- :class:`WorkflowEnvironment` runs a real server in the test's process on a
  temporary SQLite file, with a connected client; the time-skipping variant
  jumps over timers whenever nothing else can progress::

      async with WorkflowEnvironment.start_time_skipping() as env:
          async with Worker(env.client, task_queue="q", workflows=[Reminder]):
              handle = await env.client.start_workflow(Reminder.run, id="r", task_queue="q")
              await handle.result()       # a 30-day workflow.sleep takes milliseconds
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import dataclasses
import inspect
import json
import logging
import tempfile
from collections.abc import AsyncIterable, Awaitable, Callable, Generator, Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import (
    Any,
    Self,
    TypeVar,
)

from flowforge import activity, workflow
from flowforge._claim_check import wire_codec
from flowforge._codec import decode_message
from flowforge._rpc import WorkflowServiceClient
from flowforge._workflow_instance import WorkflowInstance
from flowforge.api.v1 import common_pb2
from flowforge.client import Client, WorkflowHistory
from flowforge.converter import DataConverter, default_converter
from flowforge.server._tasks import cancel_and_wait
from flowforge.server.app import FlowForgeServer, ServerConfig
from flowforge.server.clock import Clock, SkippingClock, SystemClock

__all__ = [
    "ActivityEnvironment",
    "Replayer",
    "WorkflowEnvironment",
    "WorkflowReplayResult",
    "WorkflowReplayResults",
    "replay_histories_in",
]

_log = logging.getLogger("flowforge.testing")

_T = TypeVar("_T")

# A history as the Replayer accepts it: a WorkflowHistory, or the run's events.
_History = WorkflowHistory | Sequence[common_pb2.HistoryEvent | Any]


@dataclasses.dataclass(frozen=True)
class WorkflowReplayResult:
    """How one history replayed.

    Attributes:
        history: The history that was replayed, as it was given.
        run_id: The run the history records (from its first event; the
            workflow id when the history names no run).
        replay_failure: ``None`` if the code reproduced the history, else the
            error replay raised (usually ``NonDeterminismError``).
    """

    history: Any
    run_id: str
    replay_failure: Exception | None


@dataclasses.dataclass(frozen=True)
class WorkflowReplayResults:
    """How several histories replayed, one result per history in the order given.

    Attributes:
        results: One :class:`WorkflowReplayResult` per history.
    """

    results: Sequence[WorkflowReplayResult]

    @property
    def replay_failures(self) -> Mapping[str, Exception]:
        """The failures by run id (Temporal's shape); empty when every history replayed."""
        return {r.run_id: r.replay_failure for r in self.results if r.replay_failure is not None}


class Replayer:
    """Replays recorded histories against workflow code, without a server.

    Args:
        workflows: The ``@workflow.defn`` classes histories may be of.
        namespace: The namespace ``workflow.info()`` reports.
        data_converter: Decodes the payloads recorded in the histories; its
            codec, if any, decodes them first (it must pass through payloads it
            did not encode: a history fetched by a client with the codec is
            decoded already).
    """

    def __init__(
        self,
        *,
        workflows: Sequence[type],
        namespace: str = "default",
        data_converter: DataConverter = default_converter,
    ) -> None:
        definitions = [workflow._Definition.from_class(cls) for cls in workflows]
        self._definitions = {definition.name: definition for definition in definitions}
        self._namespace = namespace
        self._converter = data_converter

    async def replay_workflow(self, history: _History, *, raise_on_failure: bool = True) -> WorkflowReplayResult:
        """Replays one run's history.

        Args:
            history: A ``flowforge.client.WorkflowHistory``, or the run's events
                (``HistoryEvent`` protos, or objects with a ``to_proto()`` method).
            raise_on_failure: Raise the replay's error (the default); when False
                it is returned in :attr:`WorkflowReplayResult.replay_failure`.

        Returns:
            The result; its ``replay_failure`` is ``None`` when the code
            reproduced the history.

        Raises:
            NonDeterminismError: The code does not produce the commands the
                history recorded, or calls a nondeterministic function.
            ValueError: The history does not start with WorkflowExecutionStarted,
                or is of a workflow type this replayer was not given.
            Exception: Whatever else the workflow code raised that would fail a
                workflow task.
        """
        run_id = _recorded_run_id(history)
        try:
            self._replay(history, await self._events(history))
        except Exception as error:
            if raise_on_failure:
                raise
            return WorkflowReplayResult(history=history, run_id=run_id, replay_failure=error)
        return WorkflowReplayResult(history=history, run_id=run_id, replay_failure=None)

    async def replay_workflows(
        self, histories: Iterable[_History] | AsyncIterable[_History], *, raise_on_failure: bool = True
    ) -> WorkflowReplayResults:
        """Replays several runs' histories, each on its own.

        Args:
            histories: The histories (an iterable or async iterable), each as
                :meth:`replay_workflow` accepts it.
            raise_on_failure: Raise the first failure (the default); when False
                every history is replayed and each failure is reported in the
                results.

        Returns:
            One result per history, in the order given.

        Raises:
            NonDeterminismError: With ``raise_on_failure``, the first history
                the code does not reproduce (and the other errors
                :meth:`replay_workflow` names).
        """
        results = []
        if isinstance(histories, AsyncIterable):
            async for history in histories:
                results.append(await self.replay_workflow(history, raise_on_failure=raise_on_failure))
        else:
            for history in histories:
                results.append(await self.replay_workflow(history, raise_on_failure=raise_on_failure))
        return WorkflowReplayResults(results)

    async def _events(self, history: _History) -> list[common_pb2.HistoryEvent]:
        events = []
        for event in getattr(history, "events", history):
            proto = common_pb2.HistoryEvent()
            proto.CopyFrom(event if isinstance(event, common_pb2.HistoryEvent) else event.to_proto())
            events.append(proto)
        codec = wire_codec(self._converter)
        if codec is not None:
            # E.g. a history written by `flowforge workflow show`, which has no codec
            # and leaves payload storage references unresolved.
            events = [await decode_message(event, codec) for event in events]
        return events

    def _replay(self, history: _History, events: list[common_pb2.HistoryEvent]) -> None:
        if not events or events[0].event_type != "WorkflowExecutionStarted":
            raise ValueError("a history starts with its WorkflowExecutionStarted event")
        started = json.loads(events[0].attributes_json or "{}")
        workflow_type = started.get("workflow_type", "")
        definition = self._definitions.get(workflow_type)
        if definition is None:
            known = ", ".join(sorted(self._definitions)) or "none"
            raise ValueError(
                f"the history is of workflow type {workflow_type!r}, which is not among the "
                f"replayer's workflows ({known})"
            )
        instance = WorkflowInstance(
            definition,
            namespace=self._namespace,
            workflow_id=getattr(history, "workflow_id", None) or started.get("workflow_id", ""),
            # The run id seeds workflow.random(): take the recorded one.
            run_id=getattr(history, "run_id", None)
            or started.get("run_id")
            or started.get("original_execution_run_id", ""),
            task_queue=started.get("task_queue", ""),
            converter=self._converter,
        )
        instance.activate(events)


def _recorded_run_id(history: _History) -> str:
    """The run id a history records, for reports; never raises on a broken history."""
    if isinstance(history, WorkflowHistory):
        started = history.events[0].attributes if history.events else {}
        return str(started.get("run_id") or history.workflow_id)
    try:
        first = next(iter(history))
        attributes = first.attributes if hasattr(first, "attributes") else json.loads(first.attributes_json or "{}")
        return str(attributes.get("run_id") or attributes.get("workflow_id") or "")
    except Exception:  # a broken history is reported by the replay itself
        return ""


def replay_histories_in(
    folder: str | Path,
    *,
    workflows: Sequence[type],
    pattern: str = "*.json",
    data_converter: DataConverter = default_converter,
) -> Callable[[Path], None]:
    """Makes a pytest test that replays every recorded history in a folder.

    Assign the result to a module-level name starting with ``test_``; pytest
    then runs one test per history file, named after the file::

        test_histories_replay = replay_histories_in(
            Path(__file__).parent / "histories", workflows=[Onboarding, Approval])

    Each file is a history as ``WorkflowHistory.to_json()`` or ``flowforge
    workflow show --output json`` writes it. A file whose history the code does
    not reproduce fails its test with the replay's error.

    Args:
        folder: The folder holding the history files.
        workflows: The ``@workflow.defn`` classes the histories are of.
        pattern: Which files in the folder are histories (a glob).
        data_converter: Decodes the payloads recorded in the histories.

    Returns:
        The test function, parametrized over the files.

    Raises:
        ValueError: No file in ``folder`` matches ``pattern`` (a replay test
            with nothing to replay would pass without checking anything).
    """
    import pytest  # only the test helper needs pytest

    paths = sorted(Path(folder).glob(pattern))
    if not paths:
        raise ValueError(f"no history files matching {pattern!r} in {folder}")
    replayer = Replayer(workflows=workflows, data_converter=data_converter)

    @pytest.mark.parametrize("history_file", paths, ids=[path.stem for path in paths])
    def test_history_replays(history_file: Path) -> None:
        history = WorkflowHistory.from_json(history_file.read_text())
        # The test is synchronous so it runs under any pytest setup, with or
        # without an asyncio plugin.
        asyncio.run(replayer.replay_workflow(history))

    return test_history_replays


# ---------------------------------------------------------------------------
# ActivityEnvironment
# ---------------------------------------------------------------------------


def _default_activity_info() -> activity.Info:
    now = datetime.now(UTC)
    return activity.Info(
        activity_id="test",
        activity_type="unknown",
        attempt=1,
        idempotency_key="test-run/test",
        heartbeat_details=(),
        workflow_id="test",
        run_id="test-run",
        workflow_type="test",
        namespace="default",
        task_queue="test",
        scheduled_time=now,
        started_time=now,
        start_to_close_timeout=timedelta(seconds=10),
        heartbeat_timeout=None,
    )


class ActivityEnvironment:
    """Runs an activity function as a worker would, without a server.

    Inside the function ``activity.info()`` returns :attr:`info`,
    ``activity.heartbeat(*details)`` calls :attr:`on_heartbeat`, and
    ``activity.is_cancelled()`` turns true once :meth:`cancel` was called::

        env = ActivityEnvironment()
        beats = []
        env.on_heartbeat = lambda *details: beats.append(details)
        result = await env.run(charge_card, order)       # an async activity
        result = env.run(resize_image, path)             # a sync activity

    Attributes:
        info: What ``activity.info()`` returns. Defaults to test values
            (attempt 1, workflow id ``"test"``, ...) with ``activity_type``
            set to the name of the function being run; replace it (e.g.
            ``dataclasses.replace(env.info, attempt=3, heartbeat_details=(5,))``)
            to test a retry.
        on_heartbeat: Called with the details of every heartbeat, at once
            (the worker's throttling does not apply).
        data_converter: Heartbeat details must be encodable with it, as they
            must be on a worker; one that is not fails ``activity.heartbeat``.
    """

    def __init__(self, *, data_converter: DataConverter = default_converter) -> None:
        self._default_info = _default_activity_info()
        self.info: activity.Info = self._default_info
        self.on_heartbeat: Callable[..., None] = lambda *details: None
        self.data_converter = data_converter
        self._context: activity._Context | None = None
        self._task: asyncio.Task[Any] | None = None
        self._cancel_requested = False

    def cancel(self) -> None:
        """Requests cancellation of the running activity, as the server would.

        ``activity.is_cancelled()`` becomes true; an async activity is also
        interrupted with ``asyncio.CancelledError`` at its next ``await``. A sync
        activity must notice the flag itself (call ``cancel`` from
        :attr:`on_heartbeat` or from another thread). Cancelling before
        :meth:`run` makes the activity start cancelled.
        """
        self._cancel_requested = True
        if self._context is not None:
            self._context.cancelled.set()
        if self._task is not None:
            self._task.cancel()

    def run(self, fn: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
        """Calls ``fn`` as the activity.

        Args:
            fn: The activity function (decorated with ``@activity.defn`` or not).
            *args: Its positional arguments.
            **kwargs: Its keyword arguments.

        Returns:
            What ``fn`` returns: for an ``async`` function an awaitable of its
            result (``await env.run(fn, ...)``), for a sync function the result.

        Raises:
            Exception: Whatever ``fn`` raises (``asyncio.CancelledError`` when an
                async activity does not handle :meth:`cancel`).
        """
        definition = getattr(fn, activity._DEFINITION_ATTRIBUTE, None)
        info = self.info
        if info is self._default_info:
            name = definition.name if definition is not None else getattr(fn, "__name__", "unknown")
            info = dataclasses.replace(info, activity_type=name)
        context = activity._Context(info, self._heartbeat)
        if self._cancel_requested:
            context.cancelled.set()
        self._context = context
        copied = contextvars.copy_context()
        copied.run(activity._current_context.set, context)
        if inspect.iscoroutinefunction(fn):
            return self._run_async(fn, copied, args, kwargs)  # type: ignore[return-value]
        try:
            return copied.run(fn, *args, **kwargs)
        finally:
            self._context = None

    async def _run_async(
        self, fn: Callable[..., Any], context: contextvars.Context, args: Sequence[Any], kwargs: Mapping[str, Any]
    ) -> Any:
        task = asyncio.get_running_loop().create_task(fn(*args, **kwargs), context=context)
        self._task = task
        if self._cancel_requested:
            task.cancel()
        try:
            return await task
        finally:
            self._task = None
            self._context = None

    def _heartbeat(self, details: Sequence[Any]) -> None:
        self.data_converter.to_payloads(details)  # fails like a worker on an unencodable detail
        self.on_heartbeat(*details)


# ---------------------------------------------------------------------------
# WorkflowEnvironment
# ---------------------------------------------------------------------------


class WorkflowEnvironment:
    """A FlowForge server for tests, with a connected :attr:`client`.

    Start one with :meth:`start_local` or :meth:`start_time_skipping`; both give
    an async context manager that shuts the server down and deletes its files
    on exit. Workers are ordinary :class:`flowforge.worker.Worker` instances on
    ``env.client``::

        async with WorkflowEnvironment.start_local() as env:
            async with Worker(env.client, task_queue="q", workflows=[Greeting], activities=[greet]):
                handle = await env.client.start_workflow(Greeting.run, "Ada", id="g", task_queue="q")
                assert await handle.result() == "Hello, Ada!"

    ``async with await WorkflowEnvironment.start_local() as env`` (Temporal's
    spelling) works too.
    """

    def __init__(self, client: Client) -> None:
        self._client = client

    @property
    def client(self) -> Client:
        """A client connected to the environment's server, in its namespace."""
        return self._client

    @property
    def supports_time_skipping(self) -> bool:
        """Whether :meth:`sleep` skips time instead of waiting for it."""
        return False

    async def sleep(self, duration: timedelta | float) -> None:
        """Lets ``duration`` (a timedelta or seconds) pass: really, or by skipping
        time in a time-skipping environment."""
        await asyncio.sleep(_seconds(duration))

    async def get_current_time(self) -> datetime:
        """The server's current time (UTC): the wall clock, plus whatever was skipped."""
        return datetime.now(UTC)

    @contextlib.contextmanager
    def auto_time_skipping_disabled(self) -> Iterator[None]:
        """While active, awaiting a workflow's result does not skip time (a no-op
        in an environment without time skipping)."""
        yield

    async def shutdown(self) -> None:
        """Closes the client (and, for started environments, stops the server)."""
        await self._client.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.shutdown()

    @staticmethod
    def from_client(client: Client) -> WorkflowEnvironment:
        """An environment around an existing client (e.g. of a shared dev server);
        time is real and :meth:`shutdown` only closes the client."""
        return WorkflowEnvironment(client)

    @staticmethod
    def start_local(
        *,
        namespace: str = "default",
        data_converter: DataConverter = default_converter,
        ip: str = "127.0.0.1",
        port: int = 0,
    ) -> _StartingEnvironment:
        """Starts a server in this process on a temporary SQLite file; time is real.

        Args:
            namespace: The client's namespace; created if it is not ``"default"``.
            data_converter: The client's converter (workers on the client use it too).
            ip: The address the server listens on.
            port: Its port; 0 picks a free one.

        Returns:
            An async context manager (or awaitable) giving the started environment.

        Raises:
            OSError: The server could not listen on ``ip:port``.
        """
        return _StartingEnvironment(
            lambda: _ServerEnvironment.start(SystemClock(), namespace, data_converter, ip, port)
        )

    @staticmethod
    def start_time_skipping(
        *,
        namespace: str = "default",
        data_converter: DataConverter = default_converter,
        ip: str = "127.0.0.1",
        port: int = 0,
    ) -> _StartingEnvironment:
        """Starts a server like :meth:`start_local`, on a clock that skips ahead.

        Time passes as usual and also jumps to the next timer (or retry, or
        timeout) whenever nothing else can progress, which is Temporal's rule:

        - only while something awaits a workflow's result (``handle.result()``
          on :attr:`client`) or :meth:`sleep` runs, and
          :meth:`auto_time_skipping_disabled` is not active;
        - and only while no workflow task or activity task is ready or running.
          Activities run in real time: a running activity's start-to-close and
          heartbeat timeouts are never skipped past.

        Each jump is decided and made under the store's write lock, so no task
        can be created or leased between the check and the jump. A workflow
        that sleeps 30 days thus completes in milliseconds. Arguments as for
        :meth:`start_local`.
        """
        return _StartingEnvironment(
            lambda: _TimeSkippingEnvironment.start(SkippingClock(), namespace, data_converter, ip, port)
        )


def _seconds(duration: timedelta | float) -> float:
    return duration.total_seconds() if isinstance(duration, timedelta) else float(duration)


class _StartingEnvironment:
    """What ``start_local()`` / ``start_time_skipping()`` return: usable as
    ``async with ... as env`` (shut down on exit) and as ``await ...``."""

    def __init__(self, start: Callable[[], Awaitable[WorkflowEnvironment]]) -> None:
        self._start = start
        self._environment: WorkflowEnvironment | None = None

    def __await__(self) -> Generator[Any, None, WorkflowEnvironment]:
        return self._start().__await__()

    async def __aenter__(self) -> WorkflowEnvironment:
        self._environment = await self._start()
        return self._environment

    async def __aexit__(self, *exc_info: object) -> None:
        assert self._environment is not None
        await self._environment.shutdown()


class _ServerEnvironment(WorkflowEnvironment):
    """An environment that owns an in-process server and its temporary directory."""

    def __init__(self, client: Client, server: FlowForgeServer, directory: tempfile.TemporaryDirectory) -> None:
        super().__init__(client)
        self._server = server
        self._directory = directory

    @classmethod
    async def start(
        cls, clock: Clock, namespace: str, data_converter: DataConverter, ip: str, port: int
    ) -> WorkflowEnvironment:
        directory = tempfile.TemporaryDirectory(prefix="flowforge-test-")
        server = FlowForgeServer(
            ServerConfig(
                store=str(Path(directory.name) / "flowforge.db"),
                host=ip,
                port=port,
                clock=clock,
                # Pollers notice a task whose retry backoff ended (possibly skipped) soon.
                poll_recheck_interval_s=0.1,
                # Tests stop their workers first; nothing is left to drain.
                shutdown_grace_s=1.0,
            )
        )
        try:
            await server.start()
            client = await Client.connect(f"{ip}:{server.port}", data_converter=data_converter)
            if namespace != "default":
                await client.register_namespace(namespace)
                await client.close()
                client = await Client.connect(f"{ip}:{server.port}", namespace, data_converter=data_converter)
        except BaseException:
            await server.stop()
            directory.cleanup()
            raise
        return cls(client, server, directory)

    async def shutdown(self) -> None:
        try:
            await super().shutdown()
            await self._server.stop()
        finally:
            self._directory.cleanup()


class _TimeSkippingEnvironment(_ServerEnvironment):
    def __init__(self, client: Client, server: FlowForgeServer, directory: tempfile.TemporaryDirectory) -> None:
        clock = server.config.clock
        assert isinstance(clock, SkippingClock)
        self._skipper = _TimeSkipper(server, clock)
        tracking = _ResultWaitTracking(client.workflow_service, self._skipper)
        super().__init__(
            Client(
                tracking, namespace=client.namespace, identity=client.identity, data_converter=client.data_converter
            ),
            server,
            directory,
        )
        self._clock = clock
        self._skipper.start()

    @property
    def supports_time_skipping(self) -> bool:
        return True

    async def sleep(self, duration: timedelta | float) -> None:
        """Skips ``duration`` ahead, firing the timers due on the way in order
        (each one's workflow task runs before time moves on)."""
        await self._skipper.sleep(int(_seconds(duration) * 1_000_000))

    async def get_current_time(self) -> datetime:
        return datetime.fromtimestamp(self._clock.now_us() / 1e6, tz=UTC)

    @contextlib.contextmanager
    def auto_time_skipping_disabled(self) -> Iterator[None]:
        previous, self._skipper.auto = self._skipper.auto, False
        try:
            yield
        finally:
            self._skipper.auto = previous
            self._skipper.poke()

    async def shutdown(self) -> None:
        await self._skipper.stop()
        await super().shutdown()


# How often the skipper looks again while skipping is allowed but something runs.
_SKIP_CHECK_INTERVAL_S = 0.005


class _TimeSkipper:
    """Moves a :class:`SkippingClock` to the next deadline when nothing can progress.

    Skipping is allowed while a result is awaited (and :attr:`auto` is on) or a
    :meth:`sleep` runs. Then, whenever no task is leased or ready, the clock
    jumps to the earliest of: the next deadline in the store (timer, timeout),
    the next pending task's visible time (a retry backoff), the end of the
    shortest running sleep.
    """

    def __init__(self, server: FlowForgeServer, clock: SkippingClock) -> None:
        self._store = server.store
        self._clock = clock
        self.auto = True
        self.result_waiters = 0
        self._sleep_ends: list[int] = []
        self._poked = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="flowforge-time-skipper")

    async def stop(self) -> None:
        await cancel_and_wait(self._task)
        self._task = None

    def poke(self) -> None:
        """Tells the skipper that the rules may allow skipping now."""
        self._poked.set()

    @contextlib.contextmanager
    def result_awaited(self) -> Iterator[None]:
        self.result_waiters += 1
        self.poke()
        try:
            yield
        finally:
            self.result_waiters -= 1

    async def sleep(self, duration_us: int) -> None:
        end = self._clock.now_us() + duration_us
        self._sleep_ends.append(end)
        self.poke()
        try:
            # The virtual clock can jump at any moment, so this re-reads it rather than waiting on one event.
            while (remaining_us := end - self._clock.now_us()) > 0:  # noqa: ASYNC110
                await asyncio.sleep(min(_SKIP_CHECK_INTERVAL_S, remaining_us / 1e6))
        finally:
            self._sleep_ends.remove(end)

    def _allowed(self) -> bool:
        return bool(self._sleep_ends) or (self.auto and self.result_waiters > 0)

    async def _run(self) -> None:
        while True:
            if self._allowed():
                try:
                    await self._skip_if_idle()
                except Exception:  # e.g. the store closing under us; look again
                    _log.exception("time skipping check failed")
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self._poked.wait(), _SKIP_CHECK_INTERVAL_S)
            else:
                await self._poked.wait()
            self._poked.clear()

    async def _skip_if_idle(self) -> None:
        # A cheap read first; the write lock only when there is something to skip to.
        async with self._store.read() as tx:
            target = await self._skip_target(tx)
        if target is None:
            return
        # The store's write lock is held from the check to the jump: a task leased
        # or created meanwhile is either seen by the check or computes its
        # deadlines from the new time, never from the old one.
        async with self._store.transaction() as tx:
            target = await self._skip_target(tx)
            if target is not None:
                self._clock.skip_to(target)

    async def _skip_target(self, tx: Any) -> int | None:
        """Where to jump to, or None when something can still progress or nothing waits ahead."""
        now = self._clock.now_us()
        task_due = await tx.earliest_work_due_us()
        if task_due is not None and task_due <= now:
            return None  # a task or query is running or ready: it runs in real time
        candidates = [d for d in (task_due, await tx.next_deadline_us(), *self._sleep_ends) if d is not None]
        target = min(candidates, default=None)
        return target if target is not None and target > now else None


class _ResultWaitTracking(WorkflowServiceClient):
    """The time-skipping client's RPC layer: it passes every call to ``inner``
    and tells the skipper while one waits for a workflow's close event (what
    ``handle.result()`` does), the moment Temporal's test server skips time."""

    def __init__(self, inner: WorkflowServiceClient, skipper: _TimeSkipper) -> None:
        # No channel of its own: every call goes through ``inner``.
        self._inner = inner
        self._skipper = skipper
        self.retry_config = inner.retry_config

    async def call(self, rpc: str, request: Any, **options: Any) -> Any:
        awaits_result = rpc == "GetWorkflowExecutionHistory" and request.wait_new_event and request.close_event_only
        if not awaits_result:
            return await self._inner.call(rpc, request, **options)
        with self._skipper.result_awaited():
            return await self._inner.call(rpc, request, **options)

    async def close(self) -> None:
        await self._inner.close()
