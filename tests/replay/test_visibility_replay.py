"""Replay of recorded histories with search attribute upserts (samples/order_tracking).

Replay compares the names each upsert sets, not the values: a deployment may change a
value (a stage label) without breaking old executions, but not drop or rename an upsert.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from flowforge import workflow
from flowforge.client import WorkflowHistory
from flowforge.exceptions import NonDeterminismError
from flowforge.testing import Replayer
from samples.order_tracking.workflows import TIMEOUT, OrderFulfillment, reserve_stock, ship

REVIEWED = Path(__file__).parent / "histories" / "order-tracking-review.json"


def reviewed_history() -> WorkflowHistory:
    return WorkflowHistory.from_json(REVIEWED.read_text())


@workflow.defn(name="OrderFulfillment")
class RelabelledStages(OrderFulfillment):
    """Same upserts, other values: replays unchanged."""

    @workflow.run
    async def run(self, order: dict) -> dict:
        workflow.upsert_search_attributes({"OrderStage": "awaiting-approval"})
        await workflow.wait_condition(lambda: bool(self.approved_by))
        workflow.upsert_search_attributes({"OrderStage": "picking"})
        await workflow.execute_activity(reserve_stock, order, start_to_close_timeout=TIMEOUT)
        await workflow.execute_activity(ship, order, start_to_close_timeout=TIMEOUT)
        workflow.upsert_search_attributes({"OrderStage": "sent", "ShippedAt": workflow.now()})
        return {}


@workflow.defn(name="OrderFulfillment")
class NoLongerRecordsShippedAt(OrderFulfillment):
    """The last upsert drops an attribute: a different command."""

    @workflow.run
    async def run(self, order: dict) -> dict:
        workflow.upsert_search_attributes({"OrderStage": "review"})
        await workflow.wait_condition(lambda: bool(self.approved_by))
        workflow.upsert_search_attributes({"OrderStage": "packing"})
        await workflow.execute_activity(reserve_stock, order, start_to_close_timeout=TIMEOUT)
        await workflow.execute_activity(ship, order, start_to_close_timeout=TIMEOUT)
        workflow.upsert_search_attributes({"OrderStage": "shipped"})
        return {}


async def test_the_recorded_history_holds_the_upserts_and_replays() -> None:
    history = reviewed_history()
    upserts = [
        e.attributes["search_attributes"]["indexed_fields"]
        for e in history.events
        if e.event_type == "UpsertWorkflowSearchAttributes"
    ]
    assert [sorted(u) for u in upserts] == [["OrderStage"], ["OrderStage"], ["OrderStage", "ShippedAt"]]
    assert [u["OrderStage"]["keyword_value"] for u in upserts] == ["review", "packing", "shipped"]
    await Replayer(workflows=[OrderFulfillment]).replay_workflow(history)


async def test_changed_values_replay_but_a_changed_set_of_names_does_not() -> None:
    await Replayer(workflows=[RelabelledStages]).replay_workflow(reviewed_history())
    with pytest.raises(NonDeterminismError) as error:
        await Replayer(workflows=[NoLongerRecordsShippedAt]).replay_workflow(reviewed_history())
    assert "UpsertWorkflowSearchAttributes(names='OrderStage,ShippedAt')" in str(error.value)
    assert "UpsertWorkflowSearchAttributes(names='OrderStage')" in str(error.value)
