"""Replaying recorded histories against workflow code, without a server."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import AsyncIterable, Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from flowforge._claim_check import wire_codec
from flowforge._codec import decode_message
from flowforge._workflow_definition import _Definition
from flowforge._workflow_history import WorkflowHistory
from flowforge._workflow_instance import WorkflowInstance
from flowforge.api import schema
from flowforge.api.schema import EventType
from flowforge.api.v1 import common_pb2
from flowforge.converter import DataConverter, default_converter

__all__ = ["Replayer", "WorkflowReplayResult", "WorkflowReplayResults", "replay_histories_in"]

# A history as the Replayer accepts it: a WorkflowHistory, or the run's events.
_History = WorkflowHistory | Sequence[common_pb2.HistoryEvent | Any]


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
    replay_failure: Exception | None


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
        data_converter: Decodes the payloads recorded in the histories; its
            codec, if any, decodes them first (it must pass through payloads it
            did not encode: a history fetched by a client with the codec is
            decoded already).
    """

    def __init__(
        self,
        *,
        workflows: Sequence[type],
        namespace: str = "default",
        data_converter: DataConverter = default_converter,
    ) -> None:
        definitions = [_Definition.from_class(cls) for cls in workflows]
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
            self._replay(history, await self._events(history))
        except Exception as error:
            if raise_on_failure:
                raise
            return WorkflowReplayResult(history=history, run_id=run_id, replay_failure=error)
        return WorkflowReplayResult(history=history, run_id=run_id, replay_failure=None)

    async def replay_workflows(
        self, histories: Iterable[_History] | AsyncIterable[_History], *, raise_on_failure: bool = True
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

    async def _events(self, history: _History) -> list[common_pb2.HistoryEvent]:
        events = []
        # Any object with the run's events as ``events`` will do, not only a WorkflowHistory.
        recorded: Iterable[Any] = (
            history.events if isinstance(history, WorkflowHistory) else getattr(history, "events", history)
        )
        for event in recorded:
            proto = common_pb2.HistoryEvent()
            proto.CopyFrom(event if isinstance(event, common_pb2.HistoryEvent) else event.to_proto())
            events.append(proto)
        codec = wire_codec(self._converter)
        if codec is not None:
            # E.g. a history written by `flowforge workflow show`, which has no codec
            # and leaves payload storage references unresolved.
            events = [await decode_message(event, codec) for event in events]
        return events

    def _replay(self, history: _History, events: list[common_pb2.HistoryEvent]) -> None:
        if not events or events[0].event_type != EventType.WORKFLOW_EXECUTION_STARTED:
            raise ValueError("a history starts with its WorkflowExecutionStarted event")
        # Read leniently (a recorded file may be hand-made or old), but by the schema's keys.
        started = cast(schema.WorkflowExecutionStartedAttributes, json.loads(events[0].attributes_json or "{}"))
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
    folder: str | Path,
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
