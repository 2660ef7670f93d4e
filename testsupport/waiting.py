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
