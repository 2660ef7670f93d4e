"""A recorded history whose payloads are payload storage references (recorded by
``python -m tests.replay.record payload_storage``, blobs beside it) replays when the
Replayer has the storage, and says what to configure when it has not."""

from __future__ import annotations

from flowforge.client import WorkflowHistory
from flowforge.converter import DataConverter
from flowforge.storage import FileSystemPayloadStorage
from flowforge.testing import Replayer
from tests.replay.record import PAYLOAD_STORAGE
from testsupport.large_payloads import RoundTrip

HISTORY = WorkflowHistory.from_json((PAYLOAD_STORAGE / "round-trip.json").read_text())


def test_the_history_holds_references_only() -> None:
    started = HISTORY.events[0].attributes["input"]["payloads"][0]
    assert started["metadata"]["encoding"] == "YmluYXJ5L3N0b3JhZ2UtcmVm"  # base64 of binary/storage-ref


async def test_the_replayer_resolves_references_from_the_storage() -> None:
    storage = FileSystemPayloadStorage(PAYLOAD_STORAGE / "blobs")
    replayer = Replayer(workflows=[RoundTrip], data_converter=DataConverter(payload_storage=storage))
    await replayer.replay_workflow(HISTORY)


async def test_without_the_storage_the_replay_names_payload_storage() -> None:
    result = await Replayer(workflows=[RoundTrip]).replay_workflow(HISTORY, raise_on_failure=False)
    assert result.replay_failure is not None
    assert "payload storage" in str(result.replay_failure)
