"""Event triggers as the client creates and lists them, and what publishing an event did."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import AsyncIterator, Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from flowforge._rpc import WorkflowServiceClient
from flowforge._workflow_definition import _workflow_type_and_result_hint
from flowforge._workflow_executions import _timestamp_to_datetime
from flowforge.api.v1 import event_pb2
from flowforge.common import _LIST_PAGE_SIZE, _set_workflow_timeouts

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


class _EventTriggerCalls:
    """The event trigger calls of :class:`flowforge.client.Client` (a base class of it; docs/events.md)."""

    _workflow_service: WorkflowServiceClient
    _namespace: str
    _identity: str

    async def create_trigger(
        self,
        trigger_id: str,
        *,
        event_type: str,
        workflow: Callable[..., Any] | type | str,
        task_queue: str,
        filter: Sequence[str] = (),
        input_paths: Sequence[str] = (),
        id_prefix: str | None = None,
        execution_timeout: timedelta | None = None,
        run_timeout: timedelta | None = None,
        task_timeout: timedelta | None = None,
    ) -> EventTrigger:
        """Subscribes a workflow to published events.

        Every event of ``event_type`` for which all ``filter`` conditions hold starts
        one ``workflow`` execution whose arguments are the values at
        ``input_paths``; a re-published event (same source and id, within the
        server's dedupe window) starts nothing. See docs/events.md.

        Args:
            trigger_id: The trigger's id, unique in the namespace.
            event_type: The event type to subscribe to, e.g. ``"order.paid"``.
            workflow: The ``@workflow.run`` method, the ``@workflow.defn`` class, or
                the workflow type name.
            task_queue: The task queue of the started workflows.
            filter: Conditions ``PATH OP JSON`` (OP one of ``==``, ``!=``, ``in``,
                ``not in``), all of which must hold, e.g. ``'data.currency == "EUR"'``.
            input_paths: One event path per workflow argument, e.g.
                ``["data.order_id", "subject"]``; a missing path gives ``None``.
            id_prefix: Prefix of the started workflow ids (default ``trigger_id + "-"``).
            execution_timeout: Execution timeout of the started workflows.
            run_timeout: Run timeout of the started workflows.
            task_timeout: Workflow task timeout of the started workflows.

        Returns:
            The trigger as stored (filter in canonical form).

        Raises:
            RPCError: ``ALREADY_EXISTS`` when the id is taken, ``INVALID_ARGUMENT``
                for a malformed filter or path (the message says which).
        """
        workflow_type, _ = _workflow_type_and_result_hint(workflow)
        trigger = event_pb2.EventTrigger(
            trigger_id=trigger_id,
            event_type=event_type,
            filter=list(filter),
            input_paths=list(input_paths),
            workflow_type=workflow_type,
            task_queue=task_queue,
            workflow_id_prefix=id_prefix or "",
        )
        _set_workflow_timeouts(trigger, execution_timeout, run_timeout, task_timeout)
        response = await self._workflow_service.call(
            "CreateEventTrigger", event_pb2.CreateEventTriggerRequest(namespace=self._namespace, trigger=trigger)
        )
        return EventTrigger._from_proto(response.trigger)

    async def describe_trigger(self, trigger_id: str) -> EventTrigger:
        """The trigger with this id.

        Raises:
            RPCError: ``NOT_FOUND`` when there is none.
        """
        response = await self._workflow_service.call(
            "DescribeEventTrigger",
            event_pb2.DescribeEventTriggerRequest(namespace=self._namespace, trigger_id=trigger_id),
        )
        return EventTrigger._from_proto(response.trigger)

    async def list_triggers(self, *, page_size: int = _LIST_PAGE_SIZE) -> AsyncIterator[EventTrigger]:
        """Iterates over the namespace's triggers by id, fetching pages as needed.

        Yields:
            One :class:`EventTrigger` per trigger.
        """
        request = event_pb2.ListEventTriggersRequest(namespace=self._namespace, page_size=page_size)
        while True:
            response = await self._workflow_service.call("ListEventTriggers", request)
            for trigger in response.triggers:
                yield EventTrigger._from_proto(trigger)
            if not response.next_page_token:
                return
            request.next_page_token = response.next_page_token

    async def delete_trigger(self, trigger_id: str) -> None:
        """Deletes a trigger; workflows it started go on.

        Raises:
            RPCError: ``NOT_FOUND`` when there is no such trigger.
        """
        await self._workflow_service.call(
            "DeleteEventTrigger", event_pb2.DeleteEventTriggerRequest(namespace=self._namespace, trigger_id=trigger_id)
        )

    async def publish_event(
        self,
        *,
        id: str,
        source: str,
        type: str,
        data: Any = None,
        subject: str | None = None,
        time: datetime | None = None,
    ) -> PublishEventResult:
        """Publishes a CloudEvents-shaped event: one workflow starts per matching trigger.

        Publishing is idempotent on ``(source, id)`` within the server's dedupe
        window (24 h by default), so retrying a publish whose answer was lost is
        safe: the retry reports ``duplicate=True`` and the workflows of the first.

        Args:
            id: The event's id, unique within ``source``.
            source: Who produced the event, e.g. ``"https://shop.example.com"``.
            type: What happened, e.g. ``"order.paid"``.
            data: The payload: any JSON-serializable value.
            subject: What the event is about, within ``source``.
            time: When it happened (a naive datetime is taken as UTC).

        Returns:
            Whether it was a duplicate, and the workflows it led to.

        Raises:
            RPCError: ``INVALID_ARGUMENT`` for a missing id/source/type or oversize data.
        """
        event = event_pb2.CloudEvent(id=id, source=source, type=type, subject=subject or "")
        if data is not None:
            event.data = json.dumps(data, separators=(",", ":")).encode()
        if time is not None:
            event.time.FromDatetime(time if time.tzinfo else time.replace(tzinfo=UTC))
        response = await self._workflow_service.call(
            "PublishEvent",
            event_pb2.PublishEventRequest(namespace=self._namespace, event=event, identity=self._identity),
        )
        return PublishEventResult(
            duplicate=response.duplicate,
            workflows=[
                TriggeredWorkflow(
                    trigger_id=w.trigger_id, workflow_id=w.workflow_id, run_id=w.run_id, started=w.started
                )
                for w in response.workflows
            ],
        )
