"""A trip booking as a saga: reserve a car, a hotel and a flight; if a step fails,
undo the steps that succeeded, in reverse order, with compensating activities.

    BookTrip:       reserve_car -> reserve_hotel -> reserve_flight
                    on failure: ... cancel_hotel -> cancel_car (only what was reserved)
    BookGroupTrip:  one BookTrip child workflow per traveller, in parallel; a
                    traveller whose booking failed shows up as a ChildWorkflowError

A request names a step to fail (``"fail_at": "flight"``) so the compensation path
can be seen; the reservation service is simulated and records every call in
``LEDGER`` (process-local), so tests can check what was reserved and undone.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

from flowforge import RetryPolicy, activity, workflow
from flowforge.exceptions import ActivityError, ApplicationError, ChildWorkflowError

TASK_QUEUE = "saga"
STEPS = ("car", "hotel", "flight")
TIMEOUT = timedelta(seconds=30)

#: Every call the simulated reservation service received: (operation, step, traveller).
LEDGER: list[tuple[str, str, str]] = []


async def _reserve(step: str, request: dict[str, Any]) -> str:
    LEDGER.append(("reserve", step, request["traveller"]))
    if request.get("fail_at") == step:
        raise ApplicationError(f"no {step} available for {request['traveller']}", type="SoldOut", non_retryable=True)
    return f"{step}-{request['traveller']}"


async def _cancel(step: str, reservation: str) -> None:
    LEDGER.append(("cancel", step, reservation.removeprefix(f"{step}-")))


@activity.defn
async def reserve_car(request: dict) -> str:
    return await _reserve("car", request)


@activity.defn
async def reserve_hotel(request: dict) -> str:
    return await _reserve("hotel", request)


@activity.defn
async def reserve_flight(request: dict) -> str:
    return await _reserve("flight", request)


@activity.defn
async def cancel_car(reservation: str) -> None:
    await _cancel("car", reservation)


@activity.defn
async def cancel_hotel(reservation: str) -> None:
    await _cancel("hotel", reservation)


@activity.defn
async def cancel_flight(reservation: str) -> None:
    await _cancel("flight", reservation)


ACTIVITIES = [reserve_car, reserve_hotel, reserve_flight, cancel_car, cancel_hotel, cancel_flight]
_STEPS = {
    "car": (reserve_car, cancel_car),
    "hotel": (reserve_hotel, cancel_hotel),
    "flight": (reserve_flight, cancel_flight),
}


@workflow.defn
class BookTrip:
    """Books car, hotel and flight for one traveller, or none of them."""

    @workflow.run
    async def run(self, request: dict) -> dict:
        reserved: list[tuple[str, str]] = []  # (step, reservation), in booking order
        try:
            for step in STEPS:
                reserve, _ = _STEPS[step]
                reservation = await workflow.execute_activity(
                    reserve, request, start_to_close_timeout=TIMEOUT, retry_policy=RetryPolicy(maximum_attempts=3)
                )
                reserved.append((step, reservation))
        except ActivityError as error:
            # Compensate in reverse; compensations retry until they succeed.
            for step, reservation in reversed(reserved):
                _, cancel = _STEPS[step]
                await workflow.execute_activity(cancel, reservation, start_to_close_timeout=TIMEOUT)
            undone = [step for step, _ in reversed(reserved)]
            raise ApplicationError(
                f"booking for {request['traveller']} failed; undid {undone or 'nothing'}",
                undone,
                type="BookingFailed",
                non_retryable=True,
            ) from error
        return {"traveller": request["traveller"], "reservations": dict(reserved)}


@workflow.defn
class BookGroupTrip:
    """Books a trip for each traveller as a child workflow; reports who got one."""

    @workflow.run
    async def run(self, requests: list) -> dict:
        group = workflow.info().workflow_id
        outcomes = await asyncio.gather(
            *(
                workflow.execute_child_workflow(BookTrip.run, request, id=f"{group}-{request['traveller']}")
                for request in requests
            ),
            return_exceptions=True,
        )
        booked, failed = {}, {}
        for request, outcome in zip(requests, outcomes, strict=False):
            if isinstance(outcome, ChildWorkflowError):
                failed[request["traveller"]] = str(outcome.cause)
            elif isinstance(outcome, BaseException):
                raise outcome
            else:
                booked[request["traveller"]] = outcome["reservations"]
        return {"booked": booked, "failed": failed}


WORKFLOWS = [BookTrip, BookGroupTrip]
