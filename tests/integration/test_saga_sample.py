"""samples/saga end to end on both stores: a booking that succeeds reserves everything
once; one that fails undoes what it reserved in reverse order; a group trip runs one
child saga per traveller and reports failed children through ChildWorkflowError."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from flowforge import Client, WorkflowExecutionStatus
from flowforge.exceptions import ActivityError, ApplicationError, WorkflowFailureError
from samples.saga.workflows import ACTIVITIES, LEDGER, TASK_QUEUE, WORKFLOWS, BookGroupTrip, BookTrip
from tests.integration._reliability import events, fast_worker, of_type

ROOT = Path(__file__).resolve().parents[2]


async def test_a_failed_step_undoes_the_reserved_ones_in_reverse_and_a_group_trip_reports_each_child(
    sdk_client: Client,
) -> None:
    LEDGER.clear()
    async with fast_worker(sdk_client, TASK_QUEUE, workflows=WORKFLOWS, activities=ACTIVITIES):
        ok = await sdk_client.start_workflow(BookTrip.run, {"traveller": "ada"}, id="trip-ada", task_queue=TASK_QUEUE)
        assert await ok.result() == {
            "traveller": "ada",
            "reservations": {"car": "car-ada", "hotel": "hotel-ada", "flight": "flight-ada"},
        }
        doomed = await sdk_client.start_workflow(
            BookTrip.run, {"traveller": "grace", "fail_at": "flight"}, id="trip-grace", task_queue=TASK_QUEUE
        )
        with pytest.raises(WorkflowFailureError) as failure:
            await doomed.result()
        group = await sdk_client.start_workflow(
            BookGroupTrip.run,
            [{"traveller": "alan"}, {"traveller": "edsger", "fail_at": "hotel"}],
            id="group",
            task_queue=TASK_QUEUE,
        )
        group_result = await group.result()

    error = failure.value.cause
    assert isinstance(error, ApplicationError) and error.type == "BookingFailed"
    assert list(error.details) == [["hotel", "car"]]
    assert isinstance(error.__cause__, ActivityError) and error.__cause__.activity_type == "reserve_flight"
    grace = [(operation, step) for operation, step, traveller in LEDGER if traveller == "grace"]
    assert grace == [
        ("reserve", "car"),
        ("reserve", "hotel"),
        ("reserve", "flight"),
        ("cancel", "hotel"),
        ("cancel", "car"),
    ]
    assert [(o, s) for o, s, t in LEDGER if t == "ada"] == [
        ("reserve", "car"),
        ("reserve", "hotel"),
        ("reserve", "flight"),
    ]
    scheduled = [e.attributes["activity_type"] for e in of_type(await events(doomed), "ActivityTaskScheduled")]
    assert scheduled == ["reserve_car", "reserve_hotel", "reserve_flight", "cancel_hotel", "cancel_car"]

    assert group_result["booked"] == {"alan": {"car": "car-alan", "hotel": "hotel-alan", "flight": "flight-alan"}}
    assert "booking for edsger failed; undid ['car']" in group_result["failed"]["edsger"]
    assert [(o, s) for o, s, t in LEDGER if t == "edsger"] == [
        ("reserve", "car"),
        ("reserve", "hotel"),
        ("cancel", "car"),
    ]
    children = of_type(await events(group), "ChildWorkflowExecutionCompleted", "ChildWorkflowExecutionFailed")
    assert sorted(e.event_type for e in children) == ["ChildWorkflowExecutionCompleted", "ChildWorkflowExecutionFailed"]
    child = await sdk_client.get_workflow_handle("group-edsger").describe()
    assert child.status is WorkflowExecutionStatus.FAILED and child.parent_workflow_id == "group"


def test_the_demo_runs_in_one_command() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "samples.saga.demo"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert "Failed, compensated: booking for grace failed; undid ['hotel', 'car']" in result.stdout
    assert '"failed": {"edsger"' in result.stdout
