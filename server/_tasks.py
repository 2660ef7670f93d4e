"""Background asyncio tasks of the server (and of the test environment around it)."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

__all__ = ["cancel_and_wait", "wait_event"]

# How long a cancelled loop may take to end before it is cancelled again.
_RECANCEL_S = 1.0


async def cancel_and_wait(task: asyncio.Task[Any] | None) -> None:
    """Cancels a background loop and waits until it has ended; ``None`` does nothing.

    The loop is cancelled again each second until it ends: one that swallowed the
    cancellation (Python 3.11's ``asyncio.wait_for`` returns the result when a cancel
    lands just as what it waits for finishes) would otherwise run on, and the server's
    stop would wait for it forever. The caller's own cancellation is not swallowed.
    """
    if task is None:
        return
    while not task.done():
        task.cancel()
        await asyncio.wait((task,), timeout=_RECANCEL_S)
    with contextlib.suppress(asyncio.CancelledError):
        task.result()


async def wait_event(event: asyncio.Event, timeout: float) -> bool:
    """Waits at most ``timeout`` seconds for ``event``; True if it was set.

    Unlike ``asyncio.wait_for`` on Python 3.11, a cancellation that lands as the
    event is set is never swallowed (a loop waiting here stops when cancelled), and
    no task is created per wait.
    """
    try:
        async with asyncio.timeout(timeout):
            await event.wait()
    except TimeoutError:
        return False
    return True
