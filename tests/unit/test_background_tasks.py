"""Stopping the server's background loops (server/_tasks.py): a stop never hangs on a
loop that swallowed its cancellation, and a wait never swallows one."""

from __future__ import annotations

import asyncio

from flowforge.server._tasks import cancel_and_wait, wait_event


async def test_a_loop_that_swallowed_its_cancellation_is_cancelled_again() -> None:
    # What Python 3.11's asyncio.wait_for does when the cancel lands as its wait ends:
    # it returns instead of raising, and the loop goes on.
    swallowed = 0

    async def loop() -> None:
        nonlocal swallowed
        while True:
            try:
                await asyncio.sleep(0.01)
            except asyncio.CancelledError:
                if swallowed:
                    raise
                swallowed += 1

    task = asyncio.create_task(loop())
    await asyncio.sleep(0)
    stopper = asyncio.create_task(cancel_and_wait(task))
    # Not wait_for: cancelling the stopper on a timeout would cancel the loop a second time.
    done, _ = await asyncio.wait((stopper,), timeout=20.0)
    if not done:
        stopper.cancel()
        raise AssertionError("the stop still waits on a loop that swallowed its cancellation")
    assert task.cancelled() and swallowed == 1


async def test_cancel_and_wait_passes_on_a_loop_failure_and_ignores_none() -> None:
    async def failing() -> None:
        raise RuntimeError("broken loop")

    task = asyncio.create_task(failing())
    await asyncio.sleep(0)
    try:
        await cancel_and_wait(task)
    except RuntimeError as error:
        assert str(error) == "broken loop"
    else:
        raise AssertionError("the loop's failure was not raised")
    await cancel_and_wait(None)


async def test_a_cancel_that_lands_as_the_event_is_set_is_not_swallowed() -> None:
    event = asyncio.Event()
    waiter = asyncio.create_task(wait_event(event, 10.0))
    await asyncio.sleep(0)
    event.set()
    waiter.cancel()
    try:
        await waiter
    except asyncio.CancelledError:
        pass
    else:
        raise AssertionError("the cancellation was swallowed")
    assert waiter.cancelled()


async def test_wait_event_says_whether_the_event_was_set() -> None:
    event = asyncio.Event()
    assert await wait_event(event, 0.01) is False
    event.set()
    assert await wait_event(event, 10.0) is True
