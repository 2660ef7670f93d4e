"""The console's other pages in headless Chromium, as an admin (both stores): schedules
(pause from the page), a task queue's pollers, concurrency and rate limits, namespaces with their
quotas (changed from the page), the audit log and the scheduler's leader; an execution's
search attributes, memo and full history view; why a pending activity waits (a concurrency
slot, the run's pause); a circuit breaker
opened from the limits page holds an execution's activity (its page says why) until it is
closed from there."""

from __future__ import annotations

from datetime import timedelta

from playwright.async_api import Browser, Page, expect

from flowforge import Client
from flowforge.api.v1 import access_pb2
from flowforge.api.v1 import flow_control_pb2 as flow_pb2
from flowforge.api.v1 import workflow_service_pb2 as pb
from flowforge.client import Schedule, ScheduleActionStartWorkflow, ScheduleIntervalSpec, ScheduleSpec
from flowforge.common import SearchAttributeIndexedValueType
from flowforge.server import FlowForgeServer
from tests.console._app import HOLD_GATE, QUEUE, Pipeline, Throttled, hold, step, waiting_for_signal
from tests.console.test_console import base, execution_path, sign_in
from tests.integration._reliability import fast_worker
from testsupport.waiting import wait_until


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
        await expect(page.locator("section", has_text="Next fires").locator("li").first).to_be_visible()
        await page.click("[data-action=trigger]")
        await page.fill("dialog [name=reason]", "rerun the report")
        await page.click("dialog #confirm")
        schedule = admin.get_schedule_handle("hourly-<b>report</b>")

        async def fired() -> bool:
            return bool((await schedule.describe()).info.recent_actions)

        await wait_until(fired, timeout=20, what="the triggered fire")
        await page.reload()
        recent = page.locator("section", has_text="Recent fires").locator("tbody tr")
        await expect(recent.first).to_contain_text("scheduled")
        await page.click("[data-action=pause]")
        await page.fill("dialog [name=reason]", "quarter close")
        await page.click("dialog #confirm")
        await expect(page.locator("[data-action=unpause]")).to_be_visible()
        assert (await schedule.describe()).schedule.state.paused

        await page.goto(base(server) + f"/namespaces/default/task-queues/{QUEUE}")
        await expect(page.get_by_text("console-test-worker").first).to_be_visible()

    # A queue no worker polls: its backlog and the age of its oldest task.
    await admin.start_workflow(Pipeline.run, "q", id="unpolled", task_queue="console-unpolled")
    await page.goto(base(server) + "/namespaces/default/task-queues/console-unpolled")
    backlog = page.locator("section", has_text="Backlog").locator("tbody tr", has_text="WORKFLOW")
    await expect(backlog.locator("td").nth(1)).to_have_text("1")
    await expect(backlog.locator("td").nth(2)).not_to_have_text("")

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
    for reason in ("quarter close", "rerun the report"):
        await expect(page.locator("#audit tr", has_text="PatchSchedule").filter(has_text=reason)).to_have_count(1)

    await page.goto(base(server) + "/scheduler")
    await expect(page.locator("#leader")).not_to_have_text("none")


