"""Catches workflow code that reads the clock or randomness, does I/O or starts threads.

There is no import sandbox (it breaks third-party libraries and debuggers).
Instead, while an activation runs, a per-thread profile hook
(``sys.setprofile``) watches calls of a fixed set of nondeterministic
functions. The hook never raises: it records the first call made on behalf of
workflow code, and the activation then fails its workflow task with a
``NonDeterminismError`` naming the function, the file:line that made the call,
the workflow code that led there, and the deterministic replacement.

The hook exists only in the thread running an activation and only while it
runs, so activities, the worker and everything else in the process run without
it (docs/determinism.md has the measurements).

Calls made by the SDK itself, by ``asyncio``, by ``logging`` (which reads the
clock for every record), by ``linecache`` (which reads source files for
tracebacks and warnings) and by the import system (a first import reads files)
are allowed, and so is whatever a garbage-collection callback does: a library's
``gc.callbacks`` (Hypothesis times collections with the performance counter) run
inside whichever code allocated when the collector started, workflow code included.
"""

from __future__ import annotations

import _socket
import _ssl
import _thread
import asyncio
import dataclasses
import datetime
import gc
import io
import os
import random
import socket
import sys
import threading
import time
import uuid
from collections.abc import Callable
from types import CodeType, FrameType, TracebackType
from typing import Any, Self

__all__ = ["DeterminismGuard"]


@dataclasses.dataclass(frozen=True)
class _Forbidden:
    name: str
    replacement: str
    # For the event loop's I/O methods: calls from asyncio are not excused, since
    # the workflow's loop does no I/O, so any such call comes from workflow code.
    asyncio_io: bool = False


_CLOCK = "use workflow.now() for the current time"
_SLEEP = "use workflow.sleep() (or asyncio.sleep()), which is a durable timer"
_RANDOM = "use workflow.random()"
_UUID = "use workflow.uuid4()"
_IO = "do I/O in an activity"
_THREAD = "run concurrent work as asyncio tasks (asyncio.gather) or in an activity"

_OS_FILE_FUNCTIONS = (
    "open",
    "stat",
    "lstat",
    "listdir",
    "scandir",
    "remove",
    "unlink",
    "rename",
    "replace",
    "mkdir",
    "rmdir",
    "chmod",
    "utime",
    "truncate",
    "symlink",
    "link",
    "readlink",
)

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
    random._inst.random: _Forbidden("random.random()", _RANDOM),
    random._inst.getrandbits: _Forbidden("random.getrandbits()", _RANDOM),
    io.open: _Forbidden("open()", _IO),  # builtins.open is io.open
    _socket.getaddrinfo: _Forbidden("socket.getaddrinfo()", _IO),
    _socket.gethostbyname: _Forbidden("socket.gethostbyname()", _IO),
    _thread.start_new_thread: _Forbidden("_thread.start_new_thread()", _THREAD),
    **{getattr(os, name): _Forbidden(f"os.{name}()", _IO) for name in _OS_FILE_FUNCTIONS if hasattr(os, name)},
}

# The workflow event loop inherits these from AbstractEventLoop (which raises
# NotImplementedError): naming them tells what the code tried, e.g. an async HTTP client.
_LOOP_IO_METHODS = (
    "getaddrinfo",
    "getnameinfo",
    "create_connection",
    "create_server",
    "create_datagram_endpoint",
    "create_unix_connection",
    "create_unix_server",
    "connect_accepted_socket",
    "sendfile",
    "start_tls",
    "sock_recv",
    "sock_recv_into",
    "sock_sendall",
    "sock_connect",
    "sock_accept",
    "sock_sendfile",
    "connect_read_pipe",
    "connect_write_pipe",
    "subprocess_shell",
    "subprocess_exec",
    "add_reader",
    "add_writer",
)

# Python functions, matched on 'call' by their code object.
_FORBIDDEN_CODE: dict[CodeType, _Forbidden] = {
    uuid.uuid4.__code__: _Forbidden("uuid.uuid4()", _UUID),
    uuid.uuid1.__code__: _Forbidden("uuid.uuid1()", _UUID),
    socket.socket.__init__.__code__: _Forbidden("socket.socket()", _IO),
    threading.Thread.start.__code__: _Forbidden("threading.Thread.start()", _THREAD),
    asyncio.AbstractEventLoop.run_in_executor.__code__: _Forbidden("loop.run_in_executor()", _THREAD, asyncio_io=True),
    **{
        getattr(asyncio.AbstractEventLoop, name).__code__: _Forbidden(f"loop.{name}()", _IO, asyncio_io=True)
        for name in _LOOP_IO_METHODS
    },
}

# A code object caches no hash: hashing one hashes its constants and names (nested
# code objects included), up to a microsecond or two for a large function. The hook
# sees every call, so it looks a code object up only when its name and first line
# (which code equality compares, and which cost nothing to read) are a forbidden one's.
_FORBIDDEN_CODE_LINES: dict[str, frozenset[int]] = {
    name: frozenset(code.co_firstlineno for code in _FORBIDDEN_CODE if code.co_name == name)
    for name in {code.co_name for code in _FORBIDDEN_CODE}
}

# Any method call on these objects (e.g. sock.connect(), sock.sendall()) is
# I/O, even on a socket that was opened outside workflow code.
_IO_OBJECT_TYPES = (_socket.socket, _ssl._SSLSocket)  # type: ignore[attr-defined]  # typeshed omits the C type

