"""The customer-onboarding DAG end to end: a server process, a real worker."""

from __future__ import annotations

from collections import Counter

from flowforge import Client, WorkflowExecutionStatus
from flowforge.worker import Worker
from samples.onboarding.workflows import ACTIVITIES, TASK_QUEUE, Onboarding

REQUEST = {"name": "Ada Lovelace", "email": "ada@example.com", "work_seconds": 0.3, "cooling_off_seconds": 0.2}
ACTIVITY_ORDER = [
    "create_customer",
    "verify_identity",
    "score_risk",
    "fetch_credit_file",
    "enrich_customer",
    "send_notification",
]


async def test_onboarding_completes_with_parallel_checks_and_a_gapless_history(client: Client) -> None:
    async with Worker(client, task_queue=TASK_QUEUE, workflows=[Onboarding], activities=ACTIVITIES):
        handle = await client.start_workflow(Onboarding.run, REQUEST, id="onboarding-e2e", task_queue=TASK_QUEUE)
        result = await handle.result()

    customer = result["customer"]
    assert customer["email"] == "ada@example.com" and customer["customer_id"].startswith("cus_")
    assert customer["tier"] in ("gold", "standard")
    assert [c["check"] for c in result["checks"]] == ["identity", "risk", "credit"]
    assert result["notification"]["sent_to"] == "ada@example.com"

    # The three checks ran at the same time: every one started before any finished.
    checks = result["checks"]
    assert max(c["started_at"] for c in checks) < min(c["finished_at"] for c in checks)

    history = await handle.fetch_history()
    assert [e.event_id for e in history.events] == list(range(1, len(history.events) + 1))
    types = [e.event_type for e in history.events]
    assert types[:5] == [
        "WorkflowExecutionStarted",
        "WorkflowTaskScheduled",
        "WorkflowTaskStarted",
        "WorkflowTaskCompleted",
        "ActivityTaskScheduled",
    ]
    assert types[-1] == "WorkflowExecutionCompleted"
    scheduled = [e.attributes["activity_type"] for e in history.events if e.event_type == "ActivityTaskScheduled"]
    assert scheduled == ACTIVITY_ORDER
    counts = Counter(types)
    assert counts["ActivityTaskCompleted"] == counts["ActivityTaskStarted"] == 6
    assert (counts["TimerStarted"], counts["TimerFired"]) == (1, 1)
    assert counts["WorkflowExecutionCompleted"] == 1
    # The fan-out: the three checks were scheduled by one workflow task, back to back.
    first_check = types.index("ActivityTaskScheduled", 5)
    assert types[first_check : first_check + 3] == ["ActivityTaskScheduled"] * 3
    # The timer comes after enrich completed and before the notification was scheduled.
    assert types.index("TimerFired") < len(types) - types[::-1].index("ActivityTaskScheduled") - 1

    description = await handle.describe()
    assert description.status == WorkflowExecutionStatus.COMPLETED
    dag = {node.activity_type: node for node in description.dag}
    ids = {name: dag[name].activity_id for name in ACTIVITY_ORDER}
    assert dag["create_customer"].depends_on == []
    for check in ("verify_identity", "score_risk", "fetch_credit_file"):
        assert dag[check].depends_on == [ids["create_customer"]]
    assert sorted(dag["enrich_customer"].depends_on) == sorted(
        ids[c] for c in ("verify_identity", "score_risk", "fetch_credit_file")
    )
    assert dag["send_notification"].depends_on == [ids["enrich_customer"]]
    assert all(node.state == "COMPLETED" for node in description.dag)
