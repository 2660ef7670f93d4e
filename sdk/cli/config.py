"""``flowforge config ...``: named connection profiles in the config file (like ``temporal config``).

Keys: ``address``, ``namespace``, ``api_key``, ``tls.disabled`` (true/false), ``tls.server_name``,
``tls.server_ca_cert_path``, ``tls.client_cert_path``, ``tls.client_key_path`` (each ``*_path``
also as ``*_data``, the PEM text). The file format is :mod:`flowforge.envconfig`'s.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import click

from flowforge.cli._connection import CONFIG_FILE_OPTION, PROFILE_OPTIONS
from flowforge.cli._output import emit_json, emit_table, output_option
from flowforge.envconfig import DEFAULT_PROFILE, ClientConfig, ConfigError, default_config_file, dump_toml

__all__ = ["config"]

_SECRET_KEYS = frozenset({"api_key", "tls.client_key_data"})


@click.group()
def config() -> None:
    """Named connection profiles (address, namespace, API key, TLS) in the config file."""


def _profile_options(fn: Any) -> Any:
    for option in reversed(PROFILE_OPTIONS):
        fn = option(fn)
    return fn


def _where(profile: str | None, config_file: Path | None) -> tuple[str, Path]:
    return profile or os.environ.get("FLOWFORGE_PROFILE") or DEFAULT_PROFILE, config_file or default_config_file()


def _read(path: Path) -> dict[str, Any]:
    try:
        document = ClientConfig.read_document(path)
        ClientConfig.from_dict(document)
    except ConfigError as error:
        raise click.UsageError(f"config: {error}") from None
    return document


def _flatten(table: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in table.items():
        if isinstance(value, dict):
            flat.update(_flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def _profile_table(document: dict[str, Any], profile: str, *, create: bool = False) -> dict[str, Any]:
    profiles: dict[str, Any] = document.setdefault("profile", {})
    if profile not in profiles:
        if not create:
            known = ", ".join(sorted(profiles)) or "none"
            raise click.BadParameter(f"no profile {profile!r} (profiles: {known})", param_hint="'--profile'")
        profiles[profile] = {}
    table: dict[str, Any] = profiles[profile]
    return table


def _write(path: Path, document: dict[str, Any]) -> None:
    """Replaces the file at once (a crash leaves the old one), readable by its owner only: it may hold API keys."""
    path.parent.mkdir(parents=True, exist_ok=True)
    staged = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    descriptor = os.open(staged, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(descriptor, "w") as file:
            file.write(dump_toml(document))
        os.replace(staged, path)
    finally:
        staged.unlink(missing_ok=True)


@config.command(name="set")
@click.argument("key")
@click.argument("value")
@_profile_options
def set_(key: str, value: str, profile: str | None, config_file: Path | None) -> None:
    """Set KEY to VALUE in a profile (created if new), e.g. `config set --profile prod address host:7233`."""
    name, path = _where(profile, config_file)
    document = _read(path)
    table = _profile_table(document, name, create=True)
    *parents, leaf = key.split(".")
    for parent in parents:
        table = table.setdefault(parent, {})
        if not isinstance(table, dict):
            raise click.BadParameter(f"{parent} is not a table", param_hint="'KEY'")
    typed: Any = value
    if key == "tls.disabled":
        if value.lower() not in ("true", "false"):
            raise click.BadParameter(f"tls.disabled takes true or false, not {value!r}", param_hint="'VALUE'")
        typed = value.lower() == "true"
    table[leaf] = typed
    try:
        ClientConfig.from_dict(document)
    except ConfigError as error:
        raise click.BadParameter(str(error), param_hint="'KEY'") from None
    _write(path, document)
    click.echo(f"{key} set in profile {name} ({path})")


@config.command()
@click.argument("key", required=False)
@_profile_options
@output_option
def get(key: str | None, profile: str | None, config_file: Path | None, output: str) -> None:
    """A profile's settings, or one KEY of it (API keys are masked unless asked for by KEY)."""
    name, path = _where(profile, config_file)
    flat = _flatten(_profile_table(_read(path), name))
    if key is not None:
        if key not in flat:
            raise click.BadParameter(f"{key!r} is not set in profile {name}", param_hint="'KEY'")
        value = flat[key]
        if output == "json":
            emit_json({key: value})
        else:
            click.echo(str(value).lower() if isinstance(value, bool) else value)
        return
    shown = {k: "********" if k in _SECRET_KEYS else v for k, v in flat.items()}
    if output == "json":
        emit_json(shown)
    else:
        emit_table(("KEY", "VALUE"), shown.items(), empty=f"profile {name} is empty")


@config.command(name="list")
@CONFIG_FILE_OPTION
@output_option
def list_(config_file: Path | None, output: str) -> None:
    """The profiles of the config file."""
    _, path = _where(None, config_file)
    profiles = _read(path).get("profile", {})
    rows = [
        {"profile": name, "address": table.get("address", ""), "namespace": table.get("namespace", "")}
        for name, table in sorted(profiles.items())
    ]
    if output == "json":
        emit_json(rows)
    else:
        emit_table(
            ("PROFILE", "ADDRESS", "NAMESPACE"),
            ((r["profile"], r["address"], r["namespace"]) for r in rows),
            empty=f"no profiles in {path}",
        )


@config.command()
@click.argument("key", required=False)
@_profile_options
def delete(key: str | None, profile: str | None, config_file: Path | None) -> None:
    """Remove KEY from a profile, or the whole profile when no KEY is given."""
    name, path = _where(profile, config_file)
    document = _read(path)
    table = _profile_table(document, name)
    if key is None:
        del document["profile"][name]
        _write(path, document)
        click.echo(f"profile {name} deleted ({path})")
        return
    *parents, leaf = key.split(".")
    holder: Any = table
    for parent in parents:
        holder = holder.get(parent) if isinstance(holder, dict) else None
    if not isinstance(holder, dict) or leaf not in holder:
        raise click.BadParameter(f"{key!r} is not set in profile {name}", param_hint="'KEY'")
    del holder[leaf]
    if len(parents) == 1 and not holder:  # an emptied [profile.NAME.tls] goes too
        del table[parents[0]]
    _write(path, document)
    click.echo(f"{key} deleted from profile {name} ({path})")
