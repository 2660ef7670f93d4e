"""Several server processes on one host, sharing one gRPC port (``--processes N``).

The server is one asyncio thread, so one process uses one core. ``flowforge server
start --processes N`` runs N of them: each is a full server (its own timekeeper,
scheduler candidate, matching) on the shared PostgreSQL store, exactly as replicas on
several hosts are, and all bind the same gRPC port with ``SO_REUSEPORT`` so the kernel
spreads incoming connections over them. This parent only supervises: it starts them,
restarts one that dies (a kill -9 loses only that process's in-flight calls, which
the lease rules already cover), and stops them all on SIGTERM/SIGINT.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import multiprocessing.connection
import os
import signal
import socket
import tempfile
import time
from collections.abc import Callable
from types import FrameType
from typing import Any

__all__ = ["reserve_port", "run_processes"]

log = logging.getLogger("flowforge.server.processes")

_START_TIMEOUT_S = 60.0
_RESTART_DELAY_S = 1.0


def reserve_port(host: str, port: int) -> socket.socket:
    """A socket bound (not listening) to ``host:port`` with ``SO_REUSEPORT``: it fixes the
    port when ``port`` is 0, and the processes then bind the same one beside it. A bound
    socket that does not listen receives no connections."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    reserved = socket.socket(family, socket.SOCK_STREAM)
    reserved.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    reserved.bind((host, port))
    return reserved


def run_processes(
    count: int,
    serve: Callable[..., None],
    *,
    host: str,
    port: int,
    http_port: int | None,
    ready_file: str | None,
) -> None:
    """Runs ``count`` processes of ``serve(port=, http_port=, ready_file=, reuse_port=True)``
    until SIGTERM/SIGINT; writes the shared port to ``ready_file`` once all serve.

    Process ``i`` gets the HTTP listener ``http_port + i`` (each its own ``/metrics``),
    or a free port when ``http_port`` is 0. ``serve`` must be picklable (the processes
    are spawned, not forked: no gRPC state is inherited).
    """
    context = multiprocessing.get_context("spawn")
    stopping = False

    def stop(signum: int, frame: FrameType | None) -> None:
        nonlocal stopping
        stopping = True

    with reserve_port(host, port) as reserved, tempfile.TemporaryDirectory(prefix="flowforge-processes-") as tmp:
        port = reserved.getsockname()[1]

        def spawn(i: int) -> Any:
            child_http = None if http_port is None else (http_port + i if http_port else 0)
            process = context.Process(
                target=serve,
                kwargs={
                    "port": port,
                    "http_port": child_http,
                    "ready_file": os.path.join(tmp, f"ready-{i}"),
                    "reuse_port": True,
                },
                name=f"flowforge-server-{i}",
            )
            process.start()
            return process

        previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGINT)}
        processes = [spawn(i) for i in range(count)]
        try:
            deadline = time.monotonic() + _START_TIMEOUT_S
            while not all(os.path.exists(os.path.join(tmp, f"ready-{i}")) for i in range(count)):
                failed = [p for p in processes if p.exitcode is not None]
                if stopping or failed or time.monotonic() > deadline:
                    raise SystemExit(
                        f"server process {failed[0].name} exited with code {failed[0].exitcode} while starting"
                        if failed
                        else "the server processes did not all start"
                    )
                multiprocessing.connection.wait([p.sentinel for p in processes], timeout=0.1)
            log.info("%d server processes serving on %s:%d (pids %s)", count, host, port, [p.pid for p in processes])
            if ready_file:
                with open(ready_file + ".tmp", "w") as f:
                    f.write(str(port))
                os.replace(ready_file + ".tmp", ready_file)
            while not stopping:
                multiprocessing.connection.wait([p.sentinel for p in processes], timeout=0.5)
                for i, process in enumerate(processes):
                    if process.exitcode is not None and not stopping:
                        log.error(
                            "server process %s (pid %s) exited with code %s; starting it again",
                            process.name,
                            process.pid,
                            process.exitcode,
                        )
                        time.sleep(_RESTART_DELAY_S)  # a process that dies at once must not spin
                        processes[i] = spawn(i)
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            for process in processes:
                if process.exitcode is None and process.pid is not None:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(process.pid, signal.SIGTERM)
            for process in processes:
                process.join(timeout=30)
                if process.exitcode is None:
                    process.kill()
                    process.join()
