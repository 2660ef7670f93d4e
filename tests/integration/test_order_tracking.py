"""samples/order_tracking: orders found by their search attributes while they run and after."""

from __future__ import annotations

import subprocess
import sys

from samples.order_tracking import demo
from tests.integration._processes import ServerProcess, _env


async def test_orders_are_found_by_customer_stage_and_total(server_process: ServerProcess) -> None:
    found = await demo.run(server_process.address)
    assert found == {
        "OrderStage = 'review' AND ExecutionStatus = 'Running'": ["o-1002"],
        "CustomerId = 'c-1'": ["o-1001", "o-1003"],
        "OrderTotal >= 10000 AND ExecutionStatus = 'Completed'": ["o-1002", "o-1003"],
        "CustomerId IN ('c-2', 'c-3') AND OrderStage = 'shipped'": ["o-1002", "o-1004", "o-1005"],
        "OrderTotal BETWEEN 5000 AND 20000 OR CustomerId = 'c-3'": ["o-1003", "o-1004", "o-1005"],
    }


def test_the_demo_runs_with_one_command() -> None:
    finished = subprocess.run(
        [sys.executable, "-m", "samples.order_tracking.demo"], capture_output=True, text=True, timeout=120, env=_env()
    )
    assert finished.returncode == 0, finished.stderr
    assert "Waiting for review: o-1002" in finished.stdout
    assert "5 orders shipped" in finished.stdout
    assert "o-1002: shipped, ship to c-2, 1 Main Street" in finished.stdout
