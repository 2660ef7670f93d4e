"""Workflow definitions: ``@workflow.defn`` classes, their run method and their signal and query handlers."""

from __future__ import annotations

import dataclasses
import functools
import inspect
import types
import typing
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

from flowforge._workflow_update_definition import _UPDATE_MARKER, _UpdateDefinition

__all__ = ["defn", "init", "query", "run", "signal"]

ClassType = TypeVar("ClassType", bound=type)
CallableType = TypeVar("CallableType", bound=Callable[..., Any])

# Markers the decorators leave on methods; @defn collects them.
_RUN_MARKER = "__flowforge_workflow_run__"
_INIT_MARKER = "__flowforge_workflow_init__"
_SIGNAL_MARKER = "__flowforge_signal_definition__"
_QUERY_MARKER = "__flowforge_query_definition__"
_DEFINITION_ATTRIBUTE = "__flowforge_workflow_definition__"


@dataclasses.dataclass(frozen=True)
class _SignalDefinition:
    name: str
    fn: Callable[..., Any]


@dataclasses.dataclass(frozen=True)
class _QueryDefinition:
    name: str
    fn: Callable[..., Any]


@functools.lru_cache(maxsize=1024)
def _type_hints(fn: Callable[..., Any]) -> Mapping[str, Any]:
    """``typing.get_type_hints(fn)``, worked out once per function (it costs more than
    the rest of a start, and of a workflow task's replay); errors are not kept."""
    return types.MappingProxyType(typing.get_type_hints(fn))


@functools.lru_cache(maxsize=1024)
def _hints_after_self(fn: Callable[..., Any]) -> tuple[Any, ...]:
    """The type hints of ``fn``'s parameters after ``self``, in order (None where
    absent); NameError or TypeError if an annotation cannot be resolved (not kept)."""
    hints = _type_hints(fn)
    parameters = list(inspect.signature(fn).parameters.values())[1:]
    return tuple(hints.get(parameter.name) for parameter in parameters)


@dataclasses.dataclass(frozen=True, eq=False)
class _Definition:
    """What ``@workflow.defn`` learned about a workflow class."""

    name: str
    cls: type
    run_fn: Callable[..., Awaitable[Any]]
    signals: Mapping[str, _SignalDefinition]
    queries: Mapping[str, _QueryDefinition]
    updates: Mapping[str, _UpdateDefinition] = dataclasses.field(default_factory=dict)
    init_takes_arguments: bool = False
    """``__init__`` is decorated with :func:`init`: it gets the run method's arguments."""

    @staticmethod
    def from_class(cls: type) -> _Definition:
        """The definition of a class decorated with ``@workflow.defn``.

        Raises:
            TypeError: ``cls`` is not a workflow class.
        """
        # vars(), not getattr(): an undecorated subclass is not a workflow.
        definition = vars(cls).get(_DEFINITION_ATTRIBUTE) if isinstance(cls, type) else None
        if not isinstance(definition, _Definition):
            raise TypeError(f"{cls!r} is not a workflow: decorate the class with @workflow.defn")
        return definition

    @staticmethod
    def from_run_fn(fn: Callable[..., Any]) -> _Definition:
        """The definition owning a ``@workflow.run`` method (e.g. ``Onboarding.run``).

        Raises:
            TypeError: ``fn`` is not the run method of a workflow class.
        """
        definition = getattr(getattr(fn, "__func__", fn), _DEFINITION_ATTRIBUTE, None)
        if not isinstance(definition, _Definition):
            raise TypeError(
                f"{fn!r} is not a workflow run method: pass the @workflow.run method of a "
                "class decorated with @workflow.defn"
            )
        return definition

    def run_arg_types(self) -> list[Any]:
        """The type hints of the run method's parameters after ``self``, in order."""
        return list(_hints_after_self(self.run_fn))

    @staticmethod
    def _build(cls: type, name: str) -> _Definition:
        members: dict[str, Any] = {}
        for klass in reversed(cls.__mro__):
            members.update(vars(klass))
        run_fns = [m for m in members.values() if getattr(m, _RUN_MARKER, False)]
        if len(run_fns) != 1:
            found = ", ".join(fn.__name__ for fn in run_fns) or "none"
            raise TypeError(
                f"workflow class {cls.__qualname__} needs exactly one @workflow.run method (found: {found})"
            )
        signals = _collect_handlers(cls, members, _SIGNAL_MARKER, "signal")
        queries = _collect_handlers(cls, members, _QUERY_MARKER, "query")
        updates = _collect_handlers(cls, members, _UPDATE_MARKER, "update")
        init_takes_arguments = getattr(members.get("__init__"), _INIT_MARKER, False)
        return _Definition(name, cls, run_fns[0], signals, queries, updates, init_takes_arguments)


