"""Actions from the console in headless Chromium (both stores): signal, cancel,
terminate and reset each change the execution and land in the audit log with the
reason typed; a reader's key sees no action buttons (test_console.py) and a forged
action request with it is refused."""

from __future__ import annotations

from collections.abc import AsyncIterator
from urllib.parse import quote

import pytest
from playwright.async_api import Page, expect

from flowforge import Client
from flowforge.api.v1 import access_pb2
from flowforge.client import WorkflowExecutionStatus
from flowforge.server import FlowForgeServer
from tests.console._app import QUEUE, Checkout, Pipeline, charge, step, waiting_for_signal
from tests.console.conftest import create_key
from tests.console.test_console import base, sign_in
from tests.integration._reliability import fast_worker
from testsupport.waiting import wait_until


@pytest.fixture
async def worker(admin: Client) -> AsyncIterator[None]:
    async with fast_worker(admin, QUEUE, workflows=[Pipeline, Checkout], activities=[step, charge]):
        yield


async def act(page: Page, action: str, reason: str, **fields: str) -> None:
    await page.click(f"#actions [data-action={action}]")
    for name, value in fields.items():
        locator = page.locator(f"dialog [name={name}]")
        if await locator.evaluate("el => el.tagName") == "SELECT":
            await locator.select_option(value)
        else:
            await locator.fill(value)
    await page.fill("dialog [name=reason]", reason)
    await page.click("dialog #confirm")
    await expect(page.locator("dialog")).not_to_be_visible()


async def open_execution(page: Page, server: FlowForgeServer, workflow_id: str) -> None:
    await page.goto(base(server) + f"/namespaces/default/workflows/{quote(workflow_id, safe='')}")
    await expect(page.locator("#summary h1")).to_have_text(workflow_id)


async def test_each_action_changes_the_execution_and_is_audited(
    server: FlowForgeServer, admin: Client, worker: None, page: Page
) -> None:
    handles = {
        name: await admin.start_workflow(Pipeline.run, name, id=f"act-{name}", task_queue=QUEUE)
        for name in ("signal", "cancel", "terminate")
    }
    for handle in handles.values():
        await wait_until(lambda h=handle: waiting_for_signal(h), timeout=20, what=f"{handle.id} to wait for its signal")
    operator = await create_key(admin, "operator")
    await sign_in(page, server, "/namespaces/default/workflows", operator)
    await expect(page.locator("#workflows tbody tr")).to_have_count(3)

    await open_execution(page, server, "act-signal")
    await act(page, "SignalWorkflowExecution", "customer called", signal="proceed", input='"from the console"')
    assert await handles["signal"].result() == "signal.b.signal.c.."
    await expect(page.locator("#summary .badge")).to_have_text("COMPLETED")

    await open_execution(page, server, "act-cancel")
    await act(page, "RequestCancelWorkflowExecution", "duplicate order")
    await wait_until(lambda: _status(handles["cancel"], WorkflowExecutionStatus.CANCELED), timeout=20, what="canceled")

    await open_execution(page, server, "act-terminate")
    await act(page, "TerminateWorkflowExecution", "stuck since Tuesday")
    await expect(page.locator("#summary .badge")).to_have_text("TERMINATED")

    # Reset the completed run to its first workflow task: a new run, shown at once.
    await open_execution(page, server, "act-signal")
    first_run = (await handles["signal"].describe()).run_id
    await act(page, "ResetWorkflowExecution", "replay after the fix", event="4")
    await wait_until(lambda: _new_run(admin, "act-signal", first_run), timeout=20, what="the reset to start a new run")
    new_run = (await admin.get_workflow_handle("act-signal").describe()).run_id
    await expect(page.locator("#summary dd.mono").first).to_have_text(new_run)

    records = (await admin.workflow_service.call("ListAuditLog", access_pb2.ListAuditLogRequest(page_size=100))).records
    audited = {(r.action, r.target.split("/")[0], r.reason) for r in records}
    for expected in [
        ("SignalWorkflowExecution", "workflow:act-signal", "customer called"),
        ("RequestCancelWorkflowExecution", "workflow:act-cancel", "duplicate order"),
        ("TerminateWorkflowExecution", "workflow:act-terminate", "stuck since Tuesday"),
        ("ResetWorkflowExecution", "workflow:act-signal", "replay after the fix"),
    ]:
        assert expected in audited, (expected, audited)
    assert all(r.principal.startswith("apikey:") for r in records if r.reason == "customer called")


