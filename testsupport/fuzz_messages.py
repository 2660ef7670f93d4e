"""Random and malformed protobuf requests for fuzzing the server (tests/integration/test_fuzz.py).

:func:`random_message` fills a message of any type; each value is hostile with
probability ``hostility`` (control characters, very long and empty strings, extreme
and non-finite numbers, unknown enum values, out-of-range durations and timestamps,
random bytes) and otherwise plausible (the ``default`` namespace, a few workflow
ids, small numbers), so a request gets past the first checks and reaches deeper
code with one or two bad fields. Nested messages go down to a bounded depth.
:func:`random_bytes` gives what does not parse at all.
Everything comes from the ``random.Random`` passed in, so a seed repeats a run.
"""

from __future__ import annotations

import random
from typing import Any

from google.protobuf import descriptor as _descriptor
from google.protobuf.message import Message

__all__ = ["random_bytes", "random_message"]

FD = _descriptor.FieldDescriptor

_INTS = (0, 1, -1, 2**31 - 1, -(2**31), 7, 1000)
_INT64S = (*_INTS, 2**63 - 1, -(2**63), 10**15)
_UINTS = (0, 1, 2**32 - 1, 7)
_UINT64S = (*_UINTS, 2**64 - 1)
_FLOATS = (0.0, -0.0, 1.0, -1.0, 0.5, 1e308, -1e308, float("inf"), float("-inf"), float("nan"), 5e-324)
_NAMESPACES = ("default", "", "no-such-namespace")
_STRINGS = (
    "",
    "x",
    "default",
    "a\x00b",
    "\n\r\t",
    "é∑😀",
    "[[[[[[[[",
    '{"a": ' * 50,
    "' OR 1=1 --",
    "WorkflowType = 'x' AND (" * 20,
    "*" * 300,
)


def _string(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.5:
        return rng.choice(_STRINGS)
    if roll < 0.7:
        return "".join(chr(rng.randrange(0, 0x2FF)) for _ in range(rng.randrange(1, 40)))
    if roll < 0.85:
        return rng.choice("abc(\"'[{") * rng.choice((1001, 5000, 70_000))
    return "".join(rng.choice("([{\"'\\ ,:=<>!") for _ in range(rng.randrange(1, 200)))


def random_bytes(rng: random.Random) -> bytes:
    """Bytes that are mostly not a valid message: random, truncated varints, huge lengths."""
    kind = rng.randrange(4)
    if kind == 0:
        return rng.randbytes(rng.randrange(1, 200))
    if kind == 1:
        return b"\x0a\xff\xff\xff\xff\x0f" + rng.randbytes(8)  # a string field claiming 4 GiB
    if kind == 2:
        return b"\x08" + b"\xff" * 11  # a varint too long
    return bytes([rng.randrange(256)]) * rng.randrange(1, 64)


_PLAUSIBLE = {
    "namespace": ("default",),
    "workflow_id": ("fz-1", "fz-2", "fz-3"),
    "workflow_type": ("wf",),
    "task_queue": ("q",),
    "activity_type": ("act",),
    "query": ("", "WorkflowType = 'wf'", "ExecutionStatus = 'Running'"),
}


def _plausible(field: FD, rng: random.Random) -> Any:
    t = field.type
    if t == FD.TYPE_STRING:
        return rng.choice(_PLAUSIBLE.get(field.name, ("x", "fz-1", "a.b", "")))
    if t == FD.TYPE_BYTES:
        return rng.choice((b"", b"{}", b'"v"'))
    if t == FD.TYPE_BOOL:
        return rng.random() < 0.5
    if t in (FD.TYPE_DOUBLE, FD.TYPE_FLOAT):
        return rng.choice((0.0, 1.0, 1.5, 2.0))
    if t == FD.TYPE_ENUM:
        return rng.choice([v.number for v in field.enum_type.values])
    return rng.randrange(0, 4)


def _scalar(field: FD, rng: random.Random, hostility: float = 1.0) -> Any:
    if rng.random() >= hostility:
        return _plausible(field, rng)
    t = field.type
    if t == FD.TYPE_STRING:
        if field.name == "namespace" and rng.random() < 0.6:
            return rng.choice(_NAMESPACES)
        return _string(rng)
    if t == FD.TYPE_BYTES:
        return rng.randbytes(rng.choice((0, 1, 16, 300)))
    if t == FD.TYPE_BOOL:
        return rng.random() < 0.5
    if t in (FD.TYPE_DOUBLE, FD.TYPE_FLOAT):
        value = rng.choice(_FLOATS)
        return max(-3.4e38, min(3.4e38, value)) if t == FD.TYPE_FLOAT and value == value else value
    if t == FD.TYPE_ENUM:
        return rng.choice([v.number for v in field.enum_type.values] + [-1, 999])
    if t in (FD.TYPE_INT32, FD.TYPE_SINT32, FD.TYPE_SFIXED32):
        return rng.choice(_INTS)
    if t in (FD.TYPE_INT64, FD.TYPE_SINT64, FD.TYPE_SFIXED64):
        return rng.choice(_INT64S)
    if t in (FD.TYPE_UINT32, FD.TYPE_FIXED32):
        return rng.choice(_UINTS)
    return rng.choice(_UINT64S)


def _fill_well_known(message: Message, rng: random.Random, hostility: float) -> bool:
    name = message.DESCRIPTOR.full_name
    if name in ("google.protobuf.Duration", "google.protobuf.Timestamp"):
        if rng.random() >= hostility:
            message.seconds = rng.randrange(0, 5) if name.endswith("Duration") else 1_700_000_000  # type: ignore[attr-defined]
            return True
        seconds = rng.choice((0, 1, -1, 5, 10**9, 315_576_000_000, -315_576_000_000, 2**62))
        nanos = rng.choice((0, 1, -1, 999_999_999, 2**31 - 1))
        message.seconds = seconds  # type: ignore[attr-defined]
        message.nanos = nanos  # type: ignore[attr-defined]
        return True
    return False


def random_message(message: Message, rng: random.Random, hostility: float = 1.0, depth: int = 0) -> Message:
    """Fills ``message`` (in place, and returns it) with random values, each hostile
    with probability ``hostility``."""
    if _fill_well_known(message, rng, hostility):
        return message
    for field in message.DESCRIPTOR.fields:
        if rng.random() < 0.35:
            continue  # leave some fields unset
        if field.message_type is not None and field.message_type.GetOptions().map_entry:
            container = getattr(message, field.name)
            key_field = field.message_type.fields_by_name["key"]
            value_field = field.message_type.fields_by_name["value"]
            for _ in range(rng.randrange(0, 3)):
                key = _scalar(key_field, rng, hostility)
                if value_field.message_type is not None:
                    if depth < 3:
                        random_message(container[key], rng, hostility, depth + 1)
                else:
                    container[key] = _scalar(value_field, rng, hostility)
            continue
        repeated = field.is_repeated
        if field.message_type is not None:
            if depth >= 3:
                continue
            if repeated:
                for _ in range(rng.randrange(0, 4)):
                    random_message(getattr(message, field.name).add(), rng, hostility, depth + 1)
            else:
                random_message(getattr(message, field.name), rng, hostility, depth + 1)
                getattr(message, field.name).SetInParent()
            continue
        if repeated:
            getattr(message, field.name).extend(_scalar(field, rng, hostility) for _ in range(rng.randrange(0, 4)))
        else:
            setattr(message, field.name, _scalar(field, rng, hostility))
    return message
