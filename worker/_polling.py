"""Long-poll loops gated by task slots, shared by the workflow and activity workers.

A poller takes a slot *before* it polls, so the worker never leases a task it has no
capacity to run: a leased task that waits in the worker is invisible to other workers
while its lease runs down. The slot passes to the task's handler, which frees it.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Awaitable, Callable, Coroutine
from datetime import timedelta
from typing import Any, TypeVar

import grpc

from flowforge._codec import UndecodableResponse
from flowforge._rpc import WorkflowServiceClient
from flowforge.api.v1 import workflow_service_pb2
from flowforge.exceptions import ApplicationError, RPCError

logger = logging.getLogger(__name__)

POLL_TIMEOUT = timedelta(seconds=60)
"""How long the server holds a poll open before answering "no task"."""

POLL_RPC_TIMEOUT = POLL_TIMEOUT + timedelta(seconds=10)
"""The gRPC deadline of a poll: the poll timeout plus time for the answer to arrive."""

_POLL_RETRY_INITIAL = 0.2
_POLL_RETRY_MAXIMUM = 10.0

# Statuses that mean the server or network is briefly unwell; anything else on a
# poll (an unknown namespace, a rejected key) needs a person, so it is logged louder.
TRANSIENT_STATUSES = frozenset(
    {
        grpc.StatusCode.UNAVAILABLE,
        grpc.StatusCode.DEADLINE_EXCEEDED,
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        grpc.StatusCode.ABORTED,
    }
)
"""Statuses of a poll (or the worker stream) that mean the server or network is briefly unwell."""

LEASE_LOST_STATUSES = frozenset({grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.NOT_FOUND})
"""What the server answers a report whose task lease is gone (expired and given to
another worker, or the execution closed): the outcome is stale and nothing changed."""


class TaskSlots:
    """Counts free capacity; can be taken one at a time (waiting) or in bulk (not)."""

    def __init__(self, capacity: int, on_change: Callable[[int], None] | None = None) -> None:
        self._free = capacity
        self._released = asyncio.Event()
        # Told how many slots were taken (positive) or freed (negative): the worker's metrics.
        self._on_change = on_change or (lambda _delta: None)

    @property
    def free(self) -> int:
        """How many slots are free now."""
        return self._free

    async def acquire(self) -> None:
        """Takes one slot, waiting until one is free."""
        while self._free == 0:
            self._released.clear()
            await self._released.wait()
        self._free -= 1
        self._on_change(1)

    def try_acquire(self, wanted: int) -> int:
        """Takes up to ``wanted`` slots without waiting; returns how many it took."""
        taken = max(0, min(wanted, self._free))
        self._free -= taken
        if taken:
            self._on_change(taken)
        return taken

    def release(self, count: int = 1) -> None:
        """Frees ``count`` slots."""
        self._free += count
        self._released.set()
        self._on_change(-count)


_Response = TypeVar(
    "_Response", workflow_service_pb2.PollWorkflowTaskQueueResponse, workflow_service_pb2.PollActivityTaskQueueResponse
)


async def long_poll(
    service: WorkflowServiceClient,
    rpc: str,
    request: Any,
    response_type: type[_Response],
    fail_undecodable: Callable[[_Response, ApplicationError], Awaitable[None]],
) -> _Response:
    """One long poll (``PollWorkflowTaskQueue`` / ``PollActivityTaskQueue``) with the
    worker's poll timeout. Not retried here: :func:`poll_forever` polls again.

    A task whose payloads the client's codec cannot decode (e.g. this worker lacks
    the key) is handed to ``fail_undecodable`` to be reported failed, where
    ``describe()`` and history show why, and the poll returns no task.
    """
    request.poll_timeout.FromTimedelta(POLL_TIMEOUT)
    polled = service.call(rpc, request, retry=False, timeout=POLL_RPC_TIMEOUT)
    return await failing_undecodable(polled, response_type, fail_undecodable)


async def failing_undecodable(
    received: Awaitable[_Response],
    response_type: type[_Response],
    fail_undecodable: Callable[[_Response, ApplicationError], Awaitable[None]],
) -> _Response:
    """The task ``received`` gives (polled or pushed); one the codec cannot decode is
    handed to ``fail_undecodable`` and answered as "no task" (an empty response)."""
    try:
        return await received
    except UndecodableResponse as error:
        undecodable = error.response
        if not isinstance(undecodable, response_type) or not undecodable.task_token:
            raise
        logger.error("%s", error)
        await fail_undecodable(undecodable, ApplicationError(str(error), type=error.failure_type))
        return response_type()


def start_handler(handlers: set[asyncio.Task[None]], handle: Coroutine[Any, Any, None], name: str) -> None:
    """Runs ``handle`` as a task kept in ``handlers`` until it is done (so shutdown can wait for it)."""
    handler = asyncio.create_task(handle, name=name)
    handlers.add(handler)
    handler.add_done_callback(handlers.discard)


def start_pollers(
    count: int,
    *,
    kind: str,
    task_queue: str,
    slots: TaskSlots,
    poll: Callable[[], Awaitable[Any]],
    dispatch: Callable[[Any], None],
    polled: Callable[[float, str], None] = lambda _seconds, _result: None,
) -> list[asyncio.Task[None]]:
    """Starts ``count`` :func:`poll_forever` loops on one task queue."""
    return [
        asyncio.create_task(
            poll_forever(
                description=f"{kind} task queue {task_queue!r}",
                slots=slots,
                poll=poll,
                dispatch=dispatch,
                polled=polled,
            ),
            name=f"flowforge {kind} poller {index} ({task_queue})",
        )
        for index in range(count)
    ]


def retry_delay(consecutive_failures: int) -> float:
    """How long to wait before trying again after ``consecutive_failures`` failures in a row
    (exponential, capped, with jitter so many workers do not retry in step)."""
    delay = min(_POLL_RETRY_MAXIMUM, _POLL_RETRY_INITIAL * 2.0 ** (consecutive_failures - 1))
    return delay * random.uniform(0.8, 1.2)


async def poll_forever(
    *,
    description: str,
    slots: TaskSlots,
    poll: Callable[[], Awaitable[Any]],
    dispatch: Callable[[Any], None],
    polled: Callable[[float, str], None] = lambda _seconds, _result: None,
) -> None:
    """Polls until cancelled, handing each task to ``dispatch`` with a slot.

    Args:
        description: Names the poller in logs, e.g. ``"activity task queue 'q'"``.
        slots: Taken before each poll; ``dispatch`` becomes responsible for
            releasing the slot of the task it is given.
        poll: Makes one poll call; a response without ``task_token`` means the
            long poll ended without a task.
        dispatch: Starts handling a task; must not block.
        polled: Told how long each poll took and how it ended (``task``, ``empty``, ``error``).
    """
    consecutive_failures = 0
    while True:
        await slots.acquire()
        began = time.monotonic()
        try:
            response = await poll()
        except asyncio.CancelledError:
            slots.release()
            raise
        except Exception as error:
            polled(time.monotonic() - began, "error")
            slots.release()
            consecutive_failures += 1
            delay = retry_delay(consecutive_failures)
            # Only the status and the server's message: never request contents.
            if isinstance(error, RPCError):
                level = logging.WARNING if error.status in TRANSIENT_STATUSES else logging.ERROR
                logger.log(level, "polling %s failed (%s); retrying in %.1fs", description, error, delay)
            else:
                logger.exception("polling %s failed; retrying in %.1fs", description, delay)
            await asyncio.sleep(delay)
            continue
        consecutive_failures = 0
        polled(time.monotonic() - began, "task" if response.task_token else "empty")
        if not response.task_token:
            slots.release()
            continue
        dispatch(response)
