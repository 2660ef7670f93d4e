"""Claim-check: large payloads go to payload storage and travel as references.

:class:`ClaimCheckCodec` wraps the converter's codec (if any) so the client's RPC
layer applies both in one walk: on the way out the codec encodes first, then
every payload still larger than the threshold is stored under the SHA-256 of
its serialized form and replaced by a reference payload; on the way back
references are fetched, verified against their digest and decoded by the codec.
Stored blobs are therefore exactly what the codec made (encrypted when it
encrypts), and identical payloads are stored once.

A reference is a payload with the encoding ``binary/storage-ref`` whose data is
``{"sha256": "<hex>", "size": <bytes>}``; it is what the server, the history and
``flowforge workflow show`` see.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

from flowforge.api.v1 import common_pb2
from flowforge.converter import DataConverter, PayloadCodec
from flowforge.storage import PayloadStorage, PayloadStorageError

__all__ = ["REFERENCE_ENCODING", "ClaimCheckCodec", "is_reference", "reference_name", "wire_codec"]

logger = logging.getLogger(__name__)

REFERENCE_ENCODING = b"binary/storage-ref"
"""The encoding of a payload that stands for one in payload storage (the converter
names it too, to tell a process without storage what to configure)."""

_ATTEMPTS = 5
_FIRST_RETRY_DELAY_S = 0.2
_MAX_RETRY_DELAY_S = 5.0
_HASH_IN_THREAD_BYTES = 1024 * 1024
_T = TypeVar("_T")


def wire_codec(converter: DataConverter) -> PayloadCodec | None:
    """What the RPC layer applies to every payload for ``converter``: its codec,
    wrapped in a :class:`ClaimCheckCodec` when payload storage is configured."""
    storage = converter.payload_storage
    if storage is None:
        return converter.payload_codec
    return ClaimCheckCodec(storage, converter.payload_storage_threshold, converter.payload_codec)


def is_reference(payload: common_pb2.Payload) -> bool:
    """Whether ``payload`` is a reference into payload storage."""
    return payload.metadata.get("encoding") == REFERENCE_ENCODING


def reference_name(payload: common_pb2.Payload) -> str:
    """``sha256:<hex>``, the name of the blob a reference payload stands for."""
    return f"sha256:{_reference_digest(payload)}"


def _reference_digest(payload: common_pb2.Payload) -> str:
    try:
        digest = json.loads(payload.data)["sha256"]
    except (ValueError, KeyError, TypeError):
        raise PayloadStorageError("a payload storage reference is malformed (no sha256 in its data)", "") from None
    if not isinstance(digest, str) or len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
        raise PayloadStorageError(f"a payload storage reference names an invalid digest {digest!r}", str(digest))
    return digest


async def _sha256(blob: bytes) -> str:
    """The hex digest; hashed in a thread when large (hashlib releases the GIL), so the
    event loop keeps serving while megabytes are hashed."""
    if len(blob) < _HASH_IN_THREAD_BYTES:
        return hashlib.sha256(blob).hexdigest()
    return await asyncio.to_thread(lambda: hashlib.sha256(blob).hexdigest())


class ClaimCheckCodec(PayloadCodec):
    """Applies an inner codec, then moves payloads over ``threshold`` bytes into storage.

    Args:
        storage: Where the blobs go.
        threshold: Payloads whose serialized size (after ``codec``) is above
            this many bytes are stored; smaller ones travel inline.
        codec: The converter's own codec, applied before storing and after
            fetching; ``None`` for none.
    """

    def __init__(self, storage: PayloadStorage, threshold: int, codec: PayloadCodec | None = None) -> None:
        self._storage = storage
        self._threshold = threshold
        self._codec = codec

    async def encode(self, payloads: Sequence[common_pb2.Payload]) -> list[common_pb2.Payload]:
        encoded = list(payloads) if self._codec is None else await self._codec.encode(payloads)
        return [await self._offload(payload) for payload in encoded]

    async def decode(self, payloads: Sequence[common_pb2.Payload]) -> list[common_pb2.Payload]:
        resolved = [await self._resolve(payload) if is_reference(payload) else payload for payload in payloads]
        return resolved if self._codec is None else await self._codec.decode(resolved)

    async def _offload(self, payload: common_pb2.Payload) -> common_pb2.Payload:
        if is_reference(payload) or payload.ByteSize() <= self._threshold:
            return payload
        blob = payload.SerializeToString(deterministic=True)
        digest = await _sha256(blob)
        await self._retried(lambda: self._storage.put(digest, blob), "storing", f"sha256:{digest}")
        return common_pb2.Payload(
            metadata={"encoding": REFERENCE_ENCODING},
            data=json.dumps({"sha256": digest, "size": len(blob)}, separators=(",", ":")).encode(),
        )

    async def _resolve(self, reference: common_pb2.Payload) -> common_pb2.Payload:
        digest = _reference_digest(reference)
        name = f"sha256:{digest}"
        blob = await self._retried(lambda: self._storage.get(digest), "fetching", name)
        if blob is None:
            raise PayloadStorageError(
                f"payload {name} is not in payload storage (deleted, expired by a lifecycle rule, "
                "or this process uses a different storage than the one that wrote it)",
                name,
            )
        actual = await _sha256(blob)
        if actual != digest:
            raise PayloadStorageError(
                f"payload {name} is corrupted in payload storage: the blob's SHA-256 is {actual}", name
            )
        payload = common_pb2.Payload()
        payload.ParseFromString(blob)
        return payload

    async def _retried(self, operation: Callable[[], Awaitable[_T]], verb: str, reference: str) -> _T:
        """Runs a storage operation on ``reference``, retrying transient errors with backoff."""
        delay = _FIRST_RETRY_DELAY_S
        for attempt in range(1, _ATTEMPTS + 1):
            try:
                return await operation()
            except Exception as error:
                if attempt == _ATTEMPTS or not self._storage.is_transient(error):
                    raise PayloadStorageError(
                        f"{verb} payload {reference} failed after {attempt} attempt(s): {type(error).__name__}: {error}",
                        reference,
                    ) from error
                logger.warning(
                    "%s payload %s failed (%s); retrying in %.1fs", verb, reference, type(error).__name__, delay
                )
            await asyncio.sleep(delay)
            delay = min(delay * 2, _MAX_RETRY_DELAY_S)
        raise AssertionError("unreachable")
