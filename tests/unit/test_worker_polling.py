"""The slot-gated long-poll loop shared by the workflow and activity workers."""

import asyncio
import logging
import types

import grpc
import pytest

from flowforge.exceptions import RPCError
from flowforge.worker import _polling
from flowforge.worker._polling import TaskSlots, poll_forever


async def _settle() -> None:
    """Lets every ready task run until all of them are blocked."""
    for _ in range(20):
        await asyncio.sleep(0)


def _task(token: bytes) -> types.SimpleNamespace:
    return types.SimpleNamespace(task_token=token)


async def test_slots_are_taken_one_at_a_time_or_in_bulk():
    slots = TaskSlots(3)

    await slots.acquire()
    assert slots.try_acquire(5) == 2
    assert slots.free == 0
    assert slots.try_acquire(1) == 0

    waiter = asyncio.create_task(slots.acquire())
    await _settle()
    assert not waiter.done()
    slots.release(2)
    await waiter
    assert slots.free == 1


async def test_a_slot_is_taken_before_polling_and_handed_to_dispatch():
    slots = TaskSlots(1)
    tasks = asyncio.Queue()
    polls = 0
    dispatched = []

    async def poll():
        nonlocal polls
        polls += 1
        return await tasks.get()

    poller = asyncio.create_task(
        poll_forever(description="test queue", slots=slots, poll=poll, dispatch=dispatched.append)
    )
    tasks.put_nowait(_task(b"t-1"))
    tasks.put_nowait(_task(b"t-2"))
    await _settle()

    # The only slot belongs to t-1's handler: no poll may lease t-2 meanwhile.
    assert [t.task_token for t in dispatched] == [b"t-1"]
    assert polls == 1
    assert tasks.qsize() == 1

    slots.release()
    await _settle()
    assert [t.task_token for t in dispatched] == [b"t-1", b"t-2"]
    assert polls == 2

    poller.cancel()
    with pytest.raises(asyncio.CancelledError):
        await poller


async def test_empty_polls_and_errors_give_the_slot_back(monkeypatch, caplog):
    monkeypatch.setattr(_polling, "retry_delay", lambda failures: 0)
    slots = TaskSlots(1)
    answers = [
        _task(b""),
        RPCError("store down", grpc.StatusCode.UNAVAILABLE),
        RPCError("namespace 'x' not found", grpc.StatusCode.NOT_FOUND),
        ValueError("bug"),
        _task(b"t-1"),
    ]
    dispatched = asyncio.Queue()

    async def poll():
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    with caplog.at_level(logging.WARNING, logger=_polling.__name__):
        poller = asyncio.create_task(
            poll_forever(
                description="activity task queue 'q'",
                slots=slots,
                poll=poll,
                dispatch=dispatched.put_nowait,
            )
        )
        task = await asyncio.wait_for(dispatched.get(), timeout=5)
        poller.cancel()
        with pytest.raises(asyncio.CancelledError):
            await poller

    assert task.task_token == b"t-1"
    assert slots.free == 0  # held by the dispatched task only
    levels = [(r.levelno, r.getMessage().split(";")[0]) for r in caplog.records]
    assert levels == [
        (logging.WARNING, "polling activity task queue 'q' failed (UNAVAILABLE: store down)"),
        (
            logging.ERROR,
            "polling activity task queue 'q' failed (NOT_FOUND: namespace 'x' not found)",
        ),
        (logging.ERROR, "polling activity task queue 'q' failed"),
    ]


async def test_cancelling_a_poll_frees_its_slot():
    slots = TaskSlots(1)
    polling = asyncio.Event()

    async def poll():
        polling.set()
        await asyncio.Event().wait()

    poller = asyncio.create_task(poll_forever(description="q", slots=slots, poll=poll, dispatch=lambda task: None))
    await asyncio.wait_for(polling.wait(), timeout=5)
    assert slots.free == 0

    poller.cancel()
    with pytest.raises(asyncio.CancelledError):
        await poller
    assert slots.free == 1


def test_retry_delay_grows_and_is_capped():
    delays = [_polling.retry_delay(failures) for failures in range(1, 12)]

    assert 0.15 <= delays[0] <= 0.25
    assert all(delay <= _polling._POLL_RETRY_MAXIMUM * 1.2 for delay in delays)
    assert delays[-1] >= _polling._POLL_RETRY_MAXIMUM * 0.8
