"""Records the samples' histories into tests/replay/histories (run by hand when a
sample changes on purpose; the replay tests then pin the new behaviour):

    python -m tests.replay.record                 # every sample
    python -m tests.replay.record shipping        # one sample
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path

from flowforge import Client
from flowforge.converter import DataConverter
from flowforge.exceptions import WorkflowFailureError, WorkflowUpdateFailedError
from flowforge.server import FlowForgeServer, ServerConfig
from flowforge.storage import FileSystemPayloadStorage
from flowforge.worker import Worker
from samples.approval import workflows as approval
from samples.approval.demo import wait_for_stage
from samples.onboarding.workflows import ACTIVITIES, TASK_QUEUE, Onboarding
from samples.order_tracking import workflows as order_tracking
from samples.saga import workflows as saga
from tests.compat._porting import ported_module
from tests.replay import batches, remediation, shipping
from testsupport import large_payloads

HISTORIES = Path(__file__).parent / "histories"
REQUESTS = {
    "onboarding-ada": {
        "name": "Ada Lovelace",
        "email": "ada@example.com",
        "work_seconds": 0.05,
        "cooling_off_seconds": 0.1,
    },
    "onboarding-grace": {
        "name": "Grace Hopper",
        "email": "grace@example.com",
        "work_seconds": 0.0,
        "cooling_off_seconds": 0,
    },
    # Recorded with every activity's workflow task folded into its completion (the three
    # parallel ones one after another): a folded history replays as any other does.
    "onboarding-folded": {
        "name": "Barbara Liskov",
        "email": "barbara@example.com",
        "work_seconds": 0.0,
        "cooling_off_seconds": 0,
    },
}


async def record_onboarding(client: Client) -> None:
    async with Worker(client, task_queue=TASK_QUEUE, workflows=[Onboarding], activities=ACTIVITIES):
        for workflow_id, request in REQUESTS.items():
            handle = await client.start_workflow(Onboarding.run, request, id=workflow_id, task_queue=TASK_QUEUE)
            await handle.result()
            await _save(client, workflow_id)


# Versioning: one history per version of the Shipping workflow, each run by a worker
# deployed with that version only (see tests/replay/shipping.py).
SHIPPING_VERSIONS = {
    "shipping-before-patch": shipping.ShippingBeforePatch,
    "shipping-patched": shipping.Shipping,
    "shipping-patch-deprecated": shipping.ShippingPatchDeprecated,
}


async def record_shipping(client: Client) -> None:
    for workflow_id, version in SHIPPING_VERSIONS.items():
        async with Worker(client, task_queue=shipping.TASK_QUEUE, workflows=[version], activities=shipping.ACTIVITIES):
            order = shipping.Order(order_id=workflow_id, weight_kg=2.5)
            handle = await client.start_workflow(version.run, order, id=workflow_id, task_queue=shipping.TASK_QUEUE)
            await handle.result()
            await _save(client, workflow_id)


# Visibility: search attributes at start and upserts, one order held for review by a signal.
ORDERS = {"order-tracking-small": 2_500, "order-tracking-review": 72_000}


async def record_order_tracking(client: Client) -> None:
    await client.add_search_attributes(order_tracking.SEARCH_ATTRIBUTES)
    async with Worker(
        client,
        task_queue=order_tracking.TASK_QUEUE,
        workflows=[order_tracking.OrderFulfillment],
        activities=order_tracking.ACTIVITIES,
    ):
        for workflow_id, total in ORDERS.items():
            handle = await client.start_workflow(
                order_tracking.OrderFulfillment.run,
                {"order_id": workflow_id, "lines": ["sku-1"]},
                id=workflow_id,
                task_queue=order_tracking.TASK_QUEUE,
                search_attributes={"CustomerId": "c-1", "OrderTotal": total},
                memo={"ship_to": "c-1, 1 Main Street"},
            )
            if total >= order_tracking.REVIEW_THRESHOLD_CENTS:
                while not [e async for e in client.list_workflows("OrderStage = 'review'", workflow_id=workflow_id)]:
                    await asyncio.sleep(0.05)
                await handle.signal(order_tracking.OrderFulfillment.approve, "ops@example.com")
            await handle.result()
            await _save(client, workflow_id)


# Saga: a booking that compensates, and a group trip whose children succeed and fail.
SAGA_REQUESTS = {
    "saga-compensated": (saga.BookTrip.run, {"traveller": "grace", "fail_at": "flight"}),
    "saga-group-children": (
        saga.BookGroupTrip.run,
        [{"traveller": "alan"}, {"traveller": "edsger", "fail_at": "hotel"}],
    ),
}


async def record_saga(client: Client) -> None:
    async with Worker(client, task_queue=saga.TASK_QUEUE, workflows=saga.WORKFLOWS, activities=saga.ACTIVITIES):
        for workflow_id, (run, request) in SAGA_REQUESTS.items():
            handle = await client.start_workflow(run, request, id=workflow_id, task_queue=saga.TASK_QUEUE)
            try:
                await handle.result()
            except WorkflowFailureError:
                pass  # the compensated booking fails on purpose
            await _save(client, workflow_id)


# Continue-as-new: every run of one chain, each history on its own.
async def record_batches(client: Client) -> None:
    async with Worker(
        client, task_queue=batches.TASK_QUEUE, workflows=[batches.DrainQueue], activities=batches.ACTIVITIES
    ):
        handle = await client.start_workflow(
            batches.DrainQueue.run, ["a", "b", "c", "d", "e"], id="batches", task_queue=batches.TASK_QUEUE
        )
        await handle.result()
        runs = sorted([run async for run in client.list_workflows(workflow_id="batches")], key=lambda r: r.start_time)
        for number, run in enumerate(runs, 1):
            history = await client.get_workflow_handle("batches", run_id=run.run_id).fetch_history()
            (HISTORIES / f"batches-run-{number}.json").write_text(history.to_json() + "\n")


async def _save(client: Client, workflow_id: str) -> None:
    history = await client.get_workflow_handle(workflow_id).fetch_history()
    (HISTORIES / f"{workflow_id}.json").write_text(history.to_json() + "\n")


# Signals, the status query and the approval timeout: one history per way it ends.
async def record_approval(client: Client) -> None:
    async with Worker(
        client, task_queue=approval.TASK_QUEUE, workflows=[approval.ExpenseApproval], activities=approval.ACTIVITIES
    ):
        paid = await client.start_workflow(
            approval.ExpenseApproval.run,
            approval.ExpenseRequest("paid", "ada", 120.0, "conference"),
            id="approval-paid",
            task_queue=approval.TASK_QUEUE,
        )
        await wait_for_stage(paid, "awaiting decision")
        await paid.signal(approval.ExpenseApproval.approve, "grace")
        await paid.signal(approval.ExpenseApproval.reject, args=["alan", "too late"])
        rejected = await client.start_workflow(
            approval.ExpenseApproval.run,
            approval.ExpenseRequest("rejected", "alan", 5000.0, "yacht"),
            id="approval-rejected",
            task_queue=approval.TASK_QUEUE,
            start_signal=approval.ExpenseApproval.reject,
            start_signal_args=["grace", "no yachts"],
        )
        expired = await client.start_workflow(
            approval.ExpenseApproval.run,
            approval.ExpenseRequest("expired", "ada", 9.5, "taxi", approval_timeout_seconds=0.2),
            id="approval-expired",
            task_queue=approval.TASK_QUEUE,
        )
        for handle in (paid, rejected, expired):
            await handle.result()
            await _save(client, handle.id)


# Remediation: a parked activity retried after the fix, and one discarded (docs/operations.md).
async def record_remediation(client: Client) -> None:
    async with Worker(
        client, task_queue=remediation.TASK_QUEUE, workflows=[remediation.Reconcile], activities=remediation.ACTIVITIES
    ):
        for workflow_id, decision in (("dead-letter-retried", "retry"), ("dead-letter-discarded", "discard")):
            handle = await client.start_workflow(
                remediation.Reconcile.run, workflow_id, id=workflow_id, task_queue=remediation.TASK_QUEUE
            )
            while not (parked := (await client.list_dead_letters(workflow_id=workflow_id)).dead_letters):
                await asyncio.sleep(0.05)
            await handle.signal(remediation.Reconcile.note, "ops paged")
            if decision == "retry":
                remediation.REACHABLE.add(workflow_id)
                await client.retry_dead_letters(parked[0].id, reason="ledger service restored")
            else:
                await client.discard_dead_letters(parked[0].id, reason="account closed")
            await handle.result()
            await _save(client, workflow_id)
        handle = await client.start_workflow(
            remediation.Reconcile.run, "reset-first", id="reset-first", task_queue=remediation.TASK_QUEUE
        )
        while not (await client.list_dead_letters(workflow_id="reset-first")).dead_letters:
            await asyncio.sleep(0.05)
        await handle.signal(remediation.Reconcile.note, "ops paged")
        remediation.REACHABLE.add("reset-first")
        await client.reset_workflow("reset-first", reset_type="first", reason="ledger service restored")
        await client.get_workflow_handle("reset-first").result()
        await _save(client, "reset-first")
        remediation.REACHABLE.add("paused")
        handle = await client.start_workflow(
            remediation.Reconcile.run, "paused", id="paused", task_queue=remediation.TASK_QUEUE
        )
        await client.pause_workflow("paused", reason="ledger maintenance")
        await handle.signal(remediation.Reconcile.note, "ops paged")
        while len((await handle.fetch_history()).events) < 4:  # the timer fires while paused, or the task ran
            await asyncio.sleep(0.05)
        await client.unpause_workflow("paused", reason="maintenance over")
        await handle.result()
        await _save(client, "paused")


# Payload storage: a history whose payloads are references, with the blobs beside it.
PAYLOAD_STORAGE = HISTORIES / "payload-storage"


async def record_payload_storage(_: Client) -> None:
    """Runs on a server of its own: the other recorders' client has no payload storage."""
    storage = FileSystemPayloadStorage(PAYLOAD_STORAGE / "blobs")
    converter = DataConverter(payload_storage=storage, payload_storage_threshold=1024)
    with tempfile.TemporaryDirectory() as tmp:
        server = FlowForgeServer(ServerConfig(store=str(Path(tmp) / "record.db"), port=0))
        await server.start()
        try:
            address = f"127.0.0.1:{server.port}"
            async with (
                await Client.connect(address, data_converter=converter) as storing,
                Worker(
                    storing,
                    task_queue=large_payloads.TASK_QUEUE,
                    workflows=[large_payloads.RoundTrip],
                    activities=[large_payloads.reverse_bytes],
                ),
            ):
                handle = await storing.start_workflow(
                    large_payloads.RoundTrip.run,
                    large_payloads.make_value(4096),
                    id="payload-storage-round-trip",
                    task_queue=large_payloads.TASK_QUEUE,
                )
                await handle.result()
            async with await Client.connect(address) as plain:  # without storage: the references
                history = await plain.get_workflow_handle(handle.id).fetch_history()
        finally:
            await server.stop()
    (PAYLOAD_STORAGE / "round-trip.json").write_text(history.to_json() + "\n")


