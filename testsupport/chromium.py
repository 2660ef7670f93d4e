"""Debian's ``chromium`` for the console's browser tests, benchmark and screenshots:
found on the PATH, or installed with ``apt-get install -y chromium`` when it is missing
(never ``playwright install``: Playwright drives this executable)."""

from __future__ import annotations

import os
import shutil
import subprocess

from testsupport.install_lock import install_lock

__all__ = ["LAUNCH_ARGS", "find_chromium"]

#: Chromium refuses its sandbox as root in a container.
LAUNCH_ARGS = ["--no-sandbox"]


def find_chromium() -> str | None:
    """The chromium executable, installed with apt-get when missing; None if that failed."""
    found = shutil.which("chromium")
    if found is None and shutil.which("apt-get") is not None:
        # Parallel test workers would otherwise race for dpkg's lock, and the loser would fail.
        with install_lock("chromium"):
            found = shutil.which("chromium")
            if found is None:
                env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
                subprocess.run(
                    ["apt-get", "install", "-y", "-q", "chromium"], env=env, check=False, capture_output=True
                )
                found = shutil.which("chromium")
    return found
