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

import asyncio
import logging
import random as _random
import uuid
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, NoReturn, TypeVar

from flowforge._activity_calls import ActivityCancellationType, ActivityHandle, execute_activity, start_activity
from flowforge._activity_method_calls import (
    execute_activity_method,
    execute_local_activity_method,
    start_activity_method,
    start_local_activity_method,
)
from flowforge._child_workflow_calls import (
    ChildWorkflowHandle,
    ParentClosePolicy,
    execute_child_workflow,
    start_child_workflow,
)
from flowforge._local_activity_calls import execute_local_activity, start_local_activity
from flowforge._workflow_definition import (
    _Definition as _Definition,  # for the worker and the Replayer
)
from flowforge._workflow_definition import (
    _workflow_type_and_result_hint,
    defn,
    init,
    query,
    run,
    signal,
)
from flowforge._workflow_runtime import Info, ParentInfo, _Runtime, _uuid4
from flowforge._workflow_unsafe import unsafe
from flowforge._workflow_update_definition import update
from flowforge.common import _NO_ARGUMENT, SearchAttributeValue
from flowforge.exceptions import NonDeterminismError as NondeterminismError

_T = TypeVar("_T")

__all__ = [
    "ActivityCancellationType",
    "ActivityHandle",
    "ChildWorkflowHandle",
    "ContinueAsNewError",
    "Info",
    "NondeterminismError",
    "ParentClosePolicy",
    "ParentInfo",
    "all_handlers_finished",
    "as_completed",
    "continue_as_new",
    "defn",
    "deprecate_patch",
    "execute_activity",
    "execute_activity_method",
    "execute_child_workflow",
    "execute_local_activity",
    "execute_local_activity_method",
    "get_last_completion_result",
    "get_last_failure",
    "info",
    "init",
    "instance",
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
    "start_activity_method",
    "start_child_workflow",
    "start_local_activity",
    "start_local_activity_method",
    "unsafe",
    "update",
    "upsert_search_attributes",
    "uuid4",
    "wait",
    "wait_condition",
]


def info() -> Info:
    """Facts about the running workflow execution (ids, type, task queue, start time)."""
    return _Runtime.current().workflow_info()


def all_handlers_finished() -> bool:
    """Whether every accepted update's handler has finished; wait for it before the run returns
    (``await workflow.wait_condition(workflow.all_handlers_finished)``) so no update is cut off."""
    return _Runtime.current().workflow_all_handlers_finished()


def get_last_completion_result(type_hint: Any = None) -> Any:
    """The result of the last successful run of this cron execution (``start_workflow(cron_schedule=...)``),
    decoded with ``type_hint``; ``None`` in the first run or outside cron (Temporal's call)."""
    return _Runtime.current().workflow_last_completion_result(type_hint)


def get_last_failure() -> BaseException | None:
    """The failure of the previous run of this cron execution if it failed, else ``None`` (Temporal's call)."""
    return _Runtime.current().workflow_last_failure()


def instance() -> Any:
    """The workflow class's instance running this code (Temporal's ``workflow.instance()``)."""
    return _Runtime.current().workflow_instance()


async def wait(
    fs: Iterable[asyncio.Future[_T]],
    *,
    timeout: timedelta | float | None = None,
    return_when: str = asyncio.ALL_COMPLETED,
) -> tuple[set[asyncio.Future[_T]], set[asyncio.Future[_T]]]:
    """``asyncio.wait`` for workflow code (Temporal's ``workflow.wait``): the timeout is a durable
    timer. Iterate the returned sets in an order of your own (e.g. the order you started the
    tasks in), not the sets' order, which is not the same on replay.

    Returns:
        The done and the pending futures.
    """
    _Runtime.current()
    return await asyncio.wait(fs, timeout=_seconds(timeout) if timeout is not None else None, return_when=return_when)


def as_completed(
    fs: Iterable[Awaitable[_T]], *, timeout: timedelta | float | None = None
) -> Iterator[asyncio.Future[_T]]:
    """``asyncio.as_completed`` for workflow code (Temporal's ``workflow.as_completed``): awaitables
    in the order they finish, which replay reproduces; the timeout is a durable timer."""
    _Runtime.current()
    return asyncio.as_completed(fs, timeout=_seconds(timeout) if timeout is not None else None)


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
    return _uuid4(_Runtime.current())


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
    arg: Any = _NO_ARGUMENT,
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
    if arg is not _NO_ARGUMENT and args:
        raise TypeError("pass the new run's argument as arg or its arguments as args, not both")
    for timeout_name, timeout in (("run_timeout", run_timeout), ("task_timeout", task_timeout)):
        if timeout is not None and timeout <= timedelta(0):
            raise ValueError(f"{timeout_name} must be positive, not {timeout}")
    workflow_type = (
        _workflow_type_and_result_hint(workflow)[0] if workflow is not None else runtime.workflow_info().workflow_type
    )
    raise ContinueAsNewError(
        args=[arg] if arg is not _NO_ARGUMENT else list(args),
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
