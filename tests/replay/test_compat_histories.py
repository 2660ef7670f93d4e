"""Recorded histories of the Temporal compatibility suite's workflows (ported as tests/compat does)
replay against today's code: local activities from their markers, without running again."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from flowforge import workflow
from flowforge.client import WorkflowHistory
from flowforge.exceptions import NonDeterminismError
from flowforge.testing import Replayer, replay_histories_in
from tests.compat._porting import ported_module

COMPAT_HISTORIES = Path(__file__).parent / "histories" / "compat"
activities = ported_module("test_activities")
updates = ported_module("test_updates")
completion = ported_module("test_async_completion")

test_compat_history_replays = replay_histories_in(
    COMPAT_HISTORIES, workflows=[activities.Checkout, updates.Greeter, completion.Approval]
)


def load(name: str) -> WorkflowHistory:
    return WorkflowHistory.from_json((COMPAT_HISTORIES / name).read_text())


async def test_local_activities_replay_from_their_markers() -> None:
    history = load("local-activities.json")
    assert sum(e.event_type == "MarkerRecorded" for e in history.events) == 3
    activities.calls.clear()
    await Replayer(workflows=[activities.Checkout]).replay_workflow(history)
    assert activities.calls == []


@workflow.defn(name="Checkout")
class CheckoutQuotingFirst:
    """The recorded workflow with its local activities reordered."""

    @workflow.run
    async def run(self, item: str) -> object:
        return await workflow.execute_local_activity(
            activities.flaky_quote, item, start_to_close_timeout=timedelta(seconds=5)
        )


async def test_a_reordered_local_activity_is_caught() -> None:
    with pytest.raises(NonDeterminismError, match="local_activity_seq"):
        await Replayer(workflows=[CheckoutQuotingFirst]).replay_workflow(load("local-activities.json"))


def test_updates_are_recorded_stage_by_stage() -> None:
    markers = [e for e in load("updates.json").events if e.event_type == "MarkerRecorded"]
    assert [m.attributes["marker_name"] for m in markers] == ["update"] * 5  # accepted+completed twice, rejected
