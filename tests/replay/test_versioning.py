"""Versioning with workflow.patched / deprecate_patch, checked against committed histories.

Each history in tests/replay/histories/shipping-*.json was recorded by a worker
running one version of the Shipping workflow (tests/replay/shipping.py); the
tests replay each against each later version, as a rolling deploy would.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from flowforge.client import WorkflowHistory
from flowforge.exceptions import NonDeterminismError
from flowforge.testing import Replayer
from tests.replay import shipping

HISTORIES = Path(__file__).parent / "histories"


def load(name: str) -> WorkflowHistory:
    return WorkflowHistory.from_json((HISTORIES / f"{name}.json").read_text())


def _scheduled_activities(history: WorkflowHistory) -> list[str]:
    return [e.attributes["activity_type"] for e in history.events if e.event_type == "ActivityTaskScheduled"]


def _patch_markers(history: WorkflowHistory) -> list[dict]:
    return [e.attributes for e in history.events if e.event_type == "MarkerRecorded"]


def test_the_histories_show_each_version_took_its_branch() -> None:
    assert _scheduled_activities(load("shipping-before-patch")) == ["book_standard", "await_pickup"]
    assert _patch_markers(load("shipping-before-patch")) == []
    for name in ("shipping-patched", "shipping-patch-deprecated"):
        assert _scheduled_activities(load(name)) == ["book_express", "await_pickup"]
        (marker,) = _patch_markers(load(name))
        assert marker["marker_name"] == "patch"


async def test_patched_code_replays_a_history_recorded_before_the_patch_on_the_old_branch() -> None:
    await Replayer(workflows=[shipping.Shipping]).replay_workflow(load("shipping-before-patch"))


async def test_patched_code_replays_a_history_it_recorded_on_the_new_branch() -> None:
    await Replayer(workflows=[shipping.Shipping]).replay_workflow(load("shipping-patched"))


@pytest.mark.parametrize("history", ["shipping-patched", "shipping-patch-deprecated"])
async def test_deprecate_patch_replays_histories_that_recorded_the_patch(history: str) -> None:
    await Replayer(workflows=[shipping.ShippingPatchDeprecated]).replay_workflow(load(history))


async def test_deprecate_patch_cannot_replay_a_history_of_the_code_before_the_patch() -> None:
    with pytest.raises(NonDeterminismError) as raised:
        await Replayer(workflows=[shipping.ShippingPatchDeprecated]).replay_workflow(load("shipping-before-patch"))
    assert "book_standard" in str(raised.value) and "book_express" in str(raised.value)


async def test_removing_a_deprecated_patch_replays_histories_that_recorded_it_deprecated() -> None:
    await Replayer(workflows=[shipping.ShippingPatchRemoved]).replay_workflow(load("shipping-patch-deprecated"))


async def test_removing_a_patch_before_deprecating_it_fails_on_histories_that_recorded_it() -> None:
    with pytest.raises(NonDeterminismError) as raised:
        await Replayer(workflows=[shipping.ShippingPatchRemoved]).replay_workflow(load("shipping-patched"))
    assert "MarkerRecorded(patch_id='express-shipping')" in str(raised.value)


async def test_the_code_before_the_patch_cannot_replay_a_history_that_took_the_new_branch() -> None:
    with pytest.raises(NonDeterminismError) as raised:
        await Replayer(workflows=[shipping.ShippingBeforePatch]).replay_workflow(load("shipping-patched"))
    assert "MarkerRecorded(patch_id='express-shipping')" in str(raised.value)
