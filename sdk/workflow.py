"""Writing workflows: definitions, and the calls workflow code may make.

A workflow is a class decorated with :func:`defn` whose one ``async`` method
decorated with :func:`run` is the workflow's body::

    @workflow.defn
    class Onboarding:
        @workflow.run
        async def run(self, req: dict) -> dict:
            customer = await workflow.execute_activity(
                create_customer, req, start_to_close_timeout=timedelta(seconds=10))
            await workflow.sleep(timedelta(hours=1))
            ...

Workflow code runs on a deterministic event loop that replays it against the
execution's history, so it must be deterministic: it reads time with
:func:`now`, randomness with :func:`random` / :func:`uuid4`, waits with
:func:`sleep` (or ``asyncio.sleep``, which is durable too) and does every I/O in
an activity. Plain ``asyncio`` (``gather``, ``wait_for``, tasks) works as usual.
The functions of this module other than the decorators may only be called from
workflow code; elsewhere they raise ``RuntimeError``.
"""

from __future__ import annotations

import abc
import asyncio
import dataclasses
import enum
import inspect
import logging
import random as _random
import typing
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, NoReturn, TypeVar

from flowforge.api.v1 import common_pb2
from flowforge.common import RetryPolicy, SearchAttributeValue

__all__ = [
    "ActivityCancellationType",
    "ActivityHandle",
    "ChildWorkflowHandle",
    "ContinueAsNewError",
    "Info",
    "ParentClosePolicy",
    "ParentInfo",
    "continue_as_new",
    "defn",
    "deprecate_patch",
    "execute_activity",
    "execute_child_workflow",
    "info",
    "logger",
    "memo",
    "memo_value",
    "now",
    "patched",
    "query",
    "random",
    "run",
    "signal",
    "sleep",
    "start_activity",
    "start_child_workflow",
    "upsert_search_attributes",
    "uuid4",
    "wait_condition",
]

ClassType = TypeVar("ClassType", bound=type)
CallableType = TypeVar("CallableType", bound=Callable[..., Any])

# Markers the decorators leave on methods; @defn collects them.
_RUN_MARKER = "__flowforge_workflow_run__"
_SIGNAL_MARKER = "__flowforge_signal_definition__"
_QUERY_MARKER = "__flowforge_query_definition__"
_DEFINITION_ATTRIBUTE = "__flowforge_workflow_definition__"


# --------------------------------------------------------------------------- definitions


@dataclasses.dataclass(frozen=True)
class _SignalDefinition:
    name: str
    fn: Callable[..., Any]


@dataclasses.dataclass(frozen=True)
class _QueryDefinition:
    name: str
    fn: Callable[..., Any]


@dataclasses.dataclass(frozen=True, eq=False)
class _Definition:
    """What ``@workflow.defn`` learned about a workflow class."""

    name: str
    cls: type
    run_fn: Callable[..., Awaitable[Any]]
    signals: Mapping[str, _SignalDefinition]
    queries: Mapping[str, _QueryDefinition]

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
        hints = typing.get_type_hints(self.run_fn)
        parameters = list(inspect.signature(self.run_fn).parameters.values())[1:]
        return [hints.get(parameter.name) for parameter in parameters]

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
        return _Definition(name, cls, run_fns[0], signals, queries)


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


# --------------------------------------------------------------------------- runtime


@dataclasses.dataclass(frozen=True)
class Info:
    """Facts about the running workflow execution."""

    workflow_id: str
    """The workflow id the execution was started with."""

    run_id: str
    """The id of this run of the workflow id."""

    workflow_type: str
    """The workflow type name (``@workflow.defn(name=...)``)."""

    task_queue: str
    """The task queue the workflow's tasks are dispatched on."""

    namespace: str
    """The namespace of the execution."""

    attempt: int
    """The run's attempt, starting at 1; a child workflow retried by its retry policy counts up."""

    start_time: datetime
    """When the execution started (UTC)."""

    search_attributes: dict[str, SearchAttributeValue] = dataclasses.field(default_factory=dict)
    """The run's search attributes as the workflow code sees them now: those given
    at start, updated by each :func:`upsert_search_attributes`."""
    parent: ParentInfo | None = None
    """The parent run, when this execution is a child workflow."""

    continued_run_id: str | None = None
    """The run this one continued as new from, if any."""


