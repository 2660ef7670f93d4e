"""Items a background loop could not handle, held aside so they never stall the others.

A background loop (timekeeper, reaper, scheduler, sweepers) handles each item on its
own. When one fails, :meth:`Quarantine.hold` records why, logs it once, and keeps the
item out of the loop's next passes for a backoff (30 s, doubling to 10 min), after
which it is tried again: a transient failure heals by itself, a poison pill costs one
attempt per backoff instead of stalling the loop. :meth:`Quarantine.held` lists what
is held and why (the visible reason), and the ``flowforge_held_items`` gauge counts them
per loop.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING

from flowforge.server.errors import ServiceError

if TYPE_CHECKING:
    from flowforge.server.metrics import ServerMetrics

__all__ = ["HeldItem", "Quarantine"]

log = logging.getLogger("flowforge.server.quarantine")

_FIRST_BACKOFF_S = 30.0
_MAX_BACKOFF_S = 600.0
#: At most this many items are held per loop; past it the oldest is let go (and retried).
MAX_HELD = 10_000


@dataclasses.dataclass
class HeldItem:
    """An item a loop skips for now, and why."""

    loop: str
    item: Hashable
    reason: str
    failures: int
    retry_at: float
    """``time.monotonic()`` when the loop tries it again."""


class Quarantine:
    """The items one background loop holds aside.

    Args:
        loop: The loop's name, in log lines, :class:`HeldItem` and the gauge's label.
        metrics: The server's metrics, whose ``flowforge_held_items`` gauge counts the held items.
    """

    def __init__(self, loop: str, metrics: ServerMetrics | None = None) -> None:
        self.loop = loop
        self._held: dict[Hashable, HeldItem] = {}
        # Set to how many items are held after each change.
        self._on_count: Callable[[float], None] = (
            metrics.held_items.labels(loop).set if metrics is not None else lambda _count: None
        )

    def is_held(self, item: Hashable) -> bool:
        """Whether the loop should skip ``item`` in this pass."""
        held = self._held.get(item)
        return held is not None and held.retry_at > time.monotonic()

    def hold(self, item: Hashable, error: BaseException) -> None:
        """Records that handling ``item`` failed; logs the first failure (with its
        traceback) and later ones in one line."""
        reason = f"{type(error).__name__}: {error}"[:500]
        held = self._held.pop(item, None)
        failures = 1 if held is None else held.failures + 1
        # A refusal (a quota) is retried at the first backoff; a failure backs off further each time.
        refused = isinstance(error, ServiceError)
        backoff = _FIRST_BACKOFF_S if refused else min(_FIRST_BACKOFF_S * 2 ** (failures - 1), _MAX_BACKOFF_S)
        self._held[item] = HeldItem(self.loop, item, reason, failures, time.monotonic() + backoff)
        if held is None and refused:
            # A refusal with a reason (a quota, a limit), not a bug: no traceback.
            log.warning("%s: %r was refused and is held aside (retried in %.0fs): %s", self.loop, item, backoff, reason)
        elif held is None:
            log.error(
                "%s: %r failed and is held aside (retried in %.0fs): %s",
                self.loop,
                item,
                backoff,
                reason,
                exc_info=error,
            )
        else:
            log.warning("%s: %r failed again (%d times); retried in %.0fs", self.loop, item, failures, backoff)
        while len(self._held) > MAX_HELD:
            self._held.pop(next(iter(self._held)))
        self._on_count(len(self._held))

    def backoff_s(self, item: Hashable) -> float:
        """Seconds until a held ``item`` is tried again (0 when it is not held)."""
        held = self._held.get(item)
        return max(0.0, held.retry_at - time.monotonic()) if held is not None else 0.0

    def release(self, item: Hashable) -> None:
        """``item`` was handled: it is held no more."""
        if self._held.pop(item, None) is not None:
            log.info("%s: %r was handled after all", self.loop, item)
            self._on_count(len(self._held))

    def held(self) -> list[HeldItem]:
        """What is held, oldest first."""
        return list(self._held.values())

    def __len__(self) -> int:
        return len(self._held)

    def __bool__(self) -> bool:
        return bool(self._held)
