"""Cancellation delivered into synchronous activities running in threads, as Temporal does.

A thread cannot be cancelled like a coroutine; instead the worker raises
``flowforge.exceptions.CancelledError`` inside it (``PyThreadState_SetAsyncExc``), at the next
Python bytecode the activity runs. A thread blocked in C (a socket read, ``time.sleep``) sees
it when that call returns. ``activity.is_cancelled()`` still works for code that prefers to look.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Callable
from typing import Any

from flowforge.exceptions import CancelledError

__all__ = ["ThreadInterrupter"]


class ThreadInterrupter:
    """Runs one activity call in a pool thread and can raise ``CancelledError`` in it while it runs."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._thread_id: int | None = None
        self._interrupted = False

    def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Calls ``fn(*args)`` in the current (pool) thread, interruptible while it runs."""
        with self._lock:
            if self._interrupted:
                raise CancelledError("activity cancelled before it started")
            self._thread_id = threading.get_ident()
        try:
            return fn(*args)
        finally:
            # Under the lock, so interrupt() never raises into the pool's own code afterwards.
            with self._lock:
                self._thread_id = None

    def interrupt(self) -> None:
        """Raises ``CancelledError`` in the thread running the call (once), or prevents the call."""
        with self._lock:
            if self._interrupted:
                return
            self._interrupted = True
            if self._thread_id is not None:
                ctypes.pythonapi.PyThreadState_SetAsyncExc(
                    ctypes.c_ulong(self._thread_id), ctypes.py_object(CancelledError)
                )
