"""The built-in ``__stack_trace`` query: where each coroutine of a workflow waits (Temporal's name).

``flowforge workflow stack`` asks it; a worker answers it from the run's instance like any query.
"""

from __future__ import annotations

import asyncio
import linecache
from types import FrameType
from typing import Any

__all__ = ["STACK_TRACE_QUERY", "workflow_stack_trace"]

STACK_TRACE_QUERY = "__stack_trace"


def _awaited_frames(awaitable: Any) -> tuple[list[FrameType], Any]:
    """The frames of a coroutine and of the coroutines it awaits, outermost first, and what the innermost awaits."""
    frames: list[FrameType] = []
    while True:
        frame = getattr(awaitable, "cr_frame", None) or getattr(awaitable, "gi_frame", None)
        if frame is None:
            return frames, awaitable
        frames.append(frame)
        awaited = getattr(awaitable, "cr_await", None) or getattr(awaitable, "gi_yieldfrom", None)
        if awaited is None:
            return frames, None
        awaitable = awaited


def _frame_lines(frame: FrameType) -> list[str]:
    code = frame.f_code
    lines = [f'  File "{code.co_filename}", line {frame.f_lineno}, in {code.co_qualname}']
    source = linecache.getline(code.co_filename, frame.f_lineno).strip()
    if source:
        lines.append(f"    {source}")
    return lines


def workflow_stack_trace(loop: asyncio.AbstractEventLoop) -> str:
    """Each unfinished task of the workflow loop: its coroutine chain, outermost first, and what it waits on."""
    sections = []
    for task in sorted(asyncio.all_tasks(loop), key=lambda t: t.get_name()):
        frames, leaf = _awaited_frames(task.get_coro())
        lines = [f"task {task.get_name()!r}:"]
        for frame in frames:
            lines.extend(_frame_lines(frame))
        # The task's own waiter is the future itself; the innermost awaitable may only be its iterator.
        waiting_on = getattr(task, "_fut_waiter", None) or leaf
        if waiting_on is not None:
            lines.append(f"  waiting on {waiting_on!r}")
        sections.append("\n".join(lines))
    return "\n\n".join(sections) if sections else "no coroutine is waiting (the run has finished)"