async def test_a_breaker_opened_from_the_limits_page_holds_activities_until_closed(
    server: FlowForgeServer, admin: Client, page: Page
) -> None:
    key = admin.api_key
    assert key
    await admin.workflow_service.call(
        "SetBreaker",
        flow_pb2.SetBreakerRequest(
            namespace="default",
            activity_type="step",
            failure_rate=0.5,
            min_calls=10,
            window_seconds=60,
            open_seconds=3600,
            reason="r",
        ),
    )
    await sign_in(page, server, "/namespaces/default/limits", key)
    row = page.locator("#breakers tr[data-activity-type=step]")
    await expect(row.locator(".badge")).to_have_text("closed")
    await expect(row).to_contain_text("50% failed of ≥ 10 calls")

    async def force(action: str, reason: str, state: str) -> None:
        await row.locator(f"[data-action={action}]").click()
        await page.fill("dialog [name=reason]", reason)
        await page.click("dialog #confirm")
        await expect(row.locator(".badge")).to_have_text(state)

    await force("open", "payments provider down", "open")
    await expect(row).to_contain_text("payments provider down")
    async with fast_worker(admin, QUEUE, workflows=[Pipeline], activities=[step]):
        handle = await admin.start_workflow(Pipeline.run, "x", id="held-by-breaker", task_queue=QUEUE)
        await page.goto(base(server) + execution_path("held-by-breaker"))
        await expect(page.locator("#pending tbody tr")).to_contain_text(
            "held by the open circuit breaker of activity type step"
        )
        assert not await waiting_for_signal(handle)

        await page.goto(base(server) + "/namespaces/default/limits")
        await force("close", "provider back", "closed")
        await wait_until(lambda: waiting_for_signal(handle), timeout=20, what="the held activities to run")

    records = (await admin.workflow_service.call("ListAuditLog", access_pb2.ListAuditLogRequest(page_size=100))).records
    assert {("OpenBreaker", "payments provider down"), ("CloseBreaker", "provider back")} <= {
        (record.action, record.reason) for record in records
    }


async def test_an_execution_shows_its_search_attributes_memo_and_full_history(
    server: FlowForgeServer, admin: Client, page: Page
) -> None:
    key = admin.api_key
    assert key
    await admin.add_search_attributes({"CustomerId": SearchAttributeIndexedValueType.KEYWORD})
    handle = await admin.start_workflow(
        Pipeline.run,
        "gift",
        id="detailed",
        task_queue="console-unpolled",
        search_attributes={"CustomerId": "<b>c-42</b>"},
        memo={"note": {"wrap": "red paper"}},
    )
    await sign_in(page, server, execution_path("detailed"), key)
    card = page.locator("#details section", has_text="Search attributes")
    await expect(card.locator("pre").first).to_contain_text('"CustomerId": "<b>c-42</b>"')
    await expect(card.locator("pre").nth(1)).to_contain_text('"wrap": "red paper"')
    assert await page.locator("main b").count() == 0  # the value's markup is text

    # The full view: every event with its attributes, the input decoded.
    await page.click("button[data-tab=History]")
    events = (await handle.fetch_history()).events
    await expect(page.locator("#full-history details")).to_have_count(len(events))
    first = page.locator("#full-history details").first
    await first.locator("summary").click()
    await expect(first.locator("pre")).to_contain_text('"gift"')


async def test_why_an_activity_waits_for_a_slot_and_for_a_pause(
    server: FlowForgeServer, admin: Client, page: Page
) -> None:
    key = admin.api_key
    assert key
    await admin.workflow_service.call(
        "SetConcurrencyLimit",
        flow_pb2.SetConcurrencyLimitRequest(
            namespace="default", concurrency_key="payments-api", max_running=1, reason="r"
        ),
    )
    HOLD_GATE.clear()
    try:
        async with fast_worker(admin, QUEUE, workflows=[Throttled], activities=[hold]):
            handle = await admin.start_workflow(Throttled.run, id="throttled", task_queue=QUEUE)

            async def one_runs_one_waits() -> bool:
                pending = (await handle.describe()).pending_activities
                return sorted((a.state, "payments-api" in a.waiting_reason) for a in pending) == [
                    ("SCHEDULED", True),
                    ("STARTED", False),
                ]

            # An activity starting writes no event, so the open page would not redraw for it.
            await wait_until(one_runs_one_waits, timeout=30, what="one activity to run and the other to wait")
            await sign_in(page, server, execution_path("throttled"), key)
            pending = page.locator("#pending tbody tr")
            await expect(pending.filter(has_text="waiting for a slot of concurrency key payments-api")).to_have_count(1)
            await expect(pending.filter(has_text="running on")).to_have_count(1)

            await admin.pause_workflow("throttled", reason="audit")
            await page.reload()
            await expect(pending.filter(has_text="the run is paused")).to_have_count(2)
            await admin.unpause_workflow("throttled", reason="done")
            HOLD_GATE.set()
            assert await handle.result() == ["first", "second"]
    finally:
        HOLD_GATE.set()  # a failed assertion must not leave the worker's activity waiting