# Calls these packages make on their own behalf are not workflow code's doing.
# linecache reads source files to show tracebacks and warnings, which does not
# change what the workflow does.
_EXCUSED_PACKAGES = frozenset({"flowforge", "asyncio", "linecache"})
# Nor is anything done under a logging call (such as a handler stamping the
# time), under an OpenTelemetry call (a tracing interceptor's span ids and times are
# emitted, never read back by the workflow) or under an import (a first import reads
# the module's files).
_EXCUSED_ANYWHERE = frozenset(
    {"logging", "opentelemetry", "importlib", "_frozen_importlib", "_frozen_importlib_external", "zipimport"}
)


def _module(frame: FrameType) -> str:
    return str(frame.f_globals.get("__name__", ""))


def _package(frame: FrameType) -> str:
    return _module(frame).partition(".")[0]


def _location(frame: FrameType) -> str:
    return f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno} in {frame.f_code.co_qualname}"


def _function_name(frame: FrameType) -> str:
    """How a user would name the function of a standard library frame."""
    module = _module(frame)
    if module == "random" and frame.f_locals.get("self") is random._inst:
        return f"random.{frame.f_code.co_name}()"  # random.randint is random._inst.randint
    return f"{module}.{frame.f_code.co_qualname}()"


class DeterminismGuard:
    """Records the first nondeterministic call workflow code makes while active.

    Use as a context manager around running workflow code; afterwards
    :attr:`violation` holds a message for a ``NonDeterminismError``, or ``None``.

    Args:
        boundary: The code object of the function that runs workflow code; the
            hook does not look at the frames that called it.
        workflow_module: The module of the workflow class. When the call was made
            elsewhere (e.g. in a library the workflow called), the message also
            names the innermost frame of this module that led there.
    """

    def __init__(self, boundary: CodeType, workflow_module: str = "") -> None:
        self._boundary = boundary
        self._workflow_module = workflow_module
        self._previous_profile: Callable[..., Any] | None = None
        self._collecting = False  # between the collector's first and last callback
        self.violation: str | None = None

    def __enter__(self) -> Self:
        # First to hear a collection start and last to hear it stop, so every other
        # callback runs while the flag is up.
        gc.callbacks.insert(0, self._collection_started)
        gc.callbacks.append(self._collection_stopped)
        self._previous_profile = sys.getprofile()
        sys.setprofile(self._profile)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        sys.setprofile(self._previous_profile)
        gc.callbacks.remove(self._collection_started)
        gc.callbacks.remove(self._collection_stopped)
        self._collecting = False

    def _collection_started(self, phase: str, _info: dict[str, int]) -> None:
        if phase == "start":
            self._collecting = True

    def _collection_stopped(self, phase: str, _info: dict[str, int]) -> None:
        if phase == "stop":
            self._collecting = False

    def _profile(self, frame: FrameType, event: str, arg: Any) -> None:
        # Runs for every call in workflow code: stay cheap on the common path.
        # On 'call', ``frame`` is the forbidden function's own; on 'c_call', its caller's.
        if event == "c_call":
            forbidden = _FORBIDDEN_BUILTINS.get(arg)
            if forbidden is None:
                if not isinstance(getattr(arg, "__self__", None), _IO_OBJECT_TYPES):
                    return
                forbidden = _Forbidden(f"socket.socket.{arg.__name__}()", _IO)
        elif event == "call":
            code = frame.f_code
            lines = _FORBIDDEN_CODE_LINES.get(code.co_name)
            if lines is None or code.co_firstlineno not in lines:
                return
            forbidden = _FORBIDDEN_CODE.get(code)
        else:
            return
        if forbidden is not None and self.violation is None and not self._collecting:
            self.violation = self._describe(forbidden, frame, frame_is_forbidden=event == "call")

    def _describe(self, forbidden: _Forbidden, frame: FrameType, *, frame_is_forbidden: bool) -> str | None:
        """The violation message, or ``None`` when the call is not workflow code's doing."""
        caller: FrameType | None = None  # the innermost frame outside the standard library
        library_entry: FrameType | None = None  # the outermost standard library frame below it
        workflow_frame: FrameType | None = None  # the innermost frame of the workflow's module
        user_entry: FrameType | None = None  # the outermost frame outside the stdlib and the SDK
        excused = _EXCUSED_PACKAGES - {"asyncio"} if forbidden.asyncio_io else _EXCUSED_PACKAGES
        current: FrameType | None = frame
        while current is not None and current.f_code is not self._boundary:
            package = _package(current)
            if package in _EXCUSED_ANYWHERE:
                return None
            if caller is None:
                if package in excused:
                    return None
                if package in sys.stdlib_module_names:
                    library_entry = current
                else:
                    caller = current
            if package not in _EXCUSED_PACKAGES and package not in sys.stdlib_module_names:
                user_entry = current
                if workflow_frame is None and _module(current) == self._workflow_module:
                    workflow_frame = current
            current = current.f_back
        if caller is None:
            return None
        called = forbidden.name
        if library_entry is not None and not (frame_is_forbidden and library_entry is frame):
            called = f"{_function_name(library_entry)} (which calls {forbidden.name})"
        leading_frame = workflow_frame or user_entry
        reached_from = (
            f" (reached from {_location(leading_frame)})"
            if leading_frame is not None and leading_frame is not caller
            else ""
        )
        return (
            f"workflow code called {called} at {_location(caller)}{reached_from}; workflow code "
            f"must be deterministic: {forbidden.replacement}"
        )
