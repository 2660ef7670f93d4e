"""The server process's one HTTP listener (``--http-port``, docs/architecture.md "Operations
contract"): ``/metrics``, ``/healthz``, ``/readyz`` and the event webhook
``POST /events`` share one aiohttp application on the gRPC server's event loop.

Each feature adds its routes before :meth:`HttpListener.start`; the listener binds
the port and says where each route answers.
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Awaitable, Callable

from aiohttp import web

__all__ = ["HttpListener"]

log = logging.getLogger("flowforge.server.http")

# How long a stop lets requests in flight finish before cancelling them.
_SHUTDOWN_S = 1.0

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class HttpListener:
    """One aiohttp application on one port.

    Args:
        host: Address to listen on (the gRPC server's).
        port: Port; 0 picks a free one (see :attr:`port`).
        max_body_bytes: Larger request bodies are refused (413 from aiohttp).
    """

    def __init__(self, *, host: str, port: int, max_body_bytes: int) -> None:
        self._host = host
        self._requested_port = port
        self._app = web.Application(client_max_size=max_body_bytes)
        # (method, path, what): logged once the port is bound.
        self._routes: list[tuple[str, str, str]] = []
        self._runner: web.AppRunner | None = None
        #: The bound port once started.
        self.port: int | None = None

    def add_route(self, method: str, path: str, handler: Handler, *, what: str) -> None:
        """Serves ``method path`` with ``handler``; ``what`` names it in the start-up log."""
        self._app.router.add_route(method, path, handler)
        self._routes.append((method, path, what))

    async def start(self) -> None:
        """Binds the port and serves; OSError naming the port if it is taken."""
        # A console page parks a long-poll for up to 25 s: stopping must not wait for it,
        # and a closed tab's is cancelled at once (as gRPC cancels a call the client dropped).
        runner = web.AppRunner(
            self._app, access_log=None, handle_signals=False, shutdown_timeout=_SHUTDOWN_S, handler_cancellation=True
        )
        await runner.setup()
        family = socket.AF_INET6 if ":" in self._host else socket.AF_INET
        try:
            sock = socket.create_server((self._host, self._requested_port), family=family)
        except OSError as error:
            await runner.cleanup()
            paths = ", ".join(f"{method} {path}" if method != "GET" else path for method, path, _ in self._routes)
            raise OSError(
                f"cannot listen on {self._host}:{self._requested_port} for {paths} ({error.strerror});"
                " choose another --http-port (0 = any free port)"
            ) from error
        self.port = sock.getsockname()[1]
        await web.SockSite(runner, sock).start()
        self._runner = runner
        for _method, path, what in self._routes:
            log.info("%s listening on http://%s:%d%s", what, self._host, self.port, path)

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
