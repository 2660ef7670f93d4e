"""Shared pieces of the reliability tests (timeouts, heartbeats, retries, cancellation,
outages): in-process workers that shut down fast, and history helpers. Their SDK
client of the in-process ``server`` is the ``sdk_client`` fixture (conftest.py).

Every test here uses sub-second timeouts and waits on conditions with deadlines, so
bounds are generous (two shared cores) while the suite stays quick.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any

from flowforge import Client
from flowforge.client import HistoryEvent, WorkflowHandle
from flowforge.worker import Worker

#: How long any single condition may take to come true before a test fails.
DEADLINE_S = 20.0


def fast_worker(
    client: Client,
    task_queue: str,
    *,
    workflows: Sequence[type] = (),
    activities: Sequence[Callable[..., Any]] = (),
    **options: Any,
) -> Worker:
    """A worker whose shutdown cancels leftover activities at once (tests leave
    deliberately stuck activities behind)."""
    options.setdefault("graceful_shutdown_timeout", timedelta(seconds=0))
    return Worker(client, task_queue=task_queue, workflows=workflows, activities=activities, **options)


async def events(handle: WorkflowHandle) -> list[HistoryEvent]:
    return (await handle.fetch_history()).events


def of_type(history: Sequence[HistoryEvent], *event_types: str) -> list[HistoryEvent]:
    return [e for e in history if e.event_type in event_types]


def assert_gapless(history: Sequence[HistoryEvent]) -> None:
    assert [e.event_id for e in history] == list(range(1, len(history) + 1))
