"""Throwaway credentials for security tests: a CA with server and client
certificates, and an RSA key with its JWKS and signed JWTs."""

from __future__ import annotations

import dataclasses
import datetime
import json
import time
from pathlib import Path
from typing import Any

import jwt
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import NameOID

__all__ = ["CertificateAuthority", "JwtIssuer"]


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


@dataclasses.dataclass
class CertificateAuthority:
    """A CA that signs server and client certificates (PEM bytes)."""

    name: str = "FlowForge test CA"

    def __post_init__(self) -> None:
        self._key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, self.name)])
        self._subject = subject
        self.cert = (
            self._builder(subject, self._key.public_key())
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(self._key, hashes.SHA256())
        )
        self.cert_pem = self.cert.public_bytes(serialization.Encoding.PEM)

    def _builder(self, subject: x509.Name, public_key: Any) -> x509.CertificateBuilder:
        now = datetime.datetime.now(datetime.UTC)
        return (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(self._subject)
            .public_key(public_key)
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
        )

    def issue(self, common_name: str, *, dns_names: tuple[str, ...] = (), ip: str | None = None) -> tuple[bytes, bytes]:
        """A certificate and its private key, signed by this CA."""
        import ipaddress

        key = ec.generate_private_key(ec.SECP256R1())
        names: list[x509.GeneralName] = [x509.DNSName(n) for n in dns_names]
        if ip is not None:
            names.append(x509.IPAddress(ipaddress.ip_address(ip)))
        builder = self._builder(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)]), key.public_key())
        if names:
            builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
        cert = builder.sign(self._key, hashes.SHA256())
        return cert.public_bytes(serialization.Encoding.PEM), _pem_key(key)

    def write(self, directory: Path, name: str, cert_and_key: tuple[bytes, bytes]) -> tuple[Path, Path]:
        """Writes ``name.crt`` and ``name.key``; returns their paths."""
        cert_path, key_path = directory / f"{name}.crt", directory / f"{name}.key"
        cert_path.write_bytes(cert_and_key[0])
        key_path.write_bytes(cert_and_key[1])
        return cert_path, key_path


class JwtIssuer:
    """An OIDC-like issuer: an RSA signing key, its JWKS, and tokens it signs."""

    def __init__(self, issuer: str = "https://issuer.test", kid: str = "key-1") -> None:
        self.issuer = issuer
        self.kid = kid
        self._key = rsa.generate_private_key(public_exponent=65537, key_size=2048)

    def jwks(self) -> dict[str, Any]:
        public = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self._key.public_key()))
        return {"keys": [{**public, "kid": self.kid, "use": "sig", "alg": "RS256"}]}

    def token(
        self,
        *,
        sub: str = "alice",
        audience: str = "flowforge",
        permissions: list[str],
        expires_in: float = 300,
        **claims: Any,
    ) -> str:
        now = int(time.time())
        body = {"iss": self.issuer, "sub": sub, "aud": audience, "iat": now, "exp": now + int(expires_in)}
        body |= {"permissions": permissions, **claims}
        return jwt.encode(body, self._key, algorithm="RS256", headers={"kid": self.kid})
