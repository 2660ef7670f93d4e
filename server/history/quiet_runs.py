"""What the last parked history long-poll of a run saw, kept while nothing changed it.

A console page follows a running execution with back-to-back long-polls
(``GetWorkflowExecutionHistory`` with ``wait_new_event``): each waits up to its deadline
and the page asks again. The wait itself reads nothing (it sleeps on the store's
:class:`~flowforge.server.stores.base.Notifier`); this lets the next ask park again
without reading either, so an open page on an execution that does not change costs the
store nothing at all.

The proof that nothing changed is the notifier's own event: a waiter takes the channel's
event *before* it reads the run, and every commit that appends to the run's history (or
closes it) pops and sets that event (``_Mutation.save_all`` notifies the channel), as does
:meth:`~flowforge.server.stores.base.Notifier.notify_all` after lost notifications. So
while ``listen()`` still hands out the very event that was current when the run was
read, and it is not set, the run is as that read saw it.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
from collections.abc import Callable

__all__ = ["QuietRuns"]

# Runs remembered at most; the least recently asked about is forgotten first (it then
# costs one read on its next ask). Each entry also keeps its channel's event alive.
_CAPACITY = 10_000


@dataclasses.dataclass(frozen=True)
class _Seen:
    wake: asyncio.Event
    run_id: str
    last_event_id: int


# (namespace, workflow_id, run_id as asked, close_event_only): what a request names.
_Key = tuple[str, str, str, bool]


class QuietRuns:
    """Running executions that had nothing new at their last read, and the notifier
    event that proves it is still so."""

    def __init__(self, capacity: int = _CAPACITY) -> None:
        self._capacity = capacity
        self._seen: collections.OrderedDict[_Key, _Seen] = collections.OrderedDict()

    def __len__(self) -> int:
        return len(self._seen)

    def unchanged(
        self, key: _Key, after_event_id: int, listen: Callable[[str], asyncio.Event]
    ) -> tuple[str, asyncio.Event] | None:
        """(run id, the event to wait on) if the run named by ``key`` is still running
        with nothing past ``after_event_id``: ``listen(run_id)`` (the run's channel on
        the notifier) still hands out the event taken before the last read, and no
        commit has set it since. None: read the store."""
        seen = self._seen.get(key)
        if seen is None or after_event_id < seen.last_event_id:
            return None
        wake = listen(seen.run_id)
        if wake is not seen.wake or wake.is_set():
            del self._seen[key]
            return None
        self._seen.move_to_end(key)
        return seen.run_id, wake

    def remember(self, key: _Key, wake: asyncio.Event, run_id: str, last_event_id: int) -> None:
        """Records a read (taken after ``wake``) that found the run running with
        ``last_event_id`` as its last event."""
        self._seen[key] = _Seen(wake, run_id, last_event_id)
        self._seen.move_to_end(key)
        while len(self._seen) > self._capacity:
            self._seen.popitem(last=False)
