"""samples/nightly_report: a cron schedule in Europe/Stockholm starting a report workflow."""

from __future__ import annotations

import subprocess
import sys

from samples.nightly_report import demo
from tests.integration._processes import ServerProcess, _env


async def test_the_schedule_fires_reports_for_their_own_nights(server_process: ServerProcess) -> None:
    reports = await demo.run(server_process.address)
    backfilled = {w: r for w, r in reports.items() if "2026-03" in w}
    # 02:30 Stockholm is 01:30 UTC in winter; on the spring-forward night (29 March)
    # 02:30 does not exist and the fire comes when the clocks jump, 03:00 CEST = 01:00 UTC.
    assert backfilled == {
        "nightly-report-2026-03-28T01:30:00Z": "2026-03-27: 132 orders, 17 224 SEK",
        "nightly-report-2026-03-29T01:00:00Z": "2026-03-28: 133 orders, 17 231 SEK",
    }
    [triggered] = set(reports) - set(backfilled)
    assert triggered.startswith("nightly-report-") and reports[triggered].endswith(" SEK")


def test_the_demo_runs_with_one_command() -> None:
    finished = subprocess.run(
        [sys.executable, "-m", "samples.nightly_report.demo"], capture_output=True, text=True, timeout=120, env=_env()
    )
    assert finished.returncode == 0, finished.stderr
    assert "Schedule nightly-report: 30 2 * * * in Europe/Stockholm" in finished.stdout
    assert "3 executions started by the schedule: trigger, backfill, backfill" in finished.stdout
