"""An in-memory stand-in for Azure Service Bus at the ``azure-servicebus`` client boundary.

Service Bus has no emulator that runs here, so the adapters of
``flowforge.contrib.azure`` are tested against :class:`FakeServiceBus`, which offers
the part of ``azure.servicebus.aio.ServiceBusClient`` they use and reproduces the
behaviours that matter:

- **peek-lock**: a received message is locked for ``lock_duration``; it is settled
  with ``complete_message``, ``abandon_message`` (available again at once, its
  delivery count kept) or ``dead_letter_message(reason, error_description)``;
- **lock expiry**: a lock not renewed (``renew_message_lock``) in time is lost: the
  message is delivered again, and settling it with the old lock raises
  ``MessageLockLostError``; :meth:`FakeServiceBus.advance` moves the fake's clock;
- **maximum delivery count**: a message delivered that often is dead-lettered with
  reason ``MaxDeliveryCountExceeded``;
- **duplicate detection**: a message sent with a ``message_id`` already sent to the
  entity within ``duplicate_detection_window`` is accepted and dropped;
- topics fan out to their subscriptions;
- outages on demand: ``fail_sends`` / ``fail_receives`` make the next calls fail.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import time
import uuid
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any, Self

from azure.servicebus import ServiceBusMessage
from azure.servicebus.exceptions import MessageLockLostError

__all__ = ["FakeMessage", "FakeServiceBus"]


@dataclasses.dataclass
class _Stored:
    body: bytes
    message_id: str
    sequence_number: int
    subject: str | None
    content_type: str | None
    application_properties: dict[Any, Any]
    delivery_count: int = 0
    lock_token: str | None = None
    locked_until: float = 0.0
    dead_letter_reason: str | None = None
    dead_letter_error_description: str | None = None


class FakeMessage:
    """What a receiver hands out: the message as delivered, with its lock token."""

    def __init__(self, stored: _Stored, lock_token: str, locked_until_utc: datetime) -> None:
        self._body = stored.body
        self.message_id = stored.message_id
        self.sequence_number = stored.sequence_number
        self.subject = stored.subject
        self.content_type = stored.content_type
        self.application_properties = dict(stored.application_properties)
        self.delivery_count = stored.delivery_count
        self.lock_token = lock_token
        self.locked_until_utc = locked_until_utc
        self.dead_letter_reason = stored.dead_letter_reason
        self.dead_letter_error_description = stored.dead_letter_error_description

    @property
    def body(self) -> Iterator[bytes]:
        """The body's data sections, as ``ServiceBusReceivedMessage.body`` gives them."""
        return iter([self._body])

    def __str__(self) -> str:
        return self._body.decode(errors="replace")


class _Entity:
    """A queue or a subscription."""

    def __init__(self, bus: FakeServiceBus, name: str) -> None:
        self.bus = bus
        self.name = name
        self.active: list[_Stored] = []
        self.dead_letters: list[_Stored] = []
        self.completed: list[_Stored] = []
        self.arrived = asyncio.Event()

    def enqueue(self, stored: _Stored) -> None:
        self.active.append(stored)
        self.arrived.set()

    def take(self, count: int) -> list[FakeMessage]:
        now = self.bus.now()
        taken = []
        for stored in list(self.active):
            if len(taken) == count:
                break
            if stored.lock_token is not None and stored.locked_until > now:
                continue  # locked by someone
            if stored.delivery_count >= self.bus.max_delivery_count:
                self._dead_letter(stored, "MaxDeliveryCountExceeded", "delivered too often")
                continue
            stored.delivery_count += 1
            stored.lock_token = uuid.uuid4().hex
            stored.locked_until = now + self.bus.lock_duration.total_seconds()
            taken.append(FakeMessage(stored, stored.lock_token, self.bus.utc(stored.locked_until)))
        return taken

    def locked(self, message: FakeMessage) -> _Stored:
        """The stored message ``message`` holds the (unexpired) lock of, or MessageLockLostError."""
        for stored in self.active:
            if stored.lock_token == message.lock_token:
                if stored.locked_until > self.bus.now():
                    return stored
                break
        raise MessageLockLostError(message=f"the lock of message {message.message_id} was lost")

    def _dead_letter(self, stored: _Stored, reason: str | None, description: str | None) -> None:
        self.active.remove(stored)
        stored.dead_letter_reason, stored.dead_letter_error_description = reason, description
        stored.lock_token = None
        self.dead_letters.append(stored)

    def settle(
        self, message: FakeMessage, outcome: str, reason: str | None = None, description: str | None = None
    ) -> None:
        stored = self.locked(message)
        if outcome == "complete":
            self.active.remove(stored)
            self.completed.append(stored)
        elif outcome == "abandon":
            stored.lock_token = None
            self.arrived.set()
        else:
            self._dead_letter(stored, reason, description)


