"""Type variables and callable shapes for the SDK's typed overloads (as ``temporalio.types``).

They let a type checker or an editor follow a workflow's or an activity's types
through the SDK: ``await (await client.start_workflow(Onboarding.run, req, ...)).result()``
is known to return what ``Onboarding.run`` returns, and the argument is checked
against its parameter.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import ParamSpec, TypeAlias, TypeVar

__all__ = [
    "CallableAsyncNoParam",
    "CallableAsyncSingleParam",
    "CallableSyncNoParam",
    "CallableSyncSingleParam",
    "LocalReturnType",
    "MethodAsyncNoParam",
    "MethodAsyncSingleParam",
    "MethodSyncNoParam",
    "MethodSyncOrAsyncNoParam",
    "MethodSyncOrAsyncSingleParam",
    "MethodSyncSingleParam",
    "MultiParamSpec",
    "ParamType",
    "ReturnType",
    "SelfType",
]

SelfType = TypeVar("SelfType")
"""The workflow class a method belongs to."""
ParamType = TypeVar("ParamType")
"""The type of a single parameter."""
ReturnType = TypeVar("ReturnType", covariant=True)
"""What a workflow, activity or handler returns."""
LocalReturnType = TypeVar("LocalReturnType", covariant=True)
"""What a query or signal handler returns, beside the workflow's own ``ReturnType``."""
MultiParamSpec = ParamSpec("MultiParamSpec")
"""The parameters of a callable taking several."""

# Private twins for the aliases below: an alias's parameters are type variables of its own.
_S = TypeVar("_S")
_P = TypeVar("_P")
_R = TypeVar("_R")

CallableAsyncNoParam: TypeAlias = Callable[[], Awaitable[_R]]
"""An ``async def`` function without parameters (e.g. an activity)."""
CallableSyncNoParam: TypeAlias = Callable[[], _R]
"""A plain function without parameters."""
CallableAsyncSingleParam: TypeAlias = Callable[[_P], Awaitable[_R]]
"""An ``async def`` function with one parameter."""
CallableSyncSingleParam: TypeAlias = Callable[[_P], _R]
"""A plain function with one parameter."""
MethodAsyncNoParam: TypeAlias = Callable[[_S], Awaitable[_R]]
"""An ``async def`` method without parameters besides ``self`` (e.g. ``MyWorkflow.run``)."""
MethodSyncNoParam: TypeAlias = Callable[[_S], _R]
"""A plain method without parameters besides ``self`` (e.g. a query handler)."""
MethodAsyncSingleParam: TypeAlias = Callable[[_S, _P], Awaitable[_R]]
"""An ``async def`` method with one parameter besides ``self``."""
MethodSyncSingleParam: TypeAlias = Callable[[_S, _P], _R]
"""A plain method with one parameter besides ``self``."""
MethodSyncOrAsyncNoParam: TypeAlias = Callable[[_S], Awaitable[_R] | _R]
"""A plain or ``async def`` method without parameters besides ``self`` (e.g. a signal handler)."""
MethodSyncOrAsyncSingleParam: TypeAlias = Callable[[_S, _P], Awaitable[_R] | _R]
"""A plain or ``async def`` method with one parameter besides ``self``."""
