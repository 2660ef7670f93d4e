"""Waiting on a condition with a deadline: tests never sleep a fixed time."""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

_T = TypeVar("_T")


async def wait_until(
    check: Callable[[], Awaitable[_T | None] | _T | None], *, timeout: float, what: str, interval: float = 0.05
) -> _T:
    """Polls ``check`` (plain or async) until it returns something truthy, and returns that.

    Args:
        check: Called every ``interval`` seconds; may return an awaitable.
        timeout: Seconds until the wait fails.
        what: The condition in words, for the failure message ("the worker to poll").
        interval: Seconds between checks.

    Raises:
        AssertionError: ``check`` stayed falsy for ``timeout`` seconds.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if inspect.isawaitable(value):
            value = await value
        if value:
            return value  # type: ignore[return-value]
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(interval)


async def within(awaitable: Awaitable[_T], *, timeout: float, what: str) -> _T:
    """Awaits ``awaitable`` for at most ``timeout`` seconds, so a test that would hang
    (a workflow that never starts, a lost wake-up) fails with a message instead of
    stalling until the suite's timeout, which reports no cause.

    Args:
        awaitable: What to wait for, e.g. ``handle.result()``.
        timeout: Seconds until the wait fails (``awaitable`` is then cancelled).
        what: The awaited outcome in words, for the failure message.

    Raises:
        AssertionError: ``awaitable`` did not finish within ``timeout`` seconds.
    """
    deadline = asyncio.timeout(timeout)
    try:
        async with deadline:
            return await awaitable
    except TimeoutError:
        if not deadline.expired():
            raise  # the awaitable's own TimeoutError
        raise AssertionError(f"timed out after {timeout}s waiting for {what}") from None
