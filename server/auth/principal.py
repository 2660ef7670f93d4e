"""Who is calling: the authenticated principal and what it was granted."""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
from collections.abc import Iterator, Mapping

from flowforge.server.auth.roles import Role

__all__ = ["ALL_NAMESPACES", "ANONYMOUS", "Principal", "acting_as", "current_principal"]

#: The namespace of a grant that covers every namespace.
ALL_NAMESPACES = "*"


@dataclasses.dataclass(frozen=True)
class Principal:
    """An authenticated caller.

    Attributes:
        name: Recorded in history and the audit log, e.g. ``apikey:1f0c…`` or
            ``jwt:alice@example.com``; never what the caller claims about itself.
        grants: Namespace (or ``'*'``) → the roles held there.
    """

    name: str
    grants: Mapping[str, frozenset[Role]]

    def allows(self, role: Role, namespace: str) -> bool:
        """True when this principal holds ``role`` (or one including it) in ``namespace``.

        ``namespace='*'`` asks for the role in every namespace: only a ``'*'`` grant gives it.
        """
        scopes = (ALL_NAMESPACES,) if namespace == ALL_NAMESPACES else (namespace, ALL_NAMESPACES)
        return any(held.includes(role) for scope in scopes for held in self.grants.get(scope, ()))

    def holds_anywhere(self, role: Role) -> bool:
        """True when this principal holds ``role`` in at least one namespace."""
        return any(held.includes(role) for roles in self.grants.values() for held in roles)


#: The principal of a server without authentication: everything is allowed.
ANONYMOUS = Principal("anonymous", {ALL_NAMESPACES: frozenset({Role.ADMIN})})

_CURRENT: contextvars.ContextVar[Principal] = contextvars.ContextVar("flowforge_principal", default=ANONYMOUS)


def current_principal() -> Principal:
    """The principal of the RPC being served (:data:`ANONYMOUS` without authentication)."""
    return _CURRENT.get()


@contextlib.contextmanager
def acting_as(principal: Principal) -> Iterator[None]:
    """Makes ``principal`` current inside the block (the RPC's handler)."""
    token = _CURRENT.set(principal)
    try:
        yield
    finally:
        _CURRENT.reset(token)
