"""samples/dag_onboarding: the declarative onboarding DAG runs with one command, no workflow code."""

from __future__ import annotations

import subprocess
import sys

from flowforge.dag import load_dag
from samples.dag_onboarding.activities import DEFINITION
from tests.integration._processes import _env


def test_the_demo_runs_with_one_command() -> None:
    finished = subprocess.run(
        [sys.executable, "-m", "samples.dag_onboarding.demo"], capture_output=True, text=True, timeout=120, env=_env()
    )
    assert finished.returncode == 0, finished.stderr
    out = finished.stdout
    assert f"Published onboarding version {load_dag(DEFINITION).digest} as 'prod'" in out
    assert '"sent_to": "ada@example.com"' in out and "Status: COMPLETED" in out
    assert "WorkflowTask" not in out  # the server ran the DAG: no workflow task in the history
    assert "[enrich_customer] enrich_customer    after ['fetch_credit_file', 'score_risk', 'verify_identity']" in out
