"""The console's other pages in headless Chromium, as an admin (both stores): schedules
(pause from the page), a task queue's pollers, concurrency and rate limits, namespaces with their
quotas (changed from the page), the audit log and the scheduler's leader."""

from __future__ import annotations

from datetime import timedelta

from playwright.async_api import Page, expect

from flowforge import Client
from flowforge.api.v1 import flow_control_pb2 as flow_pb2
from flowforge.api.v1 import workflow_service_pb2 as pb
from flowforge.client import Schedule, ScheduleActionStartWorkflow, ScheduleIntervalSpec, ScheduleSpec
from flowforge.server import FlowForgeServer
from tests.console._app import QUEUE, Pipeline, step
from tests.console.test_console import base, sign_in
from tests.integration._reliability import fast_worker


async def test_admin_pages(server: FlowForgeServer, admin: Client, page: Page) -> None:
    key = admin.api_key
    assert key
    await admin.create_schedule(
        "hourly-<b>report</b>",
        Schedule(
            action=ScheduleActionStartWorkflow("Pipeline", "s", id="scheduled", task_queue=QUEUE),
            spec=ScheduleSpec(intervals=[ScheduleIntervalSpec(every=timedelta(hours=1))]),
        ),
    )
    async with fast_worker(admin, QUEUE, workflows=[Pipeline], activities=[step], identity="console-test-worker"):
        await sign_in(page, server, "/namespaces/default/schedules", key)
        await page.click("#schedules a")
        await expect(page.locator("h1 .wid")).to_have_text("hourly-<b>report</b>")
        await page.click("[data-action=pause]")
        await page.fill("dialog [name=reason]", "quarter close")
        await page.click("dialog #confirm")
        await expect(page.locator("[data-action=unpause]")).to_be_visible()
        assert (await admin.get_schedule_handle("hourly-<b>report</b>").describe()).schedule.state.paused

        await page.goto(base(server) + f"/namespaces/default/task-queues/{QUEUE}")
        await expect(page.get_by_text("console-test-worker").first).to_be_visible()

    await admin.workflow_service.call(
        "SetConcurrencyLimit",
        flow_pb2.SetConcurrencyLimitRequest(
            namespace="default", concurrency_key="payments-api", max_running=7, reason="r"
        ),
    )
    await admin.workflow_service.call(
        "SetRateLimit",
        flow_pb2.SetRateLimitRequest(namespace="default", task_queue=QUEUE, per_second=12.5, reason="r"),
    )
    await page.goto(base(server) + "/namespaces/default/limits")
    await expect(page.locator("#limits tbody tr", has_text="payments-api")).to_contain_text("7")
    await expect(page.locator("#rate-limits tbody tr", has_text=QUEUE)).to_contain_text("12.5")

    await page.goto(base(server) + "/namespaces")
    await page.click("#namespaces tr[data-namespace=default] [data-action=quotas]")
    await page.fill("dialog [name=running]", "50")
    await page.fill("dialog [name=reason]", "black friday")
    await page.click("dialog #confirm")
    await expect(page.locator("#namespaces tr[data-namespace=default] td.num").first).to_have_text("50")
    described = await admin.workflow_service.call("DescribeNamespace", pb.DescribeNamespaceRequest(name="default"))
    assert described.namespace.max_running_executions == 50

    await page.goto(base(server) + "/audit")
    await expect(page.locator("#audit tr", has_text="UpdateNamespace")).to_contain_text("black friday")
    await expect(page.locator("#audit tr", has_text="PatchSchedule")).to_contain_text("quarter close")

    await page.goto(base(server) + "/scheduler")
    await expect(page.locator("#leader")).not_to_have_text("none")
