"""URLs of an identity provider the server or the console trusts (a JWKS, an OIDC
issuer): ``https://``, or plain ``http://`` on this machine only (a dev or test
provider on loopback), since keys or tokens fetched over the network in clear text
could be swapped by anyone on the path."""

from __future__ import annotations

import urllib.parse

__all__ = ["LOOPBACK_HOSTS", "provider_origin"]

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "::1", "localhost"})
# Characters a Content-Security-Policy or a header value cannot hold safely.
_UNSAFE = frozenset(" ;,'\"\n\r\t<>\\")


def provider_origin(url: str, *, what: str) -> str:
    """The origin (``scheme://host[:port]``) of a provider URL, after checking it.

    Args:
        url: The URL.
        what: What it is, for the message (e.g. ``"--jwks-file"``).

    Raises:
        ValueError: Not ``https://``, plain ``http://`` to a host other than loopback,
            no host, credentials or a fragment in it, or characters a policy cannot hold.
    """
    parsed = urllib.parse.urlsplit(url)
    if any(c in _UNSAFE for c in url) or not parsed.hostname or parsed.username or parsed.password or parsed.fragment:
        raise ValueError(f"{what}: {url!r} is not a plain URL such as https://login.example.com/realm")
    if parsed.scheme == "http" and parsed.hostname not in LOOPBACK_HOSTS:
        raise ValueError(
            f"{what}: {url!r} must be https:// (plain http:// only to 127.0.0.1, ::1 or localhost, for development)"
        )
    if parsed.scheme not in ("http", "https"):
        raise ValueError(f"{what}: {url!r} must be an https:// URL")
    return f"{parsed.scheme}://{parsed.netloc}"
