"""The asyncio event loop workflow code runs on: no I/O, workflow time, durable timers.

Its clock is the workflow time and its timers are durable (``call_later`` emits a
StartTimer command and fires on the TimerFired event), so plain
``asyncio.sleep``, ``asyncio.wait_for`` and ``asyncio.timeout`` are durable too.
"""

from __future__ import annotations

import asyncio
import collections
import contextvars
import logging
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any

from flowforge._workflow_commands import CommandBuffer
from flowforge._workflow_runtime import _Runtime
from flowforge.api.v1 import command_pb2

__all__ = ["DurableTimer", "WorkflowEventLoop"]

_logger = logging.getLogger("flowforge.workflow")


class DurableTimer(asyncio.TimerHandle):
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


class WorkflowEventLoop(asyncio.AbstractEventLoop):
    """An asyncio loop for workflow code: no I/O, workflow time, durable timers.

    It implements what workflow code may use; the rest of the loop API (sockets,
    subprocesses, executors, ...) raises ``NotImplementedError``.

    Args:
        runtime: What the ``flowforge.workflow`` functions call while this loop runs.
        commands: Where timer commands go.
        workflow_id: Names the workflow in log lines.
        on_task_created: Called with every task created on the loop.
    """

    def __init__(
        self,
        runtime: _Runtime,
        commands: CommandBuffer,
        *,
        workflow_id: str,
        on_task_created: Callable[[asyncio.Task[Any]], None],
    ) -> None:
        # The runtime behind the ``flowforge.workflow`` functions while this loop runs
        # (_Runtime.current() reads it); an attribute, not a property, which would be
        # a call for the determinism guard's hook on every workflow.* call.
        self._flowforge_runtime = runtime
        self._commands = commands
        self._workflow_id = workflow_id
        self._on_task_created = on_task_created
        self._time = 0.0
        self._ready: collections.deque[asyncio.Handle] = collections.deque()
        self._conditions: list[tuple[Callable[[], bool], asyncio.Future[None]]] = []
        self._running = False
        # Timers by their deterministic ids.
        self._timer_seq = 0
        self._timers: dict[str, DurableTimer] = {}

    def set_time(self, seconds: float) -> None:
        """Sets the workflow time (seconds since the epoch) the loop's clock reads."""
        self._time = seconds

    def run_until_quiescent(self) -> None:
        """Runs ready callbacks, then satisfied wait conditions, until every coroutine waits."""
        outer_loop = asyncio.events._get_running_loop()
        asyncio.events._set_running_loop(self)
        self._running = True
        try:
            ready = self._ready
            while True:
                while ready:
                    # Handle._run's work inline: under the determinism guard each
                    # Python call costs its hook two events, and this runs for every
                    # step of every task.
                    handle = ready.popleft()
                    if handle._cancelled:
                        continue
                    try:
                        handle._context.run(handle._callback, *handle._args)  # type: ignore[attr-defined]
                    except (SystemExit, KeyboardInterrupt):
                        raise
                    except BaseException as error:
                        self.call_exception_handler(
                            {"message": f"Exception in callback {handle!r}", "exception": error, "handle": handle}
                        )
                # Checked here first: most loops wait on no condition.
                if not self._conditions or not self._resolve_first_satisfied_condition():
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
        future: asyncio.Future[None] = self.create_future()
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

    def fire_timer(self, timer_id: str) -> None:
        """Runs the callback of the timer a TimerFired event names."""
        timer = self._timers.pop(timer_id, None)
        if timer is not None:  # else the workflow cancelled it before it fired
            self.enqueue(timer)

    def _start_timer(
        self, delay: float, callback: Callable[..., Any], args: Sequence[Any], context: contextvars.Context | None
    ) -> DurableTimer:
        self._timer_seq += 1
        timer_id = str(self._timer_seq)
        command = command_pb2.Command(start_timer=command_pb2.StartTimerCommandAttributes(timer_id=timer_id))
        command.start_timer.start_to_fire_timeout.FromTimedelta(timedelta(seconds=delay))
        self._commands.append(command)
        timer = DurableTimer(timer_id, command, self._time + delay, callback, args, self, context)
        self._timers[timer_id] = timer
        return timer

    def _cancel_timer(self, timer: DurableTimer) -> None:
        if self._timers.pop(timer.timer_id, None) is None:
            return  # it already fired
        if not self._commands.discard_unsent(timer.command):
            self._commands.append(
                command_pb2.Command(cancel_timer=command_pb2.CancelTimerCommandAttributes(timer_id=timer.timer_id))
            )

    # asyncio.AbstractEventLoop

    def time(self) -> float:
        return self._time

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
        return self._start_timer(delay, callback, args, context)

    def call_at(  # type: ignore[override]
        self, when: float, callback: Callable[..., Any], *args: Any, context: contextvars.Context | None = None
    ) -> asyncio.TimerHandle:
        return self.call_later(when - self.time(), callback, *args, context=context)

    def _timer_handle_cancelled(self, handle: asyncio.TimerHandle) -> None:
        if isinstance(handle, DurableTimer):
            self._cancel_timer(handle)

    def create_future(self) -> asyncio.Future[Any]:
        return asyncio.Future(loop=self)

    def create_task(
        self, coro: Any, *, name: str | None = None, context: contextvars.Context | None = None
    ) -> asyncio.Task[Any]:
        task = asyncio.Task(coro, loop=self, name=name, context=context)
        self._on_task_created(task)
        return task

    # Never in debug mode. A C callable, not a method: asyncio asks for every future,
    # task and handle, and a Python method would be a call the determinism guard's hook
    # sees each time.
    get_debug = staticmethod(bool)  # bool() is False

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
            self._workflow_id,
            exc_info=context.get("exception"),
        )
