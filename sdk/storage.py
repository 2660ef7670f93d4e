"""Where large payloads live: the payload storage driver interface and a directory driver.

With ``DataConverter(payload_storage=...)`` the client and its workers put every
payload larger than ``payload_storage_threshold`` (after the codec) into the
storage under its SHA-256 and send a small reference instead, so the server and
the history stay small (claim-check). A driver only moves bytes by key;
hashing, references, verification and retries are done by the SDK
(``flowforge._claim_check``), so a new driver (S3, GCS, ...) is three methods::

    class MyStorage(PayloadStorage):
        async def put(self, key: str, data: bytes) -> None: ...
        async def get(self, key: str) -> bytes | None: ...
        def is_transient(self, error: BaseException) -> bool: ...

Blobs are immutable and shared between executions (identical payloads are stored
once), so nothing deletes them here: expiry is the storage's lifecycle rule
(see docs/payloads.md).
"""

from __future__ import annotations

import abc
import asyncio
import errno
import os
import uuid
from pathlib import Path

__all__ = [
    "FileSystemPayloadStorage",
    "PayloadStorage",
    "PayloadStorageError",
]

_CHUNK_BYTES = 1024 * 1024
# errno values after which the same write can succeed a moment later.
_TRANSIENT_ERRNOS = frozenset({errno.EAGAIN, errno.EINTR, errno.EBUSY, errno.ETIMEDOUT, errno.EIO})


class PayloadStorageError(Exception):
    """A stored payload could not be written, found or verified.

    The message names the reference (``sha256:<hex>``) and never quotes the data,
    so a worker reports it as the task's failure (type ``PayloadStorageError``).

    Attributes:
        reference: The reference that failed, e.g. ``"sha256:9f86d0..."``.
    """

    def __init__(self, message: str, reference: str) -> None:
        super().__init__(message)
        self.reference = reference


class PayloadStorage(abc.ABC):
    """A driver that stores blobs by key (a key is a payload's SHA-256 in hex).

    Implementations must make :meth:`put` atomic (a reader sees the whole blob
    or none of it) and idempotent (putting a key that exists is a no-op), and
    must be safe to call from several tasks at once.
    """

    @abc.abstractmethod
    async def put(self, key: str, data: bytes) -> None:
        """Stores ``data`` under ``key`` unless the key already exists."""

    @abc.abstractmethod
    async def get(self, key: str) -> bytes | None:
        """The blob stored under ``key``, or ``None`` when there is none."""

    def is_transient(self, error: BaseException) -> bool:
        """Whether a failed :meth:`put` or :meth:`get` is worth retrying."""
        return isinstance(error, (ConnectionError, TimeoutError))


class FileSystemPayloadStorage(PayloadStorage):
    """Stores blobs as files in a directory (local disk or a shared mount).

    A blob is written to a temporary file beside its final name, in chunks,
    flushed to disk, and renamed into place, so a crash mid-write (even
    ``kill -9``) never leaves a partial blob under a real name; leftover
    ``*.tmp`` files of a crashed writer are harmless and can be deleted.

    Args:
        path: The directory; created if missing. Blobs go to
            ``path/<first two hex digits>/<sha256>``.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self._root = Path(path)

    @property
    def path(self) -> Path:
        """The directory the blobs are in."""
        return self._root

    def blob_path(self, key: str) -> Path:
        """The file a blob is (or would be) stored in."""
        if len(key) < 3 or not all(character in "0123456789abcdef" for character in key):
            raise ValueError(f"a payload storage key is a lowercase hex digest, not {key!r}")
        return self._root / key[:2] / key

    async def put(self, key: str, data: bytes) -> None:
        await asyncio.to_thread(self._put, self.blob_path(key), data)

    async def get(self, key: str) -> bytes | None:
        return await asyncio.to_thread(self._get, self.blob_path(key))

    def is_transient(self, error: BaseException) -> bool:
        return super().is_transient(error) or (isinstance(error, OSError) and error.errno in _TRANSIENT_ERRNOS)

    def _put(self, path: Path, data: bytes) -> None:
        if path.exists():
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f"{path.name}.{uuid.uuid4().hex}.tmp")
        try:
            with open(temporary, "wb") as file:
                self._write_chunks(file.fileno(), memoryview(data))
                os.fsync(file.fileno())
            os.replace(temporary, path)
        finally:
            temporary.unlink(missing_ok=True)

    def _write_chunks(self, fd: int, data: memoryview) -> None:
        """Writes ``data`` a chunk at a time (no second copy of a large blob)."""
        for start in range(0, len(data), _CHUNK_BYTES):
            chunk = data[start : start + _CHUNK_BYTES]
            while chunk:
                chunk = chunk[os.write(fd, chunk) :]

    @staticmethod
    def _get(path: Path) -> bytes | None:
        try:
            return path.read_bytes()
        except FileNotFoundError:
            return None
