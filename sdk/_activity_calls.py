"""Activities from workflow code: :func:`start_activity` and :func:`execute_activity`."""

from __future__ import annotations

import asyncio
import dataclasses
import enum
import typing
from collections.abc import Awaitable, Callable, Sequence
from datetime import timedelta
from typing import Any, TypedDict, Unpack, overload

from flowforge._workflow_runtime import _Runtime
from flowforge.api.v1 import common_pb2
from flowforge.common import _NO_ARGUMENT, Priority, RetryPolicy
from flowforge.types import (
    CallableAsyncNoParam,
    CallableAsyncSingleParam,
    CallableSyncNoParam,
    CallableSyncSingleParam,
    ParamType,
    ReturnType,
)

__all__ = ["ActivityCancellationType", "ActivityHandle", "execute_activity", "start_activity"]


class ActivityCancellationType(enum.IntEnum):
    """What cancelling an activity's handle (or the task awaiting it) does."""

    TRY_CANCEL = common_pb2.ACTIVITY_CANCELLATION_TYPE_TRY_CANCEL
    """Ask the server to cancel the activity and raise ``CancelledError`` at once."""

    WAIT_CANCELLATION_COMPLETED = common_pb2.ACTIVITY_CANCELLATION_TYPE_WAIT_CANCELLATION_COMPLETED
    """Ask the server to cancel the activity and wait until it ends: once it
    acknowledged (``ActivityTaskCanceled``) the await raises ``CancelledError``; if it
    completed or failed first, the await returns its result or raises its error."""

    ABANDON = common_pb2.ACTIVITY_CANCELLATION_TYPE_ABANDON
    """Do not tell the server; raise ``CancelledError`` at once and ignore the
    activity's outcome."""


class ActivityHandle(asyncio.Task[ReturnType]):
    """A started activity, returned by :func:`start_activity`.

    It is an ``asyncio.Task``: await it for the activity's result, or call
    ``cancel()`` to cancel the activity as its ``cancellation_type`` says.
    ``ActivityHandle[ReturnType]``: awaiting it gives what the activity returns.
    """

    def __init__(
        self,
        coro: typing.Coroutine[Any, Any, ReturnType],
        *,
        loop: asyncio.AbstractEventLoop,
        activity_id: str,
        activity_type: str,
    ) -> None:
        super().__init__(coro, loop=loop, name=f"activity {activity_type} (id {activity_id})")
        self._activity_id = activity_id
        self._activity_type = activity_type

    @property
    def activity_id(self) -> str:
        """The activity's id, unique within the run."""
        return self._activity_id

    @property
    def activity_type(self) -> str:
        """The activity type name."""
        return self._activity_type


@dataclasses.dataclass(frozen=True)
class _ActivityCall:
    """One ``start_activity`` call, validated, for the runtime to schedule."""

    activity_type: str
    args: Sequence[Any]
    result_type: Any
    task_queue: str
    schedule_to_close_timeout: timedelta | None
    schedule_to_start_timeout: timedelta | None
    start_to_close_timeout: timedelta | None
    heartbeat_timeout: timedelta | None
    retry_policy: RetryPolicy | None
    cancellation_type: ActivityCancellationType
    headers: dict[str, common_pb2.Payload] = dataclasses.field(default_factory=dict)
    """Set by workflow outbound interceptors (e.g. the trace context); sent as the command's header."""
    dead_letter: bool = False
    priority: Priority | None = None
    concurrency_key: str | None = None


class _ActivityOptions(TypedDict, total=False):
    """The keyword options of :func:`start_activity` and :func:`execute_activity`, for their overloads."""

    task_queue: str | None
    schedule_to_close_timeout: timedelta | None
    schedule_to_start_timeout: timedelta | None
    start_to_close_timeout: timedelta | None
    heartbeat_timeout: timedelta | None
    retry_policy: RetryPolicy | None
    cancellation_type: ActivityCancellationType
    dead_letter: bool
    priority: Priority | None
    concurrency_key: str | None


# Overloads (as Temporal's): an @activity.defn function gives the handle its result
# type and checks a single argument against its parameter; a name gives Any.
@overload
def start_activity(
    activity: CallableAsyncNoParam[ReturnType], **options: Unpack[_ActivityOptions]
) -> ActivityHandle[ReturnType]: ...


@overload
def start_activity(
    activity: CallableSyncNoParam[ReturnType], **options: Unpack[_ActivityOptions]
) -> ActivityHandle[ReturnType]: ...


