"""Health: is this server process alive, and can it serve (does its store answer)?

A probe task writes nothing but opens a write transaction on the store every
``interval_s`` (a read alone would pass on SQLite while another process holds the
write lock, and a server that cannot write cannot serve). Its outcome drives both
faces of health:

- gRPC ``grpc.health.v1.Health``: the overall status (service ``""``) and the
  WorkflowService are SERVING only while the last probe succeeded, NOT_SERVING
  during a store outage, and SERVING again by themselves after it;
- HTTP on the server's listener: ``GET /healthz`` (liveness: the process answers)
  and ``GET /readyz`` (readiness: the last probe succeeded; 503 with the reason).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from aiohttp import web
from grpc_health.v1 import health, health_pb2

from flowforge.server._tasks import cancel_and_wait
from flowforge.server.http import HttpListener
from flowforge.server.stores.base import Store, StoreUnavailable

__all__ = ["HealthMonitor"]

log = logging.getLogger("flowforge.server.health")

_SERVING = health_pb2.HealthCheckResponse.SERVING
_NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


class HealthMonitor:
    """Probes the store and publishes the result over gRPC health and HTTP.

    Args:
        store: The store whose answers decide readiness.
        services: Fully-qualified gRPC service names that need the store.
        interval_s: Time between probes.
        timeout_s: A probe slower than this counts as failed.
    """

    def __init__(
        self, store: Store, services: Sequence[str], *, interval_s: float = 1.0, timeout_s: float = 5.0
    ) -> None:
        self._store = store
        self._services = ("", *services)
        self._interval_s = interval_s
        self._timeout_s = timeout_s
        #: The gRPC health servicer to register on the server.
        self.servicer = health.aio.HealthServicer()
        self._task: asyncio.Task[None] | None = None
        #: Why the store is not ready (empty while ready).
        self.problem = "not probed yet"

    @property
    def ready(self) -> bool:
        """True while the last probe of the store succeeded."""
        return not self.problem

    def attach(self, listener: HttpListener) -> None:
        """Serves ``GET /healthz`` and ``GET /readyz`` on ``listener``."""
        listener.add_route("GET", "/healthz", self._healthz, what="liveness")
        listener.add_route("GET", "/readyz", self._readyz, what="readiness")

    async def start(self) -> None:
        """Probes once (so the first answer is real), then keeps probing."""
        await self.probe()
        self._task = asyncio.create_task(self._run(), name="flowforge-health-probe")

    async def stop(self) -> None:
        """NOT_SERVING for good (the server is going away), and no more probes."""
        await self.servicer.enter_graceful_shutdown()
        await cancel_and_wait(self._task)
        self._task = None

    async def probe(self) -> None:
        """Checks the store now and publishes the outcome."""
        try:
            async with asyncio.timeout(self._timeout_s):  # not wait_for: it can swallow stop()'s cancel
                await self._check_store()
        except StoreUnavailable as error:
            problem = f"the store is unavailable: {error}"
        except TimeoutError:
            problem = f"the store did not answer within {self._timeout_s:g} s"
        except Exception as error:  # not ready either; the next probe decides again
            log.exception("health probe of the store failed")
            problem = f"the store probe failed ({type(error).__name__})"
        else:
            problem = ""
        if problem != self.problem:
            if problem:
                log.warning("not serving: %s", problem)
            elif self.problem != "not probed yet":
                log.info("serving again: the store answers")
        self.problem = problem
        for service in self._services:
            await self.servicer.set(service, _NOT_SERVING if problem else _SERVING)

    async def _check_store(self) -> None:
        async with self._store.transaction() as tx:
            await tx.get_metadata("schema_version")

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self._interval_s)
            await self.probe()

    async def _healthz(self, _request: web.Request) -> web.Response:
        return web.json_response({"status": "ok"})

    async def _readyz(self, _request: web.Request) -> web.Response:
        if self.ready:
            return web.json_response({"status": "ready"})
        return web.json_response({"status": "not ready", "reason": self.problem}, status=503)
