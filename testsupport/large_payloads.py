"""A workflow that carries one large value through every payload path: shared by the
payload storage tests, the recorded replay history and the payload benchmark."""

from __future__ import annotations

import random
from datetime import timedelta

from flowforge import activity, workflow

TASK_QUEUE = "large-payloads"


def make_value(size: int, seed: int = 7) -> bytes:
    """``size`` incompressible bytes, the same for the same seed in any process."""
    return random.Random(seed).randbytes(size)


@activity.defn
async def reverse_bytes(data: bytes) -> bytes:
    return data[::-1]


@workflow.defn
class RoundTrip:
    """Input -> activity input -> activity output -> result, the value large all the way."""

    @workflow.run
    async def run(self, data: bytes) -> bytes:
        reversed_data = await workflow.execute_activity(
            reverse_bytes, data, start_to_close_timeout=timedelta(seconds=120)
        )
        return reversed_data[::-1]  # the input again: stored once
