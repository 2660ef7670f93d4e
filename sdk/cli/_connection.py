"""The one connection layer of every client command: flags, ``FLOWFORGE_*`` variables, profiles.

A value is taken from, in order: the command's flag, the environment variable, the profile
of the config file (``--profile`` / ``FLOWFORGE_PROFILE``, default ``default``), the default.
Reading the file and the environment is :mod:`flowforge.envconfig`'s job; this module lays the
flags over what it loads and connects.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from flowforge.envconfig import ClientConfigProfile, ClientConfigTLS, ConfigError, ProfileNotFoundError

if TYPE_CHECKING:
    from flowforge.client import Client

__all__ = [
    "CONFIG_FILE_OPTION",
    "CONNECTION_PARAMETERS",
    "DEFAULT_ADDRESS",
    "DEFAULT_NAMESPACE",
    "PROFILE_OPTIONS",
    "Connection",
    "client_command",
    "run",
]

DEFAULT_ADDRESS = "localhost:7233"
DEFAULT_NAMESPACE = "default"

_T = TypeVar("_T")
CONFIG_FILE_OPTION = click.option(
    "--config-file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="config file [env FLOWFORGE_CONFIG_FILE; default ~/.config/flowforge/config.toml]",
)
PROFILE_OPTIONS = (
    click.option("--profile", help="profile of the config file [env FLOWFORGE_PROFILE; default default]"),
    CONFIG_FILE_OPTION,
)
_CONNECTION_OPTIONS = (
    click.option("--address", help=f"server host:port [env FLOWFORGE_ADDRESS; default {DEFAULT_ADDRESS}]"),
    click.option("--namespace", "-n", help=f"namespace [env FLOWFORGE_NAMESPACE; default {DEFAULT_NAMESPACE}]"),
    click.option("--api-key", help="API key sent as a bearer token [env FLOWFORGE_API_KEY]"),
    click.option(
        "--tls/--no-tls", default=None, help="connect with TLS (on when any --tls-* is given) [env FLOWFORGE_TLS]"
    ),
    click.option(
        "--tls-ca-path",
        type=click.Path(dir_okay=False, path_type=Path),
        help="CA certificate of the server (default: the system's roots) [env FLOWFORGE_TLS_SERVER_CA_CERT_PATH]",
    ),
    click.option(
        "--tls-cert-path",
        type=click.Path(dir_okay=False, path_type=Path),
        help="client certificate, for mutual TLS [env FLOWFORGE_TLS_CLIENT_CERT_PATH]",
    ),
    click.option(
        "--tls-key-path",
        type=click.Path(dir_okay=False, path_type=Path),
        help="client certificate's private key [env FLOWFORGE_TLS_CLIENT_KEY_PATH]",
    ),
    click.option("--tls-server-name", help="name the server's certificate must carry [env FLOWFORGE_TLS_SERVER_NAME]"),
    *PROFILE_OPTIONS,
)
CONNECTION_PARAMETERS = (
    "address",
    "namespace",
    "api_key",
    "tls",
    "tls_ca_path",
    "tls_cert_path",
    "tls_key_path",
    "tls_server_name",
    "profile",
    "config_file",
)


@dataclasses.dataclass(frozen=True)
class Connection:
    """The connection flags one command was given (``None`` where a flag was not)."""

    address: str | None = None
    namespace: str | None = None
    api_key: str | None = None
    tls: bool | None = None
    tls_ca_path: Path | None = None
    tls_cert_path: Path | None = None
    tls_key_path: Path | None = None
    tls_server_name: str | None = None
    profile: str | None = None
    config_file: Path | None = None

    def resolve(self) -> ClientConfigProfile:
        """The settings in force: flags over environment over profile over defaults.

        Raises:
            click.BadParameter: The profile is missing or the config file or a variable is unusable.
        """
        try:
            loaded = ClientConfigProfile.load(self.profile, config_file=self.config_file)
        except ProfileNotFoundError as error:
            raise click.BadParameter(str(error), param_hint="'--profile'") from None
        except ConfigError as error:
            raise click.UsageError(f"config: {error}") from None
        tls = loaded.tls or ClientConfigTLS()
        tls = dataclasses.replace(
            tls,
            server_root_ca_cert=self.tls_ca_path or tls.server_root_ca_cert,
            client_cert=self.tls_cert_path or tls.client_cert,
            client_private_key=self.tls_key_path or tls.client_private_key,
            server_name=self.tls_server_name or tls.server_name,
        )
        flagged = (self.tls_ca_path, self.tls_cert_path, self.tls_key_path, self.tls_server_name)
        if self.tls is not None:
            tls = dataclasses.replace(tls, disabled=not self.tls)
        elif any(value is not None for value in flagged):
            tls = dataclasses.replace(tls, disabled=False)
        return ClientConfigProfile(
            address=self.address or loaded.address or DEFAULT_ADDRESS,
            namespace=self.namespace or loaded.namespace or DEFAULT_NAMESPACE,
            api_key=self.api_key if self.api_key is not None else loaded.api_key,
            tls=tls if tls != ClientConfigTLS() else None,
        )

    async def connect(self) -> Client:
        """A client connected with the resolved settings.

        Raises:
            click.BadParameter: A TLS file cannot be read or the TLS flags do not fit together.
            RPCError: ``UNAVAILABLE`` when the server cannot be reached.
        """
        from flowforge.client import Client

        settings = self.resolve()
        try:
            config = settings.to_client_connect_config()
        except ConfigError as error:
            raise click.BadParameter(str(error), param_hint="'--tls-*'") from None
        return await Client.connect(**config)


def client_command(fn: Callable[..., _T]) -> Callable[..., _T]:
    """Adds the connection flags to a command; the function receives them as its first argument, a :class:`Connection`."""

    @functools.wraps(fn)
    def with_connection(*args: Any, **kwargs: Any) -> _T:
        connection = Connection(**{key: kwargs.pop(key) for key in CONNECTION_PARAMETERS})
        return fn(connection, *args, **kwargs)

    wrapped: Callable[..., _T] = with_connection
    for option in reversed(_CONNECTION_OPTIONS):
        wrapped = option(wrapped)
    return wrapped


def run(connection: Connection, action: Callable[[Client], Awaitable[_T]]) -> _T:
    """Connects, runs ``action`` with the client, closes; returns what it returned."""

    async def connected() -> _T:
        client = await connection.connect()
        try:
            return await action(client)
        finally:
            await client.close()

    return asyncio.run(connected())