def _collect_handlers(cls: type, members: Mapping[str, Any], marker: str, kind: str) -> dict[str, Any]:
    handlers: dict[str, Any] = {}
    for member in members.values():
        handler = getattr(member, marker, None)
        if handler is None:
            continue
        if handler.name in handlers:
            raise TypeError(f"workflow class {cls.__qualname__} has two {kind} handlers named {handler.name!r}")
        handlers[handler.name] = handler
    return handlers


@typing.overload
def defn(cls: ClassType) -> ClassType: ...


@typing.overload
def defn(*, name: str | None = None) -> Callable[[ClassType], ClassType]: ...


def defn(cls: ClassType | None = None, *, name: str | None = None) -> Any:
    """Makes a class a workflow; use as ``@workflow.defn`` or ``@workflow.defn(name=...)``.

    The class needs exactly one ``async`` method decorated with :func:`run`, and a
    constructor that takes no arguments (each execution gets a new instance).

    Args:
        cls: The class, when used without parentheses.
        name: The workflow type name; defaults to the class name.

    Raises:
        TypeError: The class has no, or more than one, ``@workflow.run`` method.
    """

    def decorate(workflow_cls: ClassType) -> ClassType:
        definition = _Definition._build(workflow_cls, name or workflow_cls.__name__)
        setattr(workflow_cls, _DEFINITION_ATTRIBUTE, definition)
        # So that a client can start a workflow from its run method: start_workflow(Onboarding.run, ...).
        setattr(definition.run_fn, _DEFINITION_ATTRIBUTE, definition)
        return workflow_cls

    return decorate(cls) if cls is not None else decorate


def init(fn: CallableType) -> CallableType:
    """Marks the workflow class's ``__init__`` as taking the run method's arguments (Temporal's
    ``@workflow.init``), so state is set up from them before any signal or update handler runs.

    Raises:
        TypeError: The method is not ``__init__``.
    """
    if fn.__name__ != "__init__":
        raise TypeError(f"@workflow.init goes on __init__, not on {fn.__qualname__}")
    setattr(fn, _INIT_MARKER, True)
    return fn


def run(fn: CallableType) -> CallableType:
    """Marks the ``async`` method that is the workflow's body.

    Its parameters are the workflow's arguments (decoded using their type hints)
    and its return value is the workflow's result.

    Raises:
        TypeError: The method is not ``async def``.
    """
    if not inspect.iscoroutinefunction(fn):
        raise TypeError(f"@workflow.run method {fn.__qualname__} must be declared with async def")
    setattr(fn, _RUN_MARKER, True)
    return fn


@typing.overload
def signal(fn: CallableType) -> CallableType: ...


@typing.overload
def signal(*, name: str | None = None) -> Callable[[CallableType], CallableType]: ...


