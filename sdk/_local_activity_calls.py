"""Local activities from workflow code: :func:`start_local_activity` and :func:`execute_local_activity`.

A local activity runs in the worker that runs the workflow task, between two activations of
the same task, with no server round trip: no ActivityTaskScheduled/Started/Completed events and
no activity task to poll. Its outcome is recorded as one ``MarkerRecorded`` event (marker
``local_activity``) with the workflow task's other commands, and replay returns the recorded
outcome without running the activity again. It retries inside the worker by its retry policy.

Use it for short work (it holds the workflow task: every attempt must end within the task's
timeout, 10 s by default); use a regular activity for anything long, or that must heartbeat.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Sequence
from datetime import timedelta
from typing import Any, TypedDict, Unpack, overload

from flowforge._activity_calls import (
    ActivityCancellationType,
    ActivityHandle,
    _activity_type_and_result_type,
    _checked_arguments,
)
from flowforge._workflow_runtime import _Runtime
from flowforge.api.v1 import common_pb2
from flowforge.common import _NO_ARGUMENT, RetryPolicy
from flowforge.types import (
    CallableAsyncNoParam,
    CallableAsyncSingleParam,
    CallableSyncNoParam,
    CallableSyncSingleParam,
    ParamType,
    ReturnType,
)

__all__ = ["LocalActivityOutcome", "LocalActivityRequest", "execute_local_activity", "start_local_activity"]


@dataclasses.dataclass(frozen=True)
class LocalActivityRequest:
    """A local activity the worker is to run for the current workflow task.

    Attributes:
        seq: 1, 2, ... in the order the run started its local activities (the marker's key).
        activity_type: The activity's registered name.
        input: Its arguments, encoded.
        start_to_close_timeout: Limit on one attempt.
        schedule_to_close_timeout: Limit on all attempts together.
        retry_policy: How failed attempts are retried, in the worker.
    """

    seq: int
    activity_type: str
    input: common_pb2.Payloads
    start_to_close_timeout: timedelta | None
    schedule_to_close_timeout: timedelta | None
    retry_policy: RetryPolicy | None


@dataclasses.dataclass(frozen=True)
class LocalActivityOutcome:
    """How a local activity ended: ``result``, or ``failure`` and why it was not retried
    (a :class:`~flowforge.exceptions.RetryState` name)."""

    seq: int
    attempts: int
    result: common_pb2.Payloads | None = None
    failure: common_pb2.Failure | None = None
    retry_state: str = "UNSPECIFIED"


@dataclasses.dataclass(frozen=True)
class _LocalActivityCall:
    """One ``start_local_activity`` call, validated, for the runtime."""

    activity_type: str
    args: Sequence[Any]
    result_type: Any
    start_to_close_timeout: timedelta | None
    schedule_to_close_timeout: timedelta | None
    retry_policy: RetryPolicy | None


class _LocalActivityOptions(TypedDict, total=False):
    """The keyword options of the local activity calls, for their overloads."""

    schedule_to_close_timeout: timedelta | None
    schedule_to_start_timeout: timedelta | None
    start_to_close_timeout: timedelta | None
    retry_policy: RetryPolicy | None
    local_retry_threshold: timedelta | None
    cancellation_type: ActivityCancellationType


@overload
def start_local_activity(
    activity: CallableAsyncNoParam[ReturnType], **options: Unpack[_LocalActivityOptions]
) -> ActivityHandle[ReturnType]: ...


@overload
def start_local_activity(
    activity: CallableSyncNoParam[ReturnType], **options: Unpack[_LocalActivityOptions]
) -> ActivityHandle[ReturnType]: ...


@overload
def start_local_activity(
    activity: CallableAsyncSingleParam[ParamType, ReturnType],
    arg: ParamType,
    **options: Unpack[_LocalActivityOptions],
) -> ActivityHandle[ReturnType]: ...


@overload
def start_local_activity(
    activity: CallableSyncSingleParam[ParamType, ReturnType],
    arg: ParamType,
    **options: Unpack[_LocalActivityOptions],
) -> ActivityHandle[ReturnType]: ...


@overload
def start_local_activity(
    activity: Callable[..., Awaitable[ReturnType]], *, args: Sequence[Any], **options: Unpack[_LocalActivityOptions]
) -> ActivityHandle[ReturnType]: ...


@overload
def start_local_activity(
    activity: Callable[..., ReturnType], *, args: Sequence[Any], **options: Unpack[_LocalActivityOptions]
) -> ActivityHandle[ReturnType]: ...


@overload
def start_local_activity(
    activity: str, arg: Any = _NO_ARGUMENT, *, args: Sequence[Any] = (), **options: Unpack[_LocalActivityOptions]
) -> ActivityHandle[Any]: ...


def start_local_activity(
    activity: Callable[..., Any] | str,
    arg: Any = _NO_ARGUMENT,
    *,
    args: Sequence[Any] = (),
    schedule_to_close_timeout: timedelta | None = None,
    schedule_to_start_timeout: timedelta | None = None,
    start_to_close_timeout: timedelta | None = None,
    retry_policy: RetryPolicy | None = None,
    local_retry_threshold: timedelta | None = None,
    cancellation_type: ActivityCancellationType = ActivityCancellationType.TRY_CANCEL,
) -> ActivityHandle[Any]:
    """Starts a local activity and returns its handle; see :func:`execute_local_activity`."""
    # Temporal's options that do not apply here: a local activity starts at once (no
    # schedule-to-start), every retry is local (no threshold), and it cannot be cancelled
    # while it runs (cancelling the handle stops the wait, as TRY_CANCEL does).
    del schedule_to_start_timeout, local_retry_threshold, cancellation_type
    activity_type, result_type = _activity_type_and_result_type(activity)
    timeouts = {
        "start_to_close_timeout": start_to_close_timeout,
        "schedule_to_close_timeout": schedule_to_close_timeout,
    }
    checked_args = _checked_arguments(f"local activity {activity_type!r}", arg, args, timeouts)
    return _Runtime.current().workflow_start_local_activity(
        _LocalActivityCall(
            activity_type=activity_type,
            args=checked_args,
            result_type=result_type,
            start_to_close_timeout=start_to_close_timeout,
            schedule_to_close_timeout=schedule_to_close_timeout,
            retry_policy=retry_policy,
        )
    )


@overload
async def execute_local_activity(
    activity: CallableAsyncNoParam[ReturnType], **options: Unpack[_LocalActivityOptions]
) -> ReturnType: ...


@overload
async def execute_local_activity(
    activity: CallableSyncNoParam[ReturnType], **options: Unpack[_LocalActivityOptions]
) -> ReturnType: ...


@overload
async def execute_local_activity(
    activity: CallableAsyncSingleParam[ParamType, ReturnType],
    arg: ParamType,
    **options: Unpack[_LocalActivityOptions],
) -> ReturnType: ...


@overload
async def execute_local_activity(
    activity: CallableSyncSingleParam[ParamType, ReturnType],
    arg: ParamType,
    **options: Unpack[_LocalActivityOptions],
) -> ReturnType: ...


@overload
async def execute_local_activity(
    activity: Callable[..., Awaitable[ReturnType]], *, args: Sequence[Any], **options: Unpack[_LocalActivityOptions]
) -> ReturnType: ...


@overload
async def execute_local_activity(
    activity: Callable[..., ReturnType], *, args: Sequence[Any], **options: Unpack[_LocalActivityOptions]
) -> ReturnType: ...


@overload
async def execute_local_activity(
    activity: str, arg: Any = _NO_ARGUMENT, *, args: Sequence[Any] = (), **options: Unpack[_LocalActivityOptions]
) -> Any: ...


async def execute_local_activity(
    activity: Callable[..., Any] | str, arg: Any = _NO_ARGUMENT, *, args: Sequence[Any] = (), **options: Any
) -> Any:
    """Runs an activity in this worker, without the server, and returns its result (Temporal's call).

    The activity must be registered on the worker running the workflow (``Worker(activities=...)``).

    Args:
        activity: An ``@activity.defn`` function, or an activity type name.
        arg: The activity's single argument.
        args: The activity's arguments, when it takes several.
        **options: ``start_to_close_timeout`` (one attempt) and/or ``schedule_to_close_timeout``
            (all attempts), ``retry_policy`` (retries in the worker; ``next_retry_delay`` and
            non-retryable errors are honoured); Temporal's ``schedule_to_start_timeout``,
            ``local_retry_threshold`` and ``cancellation_type`` are accepted and not needed.

    Returns:
        The activity's result, decoded with the function's return type hint.

    Raises:
        ActivityError: The last attempt failed or timed out; its error is the ``cause``.
        ValueError: Neither timeout was given, or one is not positive.
    """
    any_activity: Any = activity
    return await start_local_activity(any_activity, arg, args=args, **options)
