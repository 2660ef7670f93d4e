"""Updates of a workflow run: validating, accepting, running and completing them, each stage a marker.

An update arrives as the ``__update`` signal (update id, name, arguments). In the signal's turn
on the loop its validator runs; then a ``update`` marker records ``accepted`` (and the handler
starts) or ``rejected`` (with the validator's error). When the handler returns or raises a
``FailureError``, a marker records ``completed`` with the result or the failure. Replay runs
the same code and produces the same markers; a second delivery of an update id is ignored.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from flowforge import exceptions
from flowforge._workflow_commands import UPDATE_ID_DETAIL, UPDATE_MARKER_NAME, UPDATE_STAGE_DETAIL, CommandBuffer
from flowforge._workflow_definition import _parameter_hints
from flowforge._workflow_update_definition import _UpdateDefinition
from flowforge.api.schema import message_to_json_dict
from flowforge.api.v1 import command_pb2, common_pb2
from flowforge.converter import DataConverter, default_converter, error_to_failure

__all__ = ["UPDATE_FAILURE_DETAIL", "UPDATE_NAME_DETAIL", "UPDATE_RESULT_DETAIL", "Updates"]

UPDATE_NAME_DETAIL = "name"
UPDATE_RESULT_DETAIL = "result"
UPDATE_FAILURE_DETAIL = "failure"


class Updates:
    """The updates a run has seen, by id.

    Args:
        loop: The workflow loop handlers run on.
        commands: Where the markers go.
        converter: Decodes arguments, encodes results and failures.
        definitions: The workflow's update handlers by name.
        workflow_object: Gives the workflow class's instance.
        on_handler_error: Called with a handler's exception that is not a ``FailureError``
            (it fails the workflow task).
    """

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        commands: CommandBuffer,
        converter: DataConverter,
        definitions: Mapping[str, _UpdateDefinition],
        workflow_object: Callable[[], Any],
        on_handler_error: Callable[[Exception], None],
    ) -> None:
        self._loop = loop
        self._commands = commands
        self._converter = converter
        self._definitions = definitions
        self._workflow_object = workflow_object
        self._on_handler_error = on_handler_error
        self._seen: set[str] = set()
        self._running: set[asyncio.Task[None]] = set()

    @property
    def all_handlers_finished(self) -> bool:
        """Whether no accepted update's handler is still running."""
        return not self._running

    def deliver(self, payloads: common_pb2.Payloads) -> None:
        """Takes an ``__update`` signal's input; the update is handled in its turn on the loop."""
        if len(payloads.payloads) < 2:
            return  # not an update this SDK sent: nothing to answer
        update_id, name = (str(v) for v in default_converter.from_payloads(_first(payloads, 2)))
        if update_id in self._seen:
            return
        self._seen.add(update_id)
        definition = self._definitions.get(name)
        rest = common_pb2.Payloads(payloads=payloads.payloads[2:])
        self._loop.call_soon(self._validate_and_start, update_id, name, definition, rest)

    def _validate_and_start(
        self, update_id: str, name: str, definition: _UpdateDefinition | None, payloads: common_pb2.Payloads
    ) -> None:
        try:
            if definition is None:
                known = ", ".join(sorted(self._definitions)) or "none"
                raise exceptions.ApplicationError(
                    f"the workflow has no update {name!r} (updates: {known})", type="UpdateNotFound"
                )
            args = self._converter.from_payloads(payloads, _parameter_hints(definition.fn))
            inspect.signature(definition.fn).bind(None, *args)
            if definition.validator is not None:
                definition.validator(self._workflow_object(), *args)
        except Exception as error:
            self._mark(update_id, name, "rejected", failure=error)
            return
        self._mark(update_id, name, "accepted")
        task = self._loop.create_task(self._run(update_id, definition, args), name=f"update {name} {update_id}")
        self._running.add(task)
        task.add_done_callback(self._running.discard)

    async def _run(self, update_id: str, definition: _UpdateDefinition, args: Sequence[Any]) -> None:
        try:
            result = definition.fn(self._workflow_object(), *args)
            if inspect.isawaitable(result):
                result = await result
        except exceptions.FailureError as error:
            self._mark(update_id, definition.name, "completed", failure=error)
        except asyncio.CancelledError as error:
            self._mark(
                update_id, definition.name, "completed", failure=exceptions.CancelledError(str(error) or "cancelled")
            )
            raise
        except Exception as error:
            self._on_handler_error(error)
        else:
            self._mark(update_id, definition.name, "completed", result=result)

    def _mark(
        self, update_id: str, name: str, stage: str, *, result: Any = None, failure: BaseException | None = None
    ) -> None:
        details = {
            UPDATE_ID_DETAIL: default_converter.to_payloads([update_id]),
            UPDATE_STAGE_DETAIL: default_converter.to_payloads([stage]),
            UPDATE_NAME_DETAIL: default_converter.to_payloads([name]),
        }
        if failure is not None:
            encoded = message_to_json_dict(error_to_failure(failure, self._converter))
            details[UPDATE_FAILURE_DETAIL] = default_converter.to_payloads([encoded])
        elif stage == "completed":
            details[UPDATE_RESULT_DETAIL] = self._converter.to_payloads([result])
        self._commands.append(
            command_pb2.Command(
                record_marker=command_pb2.RecordMarkerCommandAttributes(marker_name=UPDATE_MARKER_NAME, details=details)
            )
        )


def _first(payloads: common_pb2.Payloads, count: int) -> common_pb2.Payloads:
    return common_pb2.Payloads(payloads=payloads.payloads[:count])
