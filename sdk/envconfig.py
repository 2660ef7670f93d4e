"""Client settings from a TOML file of named profiles and ``FLOWFORGE_*`` environment variables.

The file has the shape of Temporal's environment configuration (``temporalio.envconfig``),
so a Temporal user's profiles carry over by renaming the file::

    [profile.default]
    address = "localhost:7233"
    namespace = "default"

    [profile.prod]
    address = "flowforge.example.com:7233"
    namespace = "payments"
    api_key = "..."

    [profile.prod.tls]
    server_ca_cert_path = "/etc/flowforge/ca.pem"
    client_cert_path = "/etc/flowforge/client.pem"
    client_key_path = "/etc/flowforge/client.key"
    server_name = "flowforge.internal"

The file is ``$FLOWFORGE_CONFIG_FILE`` or ``~/.config/flowforge/config.toml``; the profile is
``$FLOWFORGE_PROFILE`` or ``default``. Environment variables override the profile's values:
``FLOWFORGE_ADDRESS``, ``FLOWFORGE_NAMESPACE``, ``FLOWFORGE_API_KEY``, ``FLOWFORGE_TLS``
(``true``/``false``), ``FLOWFORGE_TLS_SERVER_CA_CERT_PATH``, ``FLOWFORGE_TLS_CLIENT_CERT_PATH``,
``FLOWFORGE_TLS_CLIENT_KEY_PATH`` (each also as ``..._DATA`` holding the PEM text) and
``FLOWFORGE_TLS_SERVER_NAME``.

Temporal code connects with the same two lines::

    config = ClientConfig.load_client_connect_config()
    client = await Client.connect(**config)
"""

from __future__ import annotations

import dataclasses
import json
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

if TYPE_CHECKING:
    from flowforge.client import TLSConfig

__all__ = [
    "DEFAULT_PROFILE",
    "ClientConfig",
    "ClientConfigProfile",
    "ClientConfigTLS",
    "ClientConnectConfig",
    "ConfigError",
    "DataSource",
    "ProfileNotFoundError",
    "default_config_file",
    "dump_toml",
]

DEFAULT_PROFILE = "default"

DataSource = Path | str | bytes
"""Where a certificate or key comes from: a ``Path`` to a file, or its PEM text (``str`` or ``bytes``)."""

# TLS keys of a profile (and their environment variables' suffixes), each a path or inline data.
_TLS_SOURCES = {
    "server_root_ca_cert": "server_ca_cert",
    "client_cert": "client_cert",
    "client_private_key": "client_key",
}
_PROFILE_KEYS = ("address", "namespace", "api_key")
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off", "")


class ConfigError(ValueError):
    """The config file or an environment variable holds something unusable; the message says where."""


class ProfileNotFoundError(ConfigError):
    """A profile named explicitly is not in the config file."""


def default_config_file(env: Mapping[str, str] | None = None) -> Path:
    """``$FLOWFORGE_CONFIG_FILE`` if set, else ``~/.config/flowforge/config.toml``."""
    env = os.environ if env is None else env
    configured = env.get("FLOWFORGE_CONFIG_FILE")
    if configured:
        return Path(configured).expanduser()
    return Path("~/.config/flowforge/config.toml").expanduser()


def _read_source(source: DataSource | None) -> bytes | None:
    if source is None:
        return None
    if isinstance(source, Path):
        try:
            return source.read_bytes()
        except OSError as error:
            raise ConfigError(f"cannot read {source}: {error.strerror or error}") from None
    return source.encode() if isinstance(source, str) else source


