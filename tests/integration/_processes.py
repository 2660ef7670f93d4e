"""Real processes for integration tests: a server and workers that can be kill -9'd."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from samples._dev_server import start_server

ROOT = Path(__file__).resolve().parents[2]


def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.update(extra)
    return env


class ServerProcess:
    """``flowforge server start`` in a child process, restartable on the same port.

    Without authentication (``--insecure-no-auth``) unless ``insecure_no_auth=False``.
    """

    def __init__(
        self,
        store: str,
        workdir: Path,
        *,
        name: str = "server",
        extra_args: tuple[str, ...] = (),
        insecure_no_auth: bool = True,
        log_level: str = "WARNING",
    ) -> None:
        self.store = store
        self.log_level = log_level
        self.insecure_no_auth = insecure_no_auth
        self.workdir = workdir
        self.name = name
        self.extra_args = extra_args
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None
        self._log = open(workdir / f"{name}.log", "ab")

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> str:
        ready = self.workdir / f"{self.name}.ready"
        ready.unlink(missing_ok=True)
        try:
            self.process, address = start_server(
                [
                    "start",
                    "--store",
                    self.store,
                    *(("--insecure-no-auth",) if self.insecure_no_auth else ()),
                    *self.extra_args,
                ],
                str(ready),
                timeout_s=60,
                port=self.port,
                log=self._log,
                env=_env(),
                log_level=self.log_level,
            )
        except RuntimeError as error:
            raise RuntimeError(f"{error}; see {self.workdir / (self.name + '.log')}") from None
        self.port = int(address.rsplit(":", 1)[1])
        return self.address

    def kill9(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=30)
        self._log.flush()


ADMIN_KEY_FILE = "admin.key"
"""Where :func:`auth_server` has the server write its bootstrapped admin key, in its workdir."""


def auth_server(
    store_url: str, workdir: Path, *, name: str = "server", api_key_cache_s: float | None = None
) -> ServerProcess:
    """A :class:`ServerProcess` with authentication on; on its first start it writes an admin
    key for all namespaces to ``workdir / ADMIN_KEY_FILE``. Not started yet."""
    workdir.mkdir(parents=True, exist_ok=True)
    cache = ("--api-key-cache", str(api_key_cache_s)) if api_key_cache_s is not None else ()
    return ServerProcess(
        store_url,
        workdir,
        name=name,
        insecure_no_auth=False,
        extra_args=("--bootstrap-admin-key-file", str(workdir / ADMIN_KEY_FILE), *cache),
    )


class WorkerProcess:
    """A worker of tests/integration/_worker_app.py in a child process."""

    def __init__(
        self,
        address: str,
        task_queue: str,
        ledger: Path,
        workdir: Path,
        *,
        name: str = "worker",
        extra_args: tuple[str, ...] = (),
        app: str = "tests.integration._worker_app",
    ) -> None:
        self._log = open(workdir / f"{name}.log", "ab")
        self.process = subprocess.Popen(
            [sys.executable, "-m", app, address, task_queue, *extra_args],
            env=_env(FLOWFORGE_TEST_LEDGER=str(ledger)),
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )

    def kill9(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)

    def terminate(self) -> None:
        self.process.send_signal(signal.SIGTERM)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=30)
        self._log.close()


def record(**fields: Any) -> None:
    """Appends one JSON line to the ledger (``FLOWFORGE_TEST_LEDGER``); O_APPEND makes each
    small write atomic, so lines of several processes never interleave."""
    line = json.dumps({**fields, "pid": os.getpid(), "at": time.time()}) + "\n"
    fd = os.open(os.environ["FLOWFORGE_TEST_LEDGER"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


def read_ledger(ledger: Path) -> list[dict[str, Any]]:
    """The lines activities appended (one JSON object each)."""
    if not ledger.exists():
        return []
    return [json.loads(line) for line in ledger.read_text().splitlines() if line.strip()]
