"""The server's notion of "now".

Every deadline the server keeps (timers, leases, run timeouts) is compared with
one clock object, so a test environment can substitute a virtual clock and skip
time without touching the engine.
"""

from __future__ import annotations

import time

__all__ = ["Clock", "SystemClock"]


class Clock:
    """Wall-clock time in integer microseconds since the epoch."""

    def now_us(self) -> int:
        raise NotImplementedError  # abstract: SystemClock or a test clock


class SystemClock(Clock):
    """The machine's wall clock (the default)."""

    def now_us(self) -> int:
        return time.time_ns() // 1000
