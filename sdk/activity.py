"""Defining activities and, inside a running activity, talking to the worker.

An activity is an ordinary function, ``async`` or not, that does the real work of a
workflow: calls services, writes to databases, sends mail. Decorate it with
:func:`defn` and register it on a :class:`flowforge.worker.Worker`::

    from flowforge import activity

    @activity.defn
    async def create_customer(req: dict) -> dict:
        activity.heartbeat("started")
        key = activity.info().idempotency_key   # same on every attempt: dedupe with it
        ...

Synchronous activities run in a thread pool; :func:`info`, :func:`heartbeat` and
:func:`is_cancelled` work there too. Activities run at least once: after a crash or a
lost lease the server runs them again, so side effects should be deduplicated with
``info().idempotency_key``.
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import inspect
import logging
import threading
import typing
from collections.abc import Callable, MutableMapping, Sequence
from datetime import datetime, timedelta
from typing import Any, NoReturn, TypeVar, overload

__all__ = [
    "Info",
    "defn",
    "heartbeat",
    "info",
    "is_cancelled",
    "is_worker_shutdown",
    "logger",
    "raise_complete_async",
    "wait_for_cancelled",
    "wait_for_cancelled_sync",
]

CallableType = TypeVar("CallableType", bound=Callable[..., Any])

_DEFINITION_ATTRIBUTE = "__flowforge_activity_definition__"


@dataclasses.dataclass(frozen=True)
class _Definition:
    """What the worker needs to know to run an activity.

    Attributes:
        name: The activity type name recorded in history.
        fn: The function to call (a bound method when registered as one).
        is_async: Whether ``fn`` is a coroutine function.
        arg_type_hints: The type hint of each positional parameter, ``None`` where
            there is none; the worker decodes arguments with them.
        return_type_hint: The return annotation, ``None`` when there is none.
    """

    name: str
    fn: Callable[..., Any]
    is_async: bool
    arg_type_hints: tuple[Any, ...]
    return_type_hint: Any

    @staticmethod
    def from_callable(fn: Callable[..., Any]) -> _Definition:
        """Returns the definition of a decorated activity.

        A bound method of an instance whose class decorated the method gets a
        definition that calls the bound method, so activities can hold clients
        or connections on ``self``.

        Raises:
            TypeError: ``fn`` was not decorated with :func:`defn`.
        """
        definition = getattr(fn, _DEFINITION_ATTRIBUTE, None)
        if not isinstance(definition, _Definition):
            described = getattr(fn, "__qualname__", repr(fn))
            raise TypeError(f"{described} is not an activity: decorate it with @activity.defn")
        if inspect.ismethod(fn):
            arg_type_hints, return_type_hint = _type_hints(fn)
            return dataclasses.replace(
                definition, fn=fn, arg_type_hints=arg_type_hints, return_type_hint=return_type_hint
            )
        return definition


def _type_hints(fn: Callable[..., Any]) -> tuple[tuple[Any, ...], Any]:
    """The hints of ``fn``'s positional parameters and of its return value.

    Annotations that cannot be resolved (e.g. names imported only under
    ``TYPE_CHECKING``) count as missing: such values arrive as plain JSON values.
    """
    try:
        hints = typing.get_type_hints(fn)
    except (NameError, TypeError):
        hints = {}
    positional_kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    parameters = inspect.signature(fn).parameters.values()
    arg_hints = tuple(hints.get(p.name) for p in parameters if p.kind in positional_kinds)
    return arg_hints, hints.get("return")


@overload
def defn(fn: CallableType) -> CallableType: ...


@overload
def defn(*, name: str | None = None) -> Callable[[CallableType], CallableType]: ...


def defn(
    fn: CallableType | None = None, *, name: str | None = None
) -> CallableType | Callable[[CallableType], CallableType]:
    """Marks a function as an activity.

    Use it bare (``@activity.defn``) or with a name (``@activity.defn(name="x")``).
    The function is returned unchanged, so it can still be called directly in tests.

    Args:
        fn: The activity function, ``async def`` or plain ``def``.
        name: The activity type name; defaults to the function's ``__name__``.

    Returns:
        The function itself, or a decorator when called with only ``name``.

    Raises:
        TypeError: ``fn`` is not a function, or is a generator.
    """

    def decorate(target: CallableType) -> CallableType:
        if not callable(target):
            raise TypeError(f"@activity.defn needs a function, got {target!r}")
        if inspect.isgeneratorfunction(target) or inspect.isasyncgenfunction(target):
            raise TypeError(f"activity {target.__qualname__!r} must return a value, not be a generator")
        activity_name = name if name is not None else target.__name__
        if not activity_name:
            raise TypeError("an activity name must not be empty")
        arg_type_hints, return_type_hint = _type_hints(target)
        setattr(
            target,
            _DEFINITION_ATTRIBUTE,
            _Definition(
                name=activity_name,
                fn=target,
                is_async=inspect.iscoroutinefunction(target),
                arg_type_hints=arg_type_hints,
                return_type_hint=return_type_hint,
            ),
        )
        return target

    return decorate(fn) if fn is not None else decorate


@dataclasses.dataclass(frozen=True)
class Info:
    """Facts about the running activity attempt.

    Attributes:
        activity_id: The id of the activity within its workflow run.
        activity_type: The activity's registered name.
        attempt: 1 for the first attempt, 2 for the first retry, ...
        idempotency_key: The same on every attempt of this activity: use it to
            deduplicate side effects downstream.
        heartbeat_details: The details of the last heartbeat the server recorded
            for this activity (from an earlier attempt), to resume from.
        workflow_id: The id of the workflow that scheduled the activity.
        run_id: The run of that workflow.
        workflow_type: The workflow's type name.
        namespace: The namespace of the workflow.
        task_queue: The task queue the activity was dispatched on.
        scheduled_time: When the activity was scheduled (UTC).
        started_time: When this attempt was leased (UTC).
        start_to_close_timeout: How long this attempt may run, ``None`` if unbounded.
        heartbeat_timeout: The longest allowed gap between heartbeats, ``None``
            when the activity need not heartbeat.
        task_token: The opaque, server-signed token of this attempt's lease. It
            is only valid while this attempt holds the lease (fencing).
        is_local: Whether this is a local activity.
    """

    activity_id: str
    activity_type: str
    attempt: int
    idempotency_key: str
    heartbeat_details: Sequence[Any]
    workflow_id: str
    run_id: str
    workflow_type: str
    namespace: str
    task_queue: str
    scheduled_time: datetime | None
    started_time: datetime | None
    start_to_close_timeout: timedelta | None
    heartbeat_timeout: timedelta | None
    task_token: bytes = dataclasses.field(default=b"", repr=False, compare=False)
    is_local: bool = False
    """Whether this is a local activity (run by the workflow's worker; no task token)."""


class _Context:
    """The worker's side of a running activity, reachable from the activity code.

    The cancellation flag is a ``threading.Event`` because synchronous activities
    read it from a pool thread while the worker sets it on the event loop.
    """

    def __init__(
        self,
        info: Info,
        record_heartbeat: Callable[[Sequence[Any]], None],
        worker_shutdown: threading.Event | None = None,
    ) -> None:
        self.info = info
        self.record_heartbeat = record_heartbeat
        self.cancelled = threading.Event()
        # Set by the worker when it starts shutting down (shared by its activities).
        self.worker_shutdown = worker_shutdown or threading.Event()
        # The events of wait_for_cancelled() calls, each with the loop it waits on.
        self._waiting: list[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = []

    def cancel(self) -> None:
        """Sets the cancellation flag and wakes every :func:`wait_for_cancelled` (from any thread)."""
        self.cancelled.set()
        for loop, event in self._waiting:
            loop.call_soon_threadsafe(event.set)


_current_context: contextvars.ContextVar[_Context] = contextvars.ContextVar("flowforge_activity_context")


def _context() -> _Context:
    try:
        return _current_context.get()
    except LookupError:
        raise RuntimeError("not in an activity") from None


def info() -> Info:
    """Returns facts about the running activity attempt.

    Raises:
        RuntimeError: Called outside an activity.
    """
    return _context().info


def heartbeat(*details: Any) -> None:
    """Tells the server the activity is alive and records progress.

    Returns at once: the worker sends heartbeats in the background, throttled to at
    most one per 0.8 x the heartbeat timeout (one per 30 s without one), always with
    the latest details. A retried attempt finds the last recorded details in
    ``info().heartbeat_details``. Heartbeating is also how an activity learns that it
    was cancelled (see :func:`is_cancelled`).

    Args:
        *details: JSON-serializable progress to record.

    Raises:
        RuntimeError: Called outside an activity.
        TypeError: A detail cannot be serialized.
    """
    _context().record_heartbeat(details)


class _CompleteAsyncError(BaseException):
    """Raised by :func:`raise_complete_async`; a ``BaseException`` so ``except Exception`` lets it through."""


def raise_complete_async() -> NoReturn:
    """Ends this activity function without ending the activity: it completes later, from anywhere.

    The worker reports nothing and frees its slot; the attempt keeps its lease (its
    start-to-close and heartbeat timeouts still apply). Pass ``activity.info().task_token``
    (or the workflow and activity ids) to whoever finishes the work; it calls
    ``client.get_async_activity_handle(task_token=...)`` and then ``complete(result)``,
    ``fail(error)``, ``heartbeat(...)`` or ``report_cancellation()``.

    Raises:
        RuntimeError: Not called from an activity.
    """
    _context()
    raise _CompleteAsyncError()


async def wait_for_cancelled() -> None:
    """Waits until cancellation of this activity is requested (see :func:`is_cancelled`); an async
    activity is also interrupted with ``asyncio.CancelledError`` then, which may end the wait first.

    Raises:
        RuntimeError: Called outside an activity.
    """
    context = _context()
    if context.cancelled.is_set():
        return
    event = asyncio.Event()
    context._waiting.append((asyncio.get_running_loop(), event))
    await event.wait()


def wait_for_cancelled_sync(timeout: timedelta | float | None = None) -> None:
    """Blocks a synchronous activity until cancellation is requested, or ``timeout`` passes
    (a number is seconds).

    Raises:
        RuntimeError: Called outside an activity.
    """
    seconds = timeout.total_seconds() if isinstance(timeout, timedelta) else timeout
    _context().cancelled.wait(seconds)


def is_worker_shutdown() -> bool:
    """Whether the worker running this activity has begun shutting down (Temporal's call): the
    activity still has the graceful shutdown timeout to finish before it is cancelled.

    Raises:
        RuntimeError: Called outside an activity.
    """
    return _context().worker_shutdown.is_set()


def is_cancelled() -> bool:
    """Whether cancellation of this activity was requested.

    It becomes true when the server answers a heartbeat with a cancellation request,
    when the attempt's lease is lost or its start-to-close timeout has passed (the
    server then retries or fails the activity; this attempt's outcome is not
    reported), or when the worker shuts down and the activity did not finish within
    the graceful shutdown timeout. Async activities are also
    interrupted with ``asyncio.CancelledError``; synchronous ones should poll this and
    return (or raise :class:`flowforge.exceptions.CancelledError`) promptly.

    Raises:
        RuntimeError: Called outside an activity.
    """
    return _context().cancelled.is_set()


class _ActivityLoggerAdapter(logging.LoggerAdapter[logging.Logger]):
    """Adds the running activity's identity to every record (no payloads).

    Outside an activity it logs the message unchanged rather than raising: logging
    must never be what breaks a program.
    """

    def process(self, msg: Any, kwargs: MutableMapping[str, Any]) -> tuple[Any, MutableMapping[str, Any]]:
        context = _current_context.get(None)
        if context is None:
            return msg, kwargs
        activity_info = context.info
        fields = {
            "activity_id": activity_info.activity_id,
            "activity_type": activity_info.activity_type,
            "attempt": activity_info.attempt,
            "workflow_id": activity_info.workflow_id,
            "run_id": activity_info.run_id,
            "namespace": activity_info.namespace,
            "task_queue": activity_info.task_queue,
        }
        kwargs["extra"] = {**(kwargs.get("extra") or {}), "flowforge_activity": fields}
        return f"{msg} ({fields})", kwargs


logger: logging.LoggerAdapter[logging.Logger] = _ActivityLoggerAdapter(logging.getLogger("flowforge.activity"), {})
"""A logger for activity code; each record carries the activity's identity."""