@dataclass(frozen=True)
class ClientConfigTLS:
    """TLS settings of a profile (Temporal's ``ClientConfigTLS``).

    Attributes:
        disabled: ``True`` turns TLS off, ``False`` on; ``None`` when not configured
            (then TLS is on exactly when some other TLS field is set).
        server_name: The name the server's certificate must carry, when it is not the address's host.
        server_root_ca_cert: The CA that signed the server's certificate (system roots when ``None``).
        client_cert: The client's certificate chain, for mutual TLS.
        client_private_key: The client certificate's private key.
    """

    disabled: bool | None = None
    server_name: str | None = None
    server_root_ca_cert: DataSource | None = None
    client_cert: DataSource | None = None
    client_private_key: DataSource | None = None

    @property
    def enabled(self) -> bool:
        """Whether a connection with these settings uses TLS."""
        if self.disabled is not None:
            return not self.disabled
        return any(
            value is not None
            for value in (self.server_name, self.server_root_ca_cert, self.client_cert, self.client_private_key)
        )

    def read_pem(self) -> tuple[bytes | None, bytes | None, bytes | None]:
        """The CA certificate, client certificate and client key, read from their files where they are paths.

        Raises:
            ConfigError: A named file cannot be read.
        """
        return (
            _read_source(self.server_root_ca_cert),
            _read_source(self.client_cert),
            _read_source(self.client_private_key),
        )

    def to_connect_tls_config(self) -> bool | TLSConfig:
        """What ``Client.connect(tls=...)`` takes for these settings (Temporal's method).

        ``False`` when TLS is off; ``True`` (the system's roots, the address's host) when it is on
        with nothing else set; else a :class:`~flowforge.client.TLSConfig` with the files read.

        Raises:
            ConfigError: A named file cannot be read, or a client certificate comes without its key
                (or the other way round).
        """
        if not self.enabled:
            return False
        ca, cert, key = self.read_pem()
        if (cert is None) != (key is None):
            raise ConfigError("a client certificate needs its key and the other way round")
        if ca is None and cert is None and not self.server_name:
            return True
        from flowforge.client import TLSConfig

        return TLSConfig(server_root_ca_cert=ca, domain=self.server_name, client_cert=cert, client_private_key=key)

    def to_dict(self) -> dict[str, Any]:
        """The TOML table of these settings (``*_path`` for files, ``*_data`` for inline PEM)."""
        table: dict[str, Any] = {}
        if self.disabled is not None:
            table["disabled"] = self.disabled
        if self.server_name is not None:
            table["server_name"] = self.server_name
        for attribute, key in _TLS_SOURCES.items():
            source = getattr(self, attribute)
            if isinstance(source, Path):
                table[f"{key}_path"] = str(source)
            elif source is not None:
                table[f"{key}_data"] = source.decode() if isinstance(source, bytes) else source
        return table

    @staticmethod
    def from_dict(table: Mapping[str, Any] | None, *, where: str = "tls") -> ClientConfigTLS | None:
        """Settings from a TOML table; ``None`` for an empty or missing one.

        Raises:
            ConfigError: A key is unknown or has the wrong type.
        """
        if not table:
            return None
        known = {"disabled", "server_name"} | {f"{k}_{s}" for k in _TLS_SOURCES.values() for s in ("path", "data")}
        for key, value in table.items():
            if key not in known:
                raise ConfigError(f"{where}: unknown key {key!r} (known: {', '.join(sorted(known))})")
            expected = bool if key == "disabled" else str
            if not isinstance(value, expected):
                raise ConfigError(f"{where}.{key}: expected a {expected.__name__}, got {json.dumps(value)}")
        sources: dict[str, DataSource | None] = {}
        for attribute, key in _TLS_SOURCES.items():
            path, data = table.get(f"{key}_path"), table.get(f"{key}_data")
            if path is not None and data is not None:
                raise ConfigError(f"{where}: set {key}_path or {key}_data, not both")
            sources[attribute] = Path(path).expanduser() if path is not None else data
        return ClientConfigTLS(disabled=table.get("disabled"), server_name=table.get("server_name"), **sources)


class ClientConnectConfig(TypedDict, total=False):
    """Keyword arguments of ``Client.connect`` from a profile (Temporal's ``ClientConnectConfig``).

    Only the settings a profile sets are present, so ``Client.connect(**config)`` keeps its
    defaults for the rest.
    """

    target_host: str
    namespace: str
    api_key: str
    tls: bool | TLSConfig


