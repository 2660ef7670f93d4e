"""Matching: long-polls on task queues.

A poll tries to lease; if the queue is empty it waits for a wake-up from a
commit that added a task to the queue (rule 1 makes the task row the outbox, so
the wake-up is only a hint) or for a periodic re-check, which also picks up
tasks whose retry backoff has ended and covers a lost cross-replica notification.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from flowforge.api.schema import TaskKind
from flowforge.server.errors import ResourceExhausted, ServiceError
from flowforge.server.history import (
    HistoryEngine,
    LeasedActivityTask,
    LeasedQuery,
    LeasedWorkflowTask,
    StartedWorkflowTask,
    queue_channel,
)
from flowforge.server.quarantine import Quarantine
from flowforge.server.stores.base import Transaction
from flowforge.server.task_queues import TaskQueueActivity

__all__ = ["MAX_PARKED_POLLS", "IdlePoll", "Matching"]

_T = TypeVar("_T")

# A look counts visible tasks up to this many (more than a worker's parked polls).
_LOOK_LIMIT = 16
#: Polls that may wait on one task queue in one server process; one more is refused
#: RESOURCE_EXHAUSTED (each parked poll holds a gRPC call and a wake-up registration).
MAX_PARKED_POLLS = 1000
# Looks a poll takes at most before it trusts one (see Matching._look).
_LOOKS_PER_POLL = 3
# Queues remembered at most as found empty (see Matching._found_empty).
_EMPTY_QUEUES = 10_000


@dataclasses.dataclass(eq=False)
class IdlePoll:
    """A worker stream's workflow poll waiting for a task, which a start may claim
    (:meth:`Matching.claim_idle_workflow_poll`) to lease its run's first workflow task
    to it in the start's own transaction (eager start, docs/worker-stream.md)."""

    identity: str
    #: The start's committed lease, or None when it leased nothing; cancelled by a poll
    #: that went away, so the start gives its lease back.
    handoff: asyncio.Future[StartedWorkflowTask | None]
    claimed: bool = False


