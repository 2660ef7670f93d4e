"""A FlowForge server for tests, started in the test's process, with a connected client.

The server is imported only when a test starts one, so importing
:mod:`flowforge.testing` does not load the server (nor asyncpg or aiohttp).
"""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
from collections.abc import Awaitable, Callable, Generator, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from flowforge.client import Client
from flowforge.converter import DataConverter, default_converter

if TYPE_CHECKING:
    from flowforge.server.app import FlowForgeServer
    from flowforge.server.clock import Clock

__all__ = ["WorkflowEnvironment"]

# Options of Temporal's start_local / start_time_skipping that configure its downloaded dev
# server or client extras: accepted (Temporal tests pass them) and not needed here.
_TEMPORAL_ONLY_OPTIONS = frozenset(
    {
        "interceptors",
        "plugins",
        "default_workflow_query_reject_condition",
        "retry_config",
        "rpc_metadata",
        "identity",
        "tls",
        "download_dest_dir",
        "ui",
        "ui_port",
        "runtime",
        "search_attributes",
        "dev_server_existing_path",
        "dev_server_database_filename",
        "dev_server_log_format",
        "dev_server_log_level",
        "dev_server_download_version",
        "dev_server_extra_args",
        "dev_server_download_ttl",
        "test_server_existing_path",
        "test_server_download_version",
        "test_server_extra_args",
        "test_server_download_ttl",
    }
)


def _check_temporal_options(options: dict[str, Any]) -> None:
    unknown = sorted(set(options) - _TEMPORAL_ONLY_OPTIONS)
    if unknown:
        raise TypeError(f"unexpected keyword argument(s) {', '.join(unknown)} (neither FlowForge's nor Temporal's)")


class WorkflowEnvironment:
    """A FlowForge server for tests, with a connected :attr:`client`.

    Start one with :meth:`start_local` or :meth:`start_time_skipping`; both give
    an async context manager that shuts the server down and deletes its files
    on exit. Workers are ordinary :class:`flowforge.worker.Worker` instances on
    ``env.client``::

        async with WorkflowEnvironment.start_local() as env:
            async with Worker(env.client, task_queue="q", workflows=[Greeting], activities=[greet]):
                handle = await env.client.start_workflow(Greeting.run, "Ada", id="g", task_queue="q")
                assert await handle.result() == "Hello, Ada!"

    ``async with await WorkflowEnvironment.start_local() as env`` (Temporal's
    spelling) works too.
    """

    def __init__(self, client: Client) -> None:
        self._client = client

    @property
    def client(self) -> Client:
        """A client connected to the environment's server, in its namespace."""
        return self._client

    @property
    def supports_time_skipping(self) -> bool:
        """Whether :meth:`sleep` skips time instead of waiting for it."""
        return False

    async def sleep(self, duration: timedelta | float) -> None:
        """Lets ``duration`` (a timedelta or seconds) pass: really, or by skipping
        time in a time-skipping environment."""
        await asyncio.sleep(_seconds(duration))

    async def get_current_time(self) -> datetime:
        """The server's current time (UTC): the wall clock, plus whatever was skipped."""
        return datetime.now(UTC)

    @contextlib.contextmanager
    def auto_time_skipping_disabled(self) -> Iterator[None]:
        """While active, awaiting a workflow's result does not skip time (a no-op
        in an environment without time skipping)."""
        yield

    async def shutdown(self) -> None:
        """Closes the client (and, for started environments, stops the server)."""
        await self._client.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.shutdown()

    @staticmethod
    def from_client(client: Client) -> WorkflowEnvironment:
        """An environment around an existing client (e.g. of a shared dev server);
        time is real and :meth:`shutdown` only closes the client."""
        return WorkflowEnvironment(client)

    @staticmethod
    def start_local(
        *,
        namespace: str = "default",
        data_converter: DataConverter = default_converter,
        ip: str = "127.0.0.1",
        port: int = 0,
        **temporal_options: Any,
    ) -> _StartingEnvironment:
        """Starts a server in this process on a temporary SQLite file; time is real.

        Args:
            namespace: The client's namespace; created if it is not ``"default"``.
            data_converter: The client's converter (workers on the client use it too).
            ip: The address the server listens on.
            port: Its port; 0 picks a free one.
            **temporal_options: Temporal's options for its downloaded dev server
                (``dev_server_*``, ``download_dest_dir``, ``ui``, ``runtime``, ...), accepted
                so Temporal tests run unchanged; they change nothing here.

        Returns:
            An async context manager (or awaitable) giving the started environment.

        Raises:
            OSError: The server could not listen on ``ip:port``.
            TypeError: An option that is neither FlowForge's nor Temporal's (a typo).
        """
        _check_temporal_options(temporal_options)
        return _StartingEnvironment(lambda: _start(namespace, data_converter, ip, port, time_skipping=False))

    @staticmethod
    def start_time_skipping(
        *,
        namespace: str = "default",
        data_converter: DataConverter = default_converter,
        ip: str = "127.0.0.1",
        port: int = 0,
        **temporal_options: Any,
    ) -> _StartingEnvironment:
        """Starts a server like :meth:`start_local`, on a clock that skips ahead.

        Time passes as usual and also jumps to the next timer (or retry, or
        timeout) whenever nothing else can progress, which is Temporal's rule:

        - only while something awaits a workflow's result (``handle.result()``
          on :attr:`client`) or :meth:`sleep` runs, and
          :meth:`auto_time_skipping_disabled` is not active;
        - and only while no workflow task or activity task is ready or running.
          Activities run in real time: a running activity's start-to-close and
          heartbeat timeouts are never skipped past.

        Each jump is decided and made under the store's write lock, so no task
        can be created or leased between the check and the jump. A workflow
        that sleeps 30 days thus completes in milliseconds. Arguments as for
        :meth:`start_local`.
        """
        _check_temporal_options(temporal_options)
        return _StartingEnvironment(lambda: _start(namespace, data_converter, ip, port, time_skipping=True))


