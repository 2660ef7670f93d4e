"""The workflows, activities and side-effect ledger of the chaos suite.

Worker processes run this module (``python -m tests.chaos._chaos_app ADDRESS``);
the driver imports it for the workflow classes, the spec helpers and the ledger.

The ledger
----------
A SQLite file (``FLOWFORGE_CHAOS_LEDGER``) shared by every worker process. Each
activity attempt records itself in ``attempts`` when it starts and marks how it
ended. An attempt that succeeds applies its side effect in **one transaction**:
``INSERT OR IGNORE`` into ``effects`` keyed by ``activity.info().idempotency_key``
and, only if that row is new, adds the activity's ``amount`` to its workflow's
balance. A re-run of an activity whose earlier attempt applied the effect but was
killed before reporting finds the row and returns it unchanged (a "deduplicated"
attempt). So the effect is applied once per key by construction, and what the suite
checks is what the product must provide for that to mean "once per activity": the
key is the same on every attempt of an activity and differs between activities, a
completed activity's effect exists and is the one its recorded result names, and a
failed one has none.

Deterministic failures
----------------------
Whether an attempt raises is a function of the activity's input and the attempt
number only (:func:`attempt_fails`), so the terminal state of every execution is
known from its input (:func:`expected_statuses`) however the kills fall.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import sqlite3
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

from flowforge import Client, RetryPolicy, activity, workflow
from flowforge.exceptions import ActivityError, ApplicationError
from flowforge.worker import Worker
from testsupport.task_transport import task_transport

TASK_QUEUE = "chaos"
LEDGER_ENV = "FLOWFORGE_CHAOS_LEDGER"

# --------------------------------------------------------------------------- the ledger

_SCHEMA = """
CREATE TABLE IF NOT EXISTS attempts (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    idempotency_key TEXT NOT NULL,
    workflow_id TEXT NOT NULL,
    run_id TEXT NOT NULL,
    activity_id TEXT NOT NULL,
    activity_type TEXT NOT NULL,
    step_key TEXT NOT NULL,
    attempt INTEGER NOT NULL,
    pid INTEGER NOT NULL,
    started_at REAL NOT NULL,
    outcome TEXT NOT NULL DEFAULT 'running'   -- running (never finished: killed), raised, applied, deduplicated, cancelled
);
CREATE TABLE IF NOT EXISTS effects (
    idempotency_key TEXT PRIMARY KEY,
    workflow_id TEXT NOT NULL,
    run_id TEXT NOT NULL,
    activity_id TEXT NOT NULL,
    step_key TEXT NOT NULL,
    amount INTEGER NOT NULL,
    attempt INTEGER NOT NULL,
    attempt_row INTEGER NOT NULL,
    pid INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS balances (
    workflow_id TEXT PRIMARY KEY,
    balance INTEGER NOT NULL,
    applications INTEGER NOT NULL
);
"""


class Ledger:
    """The shared side-effect ledger (see the module docstring)."""

    def __init__(self, path: Path | str) -> None:
        self.path = str(path)

    def _connect(self) -> sqlite3.Connection:
        # Autocommit mode: transactions are the explicit BEGIN IMMEDIATE ... COMMIT below.
        connection = sqlite3.connect(self.path, timeout=60, isolation_level=None)
        connection.execute("PRAGMA busy_timeout = 60000")
        return connection

    def create(self) -> None:
        connection = self._connect()
        try:
            connection.execute("PRAGMA journal_mode = WAL")
            connection.executescript(_SCHEMA)
        finally:
            connection.close()

    def record_attempt(self, info: activity.Info, step_key: str) -> int:
        connection = self._connect()
        try:
            cursor = connection.execute(
                "INSERT INTO attempts (idempotency_key, workflow_id, run_id, activity_id, activity_type, step_key,"
                " attempt, pid, started_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    info.idempotency_key,
                    info.workflow_id,
                    info.run_id,
                    info.activity_id,
                    info.activity_type,
                    step_key,
                    info.attempt,
                    os.getpid(),
                    time.time(),
                ),
            )
            return int(cursor.lastrowid or 0)
        finally:
            connection.close()

    def mark(self, attempt_row: int, outcome: str) -> None:
        connection = self._connect()
        try:
            connection.execute("UPDATE attempts SET outcome = ? WHERE id = ?", (outcome, attempt_row))
        finally:
            connection.close()

    def apply_effect(self, info: activity.Info, step_key: str, amount: int, attempt_row: int) -> dict[str, Any]:
        """Applies the effect once per idempotency key; returns the effect that holds."""
        connection = self._connect()
        try:
            connection.execute("BEGIN IMMEDIATE")
            inserted = (
                connection.execute(
                    "INSERT OR IGNORE INTO effects (idempotency_key, workflow_id, run_id, activity_id, step_key, amount,"
                    " attempt, attempt_row, pid) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        info.idempotency_key,
                        info.workflow_id,
                        info.run_id,
                        info.activity_id,
                        step_key,
                        amount,
                        info.attempt,
                        attempt_row,
                        os.getpid(),
                    ),
                ).rowcount
                == 1
            )
            if inserted:
                connection.execute(
                    "INSERT INTO balances (workflow_id, balance, applications) VALUES (?, ?, 1)"
                    " ON CONFLICT (workflow_id) DO UPDATE SET balance = balance + excluded.balance,"
                    " applications = applications + 1",
                    (info.workflow_id, amount),
                )
            attempt, row = connection.execute(
                "SELECT attempt, attempt_row FROM effects WHERE idempotency_key = ?", (info.idempotency_key,)
            ).fetchone()
            connection.execute(
                "UPDATE attempts SET outcome = ? WHERE id = ?",
                ("applied" if inserted else "deduplicated", attempt_row),
            )
            connection.execute("COMMIT")
            return {"step": step_key, "effect_attempt": attempt, "effect_row": row}
        except BaseException:
            if connection.in_transaction:
                connection.execute("ROLLBACK")
            raise
        finally:
            connection.close()

    def rows(self, table: str) -> list[dict[str, Any]]:
        connection = self._connect()
        connection.row_factory = sqlite3.Row
        try:
            return [dict(row) for row in connection.execute(f"SELECT * FROM {table} ORDER BY rowid")]
        finally:
            connection.close()


def _ledger() -> Ledger:
    return Ledger(os.environ[LEDGER_ENV])


# --------------------------------------------------------------------------- deterministic failures


def _hash100(*parts: object) -> int:
    return int(hashlib.sha256(":".join(map(str, parts)).encode()).hexdigest(), 16) % 100


def attempt_fails(params: dict[str, Any], attempt: int) -> bool:
    """Whether attempt ``attempt`` of the step ``params`` raises (a retryable error).

    - ``fail_until: k``: attempts 1 .. k-1 fail;
    - ``flaky_pct: p, flaky_cap: c``: attempts below ``c`` fail when
      ``hash(key, attempt) % 100 < p`` (random-looking, but fixed by the input);
    - ``always_fail``: every attempt fails.
    """
    if params.get("always_fail"):
        return True
    if attempt < params.get("fail_until", 1):
        return True
    return attempt < params.get("flaky_cap", 0) and _hash100(params["key"], attempt) < params.get("flaky_pct", 0)


def step_amount(step_key: str) -> int:
    """The amount a step adds to its workflow's balance (fixed by its key)."""
    return 1 + _hash100("amount", step_key)


# --------------------------------------------------------------------------- activities


async def _perform(params: dict[str, Any]) -> dict[str, Any]:
    """One attempt of a ledger step: work, maybe fail (as the input says), apply the effect once."""
    info = activity.info()
    ledger = _ledger()
    row = await asyncio.to_thread(ledger.record_attempt, info, params["key"])
    work = float(params.get("work", 0.1))
    try:
        await asyncio.sleep(work * 0.4)
        if params.get("non_retryable"):
            await asyncio.to_thread(ledger.mark, row, "raised")
            raise ApplicationError(f"step {params['key']} declined", type="Declined", non_retryable=True)
        if attempt_fails(params, info.attempt):
            await asyncio.to_thread(ledger.mark, row, "raised")
            raise ApplicationError(f"step {params['key']} failed on attempt {info.attempt}", type="Flaky")
        effect = await asyncio.to_thread(ledger.apply_effect, info, params["key"], step_amount(params["key"]), row)
        # A kill in this window leaves an applied effect unreported: the re-run deduplicates.
        await asyncio.sleep(work * 0.6)
        return effect
    except asyncio.CancelledError:
        await asyncio.to_thread(ledger.mark, row, "cancelled")
        raise


def _perform_sync(params: dict[str, Any]) -> dict[str, Any]:
    """The same as :func:`_perform`, for a synchronous activity (run on the worker's thread pool)."""
    info = activity.info()
    ledger = _ledger()
    row = ledger.record_attempt(info, params["key"])
    work = float(params.get("work", 0.1))
    time.sleep(work * 0.4)
    if attempt_fails(params, info.attempt):
        ledger.mark(row, "raised")
        raise ApplicationError(f"step {params['key']} failed on attempt {info.attempt}", type="Flaky")
    effect = ledger.apply_effect(info, params["key"], step_amount(params["key"]), row)
    time.sleep(work * 0.6)
    return effect


@activity.defn
async def create_customer(params: dict) -> dict:
    return await _perform(params)


@activity.defn
async def verify_identity(params: dict) -> dict:
    return await _perform(params)


@activity.defn
async def score_risk(params: dict) -> dict:
    return await _perform(params)


@activity.defn
def fetch_credit_file(params: dict) -> dict:
    return _perform_sync(params)


@activity.defn
async def enrich_customer(params: dict) -> dict:
    return await _perform(params)


@activity.defn
async def send_notification(params: dict) -> dict:
    return await _perform(params)


@activity.defn
async def charge(params: dict) -> dict:
    return await _perform(params)


@activity.defn
async def refund(params: dict) -> dict:
    return await _perform(params)


@activity.defn
async def wait_for_cancel(params: dict) -> dict:
    """Heartbeats until cancelled; never applies an effect."""
    info = activity.info()
    ledger = _ledger()
    row = await asyncio.to_thread(ledger.record_attempt, info, params["key"])
    try:
        while True:
            activity.heartbeat(info.attempt)
            await asyncio.sleep(0.3)
    except asyncio.CancelledError:
        await asyncio.to_thread(ledger.mark, row, "cancelled")
        raise


ACTIVITIES = [
    create_customer,
    verify_identity,
    score_risk,
    fetch_credit_file,
    enrich_customer,
    send_notification,
    charge,
    refund,
    wait_for_cancel,
]


# --------------------------------------------------------------------------- workflows


def _options(spec: dict[str, Any], *, maximum_attempts: int = 0) -> dict[str, Any]:
    return {
        "start_to_close_timeout": timedelta(seconds=spec.get("start_to_close", 5)),
        "retry_policy": RetryPolicy(
            initial_interval=timedelta(milliseconds=100),
            backoff_coefficient=2.0,
            maximum_interval=timedelta(seconds=1),
            maximum_attempts=maximum_attempts,
        ),
    }


@workflow.defn
class ChaosOnboarding:
    """The onboarding DAG (create -> three checks in parallel -> enrich -> cooling-off timer -> notify)."""

    @workflow.run
    async def run(self, spec: dict) -> dict:
        steps, options = spec["steps"], _options(spec)
        created = await workflow.execute_activity(create_customer, steps["create"], **options)
        checks = await asyncio.gather(
            workflow.execute_activity(verify_identity, steps["verify"], **options),
            workflow.execute_activity(score_risk, steps["risk"], **options),
            workflow.execute_activity(fetch_credit_file, steps["credit"], **options),
        )
        enriched = await workflow.execute_activity(enrich_customer, steps["enrich"], **options)
        await workflow.sleep(timedelta(seconds=spec["cooling_off"]))
        notified = await workflow.execute_activity(send_notification, steps["notify"], **options)
        return {"effects": [created, *checks, enriched, notified]}


@workflow.defn
class TimerChain:
    """Steps and durable timers interleaved, a timer racing two steps in the middle."""

    @workflow.run
    async def run(self, spec: dict) -> dict:
        steps, timers, options = spec["steps"], spec["timers"], _options(spec)
        first = await workflow.execute_activity(charge, steps[0], **options)
        await workflow.sleep(timedelta(seconds=timers[0]))
        second, third, _ = await asyncio.gather(
            workflow.execute_activity(charge, steps[1], **options),
            workflow.execute_activity(charge, steps[2], **options),
            workflow.sleep(timedelta(seconds=timers[1])),
        )
        await workflow.sleep(timedelta(seconds=timers[2]))
        last = await workflow.execute_activity(charge, steps[3], **options)
        return {"effects": [first, second, third, last]}


@workflow.defn
class RetryUntilSuccess:
    """One step that fails its first attempts (as its input says); unlimited retries."""

    @workflow.run
    async def run(self, spec: dict) -> dict:
        return {"effects": [await workflow.execute_activity(charge, spec["steps"][0], **_options(spec))]}


@workflow.defn
class ExhaustRetries:
    """A step that always fails, with ``maximum_attempts``: the workflow FAILS."""

    @workflow.run
    async def run(self, spec: dict) -> dict:
        options = _options(spec, maximum_attempts=spec["maximum_attempts"])
        return {"effects": [await workflow.execute_activity(charge, spec["steps"][0], **options)]}


@workflow.defn
class NonRetryable:
    """A step that succeeds, then one that fails non-retryably: the workflow FAILS."""

    @workflow.run
    async def run(self, spec: dict) -> dict:
        options = _options(spec)
        first = await workflow.execute_activity(charge, spec["steps"][0], **options)
        second = await workflow.execute_activity(charge, spec["steps"][1], **options)
        return {"effects": [first, second]}


@workflow.defn
class Compensate:
    """A charge declined non-retryably, caught, and compensated by a refund: COMPLETED."""

    @workflow.run
    async def run(self, spec: dict) -> dict:
        options = _options(spec)
        try:
            await workflow.execute_activity(charge, spec["steps"][0], **options)
        except ActivityError:
            refunded = await workflow.execute_activity(refund, spec["steps"][1], **options)
            return {"effects": [refunded]}
        raise ApplicationError("the declined charge succeeded", non_retryable=True)


@workflow.defn
class CancelLong:
    """A step, then a wait that only a cancellation ends (a 1 h timer, or an activity
    that heartbeats until cancelled). Lets CancelledError propagate: CANCELED."""

    @workflow.run
    async def run(self, spec: dict) -> dict:
        options = _options(spec)
        await workflow.execute_activity(charge, spec["steps"][0], **options)
        if spec["wait"] == "timer":
            await workflow.sleep(timedelta(hours=1))
        else:
            await workflow.execute_activity(
                wait_for_cancel,
                spec["steps"][1],
                start_to_close_timeout=timedelta(hours=1),
                heartbeat_timeout=timedelta(seconds=3),
                retry_policy=options["retry_policy"],
            )
        raise ApplicationError("the wait ended without a cancellation", non_retryable=True)


@workflow.defn
class CancelRace:
    """Short work that a cancellation may or may not catch: CANCELED, or COMPLETED
    if it closed before the cancellation was requested."""

    @workflow.run
    async def run(self, spec: dict) -> dict:
        options = _options(spec)
        first = await workflow.execute_activity(charge, spec["steps"][0], **options)
        await workflow.sleep(timedelta(seconds=spec["timers"][0]))
        second = await workflow.execute_activity(charge, spec["steps"][1], **options)
        return {"effects": [first, second]}


WORKFLOWS = [
    ChaosOnboarding,
    TimerChain,
    RetryUntilSuccess,
    ExhaustRetries,
    NonRetryable,
    Compensate,
    CancelLong,
    CancelRace,
]

KINDS = {cls.__name__: cls for cls in WORKFLOWS}

# What each kind ends as, given that the driver cancels exactly the kinds in CANCELLED_KINDS.
EXPECTED_STATUS = {
    "ChaosOnboarding": "COMPLETED",
    "TimerChain": "COMPLETED",
    "RetryUntilSuccess": "COMPLETED",
    "ExhaustRetries": "FAILED",
    "NonRetryable": "FAILED",
    "Compensate": "COMPLETED",
    "CancelLong": "CANCELED",
    "CancelRace": "CANCELED",  # or COMPLETED if it closed before the cancellation was requested
}
CANCELLED_KINDS = ("CancelLong", "CancelRace")
# The retry_state of the activity outcome that fails the workflow, for FAILED kinds.
EXPECTED_FAILURE_RETRY_STATE = {"ExhaustRetries": "MAXIMUM_ATTEMPTS_REACHED", "NonRetryable": "NON_RETRYABLE_FAILURE"}


# --------------------------------------------------------------------------- the worker process


async def main(address: str, task_queue: str) -> None:
    client = await Client.connect(address, connect_timeout=timedelta(seconds=60))
    worker = Worker(
        client,
        task_queue=task_queue,
        workflows=WORKFLOWS,
        activities=ACTIVITIES,
        graceful_shutdown_timeout=timedelta(seconds=5),
        task_transport=task_transport(),
    )
    await worker.run()


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(process)d %(levelname)s %(name)s %(message)s")
    asyncio.run(main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else TASK_QUEUE))
