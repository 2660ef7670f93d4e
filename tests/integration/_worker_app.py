"""Workflows and activities the integration tests run in worker processes.

Activities append what they do to a ledger file (``FLOWFORGE_TEST_LEDGER``), one
JSON line per event, so tests can see attempts, idempotency keys and side effects
across kill -9 of any process.

    python -m tests.integration._worker_app ADDRESS TASK_QUEUE
"""

from __future__ import annotations

import asyncio
import base64
import logging
import sys
from datetime import timedelta

from flowforge import Client, RetryPolicy, activity, workflow
from flowforge.worker import Worker
from tests.integration._processes import record
from testsupport.task_transport import task_transport


@activity.defn
async def ledger_step(params: dict) -> dict:
    """Records its start; blocks forever on attempt 1 if asked (to be killed there)."""
    info = activity.info()
    record(
        event="start",
        key=params["key"],
        attempt=info.attempt,
        idempotency_key=info.idempotency_key,
        task_token=base64.b64encode(info.task_token).decode(),
    )
    if params.get("block_first_attempt") and info.attempt == 1:
        await asyncio.Event().wait()
    await asyncio.sleep(params.get("seconds", 0))
    record(event="done", key=params["key"], attempt=info.attempt, idempotency_key=info.idempotency_key)
    return {"key": params["key"], "attempt": info.attempt}


@workflow.defn
class OneStep:
    """One activity with a short start-to-close timeout, retried quickly."""

    @workflow.run
    async def run(self, params: dict) -> dict:
        return await workflow.execute_activity(
            ledger_step,
            params,
            start_to_close_timeout=timedelta(seconds=params.get("start_to_close", 3)),
            retry_policy=RetryPolicy(initial_interval=timedelta(milliseconds=200)),
        )


@workflow.defn
class StepTimerStep:
    """An activity, a durable timer, another activity: in flight in every way."""

    @workflow.run
    async def run(self, params: dict) -> list:
        first = await workflow.execute_activity(
            ledger_step,
            {**params, "key": params["key"] + "/1"},
            start_to_close_timeout=timedelta(seconds=10),
            retry_policy=RetryPolicy(initial_interval=timedelta(milliseconds=200)),
        )
        await workflow.sleep(timedelta(seconds=params.get("timer_seconds", 1)))
        second = await workflow.execute_activity(
            ledger_step,
            {**params, "key": params["key"] + "/2"},
            start_to_close_timeout=timedelta(seconds=10),
            retry_policy=RetryPolicy(initial_interval=timedelta(milliseconds=200)),
        )
        return [first, second]


@workflow.defn
class ManySteps:
    """``steps`` activities one after another: many workflow tasks of one run."""

    @workflow.run
    async def run(self, params: dict) -> list:
        results = []
        for i in range(params["steps"]):
            results.append(
                await workflow.execute_activity(
                    ledger_step,
                    {**params, "key": f"{params['key']}/{i}"},
                    start_to_close_timeout=timedelta(seconds=params.get("start_to_close", 10)),
                    retry_policy=RetryPolicy(initial_interval=timedelta(milliseconds=200)),
                )
            )
        return results


WORKFLOWS = [OneStep, StepTimerStep, ManySteps]
ACTIVITIES = [ledger_step]


async def main(address: str, task_queue: str) -> None:
    client = await Client.connect(address)
    worker = Worker(
        client,
        task_queue=task_queue,
        workflows=WORKFLOWS,
        activities=ACTIVITIES,
        graceful_shutdown_timeout=timedelta(seconds=20),
        task_transport=task_transport(),
    )
    await worker.run()


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    asyncio.run(main(sys.argv[1], sys.argv[2]))
