"""Importing the SDK does not load the server: a client-only program needs no
asyncpg, aiohttp or server code (``flowforge.testing`` imports the server only
when a test starts one)."""

from __future__ import annotations

import json
import subprocess
import sys

SDK_MODULES = ["flowforge", "flowforge.client", "flowforge.workflow", "flowforge.activity", "flowforge.testing"]


def _server_side_modules_after_importing(modules: list[str]) -> list[str]:
    """The server-side modules a fresh interpreter holds after importing ``modules``."""
    program = (
        "import importlib, json, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "print(json.dumps(sorted(m for m in sys.modules\n"
        "    if m.startswith('flowforge.server') or m.split('.')[0] in ('asyncpg', 'aiohttp'))))\n"
    )
    completed = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=True, timeout=120)
    modules_loaded: list[str] = json.loads(completed.stdout)
    return modules_loaded


def test_sdk_imports_do_not_load_the_server() -> None:
    assert _server_side_modules_after_importing(SDK_MODULES) == []


def test_the_check_sees_a_server_import() -> None:
    # The same check with the server imported on purpose: it must notice.
    assert "flowforge.server.app" in _server_side_modules_after_importing(["flowforge.server.app"])
