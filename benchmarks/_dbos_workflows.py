"""The benchmark's workloads written for DBOS Transact: twins of ``samples.onboarding``
and ``testsupport.workloads.SingleActivity`` (same steps, same data, no work).

Imported only by :mod:`benchmarks.compare_dbos`, after ``dbos`` is known to be installed.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from typing import Any

from dbos import DBOS


def _ran(started: float) -> dict[str, float]:
    return {"started_at": started, "finished_at": time.time()}


@DBOS.step()
async def noop(value: int) -> int:
    return value


@DBOS.workflow()
async def single_activity(value: int) -> int:
    """One step, like ``SingleActivity``."""
    return await noop(value)


@DBOS.step()
async def create_customer(request: dict[str, Any]) -> dict[str, Any]:
    started = time.time()
    customer_id = "cus_" + hashlib.sha256(request["email"].encode()).hexdigest()[:12]
    return {
        "customer_id": customer_id,
        "name": request["name"],
        "email": request["email"],
        "work_seconds": request.get("work_seconds", 0.2),
        **_ran(started),
    }


@DBOS.step()
async def verify_identity(customer: dict[str, Any]) -> dict[str, Any]:
    started = time.time()
    await asyncio.sleep(customer.get("work_seconds", 0.2))
    return {"check": "identity", "verified": True, **_ran(started)}


@DBOS.step()
async def score_risk(customer: dict[str, Any]) -> dict[str, Any]:
    started = time.time()
    await asyncio.sleep(customer.get("work_seconds", 0.2))
    score = int(hashlib.sha256(customer["customer_id"].encode()).hexdigest(), 16) % 100
    return {"check": "risk", "score": score, **_ran(started)}


def _credit_file(customer: dict[str, Any]) -> dict[str, Any]:
    started = time.time()
    time.sleep(customer.get("work_seconds", 0.2))
    return {"check": "credit", "bureau": "example-bureau", "limit": 5000, **_ran(started)}


@DBOS.step()
async def fetch_credit_file(customer: dict[str, Any]) -> dict[str, Any]:
    """A blocking client on a thread, as FlowForge runs its sync activity on the worker's pool."""
    return await asyncio.to_thread(_credit_file, customer)


@DBOS.step()
async def enrich_customer(customer: dict[str, Any], checks: list[dict[str, Any]]) -> dict[str, Any]:
    started = time.time()
    risk = next(c["score"] for c in checks if c["check"] == "risk")
    return {**customer, "tier": "gold" if risk < 50 else "standard", **_ran(started)}


@DBOS.step()
async def send_notification(customer: dict[str, Any]) -> dict[str, Any]:
    started = time.time()
    return {"sent_to": customer["email"], "idempotency_key": DBOS.workflow_id, **_ran(started)}


@DBOS.workflow()
async def onboarding(request: dict[str, Any]) -> dict[str, Any]:
    """The onboarding DAG: one step, three in parallel, then two."""
    customer = await create_customer(request)
    checks = await asyncio.gather(verify_identity(customer), score_risk(customer), fetch_credit_file(customer))
    enriched = await enrich_customer(customer, list(checks))
    notification = await send_notification(enriched)
    return {"customer": enriched, "checks": list(checks), "notification": notification}
