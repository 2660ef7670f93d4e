"""Store rows built for tests that write to a store directly."""

from __future__ import annotations

import dataclasses
import uuid

from flowforge.server.stores.base import ExecutionRow

NOW = 1_700_000_000_000_000
"""A fixed "now" in microseconds since the epoch."""


def execution(workflow_id: str = "wf", **changes: object) -> ExecutionRow:
    """A RUNNING execution row of namespace "default" with a fresh run id; ``changes`` override fields."""
    row = ExecutionRow(
        namespace="default",
        run_id=str(uuid.uuid4()),
        workflow_id=workflow_id,
        workflow_type="Onboarding",
        task_queue="q",
        status="RUNNING",
        next_event_id=2,
        version=1,
        start_us=NOW,
        close_us=None,
        wft_state="NONE",
        wft_attempt=1,
        wft_scheduled_us=None,
        wft_started_us=None,
        wft_scheduled_event_id=0,
        wft_started_event_id=0,
        wft_timeout_s=10.0,
        last_wft_failure=None,
        buffered_events="[]",
        deadline_us=None,
        deadline_kind=None,
        cancel_requested=0,
    )
    return dataclasses.replace(row, **changes)
