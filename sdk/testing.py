"""Testing workflows: replay recorded histories against the current code.

A replay test guards a deploy: record a history (``handle.fetch_history()`` or
``flowforge workflow show --output json``), keep it with the tests, and replay
it whenever the workflow changes::

    await Replayer(workflows=[Onboarding]).replay_workflow(history)

If the changed code would not produce the commands the history recorded, the
replay raises ``NonDeterminismError`` naming the first mismatch.
"""

from __future__ import annotations

import json
from typing import Any, Sequence, Union

from flowforge import workflow
from flowforge._workflow_instance import WorkflowInstance
from flowforge.api.v1 import common_pb2
from flowforge.converter import DataConverter, default_converter

__all__ = ["Replayer"]


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

    async def replay_workflow(
        self, history: Union[Any, Sequence[Union[common_pb2.HistoryEvent, Any]]]
    ) -> None:
        """Replays one run's history; returns if the code reproduces it.

        Args:
            history: A ``flowforge.client.WorkflowHistory``, or the run's events
                (``HistoryEvent`` protos, or objects with a ``to_proto()`` method).

        Raises:
            NonDeterminismError: The code does not produce the commands the
                history recorded, or calls a nondeterministic function.
            ValueError: The history does not start with WorkflowExecutionStarted,
                or is of a workflow type this replayer was not given.
            Exception: Whatever else the workflow code raised that would fail a
                workflow task.
        """
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
