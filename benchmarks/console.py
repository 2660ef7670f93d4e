"""How fast the console's execution page loads a long history, in headless Chromium.

    python -m benchmarks.console [--events 2000] [--runs 5] [--dag-width 22 --dag-depth 9]
    python -m benchmarks.console --only live [--live-pages 5] [--signals 20]

Makes an execution with ``--events`` events (an ``Inbox`` run and its signals) and a
DAG of ``1 + width * depth + 1`` activities, then opens each execution page ``--runs``
times in a fresh browser context (nothing cached) and prints one JSON line: the time
from navigation to the whole timeline drawn (every event row) and to the DAG drawn, as
median and max, and the bytes the page transferred; then keeps ``--idle-pages`` pages
open on the running execution for ``--idle-seconds`` while nothing happens and counts the
store transactions they cost: all of them (less a window with no page open: the server's
own loops) and those the history long-polls made (``Executions.*`` readers). The window
is longer than the pages' 25 s long-poll, so each page also asks again in it.

Last, the live timeline's delay: ``--live-pages`` pages (each in a fresh browser context)
follow a running execution while another client sends it ``--signals`` signals, one at a
time, each once every page has asked again for its history. A ``MutationObserver`` in each
page takes ``Date.now()`` when the signal's row is inserted; the host takes ``time.time()``
when the signal RPC returned (the same machine clock), and the difference is each page's
delay (negative when the page drew the row before the client had its answer). Measured,
not asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import functools
import json
import os
import statistics
import time

from playwright.async_api import Browser, Page, Request, async_playwright

from benchmarks._console_demo import QUEUE, Chains, Inbox, long_history, start_server, transform
from benchmarks.onboarding import percentile
from flowforge import Client
from flowforge.server import FlowForgeServer
from flowforge.worker import Worker
from testsupport.chromium import LAUNCH_ARGS, find_chromium
from testsupport.counting import StoreCounters


async def _load(browser: Browser, url: str, ready: str) -> tuple[float, int]:
    """Seconds until ``ready`` (a JS condition) holds after navigating to ``url``; bytes received."""
    context = await browser.new_context()
    page = await context.new_page()
    started = time.perf_counter()
    await page.goto(url)
    await page.wait_for_function(ready, timeout=30_000)
    elapsed = time.perf_counter() - started
    received = await page.evaluate(
        "() => performance.getEntries().reduce((sum, e) => sum + (e.encodedBodySize || 0), 0)"
    )
    await context.close()
    return elapsed, int(received)


async def _idle_cost(
    browser: Browser, server: FlowForgeServer, url: str, pages: int, seconds: float
) -> collections.Counter[str]:
    """Store transactions while ``pages`` pages follow a running execution that does not change."""
    context = await browser.new_context()
    for _ in range(pages):
        page = await context.new_page()
        await page.goto(url)
        await page.wait_for_function("() => document.getElementById('live')?.textContent.includes('live')")
    store = server.store
    transaction, read = store.transaction, store.read
    counters = StoreCounters(store)
    await asyncio.sleep(seconds)  # the measurement window
    store.transaction, store.read = transaction, read  # type: ignore[method-assign]
    await context.close()
    counts = collections.Counter(counters.counts)
    counts["history_reads"] = sum(n for reader, n in counters.readers.items() if reader.startswith("Executions."))
    return counts


# Each page's clock (ms since the epoch) when a signal's row was inserted in its timeline, in order.
_OBSERVE_SIGNALS = """() => {
  window.signaledAt = [];
  new MutationObserver((changes) => {
    const now = Date.now();
    for (const change of changes) {
      for (const row of change.addedNodes) {
        if (row.classList && row.classList.contains('ev-WorkflowExecutionSignaled')) window.signaledAt.push(now);
      }
    }
  }).observe(document.getElementById('timeline'), { childList: true });
}"""


def _count_history_request(polls: collections.Counter[int], index: int, request: Request) -> None:
    if request.url.endswith("/GetWorkflowExecutionHistory"):
        polls[index] += 1


async def _live_delay(browser: Browser, client: Client, base: str, pages: int, signals: int) -> dict[str, object]:
    """Seconds from a signal RPC returning to its row in each of ``pages`` open pages."""
    handle = await client.start_workflow(Inbox.run, id="live", task_queue=QUEUE + "-idle")  # no worker
    polls: collections.Counter[int] = collections.Counter()
    opened: list[Page] = []
    for index in range(pages):
        page = await (await browser.new_context()).new_page()
        page.on("request", functools.partial(_count_history_request, polls, index))
        await page.goto(f"{base}/live")
        await page.wait_for_function("() => document.getElementById('live')?.textContent.includes('live')")
        await page.evaluate(_OBSERVE_SIGNALS)
        opened.append(page)
    await asyncio.sleep(1.0)  # each page's first long-poll reaches the server and parks
    delays: list[float] = []
    calls: list[float] = []
    for n in range(signals):
        asked = dict(polls)
        sent = time.time()
        await handle.signal(Inbox.message, f"live {n}")
        returned = time.time()
        calls.append(returned - sent)
        for page in opened:
            await page.wait_for_function(f"() => window.signaledAt.length > {n}", timeout=60_000)
            delays.append(await page.evaluate(f"() => window.signaledAt[{n}]") / 1000 - returned)
        # The next signal finds every page parked again, as a page someone watches is.
        while any(polls[index] <= asked.get(index, 0) for index in range(pages)):
            await asyncio.sleep(0.02)
        await asyncio.sleep(0.2)
    for page in opened:
        await page.context.close()
    await handle.signal(Inbox.close)
    return {"pages": pages, "signals": signals, "row_after_rpc_s": _spread(delays), "signal_rpc_s": _spread(calls)}


def _spread(values: list[float]) -> dict[str, float]:
    """p50, p95 and max, in seconds rounded to the millisecond."""
    return {
        "p50": round(percentile(values, 0.5), 3),
        "p95": round(percentile(values, 0.95), 3),
        "max": round(max(values), 3),
    }


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--dag-width", type=int, default=22)
    parser.add_argument("--dag-depth", type=int, default=9)
    parser.add_argument("--idle-pages", type=int, default=5)
    parser.add_argument("--idle-seconds", type=float, default=60.0)
    parser.add_argument("--live-pages", type=int, default=5)
    parser.add_argument("--signals", type=int, default=20)
    parser.add_argument("--only", choices=["live"], help="measure only the live timeline's delay")
    args = parser.parse_args()
    executable = find_chromium()
    if executable is None:
        raise SystemExit("chromium is not installed and apt-get could not install it")
    server = await start_server()
    client = await Client.connect(f"127.0.0.1:{server.port}")
    base = f"http://127.0.0.1:{server.http_port}/namespaces/default/workflows"
    figures: dict[str, object] = {}
    try:
        async with async_playwright() as playwright:
            browser = await playwright.chromium.launch(executable_path=executable, args=LAUNCH_ARGS)
            if args.only is None:
                figures = await _pages(browser, server, client, base, args)
            figures["live"] = await _live_delay(browser, client, base, args.live_pages, args.signals)
            await browser.close()
    finally:
        await client.close()
        await server.stop()
    figures.update(cpus=os.cpu_count(), load_average=[round(x, 2) for x in os.getloadavg()])
    print(json.dumps(figures))


async def _pages(
    browser: Browser, server: FlowForgeServer, client: Client, base: str, args: argparse.Namespace
) -> dict[str, object]:
    """The page load times and bytes, and the idle cost of open pages."""
    await long_history(client, "long-history", args.events)
    async with Worker(client, task_queue=QUEUE, workflows=[Chains], activities=[transform]):
        dag = await client.start_workflow(Chains.run, args=[args.dag_width, args.dag_depth], id="dag", task_queue=QUEUE)
        await dag.result()
    nodes = 2 + args.dag_width * args.dag_depth
    # First (a closed page's long-poll stays parked until it times out): the server's
    # own background loops, then the same window with the pages open.
    baseline = await _idle_cost(browser, server, f"{base}/long-history", 0, args.idle_seconds)
    idle = await _idle_cost(browser, server, f"{base}/long-history", args.idle_pages, args.idle_seconds)
    history = [
        await _load(
            browser, f"{base}/long-history", f"() => document.querySelectorAll('#timeline tr').length >= {args.events}"
        )
        for _ in range(args.runs)
    ]
    drawn = [
        await _load(
            browser, f"{base}/dag#dag", f"() => document.querySelectorAll('svg.dag .kind-activity').length === {nodes}"
        )
        for _ in range(args.runs)
    ]
    return {
        "events": args.events,
        "history_page_s": {
            "median": round(statistics.median(t for t, _ in history), 3),
            "max": round(max(t for t, _ in history), 3),
        },
        "history_page_bytes": history[0][1],
        "dag_nodes": nodes,
        "dag_page_s": {
            "median": round(statistics.median(t for t, _ in drawn), 3),
            "max": round(max(t for t, _ in drawn), 3),
        },
        "idle_pages": args.idle_pages,
        "idle_seconds": args.idle_seconds,
        "idle_reads_per_page_per_minute": round(
            (idle["read_transactions"] - baseline["read_transactions"]) / args.idle_pages * 60 / args.idle_seconds, 1
        ),
        "idle_history_reads": idle["history_reads"],
        "idle_writes_per_page": (idle["write_transactions"] - baseline["write_transactions"]) / args.idle_pages,
    }


if __name__ == "__main__":
    asyncio.run(main())