async def _start(
    namespace: str, data_converter: DataConverter, ip: str, port: int, *, time_skipping: bool
) -> WorkflowEnvironment:
    # The server only when a test starts one (see the module docstring).
    from flowforge.server.clock import SkippingClock, SystemClock

    if time_skipping:
        from flowforge._time_skipping import TimeSkippingEnvironment

        return await TimeSkippingEnvironment.start(SkippingClock(), namespace, data_converter, ip, port)
    return await _ServerEnvironment.start(SystemClock(), namespace, data_converter, ip, port)


def _seconds(duration: timedelta | float) -> float:
    return duration.total_seconds() if isinstance(duration, timedelta) else float(duration)


class _StartingEnvironment:
    """What ``start_local()`` / ``start_time_skipping()`` return: usable as
    ``async with ... as env`` (shut down on exit) and as ``await ...``."""

    def __init__(self, start: Callable[[], Awaitable[WorkflowEnvironment]]) -> None:
        self._start = start
        self._environment: WorkflowEnvironment | None = None

    def __await__(self) -> Generator[Any, None, WorkflowEnvironment]:
        return self._start().__await__()

    async def __aenter__(self) -> WorkflowEnvironment:
        self._environment = await self._start()
        return self._environment

    async def __aexit__(self, *exc_info: object) -> None:
        assert self._environment is not None
        await self._environment.shutdown()


class _ServerEnvironment(WorkflowEnvironment):
    """An environment that owns an in-process server and its temporary directory."""

    def __init__(self, client: Client, server: FlowForgeServer, directory: tempfile.TemporaryDirectory[str]) -> None:
        super().__init__(client)
        self._server = server
        self._directory = directory

    @classmethod
    async def start(
        cls, clock: Clock, namespace: str, data_converter: DataConverter, ip: str, port: int
    ) -> WorkflowEnvironment:
        from flowforge.server.app import FlowForgeServer, ServerConfig

        directory = tempfile.TemporaryDirectory(prefix="flowforge-test-")
        server = FlowForgeServer(
            ServerConfig(
                store=str(Path(directory.name) / "flowforge.db"),
                host=ip,
                port=port,
                clock=clock,
                # Pollers notice a task whose retry backoff ended (possibly skipped) soon.
                poll_recheck_interval_s=0.1,
                # Tests stop their workers first; nothing is left to drain.
                shutdown_grace_s=1.0,
            )
        )
        try:
            await server.start()
            client = await Client.connect(f"{ip}:{server.port}", data_converter=data_converter)
            if namespace != "default":
                await client.register_namespace(namespace)
                await client.close()
                client = await Client.connect(f"{ip}:{server.port}", namespace, data_converter=data_converter)
        except BaseException:
            await server.stop()
            directory.cleanup()
            raise
        return cls(client, server, directory)

    async def shutdown(self) -> None:
        try:
            await super().shutdown()
            await self._server.stop()
        finally:
            self._directory.cleanup()
