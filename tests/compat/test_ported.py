"""Temporal code, rewritten by ``scripts/port_from_temporal.py``, runs on FlowForge unchanged otherwise.

At import, every module under ``temporal/`` (workflows, activities and pytest tests written
against ``temporalio``) is ported into a temporary package, ``temporal_ported``; its ``test_*``
functions are collected here, so each runs on SQLite and PostgreSQL like any other test.
"""

from __future__ import annotations

import atexit
import importlib
import shutil
import sys
import tempfile
from pathlib import Path

from scripts.port_from_temporal import port_tree

SOURCE = Path(__file__).parent / "temporal"
_ROOT = Path(tempfile.mkdtemp(prefix="flowforge-compat-"))
atexit.register(shutil.rmtree, _ROOT, ignore_errors=True)
port_tree(SOURCE, _ROOT / "temporal_ported")
sys.path.insert(0, str(_ROOT))

for _path in sorted(SOURCE.glob("test_*.py")):
    _module = importlib.import_module(f"temporal_ported.{_path.stem}")
    for _name, _test in vars(_module).items():
        if _name.startswith("test_"):
            assert _name not in globals(), f"two ported tests are named {_name}"
            globals()[_name] = _test


def test_the_sources_are_temporal_code() -> None:
    # The suite proves something only while its sources really are Temporal's API.
    for path in SOURCE.glob("*.py"):
        text = path.read_text()
        assert "flowforge" not in text, f"{path.name} imports FlowForge directly"
    assert any("from temporalio" in path.read_text() for path in SOURCE.glob("test_*.py"))
