"""The server's notion of "now".

Every deadline the server keeps (timers, leases, run timeouts) is compared with
one clock object, so a test environment can substitute a virtual clock and skip
time without touching the engine.
"""

from __future__ import annotations

import time

__all__ = ["Clock", "ManualClock", "SystemClock"]


class Clock:
    """Wall-clock time in integer microseconds since the epoch."""

    def now_us(self) -> int:
        raise NotImplementedError  # abstract: SystemClock or a test clock


class SystemClock(Clock):
    """The machine's wall clock (the default)."""

    def now_us(self) -> int:
        return time.time_ns() // 1000


class ManualClock(Clock):
    """A clock that moves only when told to (tests, time skipping).

    Args:
        start_us: The initial time; defaults to the wall clock at construction.
    """

    def __init__(self, start_us: int | None = None) -> None:
        self._now_us = time.time_ns() // 1000 if start_us is None else start_us

    def now_us(self) -> int:
        return self._now_us

    def advance(self, microseconds: int) -> None:
        """Moves time forward; never backwards (deadlines already passed stay passed)."""
        if microseconds < 0:
            raise ValueError("a clock never moves backwards")
        self._now_us += microseconds

    def set(self, now_us: int) -> None:
        """Jumps to ``now_us``, which must not be earlier than the current time."""
        self.advance(now_us - self._now_us)