@dataclasses.dataclass(frozen=True)
class ParentInfo:
    """The parent of a child workflow (``workflow.info().parent``)."""

    namespace: str
    """The parent's namespace."""

    workflow_id: str
    """The parent's workflow id."""

    run_id: str
    """The parent run that started the child."""


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


class ActivityHandle(asyncio.Task):  # type: ignore[type-arg]
    """A started activity, returned by :func:`start_activity`.

    It is an ``asyncio.Task``: await it for the activity's result, or call
    ``cancel()`` to cancel the activity as its ``cancellation_type`` says.
    """

    def __init__(
        self,
        coro: typing.Coroutine[Any, Any, Any],
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


class _Runtime(abc.ABC):
    """What workflow code needs from the instance running it (see ``flowforge._workflow_instance``).

    The instance's event loop carries it as ``_flowforge_runtime``, so "in
    workflow code" means "the running loop is a workflow loop".
    """

    @staticmethod
    def current_or_none() -> _Runtime | None:
        runtime = getattr(asyncio.events._get_running_loop(), "_flowforge_runtime", None)
        return runtime if isinstance(runtime, _Runtime) else None

    @staticmethod
    def current() -> _Runtime:
        runtime = _Runtime.current_or_none()
        if runtime is None:
            raise RuntimeError(
                "not in workflow code: this function may only be called from a workflow's "
                "@workflow.run method and the tasks it starts"
            )
        return runtime

    @abc.abstractmethod
    def workflow_info(self) -> Info: ...

    @abc.abstractmethod
    def workflow_now(self) -> datetime: ...

    @abc.abstractmethod
    def workflow_is_replaying(self) -> bool: ...

    @abc.abstractmethod
    def workflow_random(self) -> _random.Random: ...

    @abc.abstractmethod
    def workflow_start_activity(self, call: _ActivityCall) -> ActivityHandle: ...

    @abc.abstractmethod
    def workflow_wait_condition(self, fn: Callable[[], bool]) -> asyncio.Future[None]: ...

    @abc.abstractmethod
    def workflow_patch(self, patch_id: str, *, deprecated: bool) -> bool: ...

    @abc.abstractmethod
    def workflow_upsert_search_attributes(self, attributes: Mapping[str, SearchAttributeValue | None]) -> None: ...

    @abc.abstractmethod
    def workflow_memo_value(self, key: str, type_hint: Any) -> Any:
        """The decoded memo value; raises KeyError if the memo has no ``key``."""

    @abc.abstractmethod
    def workflow_memo_keys(self) -> list[str]: ...

    @abc.abstractmethod
    def workflow_start_child_workflow(self, call: _ChildWorkflowCall) -> ChildWorkflowHandle: ...

    @abc.abstractmethod
    def workflow_signal_child(
        self, workflow_id: str, signal_name: str, args: Sequence[Any]
    ) -> asyncio.Future[None]: ...


def info() -> Info:
    """Facts about the running workflow execution (ids, type, task queue, start time)."""
    return _Runtime.current().workflow_info()


def now() -> datetime:
    """The workflow's current time (UTC, timezone-aware).

    It is the time the current workflow task started, recorded in history, so it
    is the same on every replay; it does not advance while the code runs.
    """
    return _Runtime.current().workflow_now()


def random() -> _random.Random:
    """A random generator seeded from the run id: the same values on every replay.

    Use it instead of the ``random`` module, whose values differ on replay.
    """
    return _Runtime.current().workflow_random()


def uuid4() -> uuid.UUID:
    """A version 4 UUID drawn from :func:`random`: the same on every replay."""
    return uuid.UUID(int=random().getrandbits(128), version=4)


async def sleep(duration: timedelta | float) -> None:
    """Waits on a durable timer: the wait survives worker restarts.

    Args:
        duration: How long to wait; a number is seconds.
    """
    _Runtime.current()
    await asyncio.sleep(_seconds(duration))


async def wait_condition(fn: Callable[[], bool], *, timeout: timedelta | float | None = None) -> None:
    """Waits until ``fn()`` is true; it is checked whenever the workflow is idle
    (after each signal, activity result or timer has been handled).

    Args:
        fn: A condition over the workflow's state; it must not have side effects.
        timeout: Give up after this long (a durable timer, cancelled if the condition
            comes true first); a number is seconds.

    Raises:
        asyncio.TimeoutError: The timeout expired first (the built-in
            ``TimeoutError``, as in Temporal; not ``flowforge.exceptions.TimeoutError``).
    """
    runtime = _Runtime.current()
    if fn():
        return
    satisfied = runtime.workflow_wait_condition(fn)
    if timeout is None:
        await satisfied
    else:
        await asyncio.wait_for(satisfied, _seconds(timeout))


# --------------------------------------------------------------------------- versioning


def patched(patch_id: str) -> bool:
    """Whether this execution takes the new branch of a code change named ``patch_id``.

    Change workflow code that running executions may replay like this::

        if workflow.patched("express-shipping"):
            carrier = await workflow.execute_activity(book_express, order, ...)
        else:
            carrier = await workflow.execute_activity(book_standard, order, ...)

    The first call in an execution decides, and every later call for the same
    ``patch_id`` in that execution returns the same value:

    - when the code runs for the first time (not replaying), it records a
      ``MarkerRecorded`` event for ``patch_id`` in history and returns ``True``;
    - when it replays history, it returns ``True`` only if history holds that
      marker at this point, so executions that ran the old code replay the old
      branch unchanged.

    Once no execution that ran the old code is left, replace the call with
    :func:`deprecate_patch` (see docs/determinism.md, "Versioning").

    Args:
        patch_id: Names the change; unique within the workflow.

    Returns:
        ``True`` for the new branch, ``False`` for the old one.
    """
    return _Runtime.current().workflow_patch(_patch_id(patch_id), deprecated=False)


def deprecate_patch(patch_id: str) -> None:
    """Marks a :func:`patched` change whose old branch no execution runs any more.

    Call it where ``patched(patch_id)`` was, keeping only the new branch. It
    replays executions that recorded the patch marker, and records a marker
    flagged as deprecated in new executions, which replay also when the call is
    removed altogether later.

    Args:
        patch_id: The id given to :func:`patched`.
    """
    _Runtime.current().workflow_patch(_patch_id(patch_id), deprecated=True)


def _patch_id(patch_id: str) -> str:
    if not isinstance(patch_id, str) or not patch_id:
        raise ValueError(f"a patch id must be a non-empty string, not {patch_id!r}")
    return patch_id


# --------------------------------------------------------------------------- visibility

_NO_DEFAULT: Any = object()


def upsert_search_attributes(attributes: Mapping[str, SearchAttributeValue | None]) -> None:
    """Sets search attributes of the running execution; ``None`` removes one.

    The change is recorded in history (an ``UpsertWorkflowSearchAttributes``
    event) and becomes visible to :meth:`flowforge.Client.list_workflows` when the
    current workflow task completes, in the same transaction as the event. It
    shows in ``info().search_attributes`` at once. Each name must be registered
    in the namespace with the value's type; otherwise the workflow task fails
    (``BAD_SEARCH_ATTRIBUTES``) and is retried until it is registered.

    Args:
        attributes: name -> ``str``, ``int``, ``float``, ``bool``, aware ``datetime``
            (e.g. :func:`now`), or ``None`` to remove the attribute.

    Raises:
        TypeError: A value is of an unsupported type.
        ValueError: A value is out of range or a naive datetime.
    """
    _Runtime.current().workflow_upsert_search_attributes(attributes)


def memo() -> dict[str, Any]:
    """The memo the execution was started with, decoded as plain JSON values."""
    runtime = _Runtime.current()
    return {key: runtime.workflow_memo_value(key, None) for key in runtime.workflow_memo_keys()}


def memo_value(key: str, default: Any = _NO_DEFAULT, *, type_hint: Any = None) -> Any:
    """One value of the memo the execution was started with.

    Args:
        key: The memo key.
        default: Returned when the memo has no ``key``.
        type_hint: The type to decode the value into (e.g. a dataclass).

    Raises:
        KeyError: The memo has no ``key`` and no default was given.
    """
    try:
        return _Runtime.current().workflow_memo_value(key, type_hint)
    except KeyError:
        if default is _NO_DEFAULT:
            raise KeyError(f"the workflow's memo has no key {key!r}") from None
        return default


def _seconds(duration: timedelta | float) -> float:
    return duration.total_seconds() if isinstance(duration, timedelta) else float(duration)


# --------------------------------------------------------------------------- activities

_NO_ARG: Any = object()


def start_activity(
    activity: Callable[..., Any] | str,
    arg: Any = _NO_ARG,
    *,
    args: Sequence[Any] = (),
    task_queue: str | None = None,
    schedule_to_close_timeout: timedelta | None = None,
    schedule_to_start_timeout: timedelta | None = None,
    start_to_close_timeout: timedelta | None = None,
    heartbeat_timeout: timedelta | None = None,
    retry_policy: RetryPolicy | None = None,
    cancellation_type: ActivityCancellationType = ActivityCancellationType.TRY_CANCEL,
) -> ActivityHandle:
    """Schedules an activity and returns its handle without waiting for it.

    Takes the same arguments as :func:`execute_activity`.
    """
    runtime = _Runtime.current()
    activity_type, result_type = _activity_type_and_result_type(activity)
    if arg is not _NO_ARG and args:
        raise TypeError("pass the activity's argument as arg or its arguments as args, not both")
    if start_to_close_timeout is None and schedule_to_close_timeout is None:
        raise ValueError(f"activity {activity_type!r} needs start_to_close_timeout or schedule_to_close_timeout")
    timeouts = {
        "schedule_to_close_timeout": schedule_to_close_timeout,
        "schedule_to_start_timeout": schedule_to_start_timeout,
        "start_to_close_timeout": start_to_close_timeout,
        "heartbeat_timeout": heartbeat_timeout,
    }
    for timeout_name, timeout in timeouts.items():
        if timeout is not None and timeout <= timedelta(0):
            raise ValueError(f"{timeout_name} of activity {activity_type!r} must be positive, not {timeout}")
    return runtime.workflow_start_activity(
        _ActivityCall(
            activity_type=activity_type,
            args=[arg] if arg is not _NO_ARG else list(args),
            result_type=result_type,
            task_queue=task_queue or "",
            retry_policy=retry_policy,
            cancellation_type=ActivityCancellationType(cancellation_type),
            **timeouts,
        )
    )


async def execute_activity(
    activity: Callable[..., Any] | str,
    arg: Any = _NO_ARG,
    *,
    args: Sequence[Any] = (),
    task_queue: str | None = None,
    schedule_to_close_timeout: timedelta | None = None,
    schedule_to_start_timeout: timedelta | None = None,
    start_to_close_timeout: timedelta | None = None,
    heartbeat_timeout: timedelta | None = None,
    retry_policy: RetryPolicy | None = None,
    cancellation_type: ActivityCancellationType = ActivityCancellationType.TRY_CANCEL,
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

    Returns:
        The activity's result, decoded using the function's return type hint.

    Raises:
        ActivityError: The activity failed, timed out or was cancelled; the
            underlying error is its ``cause``.
        ValueError: Neither start_to_close_timeout nor schedule_to_close_timeout
            was given, or a timeout is not positive.
    """
    return await start_activity(
        activity,
        arg,
        args=args,
        task_queue=task_queue,
        schedule_to_close_timeout=schedule_to_close_timeout,
        schedule_to_start_timeout=schedule_to_start_timeout,
        start_to_close_timeout=start_to_close_timeout,
        heartbeat_timeout=heartbeat_timeout,
        retry_policy=retry_policy,
        cancellation_type=cancellation_type,
    )


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


# --------------------------------------------------------------------------- child workflows and continue-as-new


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
        result_hint = typing.get_type_hints(definition.run_fn).get("return")
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


class ParentClosePolicy(enum.IntEnum):
    """What happens to a child workflow when its parent run closes (for any reason,
    continue-as-new included)."""

    TERMINATE = common_pb2.PARENT_CLOSE_POLICY_TERMINATE
    """Terminate the child (the default, as in Temporal)."""

    ABANDON = common_pb2.PARENT_CLOSE_POLICY_ABANDON
    """Leave the child running on its own."""

    REQUEST_CANCEL = common_pb2.PARENT_CLOSE_POLICY_REQUEST_CANCEL
    """Ask the child to cancel; its code decides how."""


class ChildWorkflowHandle(asyncio.Task):  # type: ignore[type-arg]
    """A started child workflow, returned by :func:`start_child_workflow`.

    It is an ``asyncio.Task``: await it for the child's result (or its
    :class:`~flowforge.exceptions.ChildWorkflowError`), or call ``cancel()`` to
    ask the child to cancel; the await then ends with ``asyncio.CancelledError``
    once the child has closed as cancelled (or with its result if it completed first).
    """

    def __init__(
        self,
        coro: typing.Coroutine[Any, Any, Any],
        *,
        loop: asyncio.AbstractEventLoop,
        id: str,
        workflow_type: str,
        started: asyncio.Future[str],
    ) -> None:
        super().__init__(coro, loop=loop, name=f"child workflow {workflow_type} (id {id})")
        self._id = id
        self._workflow_type = workflow_type
        self._started = started

    @property
    def id(self) -> str:
        """The child's workflow id."""
        return self._id

    @property
    def workflow_type(self) -> str:
        """The child's workflow type name."""
        return self._workflow_type

    @property
    def first_execution_run_id(self) -> str | None:
        """The child's first run id, once it has started (``None`` before)."""
        started = self._started
        if not started.done() or started.cancelled() or started.exception() is not None:
            return None
        return started.result()

    async def signal(self, signal: Callable[..., Any] | str, arg: Any = _NO_ARG, *, args: Sequence[Any] = ()) -> None:
        """Sends a signal to the child; returns once the server has delivered it.

        The server delivers it to the child (its current run, if it continued as
        new) in the transaction that records this workflow's command.

        Args:
            signal: The child's ``@workflow.signal`` method or the signal's name.
            arg: The signal's single argument, if it takes one.
            args: All arguments, for a signal taking several; not with ``arg``.

        Raises:
            ApplicationError: Of type ``ExternalWorkflowExecutionNotFound`` when the
                child had already closed.
        """
        if arg is not _NO_ARG and args:
            raise TypeError("pass the signal's argument as arg or its arguments as args, not both")
        await _Runtime.current().workflow_signal_child(
            self.id, _signal_name(signal), [arg] if arg is not _NO_ARG else list(args)
        )


@dataclasses.dataclass(frozen=True)
class _ChildWorkflowCall:
    """One ``start_child_workflow`` call, validated, for the runtime to start."""

    workflow_type: str
    args: Sequence[Any]
    result_type: Any
    id: str
    task_queue: str
    execution_timeout: timedelta | None
    run_timeout: timedelta | None
    task_timeout: timedelta | None
    parent_close_policy: ParentClosePolicy
    search_attributes: Mapping[str, SearchAttributeValue] | None = None
    memo: Mapping[str, Any] | None = None
    retry_policy: RetryPolicy | None = None


async def start_child_workflow(
    workflow: Callable[..., Any] | type | str,
    arg: Any = _NO_ARG,
    *,
    args: Sequence[Any] = (),
    id: str | None = None,
    task_queue: str | None = None,
    execution_timeout: timedelta | None = None,
    run_timeout: timedelta | None = None,
    task_timeout: timedelta | None = None,
    parent_close_policy: ParentClosePolicy = ParentClosePolicy.TERMINATE,
    search_attributes: Mapping[str, SearchAttributeValue] | None = None,
    memo: Mapping[str, Any] | None = None,
    retry_policy: RetryPolicy | None = None,
) -> ChildWorkflowHandle:
    """Starts a child workflow and returns its handle once it has started.

    Takes the same arguments as :func:`execute_child_workflow`. The server creates
    the child's run in the same transaction that records the start in this
    workflow's history, so a start is never lost or repeated.

    Raises:
        ChildWorkflowError: The child could not start: its workflow id already has
            a running execution (the cause is an ``ApplicationError`` of type
            ``WorkflowAlreadyStartedError``).
    """
    runtime = _Runtime.current()
    workflow_type, result_type = _workflow_type_and_result_hint(workflow)
    if arg is not _NO_ARG and args:
        raise TypeError("pass the child workflow's argument as arg or its arguments as args, not both")
    timeouts = {"execution_timeout": execution_timeout, "run_timeout": run_timeout, "task_timeout": task_timeout}
    for timeout_name, timeout in timeouts.items():
        if timeout is not None and timeout <= timedelta(0):
            raise ValueError(f"{timeout_name} of child workflow {workflow_type!r} must be positive, not {timeout}")
    if id is not None and not id:
        raise ValueError("the child workflow id must not be empty (leave it out to get a deterministic uuid)")
    handle = runtime.workflow_start_child_workflow(
        _ChildWorkflowCall(
            workflow_type=workflow_type,
            args=[arg] if arg is not _NO_ARG else list(args),
            result_type=result_type,
            id=id if id is not None else str(uuid4()),
            task_queue=task_queue or "",
            parent_close_policy=ParentClosePolicy(parent_close_policy),
            search_attributes=search_attributes,
            memo=memo,
            retry_policy=retry_policy,
            **timeouts,
        )
    )
    try:
        await asyncio.shield(handle._started)
    except asyncio.CancelledError:
        handle.cancel()
        raise
    except BaseException:
        # The handle fails with the same error; it has been reported here.
        handle.add_done_callback(lambda failed: failed.cancelled() or failed.exception())
        raise
    return handle


async def execute_child_workflow(
    workflow: Callable[..., Any] | type | str,
    arg: Any = _NO_ARG,
    *,
    args: Sequence[Any] = (),
    id: str | None = None,
    task_queue: str | None = None,
    execution_timeout: timedelta | None = None,
    run_timeout: timedelta | None = None,
    task_timeout: timedelta | None = None,
    parent_close_policy: ParentClosePolicy = ParentClosePolicy.TERMINATE,
    search_attributes: Mapping[str, SearchAttributeValue] | None = None,
    memo: Mapping[str, Any] | None = None,
    retry_policy: RetryPolicy | None = None,
) -> Any:
    """Runs a child workflow and returns its result.

    Cancelling the awaiting task asks the child to cancel and waits until it has
    closed.

    Args:
        workflow: The child's ``@workflow.run`` method (its return hint decodes the
            result), its ``@workflow.defn`` class, or its workflow type name.
        arg: The child's single argument.
        args: The child's arguments, when it takes several.
        id: The child's workflow id; defaults to :func:`uuid4` (deterministic).
        task_queue: Where the child runs; defaults to this workflow's task queue.
        execution_timeout: Limit on the child's whole execution (continue-as-new included).
        run_timeout: Limit on one run of the child.
        task_timeout: Limit on one workflow task of the child.
        parent_close_policy: What happens to the child if this run closes first.
        search_attributes: The child's search attributes, as on
            ``Client.start_workflow`` (each registered in the namespace; otherwise
            this workflow task fails with ``BAD_SEARCH_ATTRIBUTES`` until it is).
        memo: The child's memo.
        retry_policy: Retries of the child: a run that fails (or reaches its run
            timeout) is followed by a new run after the policy's backoff, until one
            succeeds, the attempts run out or the execution timeout passes; this
            workflow hears only of the last run. ``None``: no retries.

    Returns:
        The child's result.

    Raises:
        ChildWorkflowError: The child failed, timed out, was terminated or
            cancelled, or could not start; its failure is the ``cause``.
        ValueError: A timeout is not positive or the id is empty.
    """
    handle = await start_child_workflow(
        workflow,
        arg,
        args=args,
        id=id,
        task_queue=task_queue,
        execution_timeout=execution_timeout,
        run_timeout=run_timeout,
        task_timeout=task_timeout,
        parent_close_policy=parent_close_policy,
        search_attributes=search_attributes,
        memo=memo,
        retry_policy=retry_policy,
    )
    return await handle


class ContinueAsNewError(BaseException):
    """Raised by :func:`continue_as_new`; do not catch it.

    It derives from ``BaseException`` so that ``except Exception`` in workflow code
    does not swallow it. When it ends the workflow, the run closes as
    CONTINUED_AS_NEW and a new run of the same workflow id starts.
    """

    def __init__(
        self,
        *,
        args: Sequence[Any],
        workflow_type: str,
        task_queue: str,
        run_timeout: timedelta | None,
        task_timeout: timedelta | None,
    ) -> None:
        super().__init__("continue as new")
        self.input = list(args)
        self.workflow_type = workflow_type
        self.task_queue = task_queue
        self.run_timeout = run_timeout
        self.task_timeout = task_timeout


def continue_as_new(
    arg: Any = _NO_ARG,
    *,
    args: Sequence[Any] = (),
    workflow: Callable[..., Any] | type | str | None = None,
    task_queue: str | None = None,
    run_timeout: timedelta | None = None,
    task_timeout: timedelta | None = None,
) -> NoReturn:
    """Ends this run and starts a new run of the same workflow id with fresh history.

    The run closes as CONTINUED_AS_NEW and the new run starts in the same server
    transaction. ``handle.result()`` and ``client.get_workflow_handle(id)`` follow
    the chain to its last run. The new run's run timeout starts afresh; the
    execution timeout keeps counting from the chain's first run. Use it to keep the
    history of a long-lived (e.g. looping) workflow small.

    Args:
        arg: The new run's single argument.
        args: The new run's arguments, when it takes several.
        workflow: Another workflow to continue as; defaults to this one.
        task_queue: Another task queue; defaults to this run's.
        run_timeout: The new run's run timeout; defaults to this run's.
        task_timeout: The new run's workflow task timeout; defaults to this run's.

    Raises:
        ContinueAsNewError: Always; let it propagate out of the run method.
    """
    runtime = _Runtime.current()
    if arg is not _NO_ARG and args:
        raise TypeError("pass the new run's argument as arg or its arguments as args, not both")
    for timeout_name, timeout in (("run_timeout", run_timeout), ("task_timeout", task_timeout)):
        if timeout is not None and timeout <= timedelta(0):
            raise ValueError(f"{timeout_name} must be positive, not {timeout}")
    workflow_type = (
        _workflow_type_and_result_hint(workflow)[0] if workflow is not None else runtime.workflow_info().workflow_type
    )
    raise ContinueAsNewError(
        args=[arg] if arg is not _NO_ARG else list(args),
        workflow_type=workflow_type,
        task_queue=task_queue or "",
        run_timeout=run_timeout,
        task_timeout=task_timeout,
    )


# --------------------------------------------------------------------------- logging


class _WorkflowLoggerAdapter(logging.LoggerAdapter):  # type: ignore[type-arg]
    """Adds the execution's ids to records and stays silent while old history is replayed."""

    def isEnabledFor(self, level: int) -> bool:
        runtime = _Runtime.current_or_none()
        if runtime is not None and runtime.workflow_is_replaying():
            return False
        return super().isEnabledFor(level)

    def log(self, level: int, msg: Any, *args: Any, **kwargs: Any) -> None:
        runtime = _Runtime.current_or_none()
        if runtime is not None:
            workflow_info = runtime.workflow_info()
            context = {
                "workflow_id": workflow_info.workflow_id,
                "run_id": workflow_info.run_id,
                "workflow_type": workflow_info.workflow_type,
            }
            kwargs["extra"] = {**context, **(kwargs.get("extra") or {})}
            suffix = f" ({workflow_info.workflow_type} workflow_id={workflow_info.workflow_id} run_id={workflow_info.run_id})"
            # The message is %-formatted only when there are args.
            msg = f"{msg}{suffix.replace('%', '%%') if args else suffix}"
        # Count this frame so that records point at the caller, not at this module.
        kwargs["stacklevel"] = kwargs.get("stacklevel", 1) + 1
        super().log(level, msg, *args, **kwargs)

    def process(self, msg: Any, kwargs: Any) -> tuple[Any, Any]:
        return msg, kwargs


logger: logging.LoggerAdapter = _WorkflowLoggerAdapter(logging.getLogger("flowforge.workflow"), {})  # type: ignore[type-arg]
"""A logger for workflow code: records carry ``workflow_id``, ``run_id`` and
``workflow_type``, and nothing is logged while old history is replayed."""
