"""Event triggers as the client creates and lists them, and what publishing an event did."""

from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta
from typing import Any

from flowforge._workflow_executions import _timestamp_to_datetime
from flowforge.api.v1 import event_pb2

__all__ = ["EventTrigger", "PublishEventResult", "TriggeredWorkflow"]


def _optional_duration(proto: Any, field: str) -> timedelta | None:
    return getattr(proto, field).ToTimedelta() if proto.HasField(field) else None


@dataclasses.dataclass(frozen=True)
class EventTrigger:
    """A subscription that starts a workflow for each matching published event
    (see :meth:`Client.create_trigger` and docs/events.md).

    Attributes:
        trigger_id: The trigger's id in the namespace.
        event_type: The event type it subscribes to.
        filter: Conditions (canonical form) that must all hold, e.g. ``data.amount != 0``.
        input_paths: One event path per workflow argument.
        workflow_type: The workflow type it starts.
        task_queue: The task queue of the started workflows.
        workflow_id_prefix: Started workflow ids are this prefix plus a digest of
            (trigger, event source, event id).
        execution_timeout: Execution timeout of the started workflows, if any.
        run_timeout: Run timeout of the started workflows, if any.
        task_timeout: Workflow task timeout, if not the server's default.
        create_time: When the trigger was created (UTC).
    """

    trigger_id: str
    event_type: str
    filter: list[str]
    input_paths: list[str]
    workflow_type: str
    task_queue: str
    workflow_id_prefix: str
    execution_timeout: timedelta | None
    run_timeout: timedelta | None
    task_timeout: timedelta | None
    create_time: datetime | None

    @classmethod
    def _from_proto(cls, proto: event_pb2.EventTrigger) -> EventTrigger:
        return cls(
            trigger_id=proto.trigger_id,
            event_type=proto.event_type,
            filter=list(proto.filter),
            input_paths=list(proto.input_paths),
            workflow_type=proto.workflow_type,
            task_queue=proto.task_queue,
            workflow_id_prefix=proto.workflow_id_prefix,
            execution_timeout=_optional_duration(proto, "workflow_execution_timeout"),
            run_timeout=_optional_duration(proto, "workflow_run_timeout"),
            task_timeout=_optional_duration(proto, "workflow_task_timeout"),
            create_time=_timestamp_to_datetime(proto.create_time, proto.HasField("create_time")),
        )


@dataclasses.dataclass(frozen=True)
class TriggeredWorkflow:
    """A workflow a published event led to.

    Attributes:
        trigger_id: The trigger that matched.
        workflow_id: The workflow id (deterministic per trigger and event).
        run_id: The run.
        started: ``False`` if that workflow id was already running, so nothing new
            was started for this trigger.
    """

    trigger_id: str
    workflow_id: str
    run_id: str
    started: bool


@dataclasses.dataclass(frozen=True)
class PublishEventResult:
    """What :meth:`Client.publish_event` did.

    Attributes:
        duplicate: The event's (source, id) was published before within the
            server's dedupe window: nothing was started, and :attr:`workflows` are
            those the first publish started.
        workflows: One entry per matching trigger.
    """

    duplicate: bool
    workflows: list[TriggeredWorkflow]
