"""The console's screenshots: each one scripts/console_screenshots.py takes is committed under
docs/console/ (and no other) and shown in docs/console.md and the README."""

from __future__ import annotations

from pathlib import Path

import pytest

from scripts.console_screenshots import SCREENSHOTS

ROOT = Path(__file__).resolve().parents[2]


def test_the_committed_screenshots_are_the_ones_the_script_takes() -> None:
    assert sorted(path.name for path in (ROOT / "docs" / "console").glob("*.png")) == sorted(SCREENSHOTS)


@pytest.mark.parametrize("name", SCREENSHOTS)
def test_each_screenshot_is_shown(name: str) -> None:
    assert f"](console/{name})" in (ROOT / "docs" / "console.md").read_text()
    assert f"](docs/console/{name})" in (ROOT / "README.md").read_text()
