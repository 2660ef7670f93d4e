"""The server's notion of "now".

Every deadline the server keeps (timers, leases, run timeouts) is compared with
one clock object, so a test environment can substitute a virtual clock and skip
time without touching the engine.
"""

from __future__ import annotations

import time
from collections.abc import Callable

__all__ = ["Clock", "ManualClock", "SkippingClock", "SystemClock"]


class Clock:
    """Wall-clock time in integer microseconds since the epoch."""

    #: False for a clock that moves only when told: waiting for it to reach a time
    #: may last until someone moves it.
    advances_on_its_own = True

    def now_us(self) -> int:
        raise NotImplementedError  # abstract: SystemClock or a test clock

    def add_jump_listener(self, listener: Callable[[], None]) -> None:
        """Calls ``listener`` whenever the clock jumps ahead (never for a clock
        that only follows the wall clock). Whoever sleeps until a deadline (the
        timekeeper) registers here, so a jump past its deadline wakes it.
        Listeners run on the thread that moved the clock: the server's event loop."""
        # Kept in the instance dict so subclasses need not call Clock.__init__.
        self.__dict__.setdefault("_jump_listeners", []).append(listener)

    def _jumped(self) -> None:
        for listener in self.__dict__.get("_jump_listeners", ()):
            listener()


class SystemClock(Clock):
    """The machine's wall clock (the default)."""

    def now_us(self) -> int:
        return time.time_ns() // 1000


class ManualClock(Clock):
    """A clock that moves only when told to (tests, time skipping).

    Args:
        start_us: The initial time; defaults to the wall clock at construction.
    """

    advances_on_its_own = False

    def __init__(self, start_us: int | None = None) -> None:
        self._now_us = time.time_ns() // 1000 if start_us is None else start_us

    def now_us(self) -> int:
        return self._now_us

    def advance(self, microseconds: int) -> None:
        """Moves time forward; never backwards (deadlines already passed stay passed)."""
        if microseconds < 0:
            raise ValueError("a clock never moves backwards")
        self._now_us += microseconds
        if microseconds:
            self._jumped()

    def set(self, now_us: int) -> None:
        """Jumps to ``now_us``, which must not be earlier than the current time."""
        self.advance(now_us - self._now_us)


class SkippingClock(Clock):
    """The wall clock plus an offset that only grows: time passes as usual and
    can also jump ahead (time skipping in ``flowforge.testing``).

    It is monotonic: it runs on ``time.monotonic_ns`` from the wall-clock time at
    construction, so a wall-clock step back never moves it backwards.
    """

    def __init__(self) -> None:
        self._origin_us = time.time_ns() // 1000 - time.monotonic_ns() // 1000
        self._offset_us = 0

    def now_us(self) -> int:
        return self._origin_us + time.monotonic_ns() // 1000 + self._offset_us

    @property
    def skipped_us(self) -> int:
        """How far ahead of the wall clock this clock has jumped in total."""
        return self._offset_us

    def skip_to(self, when_us: int) -> None:
        """Jumps ahead to ``when_us``; does nothing if that time has passed."""
        gap = when_us - self.now_us()
        if gap > 0:
            self._offset_us += gap
            self._jumped()
