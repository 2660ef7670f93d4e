"""The customer-onboarding DAG:

    create_customer -> (verify_identity, score_risk, fetch_credit_file in parallel)
                    -> enrich_customer -> send_notification

Activities are plain functions; the workflow is deterministic async code. Each
activity reports when it ran, so tests can check the middle three overlapped.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from datetime import timedelta

from flowforge import RetryPolicy, activity, workflow

TASK_QUEUE = "onboarding"


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
    await asyncio.sleep(customer.get("work_seconds", 0.2))  # a call to an identity provider
    return {"check": "identity", "verified": True, **_ran(started)}


@activity.defn
async def score_risk(customer: dict) -> dict:
    started = time.time()
    await asyncio.sleep(customer.get("work_seconds", 0.2))
    score = int(hashlib.sha256(customer["customer_id"].encode()).hexdigest(), 16) % 100
    return {"check": "risk", "score": score, **_ran(started)}


@activity.defn
def fetch_credit_file(customer: dict) -> dict:
    """A blocking client library: sync activities run on the worker's thread pool."""
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
    return {"sent_to": customer["email"], "idempotency_key": activity.info().idempotency_key, **_ran(started)}


ACTIVITIES = [create_customer, verify_identity, score_risk, fetch_credit_file, enrich_customer, send_notification]


@workflow.defn
class Onboarding:
    """Onboards one customer; returns what each step produced."""

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
