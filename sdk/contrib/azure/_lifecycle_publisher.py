"""Service Bus out: workflow lifecycle events relayed from the store's outbox to a topic."""

from __future__ import annotations

import asyncio
import json
import logging
from datetime import UTC, datetime, timedelta
from typing import Self

from azure.servicebus import ServiceBusMessage
from azure.servicebus.aio import ServiceBusClient, ServiceBusSender

from flowforge.server.stores.base import Store
from flowforge.server.stores.contract import LifecycleOutboxOperations
from flowforge.server.stores.rows import LifecycleOutboxRow

__all__ = ["ServiceBusLifecyclePublisher", "lifecycle_message"]

logger = logging.getLogger(__name__)

#: CloudEvents ``type`` of each relayed history event.
EVENT_TYPES = {
    "WorkflowExecutionStarted": "flowforge.workflow.started",
    "WorkflowExecutionCompleted": "flowforge.workflow.completed",
    "WorkflowExecutionFailed": "flowforge.workflow.failed",
    "WorkflowExecutionTimedOut": "flowforge.workflow.timed_out",
    "WorkflowExecutionTerminated": "flowforge.workflow.terminated",
    "WorkflowExecutionCanceled": "flowforge.workflow.canceled",
    "WorkflowExecutionContinuedAsNew": "flowforge.workflow.continued_as_new",
}
_MAX_RETRY_DELAY_S = 30.0


def lifecycle_message(row: LifecycleOutboxRow) -> ServiceBusMessage:
    """The Service Bus message of one outbox row: a CloudEvents JSON event whose
    ``MessageId`` (and event ``id``) is ``<run id>:<event id>``, so a resend after a
    crash is dropped by the topic's duplicate detection."""
    message_id = f"{row.run_id}:{row.event_id}"
    event_type = EVENT_TYPES.get(row.event_type, f"flowforge.workflow.{row.event_type}")
    event = {
        "specversion": "1.0",
        "id": message_id,
        "source": f"flowforge:/namespaces/{row.namespace}",
        "type": event_type,
        "subject": row.workflow_id,
        "time": datetime.fromtimestamp(row.event_us / 1e6, UTC).isoformat().replace("+00:00", "Z"),
        "datacontenttype": "application/json",
        "data": {
            "namespace": row.namespace,
            "workflow_id": row.workflow_id,
            "workflow_type": row.workflow_type,
            "run_id": row.run_id,
            "event_id": row.event_id,
            "event_type": row.event_type,
        },
    }
    return ServiceBusMessage(
        json.dumps(event, separators=(",", ":")),
        message_id=message_id,
        content_type="application/cloudevents+json",
        subject=event_type,
        application_properties={"namespace": row.namespace, "workflow_type": row.workflow_type},
    )


class ServiceBusLifecyclePublisher:
    """Relays workflow lifecycle events (started, completed, failed, timed out,
    terminated, canceled, continued as new) from the store's outbox to a Service Bus topic.

    The outbox (table ``lifecycle_outbox``) is written in the same transaction as
    the history event, from the moment the publisher first runs against the store
    (it turns the outbox on). The publisher sends the oldest rows, then deletes
    them: at least once, and with ``MessageId`` = run id + event id, so with the
    topic's duplicate detection on, a resend after a crash between the send and
    the delete is dropped — effectively once, in order per run. A failed send is
    retried with backoff; nothing is lost while the rows stay in the store.

    Run one publisher per store (several are safe, but send duplicates for the
    topic to drop). It needs the store itself: in the server process
    (``FlowForgeServer.store``), or, on PostgreSQL, a process of its own with
    ``flowforge.server.app.open_store(dsn)``.

    Args:
        store: The server's store (opened).
        servicebus_client: An ``azure.servicebus.aio.ServiceBusClient``; the caller owns it.
        topic_name: The topic to publish to (enable duplicate detection on it).
        batch_size: Rows sent in one batch.
        poll_interval: How long to wait when the outbox is empty.
    """

    def __init__(
        self,
        store: Store,
        servicebus_client: ServiceBusClient,
        topic_name: str,
        *,
        batch_size: int = 100,
        poll_interval: timedelta = timedelta(seconds=1),
    ) -> None:
        if batch_size <= 0:
            raise ValueError(f"batch_size must be positive, not {batch_size}")
        self._store = store
        self._servicebus = servicebus_client
        self._topic_name = topic_name
        self._batch_size = batch_size
        self._poll_interval_s = poll_interval.total_seconds()
        self._stopping = asyncio.Event()
        self._runner: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Self:
        await self.enable()
        self._runner = asyncio.create_task(self.run(), name="flowforge service bus lifecycle publisher")
        return self

    async def __aexit__(self, *_: object) -> None:
        self.stop()
        if self._runner is not None:
            await self._runner

    async def enable(self) -> None:
        """Turns the store's outbox on (idempotent): lifecycle events are recorded from now on."""
        async with self._store.transaction() as tx:
            await tx.set_metadata_if_absent(LifecycleOutboxOperations.LIFECYCLE_OUTBOX_KEY, "on")

    def stop(self) -> None:
        """Asks :meth:`run` to return after the batch in hand."""
        self._stopping.set()

    async def run(self) -> None:
        """Relays until :meth:`stop` is called."""
        await self.enable()
        delay = self._poll_interval_s
        async with self._servicebus.get_topic_sender(self._topic_name) as sender:
            while not self._stopping.is_set():
                try:
                    relayed = await self.relay_once(sender)
                    delay = self._poll_interval_s
                except Exception as error:  # the rows stay: sent again on the next try
                    logger.warning("relaying lifecycle events failed (%s); retrying in %.1fs", error, delay)
                    await self._sleep(delay)
                    delay = min(delay * 2, _MAX_RETRY_DELAY_S)
                    continue
                if relayed < self._batch_size:
                    await self._sleep(self._poll_interval_s)

    async def relay_once(self, sender: ServiceBusSender) -> int:
        """Sends the oldest batch of the outbox, then deletes it; returns its size."""
        async with self._store.read() as tx:
            rows = await tx.read_lifecycle_outbox(self._batch_size)
        if not rows:
            return 0
        await sender.send_messages([lifecycle_message(row) for row in rows])
        async with self._store.transaction() as tx:
            await tx.delete_lifecycle_outbox([row.sequence for row in rows])
        return len(rows)

    async def _sleep(self, seconds: float) -> None:
        try:
            await asyncio.wait_for(self._stopping.wait(), seconds)
        except TimeoutError:
            pass
