"""Where the SQLite store runs a COMMIT (server/stores/sqlite.py): inline while recent
COMMITs were quick on average, on its thread while they are slow."""

from __future__ import annotations

from flowforge.server.stores.sqlite import _CommitPlace


def test_quick_commits_stay_inline() -> None:
    place = _CommitPlace(inline_below_s=0.001)
    for _ in range(100):
        assert place.inline()
        place.took(0.0002)
    assert place.inline()


def test_one_slow_commit_sends_the_next_few_to_the_thread() -> None:
    place = _CommitPlace(inline_below_s=0.001)
    for _ in range(10):
        place.took(0.0001)
    place.took(0.005)  # a checkpoint, say
    on_thread = 0
    while not place.inline():
        on_thread += 1
        place.took(0.0001)
    assert 1 <= on_thread <= 8


def test_a_slow_disk_keeps_commits_on_the_thread() -> None:
    place = _CommitPlace(inline_below_s=0.001)
    inline = []
    for seconds in [0.003, 0.0002, 0.004, 0.002, 0.0003, 0.005, 0.002] * 10:
        inline.append(place.inline())
        place.took(seconds)
    # The first few, before the average knows: inline; then none.
    assert inline[:3] == [True] * 3 and not any(inline[3:])


def test_no_limit_runs_every_commit_on_the_thread() -> None:
    place = _CommitPlace(inline_below_s=0.0)
    assert not place.inline()
    place.took(0.0)
    assert not place.inline()
