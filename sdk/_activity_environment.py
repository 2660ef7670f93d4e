"""Running an activity function as a worker would, without a server or worker."""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import inspect
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, ParamSpec, TypeVar, cast

from flowforge import activity
from flowforge.converter import DataConverter, default_converter

__all__ = ["ActivityEnvironment"]

_T = TypeVar("_T")
_P = ParamSpec("_P")


def _default_activity_info() -> activity.Info:
    now = datetime.now(UTC)
    return activity.Info(
        activity_id="test",
        activity_type="unknown",
        attempt=1,
        idempotency_key="test-run/test",
        heartbeat_details=(),
        workflow_id="test",
        run_id="test-run",
        workflow_type="test",
        namespace="default",
        task_queue="test",
        scheduled_time=now,
        started_time=now,
        start_to_close_timeout=timedelta(seconds=10),
        heartbeat_timeout=None,
    )


class ActivityEnvironment:
    """Runs an activity function as a worker would, without a server.

    Inside the function ``activity.info()`` returns :attr:`info`,
    ``activity.heartbeat(*details)`` calls :attr:`on_heartbeat`, and
    ``activity.is_cancelled()`` turns true once :meth:`cancel` was called::

        env = ActivityEnvironment()
        beats = []
        env.on_heartbeat = lambda *details: beats.append(details)
        result = await env.run(charge_card, order)       # an async activity
        result = env.run(resize_image, path)             # a sync activity

    Attributes:
        info: What ``activity.info()`` returns. Defaults to test values
            (attempt 1, workflow id ``"test"``, ...) with ``activity_type``
            set to the name of the function being run; replace it (e.g.
            ``dataclasses.replace(env.info, attempt=3, heartbeat_details=(5,))``)
            to test a retry.
        on_heartbeat: Called with the details of every heartbeat, at once
            (the worker's throttling does not apply).
        data_converter: Heartbeat details must be encodable with it, as they
            must be on a worker; one that is not fails ``activity.heartbeat``.
    """

    def __init__(self, *, data_converter: DataConverter = default_converter) -> None:
        self._default_info = _default_activity_info()
        self.info: activity.Info = self._default_info
        self.on_heartbeat: Callable[..., None] = lambda *details: None
        self.data_converter = data_converter
        self._context: activity._Context | None = None
        self._task: asyncio.Task[Any] | None = None
        self._cancel_requested = False

    def cancel(self) -> None:
        """Requests cancellation of the running activity, as the server would.

        ``activity.is_cancelled()`` becomes true; an async activity is also
        interrupted with ``asyncio.CancelledError`` at its next ``await``. A sync
        activity must notice the flag itself (call ``cancel`` from
        :attr:`on_heartbeat` or from another thread). Cancelling before
        :meth:`run` makes the activity start cancelled.
        """
        self._cancel_requested = True
        if self._context is not None:
            self._context.cancelled.set()
        if self._task is not None:
            self._task.cancel()

    def run(self, fn: Callable[_P, _T], *args: _P.args, **kwargs: _P.kwargs) -> _T:
        """Calls ``fn`` as the activity.

        Args:
            fn: The activity function (decorated with ``@activity.defn`` or not).
            *args: Its positional arguments.
            **kwargs: Its keyword arguments.

        Returns:
            What ``fn`` returns: for an ``async`` function an awaitable of its
            result (``await env.run(fn, ...)``), for a sync function the result.

        Raises:
            Exception: Whatever ``fn`` raises (``asyncio.CancelledError`` when an
                async activity does not handle :meth:`cancel`).
        """
        definition = getattr(fn, activity._DEFINITION_ATTRIBUTE, None)
        info = self.info
        if info is self._default_info:
            name = definition.name if definition is not None else getattr(fn, "__name__", "unknown")
            info = dataclasses.replace(info, activity_type=name)
        context = activity._Context(info, self._heartbeat)
        if self._cancel_requested:
            context.cancelled.set()
        self._context = context
        copied = contextvars.copy_context()
        copied.run(activity._current_context.set, context)
        if inspect.iscoroutinefunction(fn):
            # For an async fn, _T is the awaitable of its result, which this is.
            return cast(_T, self._run_async(fn, copied, args, kwargs))
        try:
            return copied.run(fn, *args, **kwargs)
        finally:
            self._context = None

    async def _run_async(
        self, fn: Callable[..., Any], context: contextvars.Context, args: Sequence[Any], kwargs: Mapping[str, Any]
    ) -> Any:
        task = asyncio.get_running_loop().create_task(fn(*args, **kwargs), context=context)
        self._task = task
        if self._cancel_requested:
            task.cancel()
        try:
            return await task
        finally:
            self._task = None
            self._context = None

    def _heartbeat(self, details: Sequence[Any]) -> None:
        self.data_converter.to_payloads(details)  # fails like a worker on an unencodable detail
        self.on_heartbeat(*details)
