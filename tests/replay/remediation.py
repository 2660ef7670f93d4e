"""A workflow operators remediate, for the replay tests (docs/operations.md).

``Reconcile`` fetches an account's ledger with ``dead_letter=True`` while a timer runs
beside it and signals may come in. ``python -m tests.replay.record remediation`` records
one execution whose activity was parked and retried after the fix, one whose parked
activity was discarded (the workflow handles the ``ActivityError``), and the new run of
an execution reset to its first workflow task while its activity was parked (its
signal re-delivered, the activity run again once the service is back), and one paused
while its signal arrived, then unpaused.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

from flowforge import RetryPolicy, activity, workflow
from flowforge.exceptions import ActivityError, ApplicationError

TASK_QUEUE = "remediation"
#: Accounts whose ledger service is reachable: fetch_ledger succeeds for them.
REACHABLE: set[str] = set()


@activity.defn
async def fetch_ledger(account: str) -> int:
    if account not in REACHABLE:
        raise ApplicationError(f"ledger service unreachable for {account}", type="LedgerDown")
    return 100 * activity.info().attempt


ACTIVITIES = [fetch_ledger]


@workflow.defn
class Reconcile:
    """Reconciles one account; parks the ledger fetch when the service is down."""

    def __init__(self) -> None:
        self.notes: list[str] = []
        self.reminded = False

    @workflow.run
    async def run(self, account: str) -> dict:
        async def remind() -> None:
            await asyncio.sleep(0.2)
            self.reminded = True

        reminder = asyncio.ensure_future(remind())
        try:
            total = await workflow.execute_activity(
                fetch_ledger,
                account,
                start_to_close_timeout=timedelta(seconds=30),
                retry_policy=RetryPolicy(initial_interval=timedelta(milliseconds=10), maximum_attempts=2),
                dead_letter=True,
            )
            outcome = f"reconciled {total}"
        except ActivityError as error:
            outcome = f"skipped: {error.cause}"
        await reminder
        return {"outcome": outcome, "notes": self.notes, "reminded": self.reminded}

    @workflow.signal
    def note(self, text: str) -> None:
        self.notes.append(text)
