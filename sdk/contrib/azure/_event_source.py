"""Service Bus in: CloudEvents from a queue or topic subscription become published events."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Self

import grpc
from azure.servicebus import ServiceBusReceivedMessage
from azure.servicebus.aio import ServiceBusClient, ServiceBusReceiver
from azure.servicebus.exceptions import ServiceBusError

from flowforge._cloudevents import MalformedCloudEvent, parse_cloudevent
from flowforge.api.v1 import event_pb2
from flowforge.client import Client
from flowforge.exceptions import RPCError

__all__ = ["ServiceBusEventSource"]

logger = logging.getLogger(__name__)

MALFORMED_REASON = "MalformedCloudEvent"
"""The dead-letter reason of a message that is not a CloudEvents JSON event."""
REJECTED_REASON = "EventRejected"
"""The dead-letter reason of an event FlowForge refused (``INVALID_ARGUMENT``: e.g. no
``id``, or data over the payload limit); the description is the server's message."""

_FIRST_RETRY_DELAY_S = 0.5
_MAX_RETRY_DELAY_S = 30.0
# Answers about the event itself: retrying cannot help, so the message is dead-lettered.
_REJECTIONS = frozenset({grpc.StatusCode.INVALID_ARGUMENT})


class ServiceBusEventSource:
    """Consumes CloudEvents from Service Bus and publishes each into FlowForge's event triggers.

    Each message is received in peek-lock mode, published with
    ``PublishEvent`` (deduplicated by the server on ``(source, id)``), and
    completed only after the publish has committed, so an event is published
    exactly once even when a message is delivered again (a lost lock, a crash
    between publish and complete): the second publish is a duplicate that starts
    nothing. The lock is renewed while a publish takes long. A message that is
    not a CloudEvents JSON event (structured mode: the body is the event's JSON)
    is dead-lettered with reason ``MalformedCloudEvent`` and the parse error; one
    the server refuses as invalid, with ``EventRejected`` and the server's
    message. Any other failure (FlowForge unavailable, ...) abandons the message,
    so Service Bus delivers it again and dead-letters it after the entity's
    maximum delivery count.

    Run it with ``await source.run()`` (until :meth:`stop`) or
    ``async with source:``. Stopping finishes the messages in hand and abandons
    the rest, so nothing waits for a lock to expire.

    Args:
        client: The FlowForge client; events are published in its namespace.
        servicebus_client: An ``azure.servicebus.aio.ServiceBusClient``; the caller owns it.
        queue_name: The queue to consume; or ``topic_name`` and ``subscription_name``.
        topic_name: The topic of ``subscription_name``.
        subscription_name: The subscription to consume.
        max_message_count: How many messages one receive takes (published concurrently).
        max_wait_time: How long one receive waits for a first message.
        lock_renewal_interval: How often the lock of a message being published is
            renewed; keep it well under the entity's lock duration (default 30 s).
    """

    def __init__(
        self,
        client: Client,
        servicebus_client: ServiceBusClient,
        *,
        queue_name: str | None = None,
        topic_name: str | None = None,
        subscription_name: str | None = None,
        max_message_count: int = 16,
        max_wait_time: timedelta = timedelta(seconds=5),
        lock_renewal_interval: timedelta = timedelta(seconds=10),
    ) -> None:
        if (queue_name is None) == (topic_name is None) or (topic_name is None) != (subscription_name is None):
            raise ValueError("give either queue_name, or topic_name and subscription_name")
        if max_message_count <= 0:
            raise ValueError(f"max_message_count must be positive, not {max_message_count}")
        self._client = client
        self._servicebus = servicebus_client
        self._queue_name = queue_name
        self._topic_name = topic_name
        self._subscription_name = subscription_name
        self._max_message_count = max_message_count
        self._max_wait_s = max_wait_time.total_seconds()
        self._renew_every_s = lock_renewal_interval.total_seconds()
        self._stopping = asyncio.Event()
        self._runner: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Self:
        self._runner = asyncio.create_task(self.run(), name="flowforge service bus event source")
        return self

    async def __aexit__(self, *_: object) -> None:
        self.stop()
        if self._runner is not None:
            await self._runner

    def stop(self) -> None:
        """Asks :meth:`run` to return after the messages in hand are settled."""
        self._stopping.set()

    async def run(self) -> None:
        """Receives and publishes until :meth:`stop` is called; a failed receive (the
        namespace unreachable, ...) is retried with backoff."""
        delay = _FIRST_RETRY_DELAY_S
        async with self._receiver() as receiver:
            while not self._stopping.is_set():
                try:
                    messages = await receiver.receive_messages(
                        max_message_count=self._max_message_count, max_wait_time=self._max_wait_s
                    )
                except ServiceBusError as error:
                    logger.warning("receiving from Service Bus failed (%s); retrying in %.1fs", error, delay)
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._stopping.wait(), delay)
                    delay = min(delay * 2, _MAX_RETRY_DELAY_S)
                    continue
                delay = _FIRST_RETRY_DELAY_S
                await asyncio.gather(*(self._settle(receiver, message) for message in messages))

    @contextlib.asynccontextmanager
    async def _receiver(self) -> AsyncIterator[ServiceBusReceiver]:
        if self._queue_name is not None:
            receiver = self._servicebus.get_queue_receiver(self._queue_name)
        else:
            assert self._topic_name is not None and self._subscription_name is not None
            receiver = self._servicebus.get_subscription_receiver(self._topic_name, self._subscription_name)
        async with receiver:
            yield receiver

    async def _settle(self, receiver: ServiceBusReceiver, message: ServiceBusReceivedMessage) -> None:
        """Publishes one message's event, then completes, dead-letters or abandons it."""
        if self._stopping.is_set():
            await receiver.abandon_message(message)
            return
        try:
            event = parse_cloudevent(b"".join(message.body))
        except (MalformedCloudEvent, TypeError) as error:
            logger.warning("dead-lettering message %s: %s", message.message_id, error)
            await receiver.dead_letter_message(message, reason=MALFORMED_REASON, error_description=str(error))
            return
        renewing = asyncio.create_task(self._renew_lock(receiver, message))
        try:
            await self._publish(event)
        except RPCError as error:
            if error.status in _REJECTIONS:
                logger.warning("dead-lettering event %s/%s: %s", event.source, event.id, error.message)
                await receiver.dead_letter_message(message, reason=REJECTED_REASON, error_description=error.message)
            else:
                logger.warning("abandoning event %s/%s for redelivery: %s", event.source, event.id, error)
                await receiver.abandon_message(message)
            return
        except Exception:
            logger.exception("abandoning event %s/%s for redelivery", event.source, event.id)
            await receiver.abandon_message(message)
            return
        finally:
            renewing.cancel()
        try:
            await receiver.complete_message(message)
        except ServiceBusError as error:
            # E.g. the lock was lost: Service Bus delivers the message again, and its
            # publish is then a duplicate that starts nothing.
            logger.warning("could not complete message %s (%s); it will be redelivered", message.message_id, error)

    async def _publish(self, event: event_pb2.CloudEvent) -> None:
        request = event_pb2.PublishEventRequest(
            namespace=self._client.namespace, event=event, identity=self._client.identity
        )
        await self._client.workflow_service.call("PublishEvent", request)

    async def _renew_lock(self, receiver: ServiceBusReceiver, message: ServiceBusReceivedMessage) -> None:
        while True:
            await asyncio.sleep(self._renew_every_s)
            try:
                await receiver.renew_message_lock(message)
            except ServiceBusError as error:
                logger.warning("could not renew the lock of message %s: %s", message.message_id, error)
                return