@dataclass(frozen=True)
class ClientConfigProfile:
    """One named profile: where the server is and how to reach it (Temporal's ``ClientConfigProfile``).

    Attributes:
        address: ``host:port`` of the server.
        namespace: The namespace calls are made in.
        api_key: Sent as a bearer token on every call.
        tls: TLS settings; ``None`` for plaintext.
    """

    address: str | None = None
    namespace: str | None = None
    api_key: str | None = None
    tls: ClientConfigTLS | None = None

    def to_dict(self) -> dict[str, Any]:
        """The TOML table of this profile (unset values left out)."""
        table: dict[str, Any] = {key: getattr(self, key) for key in _PROFILE_KEYS if getattr(self, key) is not None}
        if self.tls is not None and (tls := self.tls.to_dict()):
            table["tls"] = tls
        return table

    def to_client_connect_config(self) -> ClientConnectConfig:
        """The keyword arguments of ``Client.connect(**config)`` for this profile.

        Raises:
            ConfigError: A TLS file cannot be read, or a client certificate comes without its key.
        """
        config = ClientConnectConfig()
        if self.address is not None:
            config["target_host"] = self.address
        if self.namespace is not None:
            config["namespace"] = self.namespace
        if self.api_key is not None:
            config["api_key"] = self.api_key
        if self.tls is not None:
            config["tls"] = self.tls.to_connect_tls_config()
        return config

    @staticmethod
    def from_dict(table: Mapping[str, Any], *, where: str = "profile") -> ClientConfigProfile:
        """A profile from its TOML table.

        Raises:
            ConfigError: A key is unknown or has the wrong type.
        """
        for key, value in table.items():
            if key == "tls":
                if not isinstance(value, Mapping):
                    raise ConfigError(f"{where}.tls: expected a table")
            elif key == "grpc_meta":
                continue  # Temporal's extra headers: kept in the file, not used by this client
            elif key not in _PROFILE_KEYS:
                raise ConfigError(f"{where}: unknown key {key!r} (known: {', '.join((*_PROFILE_KEYS, 'tls'))})")
            elif not isinstance(value, str):
                raise ConfigError(f"{where}.{key}: expected a string, got {json.dumps(value)}")
        return ClientConfigProfile(
            address=table.get("address"),
            namespace=table.get("namespace"),
            api_key=table.get("api_key"),
            tls=ClientConfigTLS.from_dict(table.get("tls"), where=f"{where}.tls"),
        )

    def with_env(self, env: Mapping[str, str]) -> ClientConfigProfile:
        """This profile with the ``FLOWFORGE_*`` environment variables laid over it.

        Raises:
            ConfigError: ``FLOWFORGE_TLS`` is not a boolean, or a path and data variable clash.
        """
        profile = ClientConfigProfile(
            address=env.get("FLOWFORGE_ADDRESS", self.address),
            namespace=env.get("FLOWFORGE_NAMESPACE", self.namespace),
            api_key=env.get("FLOWFORGE_API_KEY", self.api_key),
            tls=self.tls,
        )
        tls_env = {
            name.removeprefix("FLOWFORGE_TLS_").lower(): value
            for name, value in env.items()
            if name.startswith("FLOWFORGE_TLS_")
        }
        switch = env.get("FLOWFORGE_TLS")
        if not tls_env and switch is None:
            return profile
        table = (self.tls or ClientConfigTLS()).to_dict()
        for key, value in tls_env.items():
            # A path from the environment replaces the file's inline data, and the other way round.
            stem, _, kind = key.rpartition("_")
            if kind in ("path", "data"):
                table.pop(f"{stem}_{'data' if kind == 'path' else 'path'}", None)
            table[key] = value
        if switch is not None:
            if switch.strip().lower() not in _TRUE + _FALSE:
                raise ConfigError(f"FLOWFORGE_TLS: expected true or false, got {switch!r}")
            table["disabled"] = switch.strip().lower() in _FALSE
        return dataclasses.replace(profile, tls=ClientConfigTLS.from_dict(table, where="FLOWFORGE_TLS_*"))

    @staticmethod
    def load(
        profile: str | None = None,
        *,
        config_file: Path | str | None = None,
        config_source: Path | str | None = None,
        disable_file: bool = False,
        disable_env: bool = False,
        config_file_strict: bool = True,
        override_env_vars: Mapping[str, str] | None = None,
    ) -> ClientConfigProfile:
        """One profile from the file with the environment laid over it.

        Args:
            profile: The profile's name; ``$FLOWFORGE_PROFILE`` or ``default`` when ``None``.
                A profile named explicitly must exist; the default one may be absent.
            config_file: The file; :func:`default_config_file` when ``None``.
            config_source: Temporal's name for ``config_file`` (a path; inline TOML is not read).
            disable_file: Read no file (environment only).
            disable_env: Ignore the environment (file only).
            config_file_strict: Accepted for Temporal code; the file is always checked strictly
                (an unknown key is an error naming it).
            override_env_vars: The environment to use instead of ``os.environ``.

        Raises:
            ConfigError: The file is not valid TOML, a value is wrong, or the named profile is missing.
        """
        del config_file_strict  # always strict, see above
        config_file = config_file if config_file is not None else config_source
        env: Mapping[str, str] = os.environ if override_env_vars is None else override_env_vars
        name = profile or (None if disable_env else env.get("FLOWFORGE_PROFILE")) or DEFAULT_PROFILE
        loaded = ClientConfigProfile()
        if not disable_file:
            path = Path(config_file) if config_file is not None else default_config_file(env)
            profiles = ClientConfig.load(config_file=path).profiles
            if name in profiles:
                loaded = profiles[name]
            elif name != DEFAULT_PROFILE:
                known = ", ".join(sorted(profiles)) or "none"
                raise ProfileNotFoundError(f"no profile {name!r} in {path} (profiles: {known})")
        return loaded if disable_env else loaded.with_env(env)


