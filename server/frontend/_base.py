"""What every RPC handler of the frontend shares: the servers it calls and the error mapping.

A handler validates its request (:mod:`.validation`), calls the engine, matching,
the event router or the schedules, and builds its response (:mod:`.protos`); this
module turns what they raise into a gRPC status. Authorization belongs in a server
interceptor in front of the handlers, not in them.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar

import grpc

from flowforge.server.errors import ServiceError
from flowforge.server.events import EventRouter
from flowforge.server.history import HistoryEngine
from flowforge.server.matching import Matching
from flowforge.server.scheduler import Scheduler, Schedules

if TYPE_CHECKING:
    Context: TypeAlias = grpc.aio.ServicerContext[Any, Any]
else:
    Context: TypeAlias = grpc.aio.ServicerContext

__all__ = ["Context", "ServiceBase", "error_status", "rpc"]

log = logging.getLogger("flowforge.server.frontend")

_Service = TypeVar("_Service", bound="ServiceBase")
_Request = TypeVar("_Request")
_Response = TypeVar("_Response")


class ServiceBase:
    """The servers an RPC handler calls; each concern's handlers subclass it."""

    def __init__(
        self, engine: HistoryEngine, matching: Matching, events: EventRouter, schedules: Schedules, scheduler: Scheduler
    ) -> None:
        self._engine = engine
        self._matching = matching
        self._events = events
        self._schedules = schedules
        self._scheduler = scheduler


#: Status messages are cut to this many characters: one that quotes a long input
#: back must not exceed gRPC's metadata limit (the caller would see only a reset stream).
MAX_STATUS_MESSAGE = 2000


def _bounded(message: str) -> str:
    if len(message) <= MAX_STATUS_MESSAGE:
        return message
    return f"{message[: MAX_STATUS_MESSAGE - 40]}... ({len(message) - MAX_STATUS_MESSAGE + 40} more characters)"


def error_status(error: Exception, name: str) -> tuple[grpc.StatusCode, str]:
    """The status an RPC named ``name`` answers ``error`` with: an engine error's own
    status and message; anything else INTERNAL, logged here with its traceback but
    without the request (which may hold payloads or tokens), never shown to the caller."""
    if isinstance(error, ServiceError):
        return error.status, _bounded(error.message)
    log.error("%s failed", name, exc_info=error)
    return grpc.StatusCode.INTERNAL, f"internal error in {name}; see the server log"


def rpc(
    method: Callable[[_Service, _Request, Context], Awaitable[_Response]],
) -> Callable[[_Service, _Request, Context], Awaitable[_Response]]:
    """Maps engine errors to status codes (:func:`error_status`)."""

    @functools.wraps(method)
    async def wrapper(self: _Service, request: _Request, context: Context) -> _Response:
        try:
            return await method(self, request, context)
        except grpc.aio.AbortError:
            raise
        except Exception as error:
            await context.abort(*error_status(error, method.__name__))
        raise AssertionError("unreachable")

    return wrapper
