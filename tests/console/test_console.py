"""The console in headless Chromium against a server with authentication on (both
stores): the list finds a workflow by a query; the execution page shows its events and
the DAG with the nodes and edges describe reports, and its downloaded history replays;
a signal sent by another client appears on the open page without a reload; an id
containing ``<script>`` is shown as text; the security headers are set, and forged or
hostile API requests are refused; the page follows a run across a PostgreSQL replica pair."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import aiohttp
import pytest
from playwright.async_api import Page, expect

from flowforge import Client
from flowforge.client import WorkflowHandle, WorkflowHistory
from flowforge.server import FlowForgeServer
from flowforge.testing import Replayer
from tests.console._app import QUEUE, Pipeline, step, waiting_for_signal
from tests.console.conftest import console_server, create_key
from tests.integration._reliability import fast_worker
from testsupport.counting import StoreCounters
from testsupport.parking import ParkingNotifier, history_long_poll
from testsupport.waiting import wait_until

# The measured window of the idle-page test: long enough for any periodic work to show.
WINDOW_S = 6
HOSTILE_ID = 'order-<script>window.pwned=1</script><img src=x onerror="window.pwned=2">'


def base(server: FlowForgeServer) -> str:
    return f"http://127.0.0.1:{server.http_port}"


async def sign_in(page: Page, server: FlowForgeServer, path: str, key: str) -> None:
    await page.goto(base(server) + path)
    await page.fill("#key-form input[name=key]", key)
    await page.click("#key-form button[type=submit]")


def execution_path(workflow_id: str) -> str:
    return f"/namespaces/default/workflows/{quote(workflow_id, safe='')}"


@pytest.fixture
async def worker(admin: Client) -> AsyncIterator[None]:
    async with fast_worker(admin, QUEUE, workflows=[Pipeline], activities=[step]):
        yield


async def test_list_execution_dag_and_live_timeline(
    server: FlowForgeServer, admin: Client, worker: None, page: Page
) -> None:
    handle = await admin.start_workflow(Pipeline.run, "x", id=HOSTILE_ID, task_queue=QUEUE)
    await admin.start_workflow(Pipeline.run, "y", id="other-order", task_queue=QUEUE)
    await wait_until(lambda: waiting_for_signal(handle), timeout=20, what="a, b and c to complete before the signal")
    reader = await create_key(admin, "reader")

    # The list finds it by a query (and the other workflow is not shown).
    await sign_in(page, server, "/namespaces/default/workflows?q=" + quote("WorkflowId = 'other-order'"), reader)
    await expect(page.locator("#workflows tbody tr")).to_have_count(1)
    await expect(page.locator("#workflows tbody a.wid")).to_have_text("other-order")
    await page.fill("#query-form input", "WorkflowType = 'Pipeline' AND WorkflowId STARTS_WITH 'order-'")
    await page.click("#query-form button")
    await expect(page.locator("#workflows tbody tr")).to_have_count(1)
    await expect(page.locator("#status-filters [data-status=Running]")).to_have_text("Running 1")

    # The execution page: the hostile id is text, the events and the DAG are there.
    await page.click("#workflows tbody a.wid")
    await expect(page.locator("#summary h1")).to_have_text(HOSTILE_ID)
    assert await page.evaluate("window.pwned") is None
    assert await page.locator("main script, main img").count() == 0
    history = (await handle.fetch_history()).events
    await expect(page.locator("#timeline tr")).to_have_count(len(history))
    await page.click("button[data-tab=DAG]")
    await _expect_dag(page, admin, handle.id)

    # A signal from another client shows up without a reload, and so does the rest.
    await page.click("button[data-tab=Timeline]")
    await handle.signal(Pipeline.proceed, "from another client")
    await expect(page.locator("#timeline tr.ev-WorkflowExecutionSignaled")).to_have_count(1)
    await handle.result()
    await expect(page.locator("#summary .badge")).to_have_text("COMPLETED")
    await expect(page.locator("#timeline tr")).to_have_count(len((await handle.fetch_history()).events))
    await page.click("button[data-tab=DAG]")
    await _expect_dag(page, admin, handle.id)
    # A node shows its attempts.
    first = (await handle.describe()).dag[0].activity_id
    await page.click(f"svg.dag .dag-node[data-id='{first}']")
    await expect(page.locator("#node-detail tbody tr")).to_have_count(1)
    # Not one action button for a reader.
    assert await page.locator("[data-action]").count() == 0
    # The downloaded history replays.
    async with page.expect_download() as download:
        await page.click("#download")
    saved = await (await download.value).path()
    downloaded = WorkflowHistory.from_json(Path(saved).read_text())
    assert [e.event_id for e in downloaded.events] == [e.event_id for e in await _events(handle)]
    await Replayer(workflows=[Pipeline]).replay_workflow(downloaded)


async def test_an_open_page_on_an_unchanged_execution_costs_the_store_nothing(
    server: FlowForgeServer, admin: Client, worker: None, page: Page
) -> None:
    """While the execution does not change, the page's live timeline sends nothing but
    its parked long-poll, and no store read is made for it: counted over a window of
    several seconds (a second follower's long-poll of WINDOW_S on the same run, which
    parks without a read too)."""
    handle = await admin.start_workflow(Pipeline.run, "idle", id="idle-order", task_queue=QUEUE)
    await wait_until(lambda: waiting_for_signal(handle), timeout=20, what="a, b and c to complete before the signal")
    description = await handle.describe()
    last = (await _events(handle))[-1].event_id
    notifier = server.store.notifier
    assert isinstance(notifier, ParkingNotifier)
    parked = notifier.parked[f"r:{description.run_id}"]
    parked.clear()
    await sign_in(page, server, execution_path(handle.id), await create_key(admin, "reader"))
    await expect(page.locator("#live")).to_contain_text("live")
    await asyncio.wait_for(parked.wait(), 20)
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    counters = StoreCounters(server.store)
    window = await history_long_poll(admin, handle.id, description.run_id, last, seconds=WINDOW_S)
    assert not window.events
    assert requests == [], "the page asked for something while nothing changed"
    assert not [reader for reader in counters.readers if reader.startswith("Executions.")], counters.readers
    # And it is live: a change ends the wait at once.
    await handle.signal(Pipeline.proceed, "now")
    await expect(page.locator("#timeline tr.ev-WorkflowExecutionSignaled")).to_have_count(1)


async def _events(handle: WorkflowHandle[Any, Any]) -> list[Any]:
    return list((await handle.fetch_history()).events)


async def _expect_dag(page: Page, admin: Client, workflow_id: str) -> None:
    description = await admin.get_workflow_handle(workflow_id).describe()
    edges = sorted((dep, node.activity_id) for node in description.dag for dep in node.depends_on)
    await expect(page.locator("svg.dag .dag-node")).to_have_count(len(description.dag))
    drawn = await page.eval_on_selector_all(
        "svg.dag .dag-edge", "paths => paths.map(p => [p.dataset.from, p.dataset.to])"
    )
    assert sorted(map(tuple, drawn)) == edges
    assert len(edges) >= 2  # b and c depend on a


async def test_headers_and_forged_requests(server: FlowForgeServer, admin: Client) -> None:
    reader = await create_key(admin, "reader")
    async with aiohttp.ClientSession() as http:
        async with http.get(base(server) + "/namespaces/default/workflows") as answer:
            assert answer.status == 200
            csp = answer.headers["Content-Security-Policy"]
            assert "script-src 'self'" in csp and "unsafe-inline" not in csp
        terminate = base(server) + "/api/v1/WorkflowService/TerminateWorkflowExecution"
        body = json.dumps({"namespace": "default", "execution": {"workflow_id": "w"}, "reason": "forged"})
        # No key, a reader's key, and a cross-site form (text/plain) are all refused.
        async with http.post(terminate, data=body, headers={"Content-Type": "application/json"}) as answer:
            assert answer.status == 401
        bearer = {"Content-Type": "application/json", "Authorization": f"Bearer {reader}"}
        async with http.post(terminate, data=body, headers=bearer) as answer:
            assert answer.status == 403
            assert (await answer.json())["code"] == "PERMISSION_DENIED"
        async with http.post(terminate, data=body, headers={**bearer, "Content-Type": "text/plain"}) as answer:
            assert answer.status == 415
        poll = base(server) + "/api/v1/WorkflowService/PollActivityTaskQueue"
        async with http.post(poll, data="{}", headers=bearer) as answer:
            assert answer.status == 403
        # Hostile bodies and names get a status and a message, never a traceback.
        describe = base(server) + "/api/v1/WorkflowService/DescribeWorkflowExecution"
        for url, data, status in [
            (describe, "{not json", 400),
            (describe, "[" * 5000 + "]" * 5000, 400),
            (describe, json.dumps({"namespace": "default", "nonsense": 1}), 400),
            (describe, json.dumps({"execution": {"workflow_id": "w"}}), 400),
            (describe, json.dumps({"namespace": "default", "execution": {"workflow_id": "nope"}}), 404),
            (base(server) + "/api/v1/WorkflowService/NoSuchRpc", "{}", 404),
            (base(server) + "/api/v1/Evil/DescribeWorkflowExecution", "{}", 404),
        ]:
            async with http.post(url, data=data, headers=bearer) as answer:
                assert answer.status == status, (url, data[:40], await answer.text())
                assert set(await answer.json()) == {"code", "message"}


@pytest.mark.postgres
async def test_the_page_works_against_a_postgresql_replica_pair(postgres_dsn: str, tmp_path: Path, page: Page) -> None:
    replicas = [console_server(postgres_dsn, tmp_path / "admin.key") for _ in range(2)]
    for replica in replicas:
        await replica.start()
    try:
        key = (tmp_path / "admin.key").read_text().strip()
        client = await Client.connect(f"127.0.0.1:{replicas[0].port}", api_key=key)
        async with fast_worker(client, QUEUE, workflows=[Pipeline], activities=[step]):
            handle = await client.start_workflow(Pipeline.run, "p", id="replicated", task_queue=QUEUE)
            await wait_until(lambda: waiting_for_signal(handle), timeout=30, what="the run to wait for its signal")
            # The page is served by the other replica; the signal goes through the first.
            await sign_in(page, replicas[1], execution_path("replicated"), key)
            await expect(page.locator("#summary h1")).to_have_text("replicated")
            await handle.signal(Pipeline.proceed, "through replica 0")
            await expect(page.locator("#timeline tr.ev-WorkflowExecutionSignaled")).to_have_count(1)
            await handle.result()
            await expect(page.locator("#summary .badge")).to_have_text("COMPLETED")
        await client.close()
    finally:
        for replica in replicas:
            await replica.stop()
