"""scripts/port_from_temporal.py: Temporal imports become FlowForge's, nothing else changes."""

from __future__ import annotations

from pathlib import Path

from scripts.port_from_temporal import main, port_source

TEMPORAL = """\
import temporalio.workflow
from temporalio import activity, workflow
from temporalio.client import (
    Client,
    WorkflowFailureError as Failed,
    WorkflowHandle,
)
from temporalio.exceptions import TemporalError
from temporalio.worker import Replayer, Worker

with workflow.unsafe.imports_passed_through():
    from temporalio.common import RetryPolicy


def f() -> str:
    return temporalio.workflow.__name__ + "temporalio stays in strings"
"""

FLOWFORGE = """\
import flowforge.workflow
from flowforge import activity, workflow
from flowforge.client import Client, WorkflowHandle
from flowforge.exceptions import WorkflowFailureError as Failed
from flowforge.exceptions import FlowForgeError as TemporalError
from flowforge.testing import Replayer
from flowforge.worker import Worker

with workflow.unsafe.imports_passed_through():
    from flowforge.common import RetryPolicy


def f() -> str:
    return flowforge.workflow.__name__ + "temporalio stays in strings"
"""


def test_imports_are_rewritten_and_nothing_else() -> None:
    assert port_source(TEMPORAL) == FLOWFORGE
    assert port_source(FLOWFORGE) == FLOWFORGE


def test_the_command_line_ports_in_place_or_into_a_copy(tmp_path: Path) -> None:
    source = tmp_path / "src"
    (source / "pkg").mkdir(parents=True)
    (source / "pkg" / "wf.py").write_text(TEMPORAL)
    (source / "plain.py").write_text("x = 1\n")
    assert main(["--check", str(source)]) == 1
    assert main([str(source), "--to", str(tmp_path / "out")]) == 0
    assert (tmp_path / "out" / "src" / "pkg" / "wf.py").read_text() == FLOWFORGE
    assert (tmp_path / "out" / "src" / "plain.py").read_text() == "x = 1\n"
    assert (source / "pkg" / "wf.py").read_text() == TEMPORAL
    assert main([str(source)]) == 0
    assert (source / "pkg" / "wf.py").read_text() == FLOWFORGE
    assert main(["--check", str(source)]) == 0
