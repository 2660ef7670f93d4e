"""Catches workflow code that reads the clock or randomness or does I/O.

There is no import sandbox (it breaks third-party libraries and debuggers).
Instead, while an activation runs, a per-thread profile hook
(``sys.setprofile``) watches calls of a fixed set of nondeterministic
functions. The hook never raises: it records the first call made on behalf of
workflow code, and the activation then fails its workflow task with a
``NonDeterminismError`` naming the function, the caller's file:line and the
deterministic replacement.

Calls made by the SDK itself, by ``asyncio``, by ``logging`` (which reads the
clock for every record) and by ``linecache`` (which reads source files for
tracebacks and warnings) are allowed.
"""

from __future__ import annotations

import dataclasses
import datetime
import io
import os
import random
import socket
import sys
import time
import uuid
from types import CodeType, FrameType, TracebackType
from typing import Any, Callable, Optional

import _socket

__all__ = ["DeterminismGuard"]


@dataclasses.dataclass(frozen=True)
class _Forbidden:
    name: str
    replacement: str


_CLOCK = "use workflow.now() for the current time"
_SLEEP = "use workflow.sleep() (or asyncio.sleep()), which is a durable timer"
_RANDOM = "use workflow.random()"
_UUID = "use workflow.uuid4()"
_IO = "do I/O in an activity"

# Keyed by the C function objects the profiler reports on 'c_call'. Bound
# methods of the global random generator compare equal to any other lookup of
# the same method; workflow.random() is a different Random, so it never matches.
_FORBIDDEN_BUILTINS: dict[object, _Forbidden] = {
    time.time: _Forbidden("time.time()", _CLOCK),
    time.time_ns: _Forbidden("time.time_ns()", _CLOCK),
    time.monotonic: _Forbidden("time.monotonic()", _CLOCK),
    time.monotonic_ns: _Forbidden("time.monotonic_ns()", _CLOCK),
    time.perf_counter: _Forbidden("time.perf_counter()", _CLOCK),
    time.perf_counter_ns: _Forbidden("time.perf_counter_ns()", _CLOCK),
    time.sleep: _Forbidden("time.sleep()", _SLEEP),
    datetime.datetime.now: _Forbidden("datetime.datetime.now()", _CLOCK),
    datetime.datetime.utcnow: _Forbidden("datetime.datetime.utcnow()", _CLOCK),
    datetime.datetime.today: _Forbidden("datetime.datetime.today()", _CLOCK),
    datetime.date.today: _Forbidden("datetime.date.today()", _CLOCK),
    os.urandom: _Forbidden("os.urandom()", _RANDOM),
    random._inst.random: _Forbidden("random.random()", _RANDOM),  # type: ignore[attr-defined]
    random._inst.getrandbits: _Forbidden("random.getrandbits()", _RANDOM),  # type: ignore[attr-defined]
    io.open: _Forbidden("open()", _IO),  # builtins.open is io.open
    _socket.getaddrinfo: _Forbidden("socket.getaddrinfo()", _IO),
    _socket.gethostbyname: _Forbidden("socket.gethostbyname()", _IO),
}

# Python functions, matched on 'call' by their code object.
_FORBIDDEN_CODE: dict[CodeType, _Forbidden] = {
    uuid.uuid4.__code__: _Forbidden("uuid.uuid4()", _UUID),
    uuid.uuid1.__code__: _Forbidden("uuid.uuid1()", _UUID),
    socket.socket.__init__.__code__: _Forbidden("socket.socket()", _IO),
}

# Calls these packages make on their own behalf are not workflow code's doing.
# linecache reads source files to show tracebacks and warnings, which does not
# change what the workflow does.
_EXCUSED_PACKAGES = frozenset({"flowforge", "asyncio", "linecache"})
# Nor is anything done under a logging call, such as a handler stamping the time.
_LOGGING_PACKAGE = "logging"


def _module(frame: FrameType) -> str:
    return str(frame.f_globals.get("__name__", ""))


def _package(frame: FrameType) -> str:
    return _module(frame).partition(".")[0]


class DeterminismGuard:
    """Records the first nondeterministic call workflow code makes while active.

    Use as a context manager around running workflow code; afterwards
    :attr:`violation` holds a message for a ``NonDeterminismError``, or ``None``.

    Args:
        boundary: The code object of the function that runs workflow code; the
            hook does not look at the frames that called it.
    """

    def __init__(self, boundary: CodeType) -> None:
        self._boundary = boundary
        self._previous_profile: Optional[Callable[..., Any]] = None
        self.violation: Optional[str] = None

    def __enter__(self) -> DeterminismGuard:
        self._previous_profile = sys.getprofile()
        sys.setprofile(self._profile)
        return self

    def __exit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> None:
        sys.setprofile(self._previous_profile)

    def _profile(self, frame: FrameType, event: str, arg: Any) -> None:
        # Runs for every call in workflow code: stay cheap on the common path.
        if event == "c_call":
            forbidden = _FORBIDDEN_BUILTINS.get(arg)
        elif event == "call":
            forbidden = _FORBIDDEN_CODE.get(frame.f_code)
        else:
            return
        if forbidden is not None and self.violation is None:
            self.violation = self._describe(forbidden, frame)

    def _describe(self, forbidden: _Forbidden, frame: FrameType) -> Optional[str]:
        """The violation message, or ``None`` when the call is not workflow code's doing."""
        caller: Optional[FrameType] = None  # the innermost frame outside the standard library
        library_entry: Optional[FrameType] = None  # the outermost standard library frame below it
        current: Optional[FrameType] = frame
        while current is not None and current.f_code is not self._boundary:
            package = _package(current)
            if package == _LOGGING_PACKAGE:
                return None
            if caller is None:
                if package in _EXCUSED_PACKAGES:
                    return None
                if package in sys.stdlib_module_names:
                    library_entry = current
                else:
                    caller = current
            current = current.f_back
        if caller is None:
            return None
        called = forbidden.name
        if library_entry is not None:
            entry = f"{_module(library_entry)}.{library_entry.f_code.co_qualname}()"
            if entry != forbidden.name:
                called = f"{entry} (which calls {forbidden.name})"
        location = f"{os.path.basename(caller.f_code.co_filename)}:{caller.f_lineno} in {caller.f_code.co_qualname}"
        return (
            f"workflow code called {called} at {location}; workflow code must be "
            f"deterministic: {forbidden.replacement}"
        )
