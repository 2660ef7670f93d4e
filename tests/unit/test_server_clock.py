"""flowforge.server.clock: the clocks deadlines are measured on."""

from __future__ import annotations

import time

import pytest

from flowforge.server.clock import ManualClock, SkippingClock


def test_skipping_clock_follows_the_wall_clock_until_it_skips() -> None:
    clock = SkippingClock()
    assert abs(clock.now_us() - time.time_ns() // 1000) < 1_000_000
    before = clock.now_us()
    time.sleep(0.01)
    assert clock.now_us() - before >= 10_000
    assert clock.skipped_us == 0


def test_skipping_clock_jumps_only_forwards_and_tells_its_listeners() -> None:
    clock = SkippingClock()
    jumps: list[int] = []
    clock.add_jump_listener(lambda: jumps.append(clock.now_us()))
    target = clock.now_us() + 30 * 86_400_000_000

    clock.skip_to(target)
    clock.skip_to(target - 1_000_000)  # already passed: nothing happens

    assert len(jumps) == 1 and jumps[0] >= target
    assert clock.now_us() >= target
    assert 30 * 86_400_000_000 - 1_000_000 < clock.skipped_us <= 30 * 86_400_000_000


def test_manual_clock_tells_its_listeners_when_it_moves() -> None:
    clock = ManualClock(start_us=1_000)
    jumps: list[int] = []
    clock.add_jump_listener(lambda: jumps.append(clock.now_us()))

    clock.advance(0)
    clock.advance(500)
    clock.set(2_000)

    assert jumps == [1_500, 2_000]
    with pytest.raises(ValueError, match="backwards"):
        clock.advance(-1)
