"""The samples' one-command demos: a real ``flowforge server start-dev`` process on a
free port, in memory, for as long as the demo runs."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from typing import IO, Any


def start_server(
    arguments: list[str],
    ready_file: str,
    timeout_s: float = 30,
    *,
    port: int = 0,
    log: IO[bytes] | None = None,
    env: dict[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    log_level: str = "WARNING",
) -> tuple[subprocess.Popen[bytes], str]:
    """Starts ``flowforge server <arguments>`` writing its port to ``ready_file``;
    returns the process and its address once it serves.

    Args:
        arguments: The subcommand and its options, e.g. ``["start", "--store", url]``.
        ready_file: Where the server writes its port once it serves.
        timeout_s: How long it may take to start.
        port: The gRPC port; 0 takes a free one.
        log: Where the server's output goes (both streams); the console if None.
        env: The server's environment; this process's if None.
        cwd: The server's working directory (``start-dev`` keeps its database there); this
            process's if None.
        log_level: The server's ``--log-level``.

    Raises:
        RuntimeError: The server exited or did not start in time (it is killed).
    """
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "flowforge.cli",
            "server",
            *arguments,
            "--port",
            str(port),
            "--ready-file",
            ready_file,
            "--log-level",
            log_level,
        ],
        env=env,
        cwd=cwd,
        stdout=log,
        stderr=subprocess.STDOUT if log is not None else None,
    )
    deadline = time.monotonic() + timeout_s
    while not os.path.exists(ready_file):
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise RuntimeError(f"the server ({' '.join(arguments)}) did not start (exit status {process.wait()})")
        time.sleep(0.02)
    with open(ready_file) as f:
        return process, f"127.0.0.1:{f.read().strip()}"


def start_dev_server(ready_file: str) -> tuple[subprocess.Popen, str]:
    """Starts the dev server (in memory, its HTTP listener on a free port); returns the process
    and its address once it serves."""
    return start_server(["start-dev", "--in-memory", "--http-port", "0"], ready_file)


def run_with_dev_server(demo: Callable[[str], Awaitable[Any]]) -> None:
    """Runs ``demo(address)`` against a dev server started for it, then stops the server."""
    with tempfile.TemporaryDirectory() as tmp:
        server, address = start_dev_server(os.path.join(tmp, "ready"))
        try:
            asyncio.run(demo(address))
        finally:
            server.terminate()
            server.wait(timeout=30)
