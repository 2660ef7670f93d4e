"""``flowforge server ...``: run a server process."""

from __future__ import annotations

import asyncio
import functools
import importlib
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import click

if TYPE_CHECKING:
    from flowforge.server.auth.setup import AuthConfig
    from flowforge.server.console import ConsoleOidc

__all__ = ["server"]

# The one HTTP listener (console, /metrics, /healthz, /readyz, POST /events) of the
# dev server is on Temporal's UI port (docs/architecture.md, "Operations contract").
_DEV_HTTP_PORT = 8233
_HTTP_PORT_HELP = "port of the HTTP listener: /metrics, /healthz, /readyz, POST /events (0 = any free port)"


@click.group()
def server() -> None:
    """Run a FlowForge server."""


_PEM = click.Path(exists=True, dir_okay=False, path_type=Path)
# Authentication and TLS (docs/security.md).
_AUTH_OPTIONS = (
    click.option("--insecure-no-auth", is_flag=True, help="serve without authentication (start; never in production)"),
    click.option("--require-auth", is_flag=True, help="require API keys or JWTs (start-dev; start always does)"),
    click.option(
        "--bootstrap-admin-key-file",
        type=click.Path(dir_okay=False, path_type=Path),
        help="with no admin key in the store, create one for all namespaces and write it here (mode 0600)",
    ),
    click.option("--jwks-file", help="JWKS file or https:// URL of the keys that sign bearer JWTs"),
    click.option("--jwt-issuer", default="", help="the iss every JWT must carry"),
    click.option("--jwt-audience", default="", help="the aud every JWT must include"),
    click.option(
        "--api-key-cache",
        type=click.FloatRange(min=0),
        default=2.0,
        show_default=True,
        help="seconds a key lookup is cached: a revoked key works at most this long on any replica",
    ),
    click.option("--tls-cert", type=_PEM, help="PEM certificate chain of the server (with --tls-key)"),
    click.option("--tls-key", type=_PEM, help="PEM private key of the server"),
    click.option("--tls-client-ca", type=_PEM, help="PEM CA of client certificates: turns on mTLS"),
)


def _serving_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    for option in reversed(
        (
            click.option("--ip", default="127.0.0.1", show_default=True, help="address to listen on"),
            click.option(
                "--port",
                type=click.IntRange(0, 65535),
                default=7233,
                show_default=True,
                help="gRPC port (0 = any free port)",
            ),
            click.option(
                "--max-payload-bytes",
                type=click.IntRange(min=1),
                default=2 * 1024 * 1024,
                show_default=True,
                help="largest payload the server accepts (bytes)",
            ),
            click.option(
                "--webhook-secrets-file",
                type=click.Path(exists=True, dir_okay=False, path_type=Path),
                help="file of NAMESPACE=SECRET lines ('*' for all other namespaces): POST /events then needs"
                " an X-FlowForge-Signature (docs/events.md)",
            ),
            click.option(
                "--event-dedupe-window",
                type=click.FloatRange(min=0),
                default=24 * 3600.0,
                show_default=True,
                help="seconds a published event's (source, id) is remembered",
            ),
            click.option(
                "--scheduler-lease-ttl",
                type=click.FloatRange(min=0, min_open=True),
                default=15.0,
                show_default=True,
                help="seconds a scheduler leader's lease lasts unrenewed",
            ),
            click.option(
                "--scheduler-renew-interval",
                type=click.FloatRange(min=0, min_open=True),
                default=5.0,
                show_default=True,
                help="seconds between the leader's lease renewals",
            ),
            click.option(
                "--scheduler-max-sleep", type=click.FloatRange(min=0, min_open=True), default=1.0, hidden=True
            ),
            click.option(
                "--log-level",
                type=click.Choice(["DEBUG", "INFO", "WARNING", "ERROR"], case_sensitive=False),
                default="INFO",
                show_default=True,
            ),
            click.option(
                "--otlp-endpoint",
                metavar="URL",
                help="OTLP/HTTP collector for the server's spans, e.g. http://localhost:4318 (docs/observability.md)",
            ),
            click.option(
                "--log-format",
                type=click.Choice(["text", "json"]),
                default="text",
                show_default=True,
                help="json: one object a line with the ids where known (docs/observability.md)",
            ),
            click.option(
                "--console-codec-endpoint",
                metavar="URL",
                help="codec server the console's pages decode payloads with, in the browser (docs/console.md)",
            ),
            click.option(
                "--console-oidc-issuer",
                metavar="URL",
                help="OIDC provider the console signs in with (authorization code + PKCE; needs --jwks-file)",
            ),
            click.option(
                "--console-oidc-client-id",
                metavar="ID",
                help="the console's public client at that provider (redirect URI {console}/auth/callback)",
            ),
            click.option(
                "--console-oidc-scopes",
                default="openid profile email",
                show_default=True,
                help="scopes the console asks for, space-separated",
            ),
            click.option(
                "--console-oidc-audience",
                metavar="AUDIENCE",
                help="sent as `audience` when signing in (Auth0 issues JWT access tokens only for one); "
                "usually the --jwt-audience",
            ),
            click.option(
                "--uvloop",
                "use_uvloop",
                is_flag=True,
                help="run the event loop on uvloop (pip install uvloop; docs/performance.md has its effect)",
            ),
            # tests: the bound port is written here once the server listens
            click.option("--ready-file", type=click.Path(dir_okay=False, path_type=Path), hidden=True),
            *_AUTH_OPTIONS,
        )
    ):
        fn = option(fn)
    return fn


