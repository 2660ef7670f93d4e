"""The claim-check codec and the file system driver, without a server."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from flowforge._claim_check import REFERENCE_ENCODING, ClaimCheckCodec, reference_name, wire_codec
from flowforge.api.v1 import common_pb2
from flowforge.converter import DataConverter
from flowforge.storage import FileSystemPayloadStorage, PayloadStorage, PayloadStorageError

THRESHOLD = 1024


def payload(size: int, fill: bytes = b"x") -> common_pb2.Payload:
    return common_pb2.Payload(metadata={"encoding": b"binary/plain"}, data=fill * size)


class FlakyStorage(PayloadStorage):
    """Fails the first ``failures`` calls with ``error``, then stores in memory."""

    def __init__(self, failures: int, error: Exception) -> None:
        self.blobs: dict[str, bytes] = {}
        self.calls = 0
        self._failures = failures
        self._error = error

    async def put(self, key: str, data: bytes) -> None:
        self._maybe_fail()
        self.blobs.setdefault(key, data)

    async def get(self, key: str) -> bytes | None:
        self._maybe_fail()
        return self.blobs.get(key)

    def _maybe_fail(self) -> None:
        self.calls += 1
        if self.calls <= self._failures:
            raise self._error


async def test_small_payloads_stay_inline_and_large_ones_become_references(tmp_path: Path) -> None:
    storage = FileSystemPayloadStorage(tmp_path)
    codec = ClaimCheckCodec(storage, THRESHOLD)
    small, large = payload(10), payload(5000)

    encoded = await codec.encode([small, large, large])

    assert encoded[0] == small
    assert encoded[1] == encoded[2] and encoded[1].metadata["encoding"] == REFERENCE_ENCODING
    reference = json.loads(encoded[1].data)
    assert reference["size"] == len(large.SerializeToString(deterministic=True))
    assert reference_name(encoded[1]) == f"sha256:{reference['sha256']}"
    stored = storage.blob_path(reference["sha256"])
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == [stored]  # the same payload stored once
    assert hashlib.sha256(stored.read_bytes()).hexdigest() == reference["sha256"]
    assert await codec.decode(encoded) == [small, large, large]


async def test_transient_errors_are_retried_and_others_name_the_reference() -> None:
    flaky = FlakyStorage(failures=2, error=ConnectionError("reset by peer"))
    codec = ClaimCheckCodec(flaky, THRESHOLD)
    (reference,) = await codec.encode([payload(5000)])
    assert flaky.calls == 3 and len(flaky.blobs) == 1
    assert await codec.decode([reference]) == [payload(5000)]

    broken = FlakyStorage(failures=1, error=PermissionError("denied"))
    with pytest.raises(PayloadStorageError) as raised:
        await ClaimCheckCodec(broken, THRESHOLD).encode([payload(5000)])
    assert broken.calls == 1  # not transient: not retried
    assert raised.value.reference.startswith("sha256:") and raised.value.reference in str(raised.value)
    assert "PermissionError" in str(raised.value)


async def test_a_missing_or_corrupted_blob_is_an_error_naming_the_reference(tmp_path: Path) -> None:
    storage = FileSystemPayloadStorage(tmp_path)
    codec = ClaimCheckCodec(storage, THRESHOLD)
    (reference,) = await codec.encode([payload(5000)])
    path = storage.blob_path(json.loads(reference.data)["sha256"])

    path.write_bytes(b"tampered")
    with pytest.raises(PayloadStorageError, match="corrupted") as corrupted:
        await codec.decode([reference])
    assert corrupted.value.reference == reference_name(reference)

    path.unlink()
    with pytest.raises(PayloadStorageError, match="not in payload storage") as missing:
        await codec.decode([reference])
    assert missing.value.reference == reference_name(reference)

    forged = common_pb2.Payload(metadata={"encoding": REFERENCE_ENCODING}, data=b'{"sha256": "../../etc/passwd"}')
    with pytest.raises(PayloadStorageError, match="invalid digest"):
        await codec.decode([forged])


def test_the_wire_codec_is_the_codec_alone_without_storage(tmp_path: Path) -> None:
    assert wire_codec(DataConverter()) is None
    assert isinstance(wire_codec(DataConverter(payload_storage=FileSystemPayloadStorage(tmp_path))), ClaimCheckCodec)
    with pytest.raises(ValueError, match="payload_storage_threshold"):
        DataConverter(payload_storage_threshold=0)
