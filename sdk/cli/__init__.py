"""The ``flowforge`` command line, built on click (commands) and rich (tables, colours, progress).

One module per command group (``server``, ``workflow``, ``schedule``, ``trigger``/``event``,
``search-attribute``, ``namespace``, ``config``); every client command shares one connection
layer (:mod:`flowforge.cli._connection`). docs/cli.md is generated from this command tree.
"""

from flowforge.cli._main import cli, main

__all__ = ["cli", "main"]
