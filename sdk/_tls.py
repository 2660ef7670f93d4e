"""TLS of a client connection: Temporal's ``TLSConfig`` (exported by :mod:`flowforge.client`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import grpc

__all__ = ["TLSConfig", "open_channel"]


@dataclasses.dataclass(frozen=True)
class TLSConfig:
    """TLS settings of ``Client.connect(..., tls=TLSConfig(...))``, with Temporal's fields.

    Attributes:
        server_root_ca_cert: PEM of the CA that signed the server's certificate;
            ``None`` trusts the system's roots.
        domain: The name the server's certificate must carry, when it is not the
            host of the target address (e.g. connecting by IP address).
        client_cert: PEM certificate chain of this client, for mutual TLS.
        client_private_key: PEM private key of ``client_cert``.
    """

    server_root_ca_cert: bytes | None = None
    domain: str | None = None
    client_cert: bytes | None = None
    client_private_key: bytes | None = None

    def __post_init__(self) -> None:
        if (self.client_cert is None) != (self.client_private_key is None):
            raise ValueError("TLSConfig: client_cert and client_private_key go together")


def open_channel(
    target: str, tls: bool | TLSConfig | grpc.ChannelCredentials, options: Sequence[tuple[str, Any]]
) -> grpc.aio.Channel:
    """A channel to ``target``: plaintext for ``False``, TLS with the system's roots
    for ``True``, else as ``tls`` says."""
    if tls is False:
        return grpc.aio.insecure_channel(target, options=options)
    if tls is True:
        return grpc.aio.secure_channel(target, grpc.ssl_channel_credentials(), options=options)
    if isinstance(tls, TLSConfig):
        credentials = grpc.ssl_channel_credentials(
            root_certificates=tls.server_root_ca_cert,
            private_key=tls.client_private_key,
            certificate_chain=tls.client_cert,
        )
        if tls.domain:
            options = [*options, ("grpc.ssl_target_name_override", tls.domain), ("grpc.default_authority", tls.domain)]
        return grpc.aio.secure_channel(target, credentials, options=options)
    return grpc.aio.secure_channel(target, tls, options=options)
