"""An expense approval: the workflow asks approvers, then waits for a person.

- ``approve`` / ``reject`` are signals: whoever decides sends one (``handle.signal``,
  ``flowforge workflow signal``); the first decision wins, later ones are ignored.
- ``status`` is a query: anyone can ask where the request stands at any time, even
  after it closed (``handle.query``, ``flowforge workflow query``).
- Nobody deciding within ``approval_timeout_seconds`` ends the request as expired:
  ``workflow.wait_condition(..., timeout=...)`` is a durable timer, so the deadline
  holds across worker and server restarts.
"""

from __future__ import annotations

import dataclasses
from datetime import timedelta

from flowforge import activity, workflow

TASK_QUEUE = "approval"
_ACTIVITY_TIMEOUT = timedelta(seconds=30)


@dataclasses.dataclass
class ExpenseRequest:
    """What an employee asks to be paid."""

    request_id: str
    requester: str
    amount: float
    description: str
    approval_timeout_seconds: float = 3600.0


@dataclasses.dataclass
class Decision:
    """A person's verdict on a request."""

    approved: bool
    by: str
    reason: str = ""


@dataclasses.dataclass
class ApprovalStatus:
    """Where a request stands: what the ``status`` query answers."""

    stage: str
    """``notifying``, ``awaiting decision``, ``paying``, ``paid``, ``rejected`` or ``expired``."""
    decision: Decision | None = None
    payment_id: str = ""


@activity.defn
async def notify_approvers(request: ExpenseRequest) -> str:
    """Tells the approvers a request waits for them (a real one would send mail or chat)."""
    return f"approvers notified of {request.request_id} ({request.amount:.2f} for {request.description})"


@activity.defn
async def pay_out(request: ExpenseRequest) -> str:
    """Pays the requester; idempotent by request id in a real payment system."""
    return f"pay_{request.request_id}"


@activity.defn
async def notify_requester(request: ExpenseRequest, outcome: str) -> str:
    """Tells the requester how it ended."""
    return f"{request.requester} told: {outcome}"


@workflow.defn
class ExpenseApproval:
    """One expense request from submission to payment, rejection or expiry."""

    def __init__(self) -> None:
        self._status = ApprovalStatus(stage="notifying")

    @workflow.run
    async def run(self, request: ExpenseRequest) -> ApprovalStatus:
        await workflow.execute_activity(notify_approvers, request, start_to_close_timeout=_ACTIVITY_TIMEOUT)
        self._status.stage = "awaiting decision"
        try:
            await workflow.wait_condition(
                lambda: self._status.decision is not None,
                timeout=timedelta(seconds=request.approval_timeout_seconds),
            )
        except TimeoutError:
            self._status.stage = "expired"
        else:
            assert self._status.decision is not None
            if self._status.decision.approved:
                self._status.stage = "paying"
                self._status.payment_id = await workflow.execute_activity(
                    pay_out, request, start_to_close_timeout=_ACTIVITY_TIMEOUT
                )
                self._status.stage = "paid"
            else:
                self._status.stage = "rejected"
        await workflow.execute_activity(
            notify_requester, args=[request, self._status.stage], start_to_close_timeout=_ACTIVITY_TIMEOUT
        )
        return self._status

    @workflow.signal
    def approve(self, approver: str) -> None:
        """Approves the request, unless someone decided already."""
        if self._status.decision is None:
            self._status.decision = Decision(approved=True, by=approver)

    @workflow.signal
    def reject(self, approver: str, reason: str) -> None:
        """Rejects the request, unless someone decided already."""
        if self._status.decision is None:
            self._status.decision = Decision(approved=False, by=approver, reason=reason)

    @workflow.query
    def status(self) -> ApprovalStatus:
        """Where the request stands."""
        return self._status


ACTIVITIES = [notify_approvers, pay_out, notify_requester]
