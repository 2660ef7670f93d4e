"""Signals of a workflow run: their handlers run on the workflow loop, in history order."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from flowforge import workflow
from flowforge._worker_interceptors import HandleSignalInput, WorkflowInboundInterceptor
from flowforge._workflow_definition import _parameter_hints, _SignalDefinition
from flowforge.api.v1 import common_pb2
from flowforge.converter import DataConverter

__all__ = ["Signals"]


class Signals:
    """Delivers signals to their handlers.

    Args:
        loop: The workflow loop the handlers run on.
        converter: Decodes the signals' arguments.
        definitions: The workflow's signal handlers by name.
        workflow_object: Gives the workflow class's instance.
        on_handler_error: Called with an exception a handler raised (the instance decides
            whether it fails the workflow or the workflow task).
        cancel_requested: Whether the workflow was asked to cancel (an async handler's
            ``asyncio.CancelledError`` then ends it quietly).
        inbound: The run's inbound interceptor chain, when the worker has interceptors.
    """

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        converter: DataConverter,
        definitions: Mapping[str, _SignalDefinition],
        workflow_object: Callable[[], Any],
        on_handler_error: Callable[[Exception], None],
        cancel_requested: Callable[[], bool],
        inbound: Callable[[], WorkflowInboundInterceptor] | None,
    ) -> None:
        self._loop = loop
        self._converter = converter
        self._definitions = definitions
        self._workflow_object = workflow_object
        self._on_handler_error = on_handler_error
        self._cancel_requested = cancel_requested
        self._inbound = inbound

    def deliver(self, name: str, payloads: common_pb2.Payloads, headers: Mapping[str, common_pb2.Payload]) -> None:
        """Runs the signal's handler on the workflow loop, in history order.

        A signal the workflow has no handler for, or whose input does not fit the
        handler's parameters, is dropped with a warning (as Temporal does when no
        handler is ever registered); the execution goes on.
        """
        definition = self._definitions.get(name)
        if definition is None:
            known = ", ".join(sorted(self._definitions)) or "none"
            self._warn(f"dropping signal {name!r}: the workflow has no handler for it (handlers: {known})")
            return
        try:
            args = self._converter.from_payloads(payloads, _parameter_hints(definition.fn))
            inspect.signature(definition.fn).bind(None, *args)
        except (TypeError, ValueError) as error:
            self._warn(f"dropping signal {name!r}: its input does not fit the handler ({error})")
            return
        if self._inbound is not None:
            # Interceptors are workflow code: they run on the loop, in history order.
            signal = HandleSignalInput(name, args, headers)
            self._loop.call_soon(self._inbound().handle_signal, signal)
        else:
            self.schedule(name, args)

    def _warn(self, message: str) -> None:
        self._loop.call_soon(workflow.logger.warning, message)

    def schedule(self, name: str, args: Sequence[Any], *, on_loop: bool = False) -> None:
        """Runs the handler of signal ``name`` on the workflow loop: at once when called
        there (by the inbound interceptor chain), else in its turn."""
        fn = self._definitions[name].fn
        if inspect.iscoroutinefunction(fn):
            self._loop.create_task(self._run_async(fn, args), name=f"signal {name}")
        elif on_loop:
            self._run(fn, args)
        else:
            self._loop.call_soon(self._run, fn, args)

    def _run(self, fn: Callable[..., Any], args: Sequence[Any]) -> None:
        try:
            fn(self._workflow_object(), *args)
        except Exception as error:
            self._on_handler_error(error)

    async def _run_async(self, fn: Callable[..., Any], args: Sequence[Any]) -> None:
        try:
            await fn(self._workflow_object(), *args)
        except asyncio.CancelledError:
            if not self._cancel_requested():
                raise
        except Exception as error:
            self._on_handler_error(error)
