"""One installer at a time on this machine: parallel test workers (pytest-xdist) that all
find a tool missing must not run ``npm install`` or ``apt-get install`` at once."""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
from collections.abc import Iterator

__all__ = ["install_lock"]


@contextlib.contextmanager
def install_lock(name: str) -> Iterator[None]:
    """Holds a machine-wide lock named ``name`` for the block (an flock on a file in the
    temporary directory, released when the process dies), so the second worker waits and
    then finds the tool installed."""
    path = os.path.join(tempfile.gettempdir(), f"flowforge-test-install-{name}.lock")
    with open(path, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
