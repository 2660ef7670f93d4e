"""The samples' one-command demos: a real ``flowforge server start-dev`` process on a
free port, in memory, for as long as the demo runs."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
import time
from typing import Any, Awaitable, Callable


def start_dev_server(ready_file: str) -> tuple[subprocess.Popen, str]:
    """Starts the dev server; returns the process and its address once it serves."""
    process = subprocess.Popen(
        [sys.executable, "-m", "flowforge.cli", "server", "start-dev", "--in-memory", "--port", "0",
         "--http-port", "0", "--ready-file", ready_file, "--log-level", "WARNING"]
    )
    deadline = time.monotonic() + 30
    while not os.path.exists(ready_file):
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise RuntimeError("the dev server did not start")
        time.sleep(0.05)
    with open(ready_file) as f:
        return process, f"127.0.0.1:{f.read().strip()}"


def run_with_dev_server(demo: Callable[[str], Awaitable[Any]]) -> None:
    """Runs ``demo(address)`` against a dev server started for it, then stops the server."""
    with tempfile.TemporaryDirectory() as tmp:
        server, address = start_dev_server(os.path.join(tmp, "ready"))
        try:
            asyncio.run(demo(address))
        finally:
            server.terminate()
            server.wait(timeout=30)
