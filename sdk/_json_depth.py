"""JSON parsing with bounded nesting, for JSON a caller sent (event data, filters).

``json.loads`` recurses once per nesting level, so ``[[[[...]]]]`` a hundred
thousand deep raises ``RecursionError`` from deep inside the parser, which a
server would answer ``INTERNAL``. :func:`loads_bounded` first measures the nesting
in one linear pass (only when the text has enough brackets to exceed the limit)
and refuses deeper documents with :class:`JSONTooDeep`, a ``ValueError`` whose
message says what the limit is.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["MAX_JSON_DEPTH", "JSONTooDeep", "loads_bounded"]

#: How deep arrays and objects may nest in JSON a caller sends.
MAX_JSON_DEPTH = 64

_OPEN = frozenset(b"[{")
_CLOSE = frozenset(b"]}")
_QUOTE = ord('"')
_BACKSLASH = ord("\\")


class JSONTooDeep(ValueError):
    """The JSON nests deeper than the limit."""


def _depth_over(data: bytes, limit: int) -> bool:
    depth = 0
    in_string = escaped = False
    for byte in data:
        if in_string:
            if escaped:
                escaped = False
            elif byte == _BACKSLASH:
                escaped = True
            elif byte == _QUOTE:
                in_string = False
        elif byte == _QUOTE:
            in_string = True
        elif byte in _OPEN:
            depth += 1
            if depth > limit:
                return True
        elif byte in _CLOSE:
            depth -= 1
    return False


def loads_bounded(data: str | bytes, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """``json.loads`` that refuses nesting deeper than ``max_depth`` with :class:`JSONTooDeep`.

    Raises:
        JSONTooDeep: The document nests too deep.
        ValueError: It is not JSON (``json.JSONDecodeError``, ``UnicodeDecodeError``).
    """
    raw = data.encode() if isinstance(data, str) else data
    if raw.count(b"[") + raw.count(b"{") > max_depth and _depth_over(raw, max_depth):
        raise JSONTooDeep(f"the JSON nests arrays and objects deeper than {max_depth} levels")
    return json.loads(data)
