"""Who polls a task queue and how fast it hands out work, as seen by this replica.

Matching reports every poll (its identity, at start and end) and every task a poll
took; ``DescribeTaskQueue`` reads them back. Kept in memory: pollers talk to one
replica at a time, so with several replicas each describes the pollers and the
dispatch rate it serves (the backlog comes from the shared store).
"""

from __future__ import annotations

import collections
import dataclasses

from flowforge.server.clock import Clock

__all__ = ["POLLER_TTL_S", "Poller", "TaskQueueActivity"]

#: A poller not seen for this long is no longer listed.
POLLER_TTL_S = 300.0
#: The dispatch rate is averaged over this window.
DISPATCH_WINDOW_S = 60.0
# Past this many pollers of one queue and kind, stale ones are dropped on the next poll.
_PRUNE_AT = 256
# Past this many queues, queues with no recent poller or dispatch are forgotten (a
# caller polling ever new queue names must not grow this replica's memory).
_PRUNE_QUEUES_AT = 4096

_Queue = tuple[str, str, str]  # namespace, task queue, kind


@dataclasses.dataclass(frozen=True)
class Poller:
    """A worker that polled the queue: its identity, what it polls for, when it was last seen (µs)."""

    identity: str
    kind: str
    last_access_us: int


class TaskQueueActivity:
    """Recent pollers and dispatches of every task queue this replica serves."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._pollers: dict[_Queue, dict[str, int]] = collections.defaultdict(dict)
        self._dispatches: dict[_Queue, collections.deque[int]] = collections.defaultdict(collections.deque)

    def polled(self, namespace: str, task_queue: str, kind: str, identity: str) -> None:
        """Records that ``identity`` is polling (called when a poll begins and ends)."""
        seen = self._pollers[(namespace, task_queue, kind)]
        seen[identity] = self._clock.now_us()
        if len(seen) > _PRUNE_AT:
            self._prune(seen)
        if len(self._pollers) > _PRUNE_QUEUES_AT:
            self._prune_queues()

    def dispatched(self, namespace: str, task_queue: str, kind: str) -> None:
        """Records that a poll took a task of the queue."""
        now = self._clock.now_us()
        times = self._dispatches[(namespace, task_queue, kind)]
        times.append(now)
        self._forget_before(times, now)

    def pollers(self, namespace: str, task_queue: str) -> list[Poller]:
        """The pollers of the queue seen within :data:`POLLER_TTL_S`, most recent first."""
        found = []
        for kind in ("workflow", "activity"):
            seen = self._pollers.get((namespace, task_queue, kind))
            if seen is not None:
                self._prune(seen)
                found += [Poller(identity, kind, last) for identity, last in seen.items()]
        return sorted(found, key=lambda p: p.last_access_us, reverse=True)

    def dispatch_rate(self, namespace: str, task_queue: str, kind: str) -> float:
        """Tasks handed to polls per second over the last :data:`DISPATCH_WINDOW_S`."""
        times = self._dispatches.get((namespace, task_queue, kind))
        if not times:
            return 0.0
        self._forget_before(times, self._clock.now_us())
        return len(times) / DISPATCH_WINDOW_S

    def _prune_queues(self) -> None:
        now = self._clock.now_us()
        for queue in list(self._pollers):
            self._prune(self._pollers[queue])
            if not self._pollers[queue]:
                del self._pollers[queue]
        for queue in list(self._dispatches):
            self._forget_before(self._dispatches[queue], now)
            if not self._dispatches[queue]:
                del self._dispatches[queue]

    def _prune(self, seen: dict[str, int]) -> None:
        oldest = self._clock.now_us() - int(POLLER_TTL_S * 1e6)
        for identity in [i for i, last in seen.items() if last < oldest]:
            del seen[identity]

    @staticmethod
    def _forget_before(times: collections.deque[int], now_us: int) -> None:
        oldest = now_us - int(DISPATCH_WINDOW_S * 1e6)
        while times and times[0] < oldest:
            times.popleft()
