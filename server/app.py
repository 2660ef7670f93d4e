"""The server process: a store, the history engine, matching, the timekeeper, the
gRPC frontend (with health and reflection) and the HTTP listener, started and
stopped together."""

from __future__ import annotations

import asyncio
import dataclasses
import gc
import logging
import os
import signal
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from flowforge.api.v1 import access_pb2, access_pb2_grpc, workflow_service_pb2, workflow_service_pb2_grpc
from flowforge.server._tasks import cancel_and_wait
from flowforge.server.auth.service import AccessService
from flowforge.server.auth.setup import AuthConfig, TLSFiles, bootstrap_admin_key, build_interceptor, server_credentials
from flowforge.server.batches import BatchRunner
from flowforge.server.clock import Clock, SystemClock
from flowforge.server.console import Console, ConsoleOidc
from flowforge.server.events import EventRouter
from flowforge.server.frontend import WorkflowService
from flowforge.server.frontend.malformed import MalformedRequests
from flowforge.server.health import HealthMonitor
from flowforge.server.history import EngineConfig, HistoryEngine
from flowforge.server.http import HttpListener
from flowforge.server.matching import MAX_PARKED_POLLS, Matching
from flowforge.server.retention import RetentionSweeper
from flowforge.server.rpc_observer import RpcObserver
from flowforge.server.scheduler import Scheduler, SchedulerConfig, Schedules
from flowforge.server.stores.base import Store
from flowforge.server.timers import Timekeeper
from flowforge.server.tracing import ServerTracing
from flowforge.server.unary_handlers import InterceptorChain
from flowforge.server.webhook import EventWebhook

__all__ = ["FlowForgeServer", "ServerConfig", "open_store"]

log = logging.getLogger("flowforge.server")

# Responses (history pages) may carry many payloads.
_MAX_MESSAGE_BYTES = 64 * 1024 * 1024


def max_request_bytes(max_payload_bytes: int) -> int:
    """The largest request gRPC accepts: room for a few payloads at the limit (a start's
    input and memo, a completion's results) and the rest of the message, so a payload
    a little over the limit is refused by the server with a clear INVALID_ARGUMENT,
    and a far larger request by gRPC (RESOURCE_EXHAUSTED) before it is read into memory."""
    return 4 * max_payload_bytes + 1024 * 1024


_WORKFLOW_SERVICE = workflow_service_pb2.DESCRIPTOR.services_by_name["WorkflowService"].full_name


class _GenericOnly:
    """What the generated ``add_*Servicer_to_server`` functions register on: the generic
    handler each adds, not its "registered methods".

    grpc.aio's server keeps one pending call request per registered method and waits on
    all of them (``asyncio.wait`` over ~75 futures, their callbacks added and removed) for
    every call it accepts; the generic handler serves the same method handlers from a
    single pending request. (Reflection, registered by its own helper on the server
    itself, adds one.)
    """

    def __init__(self, server: grpc.aio.Server) -> None:
        self._server = server

    def add_generic_rpc_handlers(self, handlers: tuple[grpc.GenericRpcHandler, ...]) -> None:
        self._server.add_generic_rpc_handlers(handlers)

    def add_registered_method_handlers(
        self, service: str, handlers: dict[str, grpc.RpcMethodHandler[Any, Any]]
    ) -> None:
        """Nothing: the generic handler added with them serves these methods."""


@dataclasses.dataclass
class ServerConfig:
    """How to run a server."""

    store: str = "flowforge.db"
    """``postgresql://user@host:port/db``, ``sqlite:///path``, a file path, or ``:memory:``."""
    host: str = "127.0.0.1"
    port: int = 7233
    """0 picks a free port (see :attr:`FlowForgeServer.port`)."""
    reuse_port: bool = False
    """Bind the gRPC port with ``SO_REUSEPORT``, beside the other processes of
    ``flowforge server start --processes N`` (off: a second server on the port fails)."""
    engine: EngineConfig = dataclasses.field(default_factory=EngineConfig)
    poll_recheck_interval_s: float = 1.0
    max_parked_polls: int = MAX_PARKED_POLLS
    """Polls that may wait on one task queue at once in this process (more: RESOURCE_EXHAUSTED)."""
    shutdown_grace_s: float = 5.0
    clock: Clock = dataclasses.field(default_factory=SystemClock)
    """What "now" is for every deadline; tests pass a :class:`ManualClock` to control time."""
    # event triggers (docs/events.md)
    http_port: int | None = None
    """Port of the HTTP listener (on :attr:`host`): the console at ``/``, ``/metrics``,
    ``/healthz``, ``/readyz`` and ``POST /events``; ``None`` = no HTTP listener, 0 = a free port (see
    :attr:`FlowForgeServer.http_port`)."""
    otlp_endpoint: str | None = None
    """OTLP/HTTP collector (``http://collector:4318``) for the server's spans; ``None``: no spans."""
    health_probe_interval_s: float = 1.0
    """How often the store is probed for gRPC health and ``/readyz``."""
    webhook: bool = True
    """Serve ``POST /events`` on the HTTP listener (``start-dev`` only when asked for)."""
    webhook_secrets: dict[str, str] = dataclasses.field(default_factory=dict, repr=False)
    """Namespace → HMAC-SHA256 secret for ``POST /events``; key ``"*"`` covers the
    other namespaces. A namespace with a secret accepts only signed events."""
    event_dedupe_window_s: float = 24 * 3600.0
    """How long a published event's ``(namespace, source, id)`` is remembered: a
    re-publish within it starts nothing."""
    event_dedupe_sweep_interval_s: float = 60.0
    """How often dedupe rows past their window are deleted."""
    retention_sweep_interval_s: float = 60.0
    """How often closed executions past their namespace's retention are purged."""
    scheduler: SchedulerConfig = dataclasses.field(default_factory=SchedulerConfig)
    """Leader election and timing of the schedule scheduler (docs/schedules.md)."""
    auth: AuthConfig = dataclasses.field(default_factory=AuthConfig)
    """Who may call (API keys, JWTs, roles; docs/security.md). Off by default: the dev server."""
    tls: TLSFiles | None = None
    """Serve gRPC over TLS (mTLS with ``client_ca``); None = plaintext."""
    console_codec_endpoint: str | None = None
    """A remote codec server the console's pages decode payloads with, from the browser
    (Temporal's ``POST {url}/decode``; docs/console.md); None = payloads shown encoded."""
    console_oidc: ConsoleOidc | None = None
    """The OIDC provider and public client the console's pages sign in with (authorization
    code flow with PKCE; docs/console.md); None = an API key or a pasted JWT only. The
    tokens it gets are verified like any bearer JWT: configure :attr:`AuthConfig.jwks`."""