async def test_the_pages_fit_a_phone(server: FlowForgeServer, admin: Client, browser: Browser) -> None:
    key = admin.api_key
    assert key
    async with fast_worker(admin, QUEUE, workflows=[Pipeline], activities=[step]):
        handle = await admin.start_workflow(Pipeline.run, "p", id="on-a-phone", task_queue=QUEUE)
        await wait_until(lambda: waiting_for_signal(handle), timeout=20, what="the run to wait for its signal")
    context = await browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    page = await context.new_page()
    try:
        await sign_in(page, server, "/namespaces/default/workflows", key)
        await expect(page.locator("#workflows tbody tr")).to_have_count(1)
        pages = ["/namespaces/default/workflows", execution_path("on-a-phone"), execution_path("on-a-phone") + "#dag"]
        for path in [*pages, "/namespaces/default/limits", "/audit"]:
            await page.goto(base(server) + path)
            await expect(page.locator("main h1").first).to_be_visible()
            # Wide tables and the DAG scroll inside their boxes; the page itself never scrolls sideways.
            width = await page.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")
            assert width[0] <= width[1], (path, width)
    finally:
        await context.close()


_DRAW_200_NODES = """async () => {
  const { dagNodes, dagSvg } = await import('/console/dag.js');
  // 20 layers of 10; each node depends on two of the layer above; long names and subtitles.
  const dag = [];
  for (let layer = 0; layer < 20; layer++) {
    for (let i = 0; i < 10; i++) {
      const deps = layer ? [`${layer - 1}-${i}`, `${layer - 1}-${(i + 3) % 10}`] : [];
      dag.push({ activity_id: `${layer}-${i}`, activity_type: `transform_customer_ledger_partition_${i}`,
        state: 'COMPLETED', attempt: 3, depends_on_activity_ids: deps });
    }
  }
  const box = document.createElement('div');
  box.className = 'dag-box';
  box.append(dagSvg(dagNodes({ dag }, []), null));
  document.querySelector('main').replaceChildren(box);
  const nodes = [...box.querySelectorAll('.dag-node')].map((g) => {
    const r = g.querySelector('rect').getBoundingClientRect();
    const texts = [...g.querySelectorAll('text')].map((t) => t.getBoundingClientRect());
    return { r, inside: texts.every((t) => t.left >= r.left && t.right <= r.right && t.top >= r.top && t.bottom <= r.bottom) };
  });
  let overlaps = 0;
  for (let a = 0; a < nodes.length; a++) {
    for (let b = a + 1; b < nodes.length; b++) {
      const [p, q] = [nodes[a].r, nodes[b].r];
      if (p.left < q.right && q.left < p.right && p.top < q.bottom && q.top < p.bottom) overlaps++;
    }
  }
  const svg = box.querySelector('svg');
  return { nodes: nodes.length, edges: box.querySelectorAll('.dag-edge').length, overlaps,
    clipped: nodes.filter((n) => !n.inside).length,
    scale: svg.getBoundingClientRect().width / Number(svg.getAttribute('width')), scrolls: box.scrollHeight > box.clientHeight };
}"""


async def test_a_200_node_dag_is_readable(server: FlowForgeServer, page: Page) -> None:
    """At 200 nodes the DAG is drawn full size in a scrolling box: no two nodes overlap and
    every label fits inside its node."""
    await page.goto(base(server) + "/")
    await expect(page.locator("main")).to_be_attached()
    drawn = await page.evaluate(_DRAW_200_NODES)
    assert drawn == {"nodes": 200, "edges": 380, "overlaps": 0, "clipped": 0, "scale": 1, "scrolls": True}
