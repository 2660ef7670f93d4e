"""A store notifier that tells a test when a long-poll has parked, and on which channel."""

from __future__ import annotations

import asyncio
import collections
import weakref
from datetime import timedelta

from flowforge.api.v1 import common_pb2
from flowforge.api.v1 import workflow_service_pb2 as pb
from flowforge.client import Client
from flowforge.server.stores.base import Notifier

__all__ = ["ParkingNotifier", "history_long_poll"]


async def history_long_poll(
    client: Client, workflow_id: str, run_id: str, after_event_id: int, *, seconds: int
) -> pb.GetWorkflowExecutionHistoryResponse:
    """One history long-poll (``wait_new_event``) after ``after_event_id``, held by the
    server for up to ``seconds``: the events that arrived, or none when it ran out."""
    request = pb.GetWorkflowExecutionHistoryRequest(
        namespace="default",
        execution=common_pb2.WorkflowExecution(workflow_id=workflow_id, run_id=run_id),
        after_event_id=after_event_id,
        wait_new_event=True,
    )
    request.wait_timeout.FromSeconds(seconds)
    answer: pb.GetWorkflowExecutionHistoryResponse = await client.workflow_service.call(
        "GetWorkflowExecutionHistory", request, retry=False, timeout=timedelta(seconds=seconds + 60)
    )
    return answer


class ParkingNotifier(Notifier):
    """A :class:`Notifier` that records each wait: ``parked[channel]`` is set when a
    waiter parks on ``channel`` (``"r:<run_id>"`` for a history wait, ``"q:..."`` for a
    task poll), ``any_parked`` when any waiter parks. Install it before the server starts:
    ``server.store.notifier = ParkingNotifier()``."""

    def __init__(self) -> None:
        super().__init__()
        self.parked: collections.defaultdict[str, asyncio.Event] = collections.defaultdict(asyncio.Event)
        self.any_parked = asyncio.Event()
        self._channels: weakref.WeakKeyDictionary[asyncio.Event, str] = weakref.WeakKeyDictionary()

    def listen(self, channel: str) -> asyncio.Event:
        event = super().listen(channel)
        self._channels[event] = channel
        return event

    async def wait(self, event: asyncio.Event, timeout: float) -> bool:  # type: ignore[override]
        channel = self._channels.get(event)
        if channel is not None:
            self.parked[channel].set()
        self.any_parked.set()
        return await Notifier.wait(event, timeout)
