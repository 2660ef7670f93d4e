"""How a server authenticates, and the pieces :class:`FlowForgeServer` wires from it:
the interceptor, the access service, TLS credentials and the bootstrap admin key."""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Awaitable, Callable
from pathlib import Path

import grpc

from flowforge.server import audit
from flowforge.server.auth.api_keys import ApiKeyAuthenticator
from flowforge.server.auth.interceptor import Authenticator, AuthInterceptor
from flowforge.server.auth.jwt import JwksSource, JwtVerifier
from flowforge.server.auth.principal import ALL_NAMESPACES
from flowforge.server.auth.roles import Role
from flowforge.server.auth.service import create_api_key
from flowforge.server.auth.urls import LOOPBACK_HOSTS, provider_origin
from flowforge.server.clock import Clock
from flowforge.server.stores.base import Store
from flowforge.server.stores.rows import ApiKeyRow

__all__ = [
    "AuthConfig",
    "TLSFiles",
    "bootstrap_admin_key",
    "build_interceptor",
    "choose_auth",
    "server_credentials",
]

log = logging.getLogger("flowforge.server.auth")


@dataclasses.dataclass
class AuthConfig:
    """Who may call the server (docs/security.md).

    Attributes:
        required: Every RPC needs an API key or a JWT; off, every caller may do everything.
        api_key_cache_s: How long a key lookup is trusted: a revoked key stops
            working on every replica within this time.
        jwks: A JWKS file or ``https://`` URL (``http://`` to loopback only); None accepts no JWTs.
        jwt_issuer: The ``iss`` JWTs must carry.
        jwt_audience: The ``aud`` JWTs must include.
        bootstrap_admin_key_file: With ``required`` and no live admin key for
            ``'*'`` in the store, create one and write it here (mode 0600).
        token_key_reload_s: How often the task token keys are read again, so a
            rotation on any replica reaches this one; a new key signs only after
            :attr:`token_key_activation_s`.
    """

    required: bool = False
    api_key_cache_s: float = 2.0
    jwks: str | None = None
    jwt_issuer: str = ""
    jwt_audience: str = ""
    bootstrap_admin_key_file: str | None = None
    token_key_reload_s: float = 5.0

    @property
    def token_key_activation_s(self) -> float:
        """How long a new task token key waits before it signs: every replica has reloaded by then."""
        return 3 * self.token_key_reload_s


@dataclasses.dataclass
class TLSFiles:
    """PEM files of the server's TLS; ``client_ca`` turns on mTLS (clients must show a certificate it signed)."""

    cert: str
    key: str
    client_ca: str | None = None


def choose_auth(*, dev: bool, host: str, insecure_no_auth: bool, require_auth: bool, auth: AuthConfig) -> AuthConfig:
    """The auth of ``server start`` (required unless ``--insecure-no-auth``) or
    ``start-dev`` (open on loopback unless ``--require-auth``).

    Raises:
        ValueError: The flags contradict each other, or would serve an open
            server beyond this machine by accident; the message says what to pass.
    """
    if insecure_no_auth and require_auth:
        raise ValueError("--insecure-no-auth and --require-auth contradict each other")
    required = require_auth if dev else not insecure_no_auth
    if not required and (auth.jwks or auth.bootstrap_admin_key_file):
        flag = "--require-auth" if dev else "without --insecure-no-auth"
        raise ValueError(f"--jwks-file and --bootstrap-admin-key-file need authentication on: start {flag}")
    if dev and not required and host not in LOOPBACK_HOSTS:
        raise ValueError(f"start-dev without authentication listens only on 127.0.0.1, not {host}: add --require-auth")
    if auth.jwks and not (auth.jwt_issuer and auth.jwt_audience):
        raise ValueError("--jwks-file needs --jwt-issuer and --jwt-audience")
    if auth.jwks and auth.jwks.startswith(("http://", "https://")):
        provider_origin(auth.jwks, what="--jwks-file")
    return dataclasses.replace(auth, required=required)


def server_credentials(tls: TLSFiles) -> grpc.ServerCredentials:
    """The gRPC credentials of ``tls``; raises OSError naming a file that cannot be read."""
    cert, key = Path(tls.cert).read_bytes(), Path(tls.key).read_bytes()
    client_ca = Path(tls.client_ca).read_bytes() if tls.client_ca else None
    return grpc.ssl_server_credentials(
        [(key, cert)], root_certificates=client_ca, require_client_auth=client_ca is not None
    )


async def build_interceptor(config: AuthConfig, store: Store, clock: Clock) -> AuthInterceptor:
    """The interceptor of a server with ``config`` (reads the JWKS now, so a bad one fails the start)."""
    authenticator = None
    if config.required:
        jwt = None
        if config.jwks:
            source = JwksSource(config.jwks)
            await source.load()
            jwt = JwtVerifier(source, issuer=config.jwt_issuer, audience=config.jwt_audience)
        async with store.read() as tx:
            if not config.jwks and not await tx.has_active_admin_key(clock.now_us()):
                log.warning(
                    "authentication is on but the store has no admin key: pass --bootstrap-admin-key-file FILE"
                    " once to create one (or --jwks-file for JWTs)"
                )
        authenticator = Authenticator(
            ApiKeyAuthenticator(_key_lookup(store), cache_s=config.api_key_cache_s, now_us=clock.now_us), jwt
        )

    async def record(entry: audit.PendingAudit) -> None:
        async with store.transaction() as tx:
            await audit.append(tx, entry.principal, entry.entry, clock.now_us())

    return AuthInterceptor(authenticator, record)


def _key_lookup(store: Store) -> Callable[[str], Awaitable[ApiKeyRow | None]]:
    async def lookup(key_id: str) -> ApiKeyRow | None:
        async with store.read() as tx:
            return await tx.get_api_key(key_id)

    return lookup


async def bootstrap_admin_key(store: Store, clock: Clock, path: str) -> bool:
    """Creates an admin key for ``'*'`` and writes it to ``path`` (mode 0600) when the
    store has no live one; returns whether it did."""
    created = await create_api_key(
        store,
        clock,
        principal="bootstrap",
        namespace=ALL_NAMESPACES,
        role=Role.ADMIN,
        name="bootstrap admin",
        expires_in_s=None,
        reason="--bootstrap-admin-key-file: the store had no admin key",
        only_if_no_admin=True,
    )
    if created is None:
        return False
    # Not through a symbolic link someone planted at the path.
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        os.fchmod(descriptor, 0o600)
        os.write(descriptor, (created[1] + "\n").encode())
    finally:
        os.close(descriptor)
    log.warning("created admin key %s for all namespaces; it is in %s", created[0].key_id, path)
    return True
