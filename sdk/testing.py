"""Testing workflows and activities.

- :class:`Replayer` replays recorded histories against the current code. A
  replay test guards a deploy: record a history (``handle.fetch_history()`` or
  ``flowforge workflow show --output json``), keep it with the tests, and replay
  it whenever the workflow changes::

      await Replayer(workflows=[Onboarding]).replay_workflow(history)

  If the changed code would not produce the commands the history recorded, the
  replay raises ``NonDeterminismError`` naming the first mismatch.
  :func:`replay_histories_in` turns a folder of such files into a pytest test.
- :class:`ActivityEnvironment` runs one activity function with
  ``activity.info()``, heartbeats and cancellation, without a server or worker.
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import inspect
import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, AsyncIterable, Callable, Iterable, Mapping, Optional, Sequence, TypeVar, Union

from flowforge import activity, workflow
from flowforge._workflow_instance import WorkflowInstance
from flowforge.api.v1 import common_pb2
from flowforge.client import WorkflowHistory
from flowforge.converter import DataConverter, default_converter

__all__ = [
    "ActivityEnvironment",
    "Replayer",
    "WorkflowReplayResult",
    "WorkflowReplayResults",
    "replay_histories_in",
]

_T = TypeVar("_T")

# A history as the Replayer accepts it: a WorkflowHistory, or the run's events.
_History = Union[WorkflowHistory, Sequence[Union[common_pb2.HistoryEvent, Any]]]


@dataclasses.dataclass(frozen=True)
class WorkflowReplayResult:
    """How one history replayed.

    Attributes:
        history: The history that was replayed, as it was given.
        run_id: The run the history records (from its first event; the
            workflow id when the history names no run).
        replay_failure: ``None`` if the code reproduced the history, else the
            error replay raised (usually ``NonDeterminismError``).
    """

    history: Any
    run_id: str
    replay_failure: Optional[Exception]


@dataclasses.dataclass(frozen=True)
class WorkflowReplayResults:
    """How several histories replayed, one result per history in the order given.

    Attributes:
        results: One :class:`WorkflowReplayResult` per history.
    """

    results: Sequence[WorkflowReplayResult]

    @property
    def replay_failures(self) -> Mapping[str, Exception]:
        """The failures by run id (Temporal's shape); empty when every history replayed."""
        return {r.run_id: r.replay_failure for r in self.results if r.replay_failure is not None}


class Replayer:
    """Replays recorded histories against workflow code, without a server.

    Args:
        workflows: The ``@workflow.defn`` classes histories may be of.
        namespace: The namespace ``workflow.info()`` reports.
        data_converter: Decodes the payloads recorded in the histories.
    """

    def __init__(
        self,
        *,
        workflows: Sequence[type],
        namespace: str = "default",
        data_converter: DataConverter = default_converter,
    ) -> None:
        definitions = [workflow._Definition.from_class(cls) for cls in workflows]
        self._definitions = {definition.name: definition for definition in definitions}
        self._namespace = namespace
        self._converter = data_converter

    async def replay_workflow(self, history: _History, *, raise_on_failure: bool = True) -> WorkflowReplayResult:
        """Replays one run's history.

        Args:
            history: A ``flowforge.client.WorkflowHistory``, or the run's events
                (``HistoryEvent`` protos, or objects with a ``to_proto()`` method).
            raise_on_failure: Raise the replay's error (the default); when False
                it is returned in :attr:`WorkflowReplayResult.replay_failure`.

        Returns:
            The result; its ``replay_failure`` is ``None`` when the code
            reproduced the history.

        Raises:
            NonDeterminismError: The code does not produce the commands the
                history recorded, or calls a nondeterministic function.
            ValueError: The history does not start with WorkflowExecutionStarted,
                or is of a workflow type this replayer was not given.
            Exception: Whatever else the workflow code raised that would fail a
                workflow task.
        """
        run_id = _recorded_run_id(history)
        try:
            self._replay(history)
        except Exception as error:
            if raise_on_failure:
                raise
            return WorkflowReplayResult(history=history, run_id=run_id, replay_failure=error)
        return WorkflowReplayResult(history=history, run_id=run_id, replay_failure=None)

    async def replay_workflows(
        self, histories: Union[Iterable[_History], AsyncIterable[_History]], *, raise_on_failure: bool = True
    ) -> WorkflowReplayResults:
        """Replays several runs' histories, each on its own.

        Args:
            histories: The histories (an iterable or async iterable), each as
                :meth:`replay_workflow` accepts it.
            raise_on_failure: Raise the first failure (the default); when False
                every history is replayed and each failure is reported in the
                results.

        Returns:
            One result per history, in the order given.

        Raises:
            NonDeterminismError: With ``raise_on_failure``, the first history
                the code does not reproduce (and the other errors
                :meth:`replay_workflow` names).
        """
        results = []
        if isinstance(histories, AsyncIterable):
            async for history in histories:
                results.append(await self.replay_workflow(history, raise_on_failure=raise_on_failure))
        else:
            for history in histories:
                results.append(await self.replay_workflow(history, raise_on_failure=raise_on_failure))
        return WorkflowReplayResults(results)

    def _replay(self, history: _History) -> None:
        events = [
            event if isinstance(event, common_pb2.HistoryEvent) else event.to_proto()
            for event in getattr(history, "events", history)
        ]
        if not events or events[0].event_type != "WorkflowExecutionStarted":
            raise ValueError("a history starts with its WorkflowExecutionStarted event")
        started = json.loads(events[0].attributes_json or "{}")
        workflow_type = started.get("workflow_type", "")
        definition = self._definitions.get(workflow_type)
        if definition is None:
            known = ", ".join(sorted(self._definitions)) or "none"
            raise ValueError(
                f"the history is of workflow type {workflow_type!r}, which is not among the "
                f"replayer's workflows ({known})"
            )
        instance = WorkflowInstance(
            definition,
            namespace=self._namespace,
            workflow_id=getattr(history, "workflow_id", None) or started.get("workflow_id", ""),
            # The run id seeds workflow.random(): take the recorded one.
            run_id=getattr(history, "run_id", None)
            or started.get("run_id")
            or started.get("original_execution_run_id", ""),
            task_queue=started.get("task_queue", ""),
            converter=self._converter,
        )
        instance.activate(events)


def _recorded_run_id(history: _History) -> str:
    """The run id a history records, for reports; never raises on a broken history."""
    if isinstance(history, WorkflowHistory):
        started = history.events[0].attributes if history.events else {}
        return str(started.get("run_id") or history.workflow_id)
    try:
        first = next(iter(history))
        attributes = first.attributes if hasattr(first, "attributes") else json.loads(first.attributes_json or "{}")
        return str(attributes.get("run_id") or attributes.get("workflow_id") or "")
    except Exception:  # a broken history is reported by the replay itself
        return ""


def replay_histories_in(
    folder: Union[str, Path],
    *,
    workflows: Sequence[type],
    pattern: str = "*.json",
    data_converter: DataConverter = default_converter,
) -> Callable[[Path], None]:
    """Makes a pytest test that replays every recorded history in a folder.

    Assign the result to a module-level name starting with ``test_``; pytest
    then runs one test per history file, named after the file::

        test_histories_replay = replay_histories_in(
            Path(__file__).parent / "histories", workflows=[Onboarding, Approval])

    Each file is a history as ``WorkflowHistory.to_json()`` or ``flowforge
    workflow show --output json`` writes it. A file whose history the code does
    not reproduce fails its test with the replay's error.

    Args:
        folder: The folder holding the history files.
        workflows: The ``@workflow.defn`` classes the histories are of.
        pattern: Which files in the folder are histories (a glob).
        data_converter: Decodes the payloads recorded in the histories.

    Returns:
        The test function, parametrized over the files.

    Raises:
        ValueError: No file in ``folder`` matches ``pattern`` (a replay test
            with nothing to replay would pass without checking anything).
    """
    import pytest  # only the test helper needs pytest

    paths = sorted(Path(folder).glob(pattern))
    if not paths:
        raise ValueError(f"no history files matching {pattern!r} in {folder}")
    replayer = Replayer(workflows=workflows, data_converter=data_converter)

    @pytest.mark.parametrize("history_file", paths, ids=[path.stem for path in paths])
    def test_history_replays(history_file: Path) -> None:
        history = WorkflowHistory.from_json(history_file.read_text())
        # The test is synchronous so it runs under any pytest setup, with or
        # without an asyncio plugin.
        asyncio.run(replayer.replay_workflow(history))

    return test_history_replays


# ---------------------------------------------------------------------------
# ActivityEnvironment
# ---------------------------------------------------------------------------


def _default_activity_info() -> activity.Info:
    now = datetime.now(timezone.utc)
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
        self._context: Optional[activity._Context] = None
        self._task: Optional[asyncio.Task[Any]] = None
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

    def run(self, fn: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
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
            return self._run_async(fn, copied, args, kwargs)  # type: ignore[return-value]
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