class Matching:
    """Long-poll front of the task tables."""

    def __init__(
        self, engine: HistoryEngine, recheck_interval_s: float = 1.0, max_parked_polls: int = MAX_PARKED_POLLS
    ) -> None:
        self._engine = engine
        self._recheck_interval_s = recheck_interval_s
        # Lease attempts under way per queue in this process. A commit wakes every
        # parked poll of its queue; a poll tries to lease only while fewer attempts
        # are under way than tasks are visible, so for one new task one poll writes
        # and the others wait again instead of running empty write transactions.
        self._leasing: collections.Counter[str] = collections.Counter()
        # Leases made per queue in this process: a look that overlapped one may
        # predate its commit and still count its task, so it looks again.
        self._leased: collections.Counter[str] = collections.Counter()
        # Polls waiting per queue in this process, at most max_parked_polls.
        self._parked: collections.Counter[str] = collections.Counter()
        # Worker streams' workflow polls waiting now per queue, oldest first (eager start).
        self._idle: dict[str, list[IdlePoll]] = {}
        # Queues whose last look here found nothing: the notifier event listened to before
        # that look, and when. While listen() still hands out that very event, unset, no
        # commit has added a task since, so a new poll parks without its look (a read on
        # the server loop, e.g. as a worker stream's credit comes with a report), as
        # history/quiet_runs.py does for history long polls. Tasks that become visible
        # by time alone are found by the periodic re-check, as for any parked poll.
        self._found_empty: collections.OrderedDict[str, tuple[asyncio.Event, float]] = collections.OrderedDict()
        self._max_parked_polls = max_parked_polls
        #: Tasks whose lease failed unexpectedly, set aside with the reason (server/quarantine.py).
        self.held = Quarantine("matching: task", engine.metrics)
        #: Recent pollers and dispatches of each queue (DescribeTaskQueue).
        self.activity = TaskQueueActivity(engine.clock)

    async def poll_workflow_task(
        self, namespace: str, task_queue: str, identity: str, timeout_s: float, claimable: bool = False
    ) -> LeasedWorkflowTask | LeasedQuery | None:
        """A workflow task or a query of the queue; queries first, as a caller waits on each.
        A ``claimable`` poll (a worker stream's) may be handed a start's first task while it waits."""

        engine = self._engine
        query_visible = False

        async def visible() -> int:
            nonlocal query_visible
            query_visible, tasks = await engine.visible_workflow_work(namespace, task_queue, _LOOK_LIMIT)
            return query_visible + tasks

        async def try_lease() -> LeasedWorkflowTask | LeasedQuery | None:
            # Only a query seen waiting is worth a write transaction (the hot path has none).
            leased = await engine.try_lease_query(namespace, task_queue) if query_visible else None
            return leased or await engine.try_lease_workflow_task(namespace, task_queue, identity)

        return await self._poll(
            namespace,
            TaskKind.WORKFLOW,
            task_queue,
            identity,
            timeout_s,
            visible,
            try_lease,
            lease_on_wake=True,
            handed=engine.hand_out_leased_workflow_task if claimable else None,
        )

    def claim_idle_workflow_poll(self, namespace: str, task_queue: str) -> IdlePoll | None:
        """Takes the oldest claimable poll waiting on the queue in this process, if any.

        Nothing is awaited: the poll stays parked, waiting only for :meth:`hand_over`,
        which the claimer must call whatever happens to its start."""
        channel = queue_channel(namespace, TaskKind.WORKFLOW, task_queue)
        idle = self._idle.get(channel)
        while idle:
            poll = idle.pop(0)
            if not poll.handoff.done():
                poll.claimed = True
                return poll
        return None

    def idle_workflow_polls(self, namespace: str, task_queue: str) -> int:
        """How many claimable polls wait on the queue in this process now."""
        return len(self._idle.get(queue_channel(namespace, TaskKind.WORKFLOW, task_queue), ()))

    async def hand_over(self, poll: IdlePoll, started: StartedWorkflowTask | None) -> None:
        """Gives a claimed poll the lease its start committed (None: nothing leased, the
        poll waits on); a poll that went away meanwhile has the lease released at once."""
        if not poll.handoff.done():
            poll.handoff.set_result(started)
        elif started is not None:
            await asyncio.shield(self._engine.give_back_workflow_task(started.task))

    async def poll_activity_task(
        self, namespace: str, task_queue: str, identity: str, timeout_s: float
    ) -> LeasedActivityTask | None:
        return await self._poll(
            namespace,
            TaskKind.ACTIVITY,
            task_queue,
            identity,
            timeout_s,
            lambda: self._engine.visible_tasks(namespace, TaskKind.ACTIVITY, task_queue, _LOOK_LIMIT),
            lambda: self._engine.try_lease_activity_task(namespace, task_queue, identity),
        )

    async def _poll(
        self,
        namespace: str,
        kind: TaskKind,
        task_queue: str,
        identity: str,
        timeout_s: float,
        visible: Callable[[], Awaitable[int]],
        try_lease: Callable[[], Awaitable[_T | None]],
        lease_on_wake: bool = False,
        handed: Callable[[StartedWorkflowTask], Awaitable[_T]] | None = None,
    ) -> _T | None:
        """Waits at most ``timeout_s`` for a task of the queue; counts the wait (metrics.py)
        and notes the poller and the dispatch (task_queues.py). With ``lease_on_wake`` the
        first poll a commit wakes leases without looking first (see _wait_and_lease_parked):
        not for activities, whose queue's rate limit may answer a lease with nothing.
        With ``handed`` the poll may be claimed while it waits (see :class:`IdlePoll`);
        ``handed`` turns the lease it is handed into what the poll returns."""
        label = kind.lower()
        self.activity.polled(namespace, task_queue, label, identity)
        began = time.monotonic()
        leased = await self._wait_and_lease(
            queue_channel(namespace, kind, task_queue),
            began + timeout_s,
            visible,
            self._poison_guarded(namespace, kind, task_queue, try_lease),
            lease_on_wake,
            None if handed is None else (identity, handed),
        )
        self.activity.polled(namespace, task_queue, label, identity)
        metrics = self._engine.metrics
        metrics.series(metrics.poll_wait, label, "empty" if leased is None else "task").observe(
            time.monotonic() - began
        )
        if leased is None:
            metrics.series(metrics.empty_polls, namespace, task_queue, label).inc()
        else:
            self.activity.dispatched(namespace, task_queue, label)
        return leased

    def _poison_guarded(
        self, namespace: str, kind: TaskKind, task_queue: str, try_lease: Callable[[], Awaitable[_T | None]]
    ) -> Callable[[], Awaitable[_T | None]]:
        """``try_lease``, except that a task whose lease fails unexpectedly (a corrupt row,
        a bug) is set aside instead of failing every poll of its queue for good: it
        is held with its reason (logged once) and made invisible for the backoff, so
        the polls lease the tasks behind it."""

        async def lease() -> _T | None:
            try:
                return await try_lease()
            except (ServiceError, asyncio.CancelledError):
                raise  # a refusal or the store being down: nothing to blame on a task
            except Exception as error:
                await self._defer_head_task(namespace, kind, task_queue, error)
                return None

        return lease

    async def _defer_head_task(self, namespace: str, kind: TaskKind, task_queue: str, error: Exception) -> None:
        engine = self._engine

        async def body(tx: Transaction) -> None:
            now = engine.clock.now_us()
            task = await tx.lease_next_task(namespace, kind, task_queue, now)  # the one that failed, locked
            if task is None:
                return
            self.held.hold(task.task_id, error)
            task.visible_us = now + int(max(1.0, self.held.backoff_s(task.task_id)) * 1e6)
            await tx.update_task(task)

        await engine.transaction(body)

    async def _look(self, channel: str, visible: Callable[[], Awaitable[int]]) -> int:
        """How many tasks are visible, from a snapshot taken after every lease this
        process has finished (otherwise a poll would run an empty lease for a task
        a concurrent poll of this process just took)."""
        for _ in range(_LOOKS_PER_POLL - 1):
            leased = self._leased[channel]
            count = await visible()
            if self._leased[channel] == leased:
                return count
        return await visible()  # a busy queue: lease attempts may find nothing now and then

    async def _look_noting_empty(self, channel: str, visible: Callable[[], Awaitable[int]], wake: asyncio.Event) -> int:
        """:meth:`_look`; an empty queue is remembered with ``wake`` (listened to before it)."""
        count = await self._look(channel, visible)
        if count == 0:
            self._found_empty[channel] = (wake, time.monotonic())
            self._found_empty.move_to_end(channel)
            while len(self._found_empty) > _EMPTY_QUEUES:
                self._found_empty.popitem(last=False)
        else:
            self._found_empty.pop(channel, None)
        return count

    def _still_empty(self, channel: str, wake: asyncio.Event) -> bool:
        """Whether the last look at the queue found nothing, within the re-check interval,
        and no commit has notified the queue since (``wake`` is still the event it saw)."""
        seen = self._found_empty.get(channel)
        if seen is None:
            return False
        event, looked_at = seen
        if event is wake and not wake.is_set() and time.monotonic() - looked_at < self._recheck_interval_s:
            return True
        del self._found_empty[channel]
        return False

    async def _wait_and_lease(
        self,
        channel: str,
        deadline: float,
        visible: Callable[[], Awaitable[int]],
        try_lease: Callable[[], Awaitable[_T | None]],
        lease_on_wake: bool,
        claimable: tuple[str, Callable[[StartedWorkflowTask], Awaitable[_T]]] | None,
    ) -> _T | None:
        if self._parked[channel] >= self._max_parked_polls:
            raise ResourceExhausted(
                f"{self._parked[channel]} polls already wait on this task queue, the limit per queue"
                f" ({self._max_parked_polls}); run fewer pollers per queue, or retry with backoff"
            )
        self._parked[channel] += 1
        try:
            return await self._wait_and_lease_parked(channel, deadline, visible, try_lease, lease_on_wake, claimable)
        finally:
            self._parked[channel] -= 1
            if not self._parked[channel]:
                # No poll of the queue in this process: its bookkeeping goes (no look
                # is comparing _leased now, and _leasing is back to 0).
                del self._parked[channel]
                self._leased.pop(channel, None)
                if not self._leasing[channel]:
                    self._leasing.pop(channel, None)

    async def _wait_and_lease_parked(
        self,
        channel: str,
        deadline: float,
        visible: Callable[[], Awaitable[int]],
        try_lease: Callable[[], Awaitable[_T | None]],
        lease_on_wake: bool,
        claimable: tuple[str, Callable[[StartedWorkflowTask], Awaitable[_T]]] | None,
    ) -> _T | None:
        store = self._engine.store
        woken = False
        first = True
        # When the token this poll claimed of the queue's rate limit is due (None: none claimed).
        token_due: float | None = None
        while True:
            # Listen before looking, so a task added in between still wakes us.
            wake = store.notifier.listen(channel)
            # A wake-up means a commit added a task to the queue: the first poll it wakes
            # leases at once, without the look's read transaction (on the path to every
            # first workflow task); the polls woken with it see the lease under way and look.
            trusted = woken and lease_on_wake and not self._leasing[channel]
            # A poll waiting for its token does not race the others for theirs when a commit
            # wakes it, and a new poll waits for a token of its own if all due before are claimed.
            awaiting_token = token_due is not None and token_due > time.monotonic()
            still_empty = awaiting_token or (
                first and (self._still_empty(channel, wake) or self._engine.rate_limited(channel))
            )
            first = False
            # Look before taking the write lock (see _leasing). No await between the
            # look's answer and the count, so two polls cannot both take the last task.
            if not still_empty and (
                trusted or await self._look_noting_empty(channel, visible, wake) > self._leasing[channel]
            ):
                self._leasing[channel] += 1
                try:
                    leased = await try_lease()
                    if leased is not None:
                        self._leased[channel] += 1  # with no await before the decrement
                finally:
                    self._leasing[channel] -= 1
                if leased is not None:
                    return leased
                if trusted:
                    # Another poll or process took it, or the wake was for a query: look now.
                    woken = False
                    continue
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            # A queue whose rate limit ran out of tokens is looked at again when this poll's token is due.
            if not awaiting_token:
                token_due = self._engine.claim_rate_token(channel)
            wait_s = min(remaining, self._recheck_interval_s if token_due is None else token_due - time.monotonic())
            if claimable is None:
                woken = await store.wait_for_notification(wake, wait_s)
                continue
            identity, handed = claimable
            poll = IdlePoll(identity, asyncio.get_running_loop().create_future())
            woken = await self._wait_claimable(channel, poll, wake, wait_s)
            if poll.claimed:
                try:
                    started = await poll.handoff
                except asyncio.CancelledError:
                    await self._cancel_claim(poll)
                    raise
                if started is not None:
                    return await handed(started)
                woken = False  # the start leased nothing: look again

    async def _cancel_claim(self, poll: IdlePoll) -> None:
        """For a poll being cancelled: a start that claimed it gives its lease back, and a
        lease handed over just before the cancellation is given back here rather than
        left leased to nobody until its timeout."""
        handoff = poll.handoff
        if not handoff.cancel() and not handoff.cancelled() and (started := handoff.result()) is not None:
            await asyncio.shield(self._engine.give_back_workflow_task(started.task))

    async def _wait_claimable(self, channel: str, poll: IdlePoll, wake: asyncio.Event, wait_s: float) -> bool:
        """Waits like a poll, with ``poll`` open to a start's claim meanwhile; True if notified."""
        idle = self._idle.setdefault(channel, [])
        idle.append(poll)
        notified = asyncio.ensure_future(self._engine.store.wait_for_notification(wake, wait_s))
        try:
            await asyncio.wait((notified, poll.handoff), return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            await self._cancel_claim(poll)
            raise
        finally:
            notified.cancel()
            if not poll.claimed:
                idle.remove(poll)
            if not idle and self._idle.get(channel) is idle:
                del self._idle[channel]
        return notified.done() and not notified.cancelled() and notified.result()
