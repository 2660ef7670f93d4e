"""Temporal code, rewritten by ``scripts/port_from_temporal.py``, runs on FlowForge unchanged otherwise.

Every module under ``temporal/`` (workflows, activities and pytest tests written against
``temporalio``) is ported into a temporary package (``tests/compat/_porting.py``); its ``test_*``
functions are collected here, so each runs on SQLite and PostgreSQL like any other test.
"""

from __future__ import annotations

from tests.compat._porting import SOURCE, ported_module

for _path in sorted(SOURCE.glob("test_*.py")):
    for _name, _test in vars(ported_module(_path.stem)).items():
        if _name.startswith("test_"):
            assert _name not in globals(), f"two ported tests are named {_name}"
            globals()[_name] = _test


def test_the_sources_are_temporal_code() -> None:
    # The suite proves something only while its sources really are Temporal's API.
    for path in SOURCE.glob("*.py"):
        text = path.read_text()
        assert "flowforge" not in text, f"{path.name} imports FlowForge directly"
    assert any("from temporalio" in path.read_text() for path in SOURCE.glob("test_*.py"))