def open_store(url: str) -> Store:
    """The store a URL names."""
    if url.startswith(("postgresql://", "postgres://")):
        from flowforge.server.stores.postgres import PostgresStore

        return PostgresStore(url)
    from flowforge.server.stores.sqlite import SQLiteStore

    if url == ":memory:":
        return SQLiteStore(None)
    return SQLiteStore(url.removeprefix("sqlite://"))


class FlowForgeServer:
    """One FlowForge server replica."""

    def __init__(self, config: ServerConfig) -> None:
        if config.console_oidc is not None and not config.auth.jwks:
            # The login would work at the provider and every token it got be refused here.
            raise ValueError("console_oidc needs auth.jwks (and jwt_issuer, jwt_audience) to verify its tokens")
        self.config = config
        self.store = open_store(config.store)
        self.engine = HistoryEngine(self.store, config.engine, config.clock)
        self.timekeeper = Timekeeper(self.engine)
        #: Long polls on the task queues (its ``held`` tasks: leases that failed, set aside).
        self.matching = Matching(self.engine, config.poll_recheck_interval_s, config.max_parked_polls)
        self.retention = RetentionSweeper(self.engine, interval_s=config.retention_sweep_interval_s)
        self.batches = BatchRunner(self.engine)
        self.events = EventRouter(
            self.engine,
            dedupe_window_s=config.event_dedupe_window_s,
            sweep_interval_s=config.event_dedupe_sweep_interval_s,
        )
        self.scheduler = Scheduler(self.engine, config.scheduler)
        self.schedules = Schedules(self.engine, wake=self.scheduler.wake)
        self.tracing = ServerTracing(config.otlp_endpoint) if config.otlp_endpoint else None
        self.engine.tracer = self.tracing.tracer if self.tracing else None
        self.health = HealthMonitor(self.store, [_WORKFLOW_SERVICE], interval_s=config.health_probe_interval_s)
        self._grpc: grpc.aio.Server | None = None
        self._token_keys: asyncio.Task[None] | None = None
        self._http: HttpListener | None = None
        self.port: int | None = None
        #: The bound port of the HTTP listener, when :attr:`ServerConfig.http_port` is set.
        self.http_port: int | None = None

    async def start(self) -> None:
        await self.store.open()
        await self.engine.start()
        self.timekeeper.start()
        self.retention.start()
        self.batches.start()
        self.scheduler.start()
        if self.config.auth.required and self.config.auth.bootstrap_admin_key_file:
            await bootstrap_admin_key(self.store, self.config.clock, self.config.auth.bootstrap_admin_key_file)
        interceptor = await build_interceptor(self.config.auth, self.store, self.config.clock)
        server = grpc.aio.server(
            # Observer outermost: refusals by the auth interceptor are counted too. A
            # request that does not parse is refused before authorization reads it.
            interceptors=[
                InterceptorChain(
                    [RpcObserver(self.engine.metrics, self.engine.tracer), MalformedRequests(), interceptor]
                )
            ],
            options=[
                ("grpc.max_receive_message_length", max_request_bytes(self.config.engine.max_payload_bytes)),
                ("grpc.max_send_message_length", _MAX_MESSAGE_BYTES),
                ("grpc.so_reuseport", 1 if self.config.reuse_port else 0),
            ],
        )
        service = WorkflowService(
            self.engine,
            self.matching,
            self.events,
            self.schedules,
            self.scheduler,
        )
        generic = _GenericOnly(server)
        # grpcio-tools generates the registration functions without annotations.
        workflow_service_pb2_grpc.add_WorkflowServiceServicer_to_server(service, generic)  # type: ignore[no-untyped-call]
        activation_us = int(self.config.auth.token_key_activation_s * 1_000_000)
        self.engine.signer.activation_delay_us = activation_us
        access_service = AccessService(self.store, self.config.clock, token_key_activation_us=activation_us)
        access_pb2_grpc.add_AccessServiceServicer_to_server(access_service, generic)  # type: ignore[no-untyped-call]
        await self.health.start()
        # Typed for a whole server; it calls only the two methods _GenericOnly has.
        health_pb2_grpc.add_HealthServicer_to_server(self.health.servicer, generic)  # type: ignore[arg-type]
        reflection.enable_server_reflection(
            [
                _WORKFLOW_SERVICE,
                access_pb2.DESCRIPTOR.services_by_name["AccessService"].full_name,
                health_pb2.DESCRIPTOR.services_by_name["Health"].full_name,
                reflection.SERVICE_NAME,
            ],
            server,
        )
        address = f"{self.config.host}:{self.config.port}"
        if self.config.tls is None:
            self.port = server.add_insecure_port(address)
        else:
            self.port = server.add_secure_port(address, server_credentials(self.config.tls))
        if self.port == 0:
            raise OSError(f"cannot listen on {self.config.host}:{self.config.port}")
        await server.start()
        self._grpc = server
        log.info("FlowForge server listening on %s:%d", self.config.host, self.port)
        self.events.start()
        self._token_keys = asyncio.create_task(self._reload_token_keys(), name="flowforge-token-keys")
        if self.config.http_port is not None:
            max_body_bytes = self.config.engine.max_payload_bytes + 64 * 1024
            http = HttpListener(host=self.config.host, port=self.config.http_port, max_body_bytes=max_body_bytes)
            if self.config.webhook:
                EventWebhook(
                    service,
                    secrets=self.config.webhook_secrets,
                    max_body_bytes=max_body_bytes,
                    require_signatures=self.config.auth.required,
                ).attach(http)
            self.health.attach(http)
            self.engine.metrics.attach(http, self._refresh_queue_gauges)
            servicers = {"WorkflowService": service, "AccessService": access_service}
            Console(
                interceptor,
                servicers,
                auth_required=self.config.auth.required,
                codec_endpoint=self.config.console_codec_endpoint,
                oidc=self.config.console_oidc,
            ).attach(http)
            try:
                await http.start()
            except OSError:
                await self.stop()
                raise
            self._http = http
            self.http_port = http.port

    async def _reload_token_keys(self) -> None:
        """Picks up task token keys rotated on any replica (docs/security.md)."""
        while True:
            await asyncio.sleep(self.config.auth.token_key_reload_s)
            try:
                await self.engine.reload_token_keys()
            except Exception as error:  # the store is down: the keys we have still work
                log.warning("could not reload the task token keys: %s", error)

    async def stop(self) -> None:
        await cancel_and_wait(self._token_keys)
        self._token_keys = None
        await self.health.stop()  # NOT_SERVING first, so balancers move away while gRPC drains
        if self._http is not None:
            await self._http.stop()
            self._http = None
        await self.events.stop()
        if self._grpc is not None:
            await self._grpc.stop(self.config.shutdown_grace_s)
            self._grpc = None
        await self.scheduler.stop()
        await self.timekeeper.stop()
        await self.retention.stop()
        await self.batches.stop()
        await self.store.close()
        if self.tracing is not None:
            await asyncio.to_thread(self.tracing.shutdown)  # exports the last spans

    async def _refresh_queue_gauges(self) -> None:
        now, backlogs = await self.engine.task_queue_backlogs()
        self.engine.metrics.set_backlogs(
            (b.namespace, b.task_queue, b.kind.lower(), b.ready, max(0, now - b.oldest_visible_us) / 1e6)
            for b in backlogs
        )
        self.engine.metrics.set_dead_letter_depths(await self.engine.dead_letter_depths())
        self.engine.metrics.set_breaker_states(await self.engine.breaker_states())

    async def serve(self, ready_file: str | None = None) -> None:
        """Runs until SIGTERM/SIGINT. Writes the bound port to ``ready_file`` once serving."""
        await self.start()
        _tune_garbage_collector()
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        if ready_file:
            with open(ready_file + ".tmp", "w") as f:  # noqa: ASYNC230 - a few bytes, once at start
                f.write(str(self.port))
            os.replace(ready_file + ".tmp", ready_file)
        try:
            await stop.wait()
        finally:
            await self.stop()


def _tune_garbage_collector() -> None:
    """Fewer, cheaper collections for a process that serves: the objects made at
    startup (modules, protobuf descriptors, the engine) live until exit, so they are
    left out of every collection, and the young generation is collected once per
    50,000 allocations instead of 700 (each RPC allocates hundreds of objects that
    die with it by reference counting anyway; cycles still go, a little later)."""
    gc.freeze()
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(50_000, older, oldest)
