"""The benchmark workloads written for Temporal's Python SDK (``temporalio``).

A line-for-line twin of ``samples.onboarding.workflows`` and of the one-activity
workflow in :mod:`benchmarks.onboarding`, so that both engines run the same code
shape. Kept in a module of its own that imports only the standard library and
``temporalio``, as Temporal's workflow sandbox re-imports workflow modules.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from datetime import timedelta

from temporalio import activity, workflow
from temporalio.common import RetryPolicy


def _ran(started: float) -> dict:
    return {"started_at": started, "finished_at": time.time()}


@activity.defn
async def create_customer(request: dict) -> dict:
    started = time.time()
    customer_id = "cus_" + hashlib.sha256(request["email"].encode()).hexdigest()[:12]
    return {
        "customer_id": customer_id,
        "name": request["name"],
        "email": request["email"],
        "work_seconds": request.get("work_seconds", 0.2),
        **_ran(started),
    }


@activity.defn
async def verify_identity(customer: dict) -> dict:
    started = time.time()
    await asyncio.sleep(customer.get("work_seconds", 0.2))
    return {"check": "identity", "verified": True, **_ran(started)}


@activity.defn
async def score_risk(customer: dict) -> dict:
    started = time.time()
    await asyncio.sleep(customer.get("work_seconds", 0.2))
    score = int(hashlib.sha256(customer["customer_id"].encode()).hexdigest(), 16) % 100
    return {"check": "risk", "score": score, **_ran(started)}


@activity.defn
def fetch_credit_file(customer: dict) -> dict:
    started = time.time()
    time.sleep(customer.get("work_seconds", 0.2))
    return {"check": "credit", "bureau": "example-bureau", "limit": 5000, **_ran(started)}


@activity.defn
async def enrich_customer(customer: dict, checks: list) -> dict:
    started = time.time()
    risk = next(c["score"] for c in checks if c["check"] == "risk")
    return {**customer, "tier": "gold" if risk < 50 else "standard", **_ran(started)}


@activity.defn
async def send_notification(customer: dict) -> dict:
    started = time.time()
    info = activity.info()
    return {
        "sent_to": customer["email"],
        "idempotency_key": f"{info.workflow_run_id}/{info.activity_id}",
        **_ran(started),
    }


@activity.defn
async def noop(value: int) -> int:
    return value


ACTIVITIES = [create_customer, verify_identity, score_risk, fetch_credit_file, enrich_customer, send_notification, noop]


@workflow.defn(name="Onboarding")
class Onboarding:
    @workflow.run
    async def run(self, request: dict) -> dict:
        timeout = timedelta(seconds=30)
        customer = await workflow.execute_activity(
            create_customer, request, start_to_close_timeout=timeout, retry_policy=RetryPolicy(maximum_attempts=5)
        )
        checks = await asyncio.gather(
            workflow.execute_activity(verify_identity, customer, start_to_close_timeout=timeout),
            workflow.execute_activity(score_risk, customer, start_to_close_timeout=timeout),
            workflow.execute_activity(fetch_credit_file, customer, start_to_close_timeout=timeout),
        )
        enriched = await workflow.execute_activity(
            enrich_customer, args=[customer, list(checks)], start_to_close_timeout=timeout
        )
        cooling_off = request.get("cooling_off_seconds", 1)
        if cooling_off > 0:
            await workflow.sleep(timedelta(seconds=cooling_off))
        notification = await workflow.execute_activity(send_notification, enriched, start_to_close_timeout=timeout)
        return {"customer": enriched, "checks": list(checks), "notification": notification}


@workflow.defn(name="SingleActivity")
class SingleActivity:
    @workflow.run
    async def run(self, value: int) -> int:
        return await workflow.execute_activity(noop, value, start_to_close_timeout=timedelta(seconds=30))