def signal(fn: CallableType | None = None, *, name: str | None = None) -> Any:
    """Marks a method that handles a signal; use as ``@workflow.signal`` or ``@workflow.signal(name=...)``.

    The handler (``def`` or ``async def``) runs on the workflow's deterministic loop,
    started in the order the signals are in history, with its arguments decoded using
    its type hints. A ``FailureError`` it raises fails the workflow; any other exception
    fails the workflow task (retried). A signal no handler takes is dropped with a
    warning. See docs/signals-and-queries.md.

    Args:
        fn: The method, when used without parentheses.
        name: The signal name; defaults to the method name.
    """

    def decorate(method: CallableType) -> CallableType:
        setattr(method, _SIGNAL_MARKER, _SignalDefinition(name or method.__name__, method))
        return method

    return decorate(fn) if fn is not None else decorate


@typing.overload
def query(fn: CallableType) -> CallableType: ...


@typing.overload
def query(*, name: str | None = None) -> Callable[[CallableType], CallableType]: ...


def query(fn: CallableType | None = None, *, name: str | None = None) -> Any:
    """Marks a method that answers a query; use as ``@workflow.query`` or ``@workflow.query(name=...)``.

    A query handler only reads the workflow's state, so it must be a plain ``def``; a
    worker runs it on the run's current state (its cached instance, or a replay of the
    history, also for closed runs). Starting an activity or a timer, or awaiting, in a
    query handler fails the query.

    Args:
        fn: The method, when used without parentheses.
        name: The query name; defaults to the method name.

    Raises:
        TypeError: The method is ``async def``.
    """

    def decorate(method: CallableType) -> CallableType:
        if inspect.iscoroutinefunction(method):
            raise TypeError(f"@workflow.query method {method.__qualname__} must be a plain def, not async def")
        setattr(method, _QUERY_MARKER, _QueryDefinition(name or method.__name__, method))
        return method

    return decorate(fn) if fn is not None else decorate


def _parameter_hints(fn: Callable[..., Any]) -> list[Any]:
    """The type hints of a handler's parameters after ``self``, in order (None where absent)."""
    try:
        return list(_hints_after_self(fn))
    except (NameError, TypeError):
        return [None] * (len(inspect.signature(fn).parameters) - 1)


def _workflow_type_and_result_hint(workflow: Any) -> tuple[str, Any]:
    """The workflow type name to start, and the hint to decode its result with.

    ``workflow`` is a type name (no hint: it says nothing about the result), a
    ``@workflow.run`` method or a ``@workflow.defn`` class.
    """
    if isinstance(workflow, str):
        if not workflow:
            raise ValueError("the workflow type name must not be empty")
        return workflow, None
    if isinstance(workflow, type):
        definition = _Definition.from_class(workflow)
    else:
        definition = _Definition.from_run_fn(workflow)
    try:
        result_hint = _type_hints(definition.run_fn).get("return")
    except (NameError, TypeError):
        # An annotation that cannot be resolved here leaves the result plain JSON.
        result_hint = None
    return definition.name, result_hint


def _signal_name(signal: Any) -> str:
    """The name of a signal given as a ``@workflow.signal`` method or a name."""
    if isinstance(signal, str):
        if not signal:
            raise ValueError("the signal name must not be empty")
        return signal
    definition: _SignalDefinition | None = getattr(signal, _SIGNAL_MARKER, None)
    if definition is None:
        raise TypeError(f"{signal!r} is not a signal: pass a @workflow.signal method or a signal name")
    return definition.name


def _query_name_and_result_hint(query: Any) -> tuple[str, Any]:
    """The name of a query given as a ``@workflow.query`` method or a name, and its return hint."""
    if isinstance(query, str):
        if not query:
            raise ValueError("the query name must not be empty")
        return query, None
    definition: _QueryDefinition | None = getattr(query, _QUERY_MARKER, None)
    if definition is None:
        raise TypeError(f"{query!r} is not a query: pass a @workflow.query method or a query name")
    try:
        hint = typing.get_type_hints(definition.fn).get("return")
    except (NameError, TypeError):
        hint = None
    return definition.name, hint
