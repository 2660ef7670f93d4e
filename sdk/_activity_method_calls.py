"""Activities that are methods of a class (Temporal's ``*_activity_method`` calls).

Register an instance's methods (``Worker(activities=[db.fetch, db.store])``) and call them from
workflow code by the unbound method (``workflow.execute_activity_method(Db.fetch, key, ...)``);
the activity type is the method's name (or its ``@activity.defn(name=...)``). These are the
function calls with types for methods: the overloads check the argument against the method's
parameter and give its return type.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Concatenate, Unpack, overload

from flowforge._activity_calls import ActivityHandle, _ActivityOptions, execute_activity, start_activity
from flowforge._local_activity_calls import _LocalActivityOptions, execute_local_activity, start_local_activity
from flowforge.common import _NO_ARGUMENT
from flowforge.types import (
    MethodAsyncNoParam,
    MethodAsyncSingleParam,
    MethodSyncNoParam,
    MethodSyncSingleParam,
    MultiParamSpec,
    ParamType,
    ReturnType,
    SelfType,
)

__all__ = [
    "execute_activity_method",
    "execute_local_activity_method",
    "start_activity_method",
    "start_local_activity_method",
]


@overload
def start_activity_method(
    activity: MethodAsyncNoParam[SelfType, ReturnType], **options: Unpack[_ActivityOptions]
) -> ActivityHandle[ReturnType]: ...


@overload
def start_activity_method(
    activity: MethodSyncNoParam[SelfType, ReturnType], **options: Unpack[_ActivityOptions]
) -> ActivityHandle[ReturnType]: ...


@overload
def start_activity_method(
    activity: MethodAsyncSingleParam[SelfType, ParamType, ReturnType],
    arg: ParamType,
    **options: Unpack[_ActivityOptions],
) -> ActivityHandle[ReturnType]: ...


@overload
def start_activity_method(
    activity: MethodSyncSingleParam[SelfType, ParamType, ReturnType],
    arg: ParamType,
    **options: Unpack[_ActivityOptions],
) -> ActivityHandle[ReturnType]: ...


@overload
def start_activity_method(
    activity: Callable[Concatenate[SelfType, MultiParamSpec], Awaitable[ReturnType]],
    *,
    args: Sequence[Any],
    **options: Unpack[_ActivityOptions],
) -> ActivityHandle[ReturnType]: ...


@overload
def start_activity_method(
    activity: Callable[Concatenate[SelfType, MultiParamSpec], ReturnType],
    *,
    args: Sequence[Any],
    **options: Unpack[_ActivityOptions],
) -> ActivityHandle[ReturnType]: ...


def start_activity_method(
    activity: Callable[..., Any], arg: Any = _NO_ARGUMENT, *, args: Sequence[Any] = (), **options: Any
) -> ActivityHandle[Any]:
    """Schedules an activity method; see :func:`~flowforge.workflow.start_activity`."""
    any_activity: Any = activity
    return start_activity(any_activity, arg, args=args, **options)


@overload
async def execute_activity_method(
    activity: MethodAsyncNoParam[SelfType, ReturnType], **options: Unpack[_ActivityOptions]
) -> ReturnType: ...


@overload
async def execute_activity_method(
    activity: MethodSyncNoParam[SelfType, ReturnType], **options: Unpack[_ActivityOptions]
) -> ReturnType: ...


@overload
async def execute_activity_method(
    activity: MethodAsyncSingleParam[SelfType, ParamType, ReturnType],
    arg: ParamType,
    **options: Unpack[_ActivityOptions],
) -> ReturnType: ...


@overload
async def execute_activity_method(
    activity: MethodSyncSingleParam[SelfType, ParamType, ReturnType],
    arg: ParamType,
    **options: Unpack[_ActivityOptions],
) -> ReturnType: ...


@overload
async def execute_activity_method(
    activity: Callable[Concatenate[SelfType, MultiParamSpec], Awaitable[ReturnType]],
    *,
    args: Sequence[Any],
    **options: Unpack[_ActivityOptions],
) -> ReturnType: ...


@overload
async def execute_activity_method(
    activity: Callable[Concatenate[SelfType, MultiParamSpec], ReturnType],
    *,
    args: Sequence[Any],
    **options: Unpack[_ActivityOptions],
) -> ReturnType: ...


async def execute_activity_method(
    activity: Callable[..., Any], arg: Any = _NO_ARGUMENT, *, args: Sequence[Any] = (), **options: Any
) -> Any:
    """Runs an activity method; see :func:`~flowforge.workflow.execute_activity`."""
    any_activity: Any = activity
    return await execute_activity(any_activity, arg, args=args, **options)


@overload
def start_local_activity_method(
    activity: MethodAsyncNoParam[SelfType, ReturnType], **options: Unpack[_LocalActivityOptions]
) -> ActivityHandle[ReturnType]: ...


@overload
def start_local_activity_method(
    activity: MethodSyncNoParam[SelfType, ReturnType], **options: Unpack[_LocalActivityOptions]
) -> ActivityHandle[ReturnType]: ...


@overload
def start_local_activity_method(
    activity: MethodAsyncSingleParam[SelfType, ParamType, ReturnType],
    arg: ParamType,
    **options: Unpack[_LocalActivityOptions],
) -> ActivityHandle[ReturnType]: ...


@overload
def start_local_activity_method(
    activity: MethodSyncSingleParam[SelfType, ParamType, ReturnType],
    arg: ParamType,
    **options: Unpack[_LocalActivityOptions],
) -> ActivityHandle[ReturnType]: ...


@overload
def start_local_activity_method(
    activity: Callable[Concatenate[SelfType, MultiParamSpec], Awaitable[ReturnType]],
    *,
    args: Sequence[Any],
    **options: Unpack[_LocalActivityOptions],
) -> ActivityHandle[ReturnType]: ...


@overload
def start_local_activity_method(
    activity: Callable[Concatenate[SelfType, MultiParamSpec], ReturnType],
    *,
    args: Sequence[Any],
    **options: Unpack[_LocalActivityOptions],
) -> ActivityHandle[ReturnType]: ...


def start_local_activity_method(
    activity: Callable[..., Any], arg: Any = _NO_ARGUMENT, *, args: Sequence[Any] = (), **options: Any
) -> ActivityHandle[Any]:
    """Starts a local activity method; see :func:`~flowforge.workflow.execute_local_activity`."""
    any_activity: Any = activity
    return start_local_activity(any_activity, arg, args=args, **options)


@overload
async def execute_local_activity_method(
    activity: MethodAsyncNoParam[SelfType, ReturnType], **options: Unpack[_LocalActivityOptions]
) -> ReturnType: ...


@overload
async def execute_local_activity_method(
    activity: MethodSyncNoParam[SelfType, ReturnType], **options: Unpack[_LocalActivityOptions]
) -> ReturnType: ...


@overload
async def execute_local_activity_method(
    activity: MethodAsyncSingleParam[SelfType, ParamType, ReturnType],
    arg: ParamType,
    **options: Unpack[_LocalActivityOptions],
) -> ReturnType: ...


@overload
async def execute_local_activity_method(
    activity: MethodSyncSingleParam[SelfType, ParamType, ReturnType],
    arg: ParamType,
    **options: Unpack[_LocalActivityOptions],
) -> ReturnType: ...


@overload
async def execute_local_activity_method(
    activity: Callable[Concatenate[SelfType, MultiParamSpec], Awaitable[ReturnType]],
    *,
    args: Sequence[Any],
    **options: Unpack[_LocalActivityOptions],
) -> ReturnType: ...


@overload
async def execute_local_activity_method(
    activity: Callable[Concatenate[SelfType, MultiParamSpec], ReturnType],
    *,
    args: Sequence[Any],
    **options: Unpack[_LocalActivityOptions],
) -> ReturnType: ...


async def execute_local_activity_method(
    activity: Callable[..., Any], arg: Any = _NO_ARGUMENT, *, args: Sequence[Any] = (), **options: Any
) -> Any:
    """Runs a local activity method; see :func:`~flowforge.workflow.execute_local_activity`."""
    any_activity: Any = activity
    return await execute_local_activity(any_activity, arg, args=args, **options)
