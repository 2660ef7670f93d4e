"""A TCP forwarder for outage and fail-over tests: it can cut every connection at once
or switch to another target port."""

from __future__ import annotations

import asyncio
import contextlib


class TcpProxy:
    """Forwards 127.0.0.1:``port`` to a target, and can cut every connection at
    once: a database outage as the client sees it, without touching the server."""

    def __init__(self, target_host: str, target_port: int) -> None:
        self._target = (target_host, target_port)
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self.port = 0

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    def point_to(self, target_port: int, *, cut: bool) -> None:
        """New connections go to ``target_port`` (a load balancer switching backends);
        with ``cut``, open ones are aborted too, so their clients reconnect to it."""
        self._target = (self._target[0], target_port)
        if cut:
            for writer in list(self._writers):
                writer.transport.abort()

    async def cut(self) -> None:
        """Stops accepting and aborts every open connection (the port is kept for :meth:`start`)."""
        if self._server is not None:
            self._server.close()
            for writer in list(self._writers):
                writer.transport.abort()
            await self._server.wait_closed()
            self._server = None

    async def _handle(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        try:
            server_reader, server_writer = await asyncio.open_connection(*self._target)
        except OSError:
            client_writer.transport.abort()
            return
        self._writers |= {client_writer, server_writer}
        try:
            await asyncio.gather(self._pipe(client_reader, server_writer), self._pipe(server_reader, client_writer))
        finally:
            for writer in (client_writer, server_writer):
                self._writers.discard(writer)
                writer.transport.abort()

    @staticmethod
    async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError):
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        writer.transport.abort()
