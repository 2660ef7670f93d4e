"""Versioning of a workflow run: what ``workflow.patched()`` answers, from the markers history holds."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, cast

from flowforge._workflow_commands import (
    DEPRECATED_DETAIL,
    PATCH_ID_DETAIL,
    PATCH_MARKER_NAME,
    CommandBuffer,
    attributes_of,
    command_signature,
    marker_fields,
    recorded_marker_details,
)
from flowforge.api import schema
from flowforge.api.schema import EventType
from flowforge.api.v1 import command_pb2, common_pb2
from flowforge.converter import default_converter

__all__ = ["Patches"]


class Patches:
    """The patch markers of a run's history, and what ``patched()`` answered per patch id.

    Args:
        commands: Where RecordMarker commands go.
    """

    def __init__(self, commands: CommandBuffer) -> None:
        self._commands = commands
        # The WorkflowTaskCompleted event id of each patch marker in the history
        # given to activate() (so replay knows where each was recorded).
        self._markers: dict[str, int] = {}
        self._answers: dict[str, bool] = {}

    def note_markers(self, events: Iterable[common_pb2.HistoryEvent]) -> None:
        """Remembers where each patch marker among ``events`` was recorded."""
        for event in events:
            if event.event_type != EventType.MARKER_RECORDED:
                continue
            attributes = cast(schema.MarkerRecordedAttributes, attributes_of(event))
            if attributes["marker_name"] != PATCH_MARKER_NAME:
                continue
            patch_id = marker_fields(recorded_marker_details(attributes))["patch_id"]
            self._markers.setdefault(patch_id, attributes.get("workflow_task_completed_event_id", 0))

    def is_unclaimed_deprecated(
        self,
        event: common_pb2.HistoryEvent,
        attributes: Mapping[str, Any],
        event_fields: Mapping[str, str],
        next_command: command_pb2.Command | None,
    ) -> bool:
        """A deprecated patch marker the code no longer asks for: replay skips it.

        That is what lets ``deprecate_patch(id)`` be deleted once the executions
        that ran the ``patched(id)`` version are gone.

        Args:
            event: A recorded command event.
            attributes: Its decoded attributes.
            event_fields: The fields replay compares (see ``command_event_fields``).
            next_command: The command replay would match with the event, if any.
        """
        if event.event_type != EventType.MARKER_RECORDED:
            return False
        attributes = cast(schema.MarkerRecordedAttributes, attributes)
        if attributes["marker_name"] != PATCH_MARKER_NAME:
            return False
        deprecated = recorded_marker_details(attributes).get(DEPRECATED_DETAIL)
        if deprecated is None or not default_converter.from_payloads(deprecated)[0]:
            return False
        return not (
            next_command is not None
            and command_signature(next_command)[1:] == (EventType.MARKER_RECORDED, event_fields)
        )

    def patched(self, patch_id: str, *, deprecated: bool, replaying: bool, task_completed_event_id: int) -> bool:
        """Whether the code takes the patched branch; records the marker when it does.

        Args:
            patch_id: The patch.
            deprecated: Whether the code called ``deprecate_patch``.
            replaying: Whether the running workflow task is a replay.
            task_completed_event_id: The WorkflowTaskCompleted event id of the running task.
        """
        answered = self._answers.get(patch_id)
        if answered is not None:
            return answered
        recorded_at = self._markers.get(patch_id)
        use_patch = not replaying or (recorded_at is not None and recorded_at <= task_completed_event_id)
        if use_patch:
            details = {
                PATCH_ID_DETAIL: default_converter.to_payloads([patch_id]),
                DEPRECATED_DETAIL: default_converter.to_payloads([deprecated]),
            }
            self._commands.append(
                command_pb2.Command(
                    record_marker=command_pb2.RecordMarkerCommandAttributes(
                        marker_name=PATCH_MARKER_NAME, details=details
                    )
                )
            )
        self._answers[patch_id] = use_patch
        return use_patch
