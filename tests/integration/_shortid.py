"""Stands in for a third-party library that draws from the global ``random`` module."""

from __future__ import annotations

import random

_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789"


def short_id(length: int = 8) -> str:
    """A random id, as many id libraries make them."""
    return "".join(random.choice(_ALPHABET) for _ in range(length))  # the library's own call
