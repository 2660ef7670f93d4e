"""The activities of the declarative onboarding DAG (onboarding.dag.yaml), and the same
DAG as a code workflow for comparison (benchmarks/dag_onboarding.py).

A DAG task passes one argument, so ``enrich_customer`` takes ``{"customer", "checks"}``;
the other five are the code sample's activities (samples/onboarding/workflows.py).
"""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta
from pathlib import Path

from flowforge import RetryPolicy, activity, workflow
from samples.onboarding.workflows import (
    create_customer,
    fetch_credit_file,
    score_risk,
    send_notification,
    verify_identity,
)

TASK_QUEUE = "dag-onboarding"
DEFINITION = Path(__file__).with_name("onboarding.dag.yaml")


@activity.defn(name="enrich_customer")
async def enrich_customer(request: dict) -> dict:
    started = time.time()
    risk = next(c["score"] for c in request["checks"] if c["check"] == "risk")
    return {
        **request["customer"],
        "tier": "gold" if risk < 50 else "standard",
        "finished_at": time.time(),
        "started_at": started,
    }


ACTIVITIES = [create_customer, verify_identity, score_risk, fetch_credit_file, enrich_customer, send_notification]


@workflow.defn
class OnboardingAsCode:
    """onboarding.dag.yaml written as workflow code: the same activities, the same dependencies."""

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
            enrich_customer, {"customer": customer, "checks": list(checks)}, start_to_close_timeout=timeout
        )
        notification = await workflow.execute_activity(send_notification, enriched, start_to_close_timeout=timeout)
        return {"customer": enriched, "risk_score": checks[1]["score"], "notification": notification}
