"""Event trigger RPCs (docs/events.md): create, describe, list and delete triggers, and
publish an event (the webhook publishes through :meth:`TriggerHandlers.publish_event` too)."""

from __future__ import annotations

from flowforge.api.v1 import event_pb2
from flowforge.server.frontend._base import Context, ServiceBase, rpc
from flowforge.server.frontend.protos import trigger_proto
from flowforge.server.frontend.validation import name, page_size, published_event, text_page_token, trigger_row_of

__all__ = ["TriggerHandlers"]


class TriggerHandlers(ServiceBase):
    @rpc
    async def CreateEventTrigger(
        self, request: event_pb2.CreateEventTriggerRequest, context: Context
    ) -> event_pb2.CreateEventTriggerResponse:
        row = await self._events.create_trigger(trigger_row_of(request))
        return event_pb2.CreateEventTriggerResponse(trigger=trigger_proto(row))

    @rpc
    async def DescribeEventTrigger(
        self, request: event_pb2.DescribeEventTriggerRequest, context: Context
    ) -> event_pb2.DescribeEventTriggerResponse:
        row = await self._events.describe_trigger(
            name(request.namespace, "namespace"), name(request.trigger_id, "trigger_id")
        )
        return event_pb2.DescribeEventTriggerResponse(trigger=trigger_proto(row))

    @rpc
    async def ListEventTriggers(
        self, request: event_pb2.ListEventTriggersRequest, context: Context
    ) -> event_pb2.ListEventTriggersResponse:
        size = page_size(request.page_size)
        after = text_page_token(request.next_page_token)
        rows = await self._events.list_triggers(
            name(request.namespace, "namespace"), page_size=size, after_trigger_id=after
        )
        token = rows[-1].trigger_id.encode() if len(rows) == size else b""
        return event_pb2.ListEventTriggersResponse(triggers=[trigger_proto(r) for r in rows], next_page_token=token)

    @rpc
    async def DeleteEventTrigger(
        self, request: event_pb2.DeleteEventTriggerRequest, context: Context
    ) -> event_pb2.DeleteEventTriggerResponse:
        await self._events.delete_trigger(name(request.namespace, "namespace"), name(request.trigger_id, "trigger_id"))
        return event_pb2.DeleteEventTriggerResponse()

    @rpc
    async def PublishEvent(
        self, request: event_pb2.PublishEventRequest, context: Context
    ) -> event_pb2.PublishEventResponse:
        return await self.publish_event(request)

    async def publish_event(self, request: event_pb2.PublishEventRequest) -> event_pb2.PublishEventResponse:
        """Validates and publishes an event: the one path for gRPC and the webhook.

        Raises:
            ServiceError: INVALID_ARGUMENT for a malformed event, NOT_FOUND for an
                unknown namespace, UNAVAILABLE when the store is down.
        """
        event = published_event(request.event, self._engine.config.max_payload_bytes)
        duplicate, workflows = await self._events.publish(
            name(request.namespace, "namespace"), event, name(request.identity, "identity", required=False)
        )
        return event_pb2.PublishEventResponse(
            duplicate=duplicate,
            workflows=[
                event_pb2.TriggeredWorkflow(
                    trigger_id=w.trigger_id, workflow_id=w.workflow_id, run_id=w.run_id, started=w.started
                )
                for w in workflows
            ],
        )
