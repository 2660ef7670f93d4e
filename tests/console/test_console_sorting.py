"""The workflow list's column headers sort on the server (both stores): a click lists
again with ``ORDER BY`` from the first page, so the first rows are the first of all the
runs in that order, not of the page that was loaded; a second click reverses it; **More**
goes on in the same order; an ORDER BY typed in the query box works the same way."""

from __future__ import annotations

from urllib.parse import quote

from playwright.async_api import Page, expect

from flowforge import Client
from flowforge.server import FlowForgeServer
from tests.console.conftest import create_key
from tests.console.test_console import sign_in

IDLE_QUEUE = "console-idle"  # no worker: the runs stay running
RUNS = 55  # more than the page's 50, so a sort within the loaded page would show other rows


async def column(page: Page, index: int) -> list[str]:
    return await page.locator(f"#workflows tbody tr td:nth-child({index})").all_inner_texts()


async def test_a_header_click_sorts_all_runs_on_the_server(server: FlowForgeServer, admin: Client, page: Page) -> None:
    # Started in their ids' order: newest first, the smallest ids are on the second page.
    ids = [f"sorted-{n:03}" for n in range(RUNS)]
    for workflow_id in ids:
        await admin.start_workflow(
            "Idle" if int(workflow_id[-3:]) % 2 else "Busy", id=workflow_id, task_queue=IDLE_QUEUE
        )
    await sign_in(page, server, "/namespaces/default/workflows", await create_key(admin, "reader"))
    # Newest first: the 50 largest ids, and no "sorted-000" (it is on the next page).
    await expect(page.locator("#workflows tbody tr")).to_have_count(50)
    assert await column(page, 1) == ids[::-1][:50]

    await page.click("#workflows button.sort[data-order=WorkflowId]")
    await expect(page.locator("#workflows th[aria-sort=ascending]")).to_contain_text("Workflow ID")
    await expect(page.locator("#workflows tbody tr td:first-child").first).to_have_text("sorted-000")
    assert await column(page, 1) == ids[:50]
    assert "sort=WorkflowId+ASC" in page.url
    await page.click("button.more")
    await expect(page.locator("#workflows tbody tr")).to_have_count(RUNS)
    assert await column(page, 1) == ids  # the next page goes on in the same order, none twice

    await page.click("#workflows button.sort[data-order=WorkflowId]")
    await expect(page.locator("#workflows th[aria-sort=descending]")).to_contain_text("Workflow ID")
    await expect(page.locator("#workflows tbody tr td:first-child").first).to_have_text(ids[-1])
    assert await column(page, 1) == ids[::-1][:50]

    # Typed in the box, with a condition, and kept by a status filter.
    query = "WorkflowType = 'Busy' ORDER BY StartTime ASC"
    await page.goto(f"http://127.0.0.1:{server.http_port}/namespaces/default/workflows?q={quote(query)}")
    busy = [workflow_id for workflow_id in ids if int(workflow_id[-3:]) % 2 == 0]
    await expect(page.locator("#workflows tbody tr")).to_have_count(len(busy))
    assert await column(page, 1) == busy  # oldest first
    await page.click("#status-filters [data-status=Running]")
    await expect(page.locator("#status-filters [data-status=Running].on")).to_have_count(1)
    assert await column(page, 1) == busy

    # A bad order is the server's INVALID_ARGUMENT, shown on the page.
    await page.goto(f"http://127.0.0.1:{server.http_port}/namespaces/default/workflows?sort={quote('TaskQueue ASC')}")
    await expect(page.locator(".error")).to_contain_text("cannot order by 'TaskQueue'")
