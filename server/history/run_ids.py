"""New run ids: UUIDs whose leading bits are the time, so a store's indexes on run ids
take new runs at one end instead of at random pages (issue 20)."""

from __future__ import annotations

import os
import time
import uuid

__all__ = ["time_ordered_run_id"]

_VERSION_7 = 0x7 << 76
_VARIANT_RFC_4122 = 0x2 << 62


def time_ordered_run_id() -> str:
    """A run id in the standard UUID text form, version 7 (RFC 9562): 48 bits of Unix
    time in milliseconds, then 74 random bits.

    Every row of a run is keyed by its run id (history events, the execution, its tasks
    and timers). With random (version 4) ids each new run's rows went to a random leaf
    page of each of those B-trees, so a SQLite commit wrote a page per index per run
    touched; ids that grow with time put the runs in flight on the last few pages. The
    random bits keep ids unguessable and collisions out of reach (2**74 per millisecond).
    """
    unix_ms = time.time_ns() // 1_000_000
    random_bits = int.from_bytes(os.urandom(10), "big")
    value = (unix_ms & ((1 << 48) - 1)) << 80 | random_bits
    value = (value & ~(0xF << 76)) | _VERSION_7
    value = (value & ~(0x3 << 62)) | _VARIANT_RFC_4122
    return str(uuid.UUID(int=value))