@server.command("start-dev")
@click.option(
    "--db",
    type=click.Path(dir_okay=False, path_type=Path),
    default=Path(".flowforge/dev.db"),
    show_default=True,
    help="SQLite file",
)
@click.option("--in-memory", is_flag=True, help="keep nothing after exit (not with --db)")
@click.option(
    "--http-port",
    type=click.IntRange(0, 65535),
    default=_DEV_HTTP_PORT,
    show_default=True,
    help=_HTTP_PORT_HELP,
)
@click.option("--webhook", is_flag=True, help="serve POST /events (on with --webhook-secrets-file)")
@_serving_options
def start_dev(db: Path, in_memory: bool, webhook: bool, **options: Any) -> None:
    """One process, embedded SQLite: for a laptop."""
    if in_memory and click.get_current_context().get_parameter_source("db") == click.core.ParameterSource.COMMANDLINE:
        raise click.BadParameter("give --db or --in-memory, not both", param_hint="'--in-memory'")
    webhook = webhook or options["webhook_secrets_file"] is not None
    _serve(":memory:" if in_memory else str(db), dev=True, webhook=webhook, **options)


@server.command()
@click.option("--store", required=True, help="postgresql://user@host:port/db (or a SQLite file)")
@click.option(
    "--http-port",
    type=click.IntRange(0, 65535),
    default=None,
    help=_HTTP_PORT_HELP + "; none unless given",
)
@click.option(
    "--processes",
    type=click.IntRange(1, 64),
    default=1,
    show_default=True,
    help="server processes sharing the gRPC port (SO_REUSEPORT), one core each; PostgreSQL only;"
    " process i serves HTTP on --http-port + i",
)
@_serving_options
def start(store: str, processes: int, **options: Any) -> None:
    """A server replica on a shared store (PostgreSQL)."""
    if processes == 1:
        _serve(store, dev=False, webhook=True, **options)
        return
    if not store.startswith(("postgresql://", "postgres://")):
        raise click.BadParameter(
            "several processes need PostgreSQL: a SQLite file admits one server process (it has one writer)",
            param_hint="'--processes'",
        )
    from flowforge.logging import configure
    from flowforge.server.processes import run_processes

    configure(format=options["log_format"], level=options["log_level"])
    port, http_port, ready_file = options.pop("port"), options.pop("http_port"), options.pop("ready_file")
    serve = functools.partial(_serve, store, dev=False, webhook=True, **options)
    run_processes(
        processes,
        serve,
        host=options["ip"],
        port=port,
        http_port=http_port,
        ready_file=str(ready_file) if ready_file else None,
    )


