"""Azurite (Azure Storage's emulator) for tests: installed from npm on first use, started
on a free port.

:func:`start_azurite` installs the ``azurite`` npm package into a cache directory
(``FLOWFORGE_TEST_AZURITE_DIR``, default ``~/.cache/flowforge-test/azurite``) unless
it is there already — so a fresh machine with Debian's ``nodejs`` and ``npm`` needs
nothing else — then runs ``azurite-blob`` with its data in a temporary directory and
telemetry off, and waits until it accepts connections.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from testsupport.install_lock import install_lock
from testsupport.postgres import free_port

__all__ = ["ACCOUNT", "AzuriteServer", "AzuriteUnavailable", "start_azurite"]

ENV_DIR = "FLOWFORGE_TEST_AZURITE_DIR"
ACCOUNT = "devstoreaccount1"
# Azurite's well-known development key (public, the same in every installation).
_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
_INSTALL_TIMEOUT_S = 300
_START_TIMEOUT_S = 60


class AzuriteUnavailable(Exception):
    """Azurite could not be installed or started; the message says why."""


@dataclass
class AzuriteServer:
    """A running ``azurite-blob``."""

    port: int
    process: subprocess.Popen[bytes]
    data_dir: tempfile.TemporaryDirectory[str] = field(repr=False)

    @property
    def connection_string(self) -> str:
        """For ``BlobServiceClient.from_connection_string``."""
        return (
            f"DefaultEndpointsProtocol=http;AccountName={ACCOUNT};AccountKey={_KEY};"
            f"BlobEndpoint=http://127.0.0.1:{self.port}/{ACCOUNT};"
        )

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        self.data_dir.cleanup()


def _installed_binary() -> Path:
    """``azurite-blob`` from the cache directory, installed with npm first if missing."""
    prefix = Path(os.environ.get(ENV_DIR) or Path.home() / ".cache" / "flowforge-test" / "azurite")
    binary = prefix / "node_modules" / ".bin" / "azurite-blob"
    if binary.exists():
        return binary
    # Parallel test workers install once: the others wait here, then find the binary.
    with install_lock("azurite"):
        if not binary.exists():
            _npm_install(prefix, binary)
    return binary


def _npm_install(prefix: Path, binary: Path) -> None:
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        raise AzuriteUnavailable("node and npm are not installed (Debian: apt-get install nodejs npm)")
    prefix.mkdir(parents=True, exist_ok=True)
    try:
        subprocess.run(
            [npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund", "--loglevel=error", "azurite@3"],
            check=True,
            capture_output=True,
            timeout=_INSTALL_TIMEOUT_S,
        )
    except subprocess.CalledProcessError as error:
        raise AzuriteUnavailable(
            f"npm install azurite failed: {error.stderr.decode(errors='replace')[-2000:]}"
        ) from None
    except subprocess.TimeoutExpired:
        raise AzuriteUnavailable(f"npm install azurite took over {_INSTALL_TIMEOUT_S}s") from None
    if not binary.exists():
        raise AzuriteUnavailable(f"npm install azurite left no {binary}")


def start_azurite() -> AzuriteServer:
    """Installs (if needed) and starts Azurite's blob service; raises :class:`AzuriteUnavailable`."""
    binary = _installed_binary()
    port = free_port()
    data_dir = tempfile.TemporaryDirectory(prefix="flowforge-azurite-")
    log = open(Path(data_dir.name) / "azurite.log", "wb")
    process = subprocess.Popen(
        [
            str(binary),
            "--silent",
            "--disableTelemetry",
            "--skipApiVersionCheck",
            "--location",
            data_dir.name,
            "--blobHost",
            "127.0.0.1",
            "--blobPort",
            str(port),
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    log.close()
    server = AzuriteServer(port, process, data_dir)
    deadline = time.monotonic() + _START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            output = (Path(data_dir.name) / "azurite.log").read_text(errors="replace")[-2000:]
            server.stop()
            raise AzuriteUnavailable(f"azurite-blob exited with {process.returncode}: {output}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return server
        except OSError:
            time.sleep(0.1)
    server.stop()
    raise AzuriteUnavailable(f"azurite-blob did not listen on port {port} within {_START_TIMEOUT_S}s")
