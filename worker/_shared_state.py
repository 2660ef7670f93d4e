"""Synchronous activities in a process pool (Temporal's ``SharedStateManager``).

A process pool cannot carry the activity context (context variables do not cross processes),
so each call is wrapped in :func:`_run_in_process`, which builds the context in the child from
picklable parts: the activity's ``Info``, a manager queue its heartbeats go to, and a manager
event the worker sets when the activity is cancelled. A poller thread in the worker takes
heartbeats off the queue and hands them to the attempt's heartbeater.
"""

from __future__ import annotations

import concurrent.futures
import functools
import itertools
import queue
import threading
from collections.abc import Callable, Sequence
from multiprocessing.managers import SyncManager
from typing import Any

from flowforge import activity

__all__ = ["SharedStateManager"]

_POLL_S = 0.2


def _run_in_process(
    fn: Callable[..., Any], args: Sequence[Any], info: activity.Info, key: int, heartbeats: Any, cancelled: Any
) -> Any:
    """Runs in the pool's process: the activity, with ``activity.info()``, ``heartbeat()`` and ``is_cancelled()``."""
    context = activity._Context(info, lambda details: heartbeats.put((key, tuple(details))))
    context.cancelled = cancelled  # a manager Event: set by the worker's process
    token = activity._current_context.set(context)
    try:
        return fn(*args)
    finally:
        activity._current_context.reset(token)


class SharedStateManager:
    """Carries heartbeats and cancellation between the worker and a process pool's activities.

    Create it with :meth:`create_from_multiprocessing` and pass it with the pool::

        with ProcessPoolExecutor() as pool, multiprocessing.Manager() as manager:
            worker = Worker(client, task_queue=..., activities=[crunch], activity_executor=pool,
                            shared_state_manager=SharedStateManager.create_from_multiprocessing(manager))

    Activities in the pool must be picklable (module-level functions), as their arguments.
    """

    def __init__(self, manager: SyncManager) -> None:
        self._manager = manager
        self._heartbeats = manager.Queue()
        self._receivers: dict[int, Callable[[Sequence[Any]], None]] = {}
        self._keys = itertools.count(1)
        self._lock = threading.Lock()
        self._poller: threading.Thread | None = None

    @staticmethod
    def create_from_multiprocessing(
        manager: SyncManager, queue_poller_executor: concurrent.futures.Executor | None = None
    ) -> SharedStateManager:
        """A manager on ``multiprocessing.Manager()``; ``queue_poller_executor`` is Temporal's and unused
        (the heartbeat queue is polled by a daemon thread)."""
        del queue_poller_executor
        return SharedStateManager(manager)

    def call(
        self,
        fn: Callable[..., Any],
        args: Sequence[Any],
        info: activity.Info,
        on_heartbeat: Callable[[Sequence[Any]], None],
    ) -> tuple[Callable[[], Any], Callable[[], None], Callable[[], None]]:
        """(the picklable call for the pool, a function that cancels it, a function that releases it)."""
        key = next(self._keys)
        cancelled = self._manager.Event()
        with self._lock:
            self._receivers[key] = on_heartbeat
            if self._poller is None:
                self._poller = threading.Thread(target=self._poll, name="flowforge-heartbeats", daemon=True)
                self._poller.start()

        def release() -> None:
            with self._lock:
                self._receivers.pop(key, None)

        run = functools.partial(_run_in_process, fn, args, info, key, self._heartbeats, cancelled)
        return run, cancelled.set, release

    def _poll(self) -> None:
        while True:
            try:
                key, details = self._heartbeats.get(timeout=_POLL_S)
            except queue.Empty:
                continue
            except (EOFError, OSError, BrokenPipeError):
                return  # the manager shut down
            with self._lock:
                receiver = self._receivers.get(key)
            if receiver is not None:
                receiver(details)