@overload
def start_activity(
    activity: CallableAsyncSingleParam[ParamType, ReturnType], arg: ParamType, **options: Unpack[_ActivityOptions]
) -> ActivityHandle[ReturnType]: ...


@overload
def start_activity(
    activity: CallableSyncSingleParam[ParamType, ReturnType], arg: ParamType, **options: Unpack[_ActivityOptions]
) -> ActivityHandle[ReturnType]: ...


@overload
def start_activity(
    activity: Callable[..., Awaitable[ReturnType]], *, args: Sequence[Any], **options: Unpack[_ActivityOptions]
) -> ActivityHandle[ReturnType]: ...


@overload
def start_activity(
    activity: Callable[..., ReturnType], *, args: Sequence[Any], **options: Unpack[_ActivityOptions]
) -> ActivityHandle[ReturnType]: ...


@overload
def start_activity(
    activity: str, arg: Any = _NO_ARGUMENT, *, args: Sequence[Any] = (), **options: Unpack[_ActivityOptions]
) -> ActivityHandle[Any]: ...


def start_activity(
    activity: Callable[..., Any] | str,
    arg: Any = _NO_ARGUMENT,
    *,
    args: Sequence[Any] = (),
    task_queue: str | None = None,
    schedule_to_close_timeout: timedelta | None = None,
    schedule_to_start_timeout: timedelta | None = None,
    start_to_close_timeout: timedelta | None = None,
    heartbeat_timeout: timedelta | None = None,
    retry_policy: RetryPolicy | None = None,
    cancellation_type: ActivityCancellationType = ActivityCancellationType.TRY_CANCEL,
    dead_letter: bool = False,
    priority: Priority | None = None,
    concurrency_key: str | None = None,
) -> ActivityHandle[Any]:
    """Schedules an activity and returns its handle without waiting for it.

    Takes the same arguments as :func:`execute_activity`.
    """
    runtime = _Runtime.current()
    activity_type, result_type = _activity_type_and_result_type(activity)
    timeouts = {
        "schedule_to_close_timeout": schedule_to_close_timeout,
        "schedule_to_start_timeout": schedule_to_start_timeout,
        "start_to_close_timeout": start_to_close_timeout,
        "heartbeat_timeout": heartbeat_timeout,
    }
    return runtime.workflow_start_activity(
        _ActivityCall(
            activity_type=activity_type,
            args=_checked_arguments(f"activity {activity_type!r}", arg, args, timeouts),
            result_type=result_type,
            task_queue=task_queue or "",
            retry_policy=retry_policy,
            # Converted only when given as a plain int: an enum call is two Python calls,
            # which the determinism guard's hook sees for every activity started.
            cancellation_type=cancellation_type
            if type(cancellation_type) is ActivityCancellationType
            else ActivityCancellationType(cancellation_type),
            schedule_to_close_timeout=schedule_to_close_timeout,
            schedule_to_start_timeout=schedule_to_start_timeout,
            start_to_close_timeout=start_to_close_timeout,
            heartbeat_timeout=heartbeat_timeout,
            dead_letter=dead_letter,
            priority=priority,
            concurrency_key=concurrency_key,
        )
    )


@overload
async def execute_activity(
    activity: CallableAsyncNoParam[ReturnType], **options: Unpack[_ActivityOptions]
) -> ReturnType: ...


@overload
async def execute_activity(
    activity: CallableSyncNoParam[ReturnType], **options: Unpack[_ActivityOptions]
) -> ReturnType: ...


@overload
async def execute_activity(
    activity: CallableAsyncSingleParam[ParamType, ReturnType], arg: ParamType, **options: Unpack[_ActivityOptions]
) -> ReturnType: ...


@overload
async def execute_activity(
    activity: CallableSyncSingleParam[ParamType, ReturnType], arg: ParamType, **options: Unpack[_ActivityOptions]
) -> ReturnType: ...


@overload
async def execute_activity(
    activity: Callable[..., Awaitable[ReturnType]], *, args: Sequence[Any], **options: Unpack[_ActivityOptions]
) -> ReturnType: ...


@overload
async def execute_activity(
    activity: Callable[..., ReturnType], *, args: Sequence[Any], **options: Unpack[_ActivityOptions]
) -> ReturnType: ...


@overload
async def execute_activity(
    activity: str, arg: Any = _NO_ARGUMENT, *, args: Sequence[Any] = (), **options: Unpack[_ActivityOptions]
) -> Any: ...