class FakeReceiver:
    """``ServiceBusReceiver`` (peek-lock) of one entity."""

    def __init__(self, entity: _Entity) -> None:
        self._entity = entity

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *_: object) -> None:
        return None

    async def receive_messages(
        self, max_message_count: int | None = 1, max_wait_time: float | None = None
    ) -> list[FakeMessage]:
        deadline = time.monotonic() + (max_wait_time if max_wait_time is not None else 3600)
        while True:
            self._entity.arrived.clear()
            taken = self._entity.take(max_message_count or 1)
            if taken or time.monotonic() >= deadline:
                return taken
            try:  # woken by a send or an abandon; locks expire on the clock, so look again soon
                await asyncio.wait_for(self._entity.arrived.wait(), min(0.05, deadline - time.monotonic()))
            except TimeoutError:
                pass

    async def complete_message(self, message: FakeMessage) -> None:
        self._entity.settle(message, "complete")

    async def abandon_message(self, message: FakeMessage) -> None:
        self._entity.settle(message, "abandon")

    async def dead_letter_message(
        self, message: FakeMessage, reason: str | None = None, error_description: str | None = None
    ) -> None:
        self._entity.settle(message, "dead_letter", reason, error_description)

    async def renew_message_lock(self, message: FakeMessage, **_: Any) -> datetime:
        stored = self._entity.locked(message)
        stored.locked_until = self._entity.bus.now() + self._entity.bus.lock_duration.total_seconds()
        message.locked_until_utc = self._entity.bus.utc(stored.locked_until)
        return message.locked_until_utc


class FakeSender:
    """``ServiceBusSender`` of a queue or topic."""

    def __init__(self, bus: FakeServiceBus, name: str) -> None:
        self._bus = bus
        self._name = name

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *_: object) -> None:
        return None

    async def send_messages(self, message: ServiceBusMessage | Iterable[ServiceBusMessage], **_: Any) -> None:
        if self._bus.fail_sends:
            self._bus.fail_sends -= 1
            raise ConnectionError("the fake Service Bus dropped the connection")
        for one in [message] if isinstance(message, ServiceBusMessage) else list(message):
            self._bus.send(self._name, one)


class FakeServiceBus:
    """The part of ``azure.servicebus.aio.ServiceBusClient`` the adapters use, in memory.

    Args:
        lock_duration: How long a received message stays locked without renewal.
        duplicate_detection_window: How long a sent ``message_id`` is remembered.
        max_delivery_count: Deliveries after which a message is dead-lettered.
    """

    def __init__(
        self,
        *,
        lock_duration: timedelta = timedelta(seconds=30),
        duplicate_detection_window: timedelta = timedelta(minutes=10),
        max_delivery_count: int = 10,
    ) -> None:
        self.lock_duration = lock_duration
        self.duplicate_detection_window = duplicate_detection_window
        self.max_delivery_count = max_delivery_count
        self.queues: dict[str, _Entity] = {}
        self.subscriptions: dict[str, dict[str, _Entity]] = {}
        self.fail_sends = 0
        """Make the next N ``send_messages`` calls fail with a connection error."""
        self.fail_receives = 0
        """Make the next N ``receive_messages`` calls fail with ``ServiceBusConnectionError``."""
        self.sent_ids: dict[str, dict[str, float]] = {}
        self._offset = 0.0
        self._sequence = itertools.count(1)

    # the clock
    def now(self) -> float:
        return time.monotonic() + self._offset

    def utc(self, at: float) -> datetime:
        return datetime.now(UTC) + timedelta(seconds=at - self.now())

    def advance(self, seconds: float) -> None:
        """Moves the fake's clock forward (locks expire, duplicates are forgotten)."""
        self._offset += seconds

    # entities
    def create_queue(self, name: str) -> None:
        self.queues[name] = _Entity(self, name)

    def create_topic(self, name: str, subscriptions: Iterable[str]) -> None:
        self.subscriptions[name] = {sub: _Entity(self, f"{name}/{sub}") for sub in subscriptions}

    def queue(self, name: str) -> _Entity:
        return self.queues[name]

    def subscription(self, topic: str, name: str) -> _Entity:
        return self.subscriptions[topic][name]

    def send(self, entity_name: str, message: ServiceBusMessage) -> None:
        """Sends like a sender would, with duplicate detection on ``message_id``."""
        message_id = message.message_id or uuid.uuid4().hex
        seen = self.sent_ids.setdefault(entity_name, {})
        now = self.now()
        if message_id in seen and now - seen[message_id] < self.duplicate_detection_window.total_seconds():
            return  # a duplicate: accepted and dropped
        seen[message_id] = now
        body = b"".join(message.body) if not isinstance(message.body, bytes) else message.body
        targets = [self.queues[entity_name]] if entity_name in self.queues else self.subscriptions[entity_name].values()
        for target in targets:
            target.enqueue(
                _Stored(
                    body=body,
                    message_id=message_id,
                    sequence_number=next(self._sequence),
                    subject=message.subject,
                    content_type=message.content_type,
                    application_properties=dict(message.application_properties or {}),
                )
            )

    # the client's API
    def get_queue_receiver(self, queue_name: str, **_: Any) -> FakeReceiver:
        return FakeReceiver(self.queues[queue_name])

    def get_subscription_receiver(self, topic_name: str, subscription_name: str, **_: Any) -> FakeReceiver:
        return FakeReceiver(self.subscriptions[topic_name][subscription_name])

    def get_queue_sender(self, queue_name: str, **_: Any) -> FakeSender:
        return FakeSender(self, queue_name)

    def get_topic_sender(self, topic_name: str, **_: Any) -> FakeSender:
        return FakeSender(self, topic_name)
