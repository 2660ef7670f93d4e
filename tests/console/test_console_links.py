"""Links between runs on the execution page, in headless Chromium (both stores): a run's
timer and child are nodes of its DAG (the child's node opens it), the page links to its
child, the child's to its parent, and a run that continued as new and its successor link
to each other."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from playwright.async_api import Page, expect

from flowforge import Client
from flowforge.server import FlowForgeServer
from tests.console._app import QUEUE, Family, Leaf
from tests.console.test_console import base, execution_path, sign_in
from tests.integration._reliability import fast_worker


@pytest.fixture
async def worker(admin: Client) -> AsyncIterator[None]:
    async with fast_worker(admin, QUEUE, workflows=[Family, Leaf]):
        yield


async def test_child_timer_and_continue_as_new_links(
    server: FlowForgeServer, admin: Client, worker: None, page: Page
) -> None:
    handle = await admin.start_workflow(Family.run, 0, id="family", task_queue=QUEUE)
    assert await handle.result() == "leaf 1!"
    first_run = handle.run_id
    latest = (await admin.get_workflow_handle("family").describe()).run_id
    assert first_run and latest != first_run
    key = admin.api_key
    assert key

    # The first run: its timer and child are DAG nodes, and it links to its child and its successor.
    await sign_in(page, server, f"{execution_path('family')}/{first_run}", key)
    await expect(page.locator("#summary .badge")).to_have_text("CONTINUED_AS_NEW")
    links = page.locator("#summary ul.links")
    await expect(links.get_by_role("link", name=latest)).to_be_visible()
    await expect(links.get_by_role("link", name="family-leaf-0")).to_be_visible()
    await page.click("button[data-tab=DAG]")
    await expect(page.locator("svg.dag .dag-node.kind-timer")).to_have_count(1)
    await expect(page.locator("svg.dag .dag-node.kind-timer")).to_contain_text("timer")
    child = page.locator("svg.dag .dag-node.kind-child[data-id='child:family-leaf-0']")
    await expect(child).to_contain_text("Leaf")
    await child.click()
    await page.click("#node-detail a")

    # The child links back to its parent's run.
    await expect(page.locator("#summary h1")).to_have_text("family-leaf-0")
    await expect(page.locator("#summary .badge")).to_have_text("COMPLETED")
    await page.locator("#summary ul.links").get_by_role("link", name="family").click()
    await expect(page.locator("#summary h1")).to_have_text("family")

    # The run it continued as links back to the first one.
    await page.goto(base(server) + f"{execution_path('family')}/{latest}")
    await expect(page.locator("#summary .badge")).to_have_text("COMPLETED")
    await page.locator("#summary ul.links").get_by_role("link", name=first_run).click()
    await expect(page.locator("#summary .mono").first).to_have_text(first_run)