async def execute_activity(
    activity: Callable[..., Any] | str,
    arg: Any = _NO_ARGUMENT,
    *,
    args: Sequence[Any] = (),
    task_queue: str | None = None,
    schedule_to_close_timeout: timedelta | None = None,
    schedule_to_start_timeout: timedelta | None = None,
    start_to_close_timeout: timedelta | None = None,
    heartbeat_timeout: timedelta | None = None,
    retry_policy: RetryPolicy | None = None,
    cancellation_type: ActivityCancellationType = ActivityCancellationType.TRY_CANCEL,
    dead_letter: bool = False,
    priority: Priority | None = None,
    concurrency_key: str | None = None,
) -> Any:
    """Runs an activity and returns its result.

    Every activity whose result the calling code has seen becomes a dependency
    of this one in the execution's DAG. Start several at once with
    ``asyncio.gather`` to run them in parallel.

    Args:
        activity: An ``@activity.defn`` function, or an activity type name.
        arg: The activity's single argument.
        args: The activity's arguments, when it takes several.
        task_queue: Where to run it; defaults to the workflow's task queue.
        schedule_to_close_timeout: Limit on the whole activity, retries included.
        schedule_to_start_timeout: Limit on waiting for a worker, per attempt.
        start_to_close_timeout: Limit on one attempt.
        heartbeat_timeout: Longest gap between heartbeats of a running attempt.
        retry_policy: How the server retries failed attempts.
        cancellation_type: What cancelling the awaiting task does.
        dead_letter: When its retries are exhausted or it fails non-retryably, park
            it in the dead-letter store instead of raising: the workflow keeps
            waiting until an operator retries it (``flowforge dlq retry``) or
            discards it (``flowforge dlq discard``: then ``ActivityError``).
        priority: Its dispatch order; unset fields are the workflow's
            (docs/flow-control.md).
        concurrency_key: At most the key's fleet-wide limit (``flowforge limit
            set --key K --max-running N``) of the namespace's activities with this
            key run at once; the others wait for a slot without using attempts.

    Returns:
        The activity's result, decoded using the function's return type hint.

    Raises:
        ActivityError: The activity failed, timed out or was cancelled; the
            underlying error is its ``cause``.
        ValueError: Neither start_to_close_timeout nor schedule_to_close_timeout
            was given, or a timeout is not positive.
    """
    # The overloads typed the caller's call; this one passes whatever shape it was.
    any_activity: Any = activity
    return await start_activity(
        any_activity,
        arg,
        args=args,
        task_queue=task_queue,
        schedule_to_close_timeout=schedule_to_close_timeout,
        schedule_to_start_timeout=schedule_to_start_timeout,
        start_to_close_timeout=start_to_close_timeout,
        heartbeat_timeout=heartbeat_timeout,
        retry_policy=retry_policy,
        cancellation_type=cancellation_type,
        dead_letter=dead_letter,
        priority=priority,
        concurrency_key=concurrency_key,
    )


def _checked_arguments(what: str, arg: Any, args: Sequence[Any], timeouts: dict[str, timedelta | None]) -> list[Any]:
    """The call's arguments as a list, once its arguments and timeouts are checked.

    Raises:
        TypeError: Both ``arg`` and ``args`` were given.
        ValueError: Neither start-to-close nor schedule-to-close timeout was given, or one is not positive.
    """
    if arg is not _NO_ARGUMENT and args:
        raise TypeError("pass the activity's argument as arg or its arguments as args, not both")
    if timeouts.get("start_to_close_timeout") is None and timeouts.get("schedule_to_close_timeout") is None:
        raise ValueError(f"{what} needs start_to_close_timeout or schedule_to_close_timeout")
    for timeout_name, timeout in timeouts.items():
        if timeout is not None and timeout <= timedelta(0):
            raise ValueError(f"{timeout_name} of {what} must be positive, not {timeout}")
    return [arg] if arg is not _NO_ARGUMENT else list(args)


def _activity_type_and_result_type(activity: Callable[..., Any] | str) -> tuple[str, Any]:
    """The activity type name, and the type hint its result is decoded with."""
    if isinstance(activity, str):
        return activity, None
    definition = getattr(activity, "__flowforge_activity_definition__", None)
    if definition is not None:
        return definition.name, definition.return_type_hint
    name = getattr(activity, "__name__", None)
    if not callable(activity) or not name:
        raise TypeError(f"activity must be an @activity.defn function or an activity type name, not {activity!r}")
    try:
        return name, typing.get_type_hints(activity).get("return")
    except (NameError, TypeError):
        return name, None  # unresolvable annotations: the result arrives as plain JSON
