"""Time skipping for :meth:`WorkflowEnvironment.start_time_skipping`: the clock
jumps to the next deadline whenever nothing can progress (Temporal's rule)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

from flowforge._rpc import WorkflowServiceClient
from flowforge._workflow_environment import _seconds, _ServerEnvironment
from flowforge.client import Client
from flowforge.server._tasks import cancel_and_wait
from flowforge.server.app import FlowForgeServer
from flowforge.server.clock import SkippingClock

__all__ = ["TimeSkippingEnvironment"]

_log = logging.getLogger("flowforge.testing")


class TimeSkippingEnvironment(_ServerEnvironment):
    def __init__(self, client: Client, server: FlowForgeServer, directory: tempfile.TemporaryDirectory[str]) -> None:
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

    # A worker's stream goes to ``inner`` as it is: a worker never waits for a result.
    async def encode_request(self, rpc: str, request: Any) -> Any:
        return await self._inner.encode_request(rpc, request)

    async def decode_response(self, rpc: str, response: Any) -> Any:
        return await self._inner.decode_response(rpc, response)

    def open_stream(self, rpc: str) -> Any:
        return self._inner.open_stream(rpc)

    async def close(self) -> None:
        await self._inner.close()
