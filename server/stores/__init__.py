"""Durable stores behind one interface: SQLite (embedded) and PostgreSQL."""

from flowforge.server.stores.base import Store, StoreUnavailable

__all__ = ["Store", "StoreUnavailable"]