def _serve(
    store: str,
    *,
    ip: str,
    port: int,
    http_port: int | None,
    max_payload_bytes: int,
    webhook_secrets_file: Path | None,
    event_dedupe_window: float,
    scheduler_lease_ttl: float,
    scheduler_renew_interval: float,
    scheduler_max_sleep: float,
    log_level: str,
    log_format: Literal["text", "json"],
    otlp_endpoint: str | None,
    console_codec_endpoint: str | None,
    console_oidc_issuer: str | None,
    console_oidc_client_id: str | None,
    console_oidc_scopes: str,
    console_oidc_audience: str | None,
    ready_file: Path | str | None,
    dev: bool,
    webhook: bool,
    insecure_no_auth: bool,
    require_auth: bool,
    bootstrap_admin_key_file: Path | None,
    jwks_file: str | None,
    jwt_issuer: str,
    jwt_audience: str,
    api_key_cache: float,
    tls_cert: Path | None,
    tls_key: Path | None,
    tls_client_ca: Path | None,
    use_uvloop: bool,
    reuse_port: bool = False,
) -> None:
    from flowforge.server import EngineConfig, FlowForgeServer, SchedulerConfig, ServerConfig
    from flowforge.server.auth.setup import AuthConfig, TLSFiles, choose_auth

    try:
        auth = choose_auth(
            dev=dev,
            host=ip,
            insecure_no_auth=insecure_no_auth,
            require_auth=require_auth,
            auth=AuthConfig(
                api_key_cache_s=api_key_cache,
                jwks=jwks_file,
                jwt_issuer=jwt_issuer,
                jwt_audience=jwt_audience,
                bootstrap_admin_key_file=str(bootstrap_admin_key_file) if bootstrap_admin_key_file else None,
            ),
        )
    except ValueError as error:
        raise click.UsageError(str(error)) from None
    if (tls_cert is None) != (tls_key is None) or (tls_client_ca is not None and tls_cert is None):
        raise click.UsageError("--tls-cert and --tls-key go together; --tls-client-ca needs both")
    tls = TLSFiles(str(tls_cert), str(tls_key), str(tls_client_ca) if tls_client_ca else None) if tls_cert else None

    from flowforge.logging import configure

    if otlp_endpoint is not None and not otlp_endpoint.startswith(("http://", "https://")):
        raise click.BadParameter(
            f"{otlp_endpoint!r} is not an http(s) URL; e.g. http://localhost:4318", param_hint="'--otlp-endpoint'"
        )

    if console_codec_endpoint is not None:
        from flowforge.server.console.routes import codec_origin

        try:
            codec_origin(console_codec_endpoint)
        except ValueError as error:
            raise click.BadParameter(str(error), param_hint="'--console-codec-endpoint'") from None

    console_oidc = _console_oidc(
        console_oidc_issuer, console_oidc_client_id, console_oidc_scopes, console_oidc_audience, auth
    )
    configure(format=log_format, level=log_level)
    instance = FlowForgeServer(
        ServerConfig(
            store=store,
            host=ip,
            port=port,
            reuse_port=reuse_port,
            engine=EngineConfig(max_payload_bytes=max_payload_bytes),
            http_port=http_port,
            otlp_endpoint=otlp_endpoint,
            event_dedupe_window_s=event_dedupe_window,
            webhook=webhook,
            webhook_secrets=_read_webhook_secrets(webhook_secrets_file) if webhook_secrets_file else {},
            scheduler=SchedulerConfig(
                lease_ttl_s=scheduler_lease_ttl,
                renew_interval_s=scheduler_renew_interval,
                max_sleep_s=scheduler_max_sleep,
            ),
            auth=auth,
            tls=tls,
            console_codec_endpoint=console_codec_endpoint,
            console_oidc=console_oidc,
        )
    )
    loop_factory = None
    if use_uvloop:
        try:
            # Imported by name: uvloop is optional and has no place in the type check.
            loop_factory = importlib.import_module("uvloop").new_event_loop
        except ImportError:
            raise click.UsageError("--uvloop needs uvloop: pip install uvloop") from None
    with asyncio.Runner(loop_factory=loop_factory) as runner:
        runner.run(instance.serve(ready_file=str(ready_file) if ready_file else None))


def _console_oidc(
    issuer: str | None, client_id: str | None, scopes: str, audience: str | None, auth: AuthConfig
) -> ConsoleOidc | None:
    """The console's OIDC login from its flags, or None when not asked for."""
    from flowforge.server.console import ConsoleOidc

    if issuer is None and client_id is None:
        if audience is not None:
            raise click.UsageError("--console-oidc-audience needs --console-oidc-issuer and --console-oidc-client-id")
        return None
    if issuer is None or client_id is None:
        raise click.UsageError("--console-oidc-issuer and --console-oidc-client-id go together")
    if not auth.jwks:
        # The login's tokens would be refused: the server verifies them against the JWKS.
        raise click.UsageError("--console-oidc-issuer needs --jwks-file, --jwt-issuer and --jwt-audience")
    try:
        return ConsoleOidc(issuer=issuer, client_id=client_id, scopes=tuple(scopes.split()), audience=audience)
    except ValueError as error:
        raise click.UsageError(str(error)) from None


def _read_webhook_secrets(path: Path) -> dict[str, str]:
    """NAMESPACE=SECRET lines; blank lines and # comments are skipped."""
    secrets = {}
    for number, line in enumerate(path.read_text().splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        namespace, separator, secret = line.partition("=")
        if not separator or not namespace.strip() or not secret.strip():
            # the line holds a secret: not shown
            raise click.BadParameter(
                f"{path}:{number}: expected NAMESPACE=SECRET", param_hint="'--webhook-secrets-file'"
            )
        secrets[namespace.strip()] = secret.strip()
    return secrets