@dataclass
class ClientConfig:
    """Every profile of a config file (Temporal's ``ClientConfig``).

    Attributes:
        profiles: Profile name -> profile.
    """

    profiles: dict[str, ClientConfigProfile] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The file's TOML document: ``{"profile": {name: table}}``."""
        return {"profile": {name: profile.to_dict() for name, profile in self.profiles.items()}}

    @staticmethod
    def from_dict(document: Mapping[str, Any]) -> ClientConfig:
        """Profiles from a parsed TOML document.

        Raises:
            ConfigError: The document has other top-level keys or a profile is wrong.
        """
        unknown = set(document) - {"profile"}
        if unknown:
            raise ConfigError(f"unknown top-level key(s) {', '.join(sorted(unknown))} (expected [profile.NAME] tables)")
        tables = document.get("profile", {})
        if not isinstance(tables, Mapping) or not all(isinstance(t, Mapping) for t in tables.values()):
            raise ConfigError("expected [profile.NAME] tables")
        return ClientConfig(
            {name: ClientConfigProfile.from_dict(table, where=f"profile.{name}") for name, table in tables.items()}
        )

    @staticmethod
    def read_document(path: Path) -> dict[str, Any]:
        """The file parsed as TOML; empty when it does not exist.

        Raises:
            ConfigError: It is not readable or not valid TOML.
        """
        try:
            with path.open("rb") as file:
                return tomllib.load(file)
        except FileNotFoundError:
            return {}
        except OSError as error:
            raise ConfigError(f"cannot read {path}: {error.strerror or error}") from None
        except tomllib.TOMLDecodeError as error:
            raise ConfigError(f"{path} is not valid TOML: {error}") from None

    @staticmethod
    def load(
        *, config_file: Path | str | None = None, override_env_vars: Mapping[str, str] | None = None
    ) -> ClientConfig:
        """Every profile of the file (no environment overrides; see :meth:`ClientConfigProfile.load`).

        Args:
            config_file: The file; :func:`default_config_file` when ``None``.
            override_env_vars: The environment used to find the default file.

        Raises:
            ConfigError: The file is not valid TOML or a profile is wrong.
        """
        path = Path(config_file) if config_file is not None else default_config_file(override_env_vars)
        document = ClientConfig.read_document(path)
        try:
            return ClientConfig.from_dict(document)
        except ConfigError as error:
            raise ConfigError(f"{path}: {error}") from None

    @staticmethod
    def load_client_connect_config(
        profile: str | None = None,
        *,
        config_file: Path | str | None = None,
        disable_file: bool = False,
        disable_env: bool = False,
        config_file_strict: bool = True,
        override_env_vars: Mapping[str, str] | None = None,
    ) -> ClientConnectConfig:
        """``Client.connect``'s keyword arguments from a profile and the environment (Temporal's method).

        The same profiles and variables as the ``flowforge`` CLI's; see :meth:`ClientConfigProfile.load`
        for the arguments. Use it as ``await Client.connect(**ClientConfig.load_client_connect_config())``.

        Raises:
            ConfigError: The file or a variable is unusable, the named profile is missing, or a TLS
                file cannot be read.
        """
        loaded = ClientConfigProfile.load(
            profile,
            config_file=config_file,
            disable_file=disable_file,
            disable_env=disable_env,
            config_file_strict=config_file_strict,
            override_env_vars=override_env_vars,
        )
        return loaded.to_client_connect_config()


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # a JSON string is a valid TOML basic string
    raise TypeError(f"cannot write {type(value).__name__} to TOML")


def _toml_key(key: str) -> str:
    bare = key and all(c.isalnum() or c in "-_" for c in key) and key.isascii()
    return key if bare else json.dumps(key)


def dump_toml(document: Mapping[str, Any]) -> str:
    """TOML text of nested tables of strings, booleans and numbers (what a config file holds)."""
    lines: list[str] = []

    def table(path: list[str], values: Mapping[str, Any]) -> None:
        scalars = [(k, v) for k, v in values.items() if not isinstance(v, Mapping)]
        if path and (scalars or not values):
            if lines:
                lines.append("")
            lines.append(f"[{'.'.join(_toml_key(p) for p in path)}]")
        lines.extend(f"{_toml_key(k)} = {_toml_value(v)}" for k, v in scalars)
        for key, value in values.items():
            if isinstance(value, Mapping):
                table([*path, key], value)

    table([], document)
    return "\n".join(lines) + "\n"
