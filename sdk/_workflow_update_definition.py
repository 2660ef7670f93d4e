"""Workflow updates, as a workflow declares them: ``@workflow.update`` and its validator.

An update is a signal that answers: the client sends it and waits for the handler's
result. On the wire it travels as a signal named ``__update`` (input: update id, update
name, arguments), delivered once per update id; the workflow records its acceptance (or
rejection) and completion as ``MarkerRecorded`` events, so an update is durable from the
moment the server accepted the call and replays like everything else.
"""

from __future__ import annotations

import dataclasses
import enum
import inspect
import typing
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["UPDATE_SIGNAL", "WorkflowUpdateStage", "update"]

CallableType = TypeVar("CallableType", bound=Callable[..., Any])

#: The signal an update travels as (its handler is the workflow's update machinery).
UPDATE_SIGNAL = "__update"
_UPDATE_MARKER = "__flowforge_update_definition__"


class WorkflowUpdateStage(enum.IntEnum):
    """How far an update has come (Temporal's ``WorkflowUpdateStage``)."""

    ADMITTED = 1
    """The server recorded the request; the workflow has not seen it yet."""
    ACCEPTED = 2
    """The workflow's validator passed and its handler started."""
    COMPLETED = 3
    """The handler returned or raised (or the validator rejected the update)."""


@dataclasses.dataclass(eq=False)
class _UpdateDefinition:
    name: str
    fn: Callable[..., Any]
    validator: Callable[..., Any] | None = None


@typing.overload
def update(fn: CallableType) -> CallableType: ...


@typing.overload
def update(*, name: str | None = None) -> Callable[[CallableType], CallableType]: ...


def update(fn: CallableType | None = None, *, name: str | None = None) -> Any:
    """Marks a method that handles an update; use as ``@workflow.update`` or ``@workflow.update(name=...)``.

    The handler (``def`` or ``async def``) runs on the workflow's loop like a signal
    handler, and what it returns is the update's result for the caller
    (``handle.execute_update``). A ``FailureError`` it raises fails the update, not the
    workflow; any other exception fails the workflow task (retried). Decorate a method
    with ``@<handler>.validator`` to check the arguments first: if the validator raises,
    the update is rejected and the handler does not run. A validator must not change
    state or await.

    Args:
        fn: The method, when used without parentheses.
        name: The update name; defaults to the method name.
    """

    def decorate(method: CallableType) -> CallableType:
        definition = _UpdateDefinition(name or method.__name__, method)

        def validator(validator_fn: Callable[..., Any]) -> Callable[..., Any]:
            if inspect.iscoroutinefunction(validator_fn):
                raise TypeError(f"update validator {validator_fn.__qualname__} must be a plain def")
            definition.validator = validator_fn
            return validator_fn

        setattr(method, _UPDATE_MARKER, definition)
        setattr(method, "validator", validator)  # noqa: B010 - Temporal's spelling: @handler.validator
        return method

    return decorate(fn) if fn is not None else decorate


def _update_name_and_result_hint(update: Any) -> tuple[str, Any]:
    """The name of an update given as an ``@workflow.update`` method or a name, and its return hint."""
    if isinstance(update, str):
        if not update:
            raise ValueError("the update name must not be empty")
        return update, None
    definition: _UpdateDefinition | None = getattr(update, _UPDATE_MARKER, None)
    if definition is None:
        raise TypeError(f"{update!r} is not an update: pass a @workflow.update method or an update name")
    try:
        hint = typing.get_type_hints(definition.fn).get("return")
    except (NameError, TypeError):
        hint = None
    return definition.name, hint