# Temporal compatibility: the ported Temporal workflows of tests/compat (local activity markers, ...).
COMPAT = HISTORIES / "compat"


async def record_compat(client: Client) -> None:
    activities = ported_module("test_activities")
    inventory = activities.Inventory()
    async with Worker(
        client,
        task_queue="compat",
        workflows=[activities.Checkout],
        activities=[activities.lookup_price, activities.flaky_quote, inventory.reserve, inventory.count],
    ):
        handle = await client.start_workflow(
            activities.Checkout.run, "lamp", id="compat-local-activities", task_queue="compat"
        )
        await handle.result()
    history = await handle.fetch_history()
    (COMPAT / "local-activities.json").write_text(history.to_json() + "\n")
    updates = ported_module("test_updates")
    async with Worker(client, task_queue="compat", workflows=[updates.Greeter]):
        handle = await client.start_workflow(updates.Greeter.run, id="compat-updates", task_queue="compat")
        await handle.execute_update(updates.Greeter.set_language, "fr", id="to-french")
        with contextlib.suppress(WorkflowUpdateFailedError):
            await handle.execute_update(updates.Greeter.set_language, "xx", id="rejected")
        await handle.execute_update(updates.Greeter.set_language, "de", id="to-german")
        await handle.signal(updates.Greeter.finish)
        await handle.result()
    history = await handle.fetch_history()
    (COMPAT / "updates.json").write_text(history.to_json() + "\n")
    completion = ported_module("test_async_completion")
    async with Worker(
        client, task_queue="compat", workflows=[completion.Approval], activities=[completion.request_approval]
    ):
        handle = await client.start_workflow(
            completion.Approval.run, "loan-1", id="compat-async-completion", task_queue="compat"
        )
        token = await completion.wait_for_token("loan-1")
        await client.get_async_activity_handle(task_token=token).heartbeat("reviewing")
        await client.get_async_activity_handle(workflow_id=handle.id, activity_id="1").complete("approved")
        await handle.result()
    history = await handle.fetch_history()
    (COMPAT / "async-completion.json").write_text(history.to_json() + "\n")


RECORDERS: dict[str, Callable[[Client], Awaitable[None]]] = {
    "onboarding": record_onboarding,
    "shipping": record_shipping,
    "order_tracking": record_order_tracking,
    "saga": record_saga,
    "batches": record_batches,
    "approval": record_approval,
    "payload_storage": record_payload_storage,
    "compat": record_compat,
    "remediation": record_remediation,
}


async def record(samples: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        server = FlowForgeServer(ServerConfig(store=str(Path(tmp) / "record.db"), port=0))
        await server.start()
        try:
            client = await Client.connect(f"127.0.0.1:{server.port}")
            for sample in samples:
                await RECORDERS[sample](client)
            await client.close()
        finally:
            await server.stop()


if __name__ == "__main__":
    asyncio.run(record(sys.argv[1:] or list(RECORDERS)))
