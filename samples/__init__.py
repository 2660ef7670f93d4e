"""Runnable samples; each module's docstring says how to run it."""

from __future__ import annotations

import sys


def server_address() -> str:
    """The server a sample connects to: its first argument, else what the CLI would use.

    That is ``FLOWFORGE_ADDRESS`` or the address of the config file's profile
    (``flowforge.envconfig``, docs/cli.md), else ``localhost:7233``.
    """
    if len(sys.argv) > 1:
        return sys.argv[1]
    from flowforge.envconfig import ClientConfigProfile

    return ClientConfigProfile.load().address or "localhost:7233"