async def test_pause_unpause_and_dead_letters_from_the_console(
    server: FlowForgeServer, admin: Client, worker: None, page: Page
) -> None:
    pipeline = await admin.start_workflow(Pipeline.run, "p", id="act-pause", task_queue=QUEUE)
    await wait_until(lambda: waiting_for_signal(pipeline), timeout=20, what="the run to wait for its signal")
    retried = await admin.start_workflow(Checkout.run, "o-1", id="checkout-1", task_queue=QUEUE)
    discarded = await admin.start_workflow(Checkout.run, "o-2", id="checkout-2", task_queue=QUEUE)
    operator = await create_key(admin, "operator")
    await sign_in(page, server, "/namespaces/default/workflows", operator)

    await open_execution(page, server, "act-pause")
    await act(page, "PauseWorkflowExecution", "investigating a double charge")
    await expect(page.locator("#paused")).to_contain_text("investigating a double charge")
    paused = (await pipeline.describe()).pause
    assert paused is not None and paused.reason == "investigating a double charge"
    await act(page, "UnpauseWorkflowExecution", "all clear")
    await expect(page.locator("#paused")).to_have_count(0)
    await expect(page.locator("#actions [data-action=PauseWorkflowExecution]")).to_be_visible()

    await page.goto(base(server) + "/namespaces/default/dead-letters")
    await expect(page.locator("#dead-letters tbody tr")).to_have_count(2)
    await page.click("#dead-letters tr:has-text('checkout-1') [data-action=retry]")
    await page.fill("dialog [name=reason]", "card limit raised")
    await page.click("dialog #confirm")
    assert await retried.result() == "charged o-1"
    await expect(page.locator("#dead-letters tbody tr")).to_have_count(1)
    await page.click("#dead-letters tr:has-text('checkout-2') [data-action=discard]")
    await page.fill("dialog [name=reason]", "customer gave up")
    await page.click("dialog #confirm")
    assert await discarded.result() == "discarded"
    await expect(page.locator("#dead-letters tbody tr")).to_have_count(0)

    records = (await admin.workflow_service.call("ListAuditLog", access_pb2.ListAuditLogRequest(page_size=100))).records
    reasons = {(r.action, r.reason) for r in records}
    for expected in [
        ("PauseWorkflowExecution", "investigating a double charge"),
        ("UnpauseWorkflowExecution", "all clear"),
        ("RetryDeadLetters", "card limit raised"),
        ("DiscardDeadLetters", "customer gave up"),
    ]:
        assert expected in reasons, (expected, reasons)


async def test_a_batch_from_the_list_page(server: FlowForgeServer, admin: Client, worker: None, page: Page) -> None:
    handles = [await admin.start_workflow(Pipeline.run, "b", id=f"batch-{i}", task_queue=QUEUE) for i in range(2)]
    spared = await admin.start_workflow(Pipeline.run, "s", id="spared", task_queue=QUEUE)
    operator = await create_key(admin, "operator")
    query = quote("WorkflowId STARTS_WITH 'batch-'")
    await sign_in(page, server, f"/namespaces/default/workflows?q={query}", operator)
    await expect(page.locator("#workflows tbody tr")).to_have_count(2)
    await page.click("[data-action=batch]")
    await page.locator("dialog [name=operation]").select_option("terminate")
    await page.fill("dialog [name=reason]", "bad deploy")
    await page.click("dialog #confirm")
    await expect(page.locator("#batches tbody tr")).to_have_count(1)
    for handle in handles:
        await wait_until(
            lambda h=handle: _status(h, WorkflowExecutionStatus.TERMINATED), timeout=20, what=f"{handle.id} terminated"
        )
    assert (await spared.describe()).status == WorkflowExecutionStatus.RUNNING
    await page.reload()
    await expect(page.locator("#batches tbody tr").first).to_contain_text("2 / 2")
    records = (await admin.workflow_service.call("ListAuditLog", access_pb2.ListAuditLogRequest(page_size=100))).records
    assert ("StartBatchOperation", "bad deploy") in {(r.action, r.reason) for r in records}


async def _status(handle: object, status: WorkflowExecutionStatus) -> bool:
    return bool((await handle.describe()).status == status)  # type: ignore[attr-defined]


async def _new_run(admin: Client, workflow_id: str, old_run: str) -> bool:
    return (await admin.get_workflow_handle(workflow_id).describe()).run_id != old_run
