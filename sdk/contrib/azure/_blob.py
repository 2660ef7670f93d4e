"""Payload storage in Azure Blob Storage (async ``azure-storage-blob``)."""

from __future__ import annotations

import base64

from azure.core.exceptions import HttpResponseError, ResourceNotFoundError, ServiceRequestError, ServiceResponseError
from azure.storage.blob import BlobBlock
from azure.storage.blob.aio import ContainerClient

from flowforge.storage import PayloadStorage

__all__ = ["AzureBlobPayloadStorage"]

_MiB = 1024 * 1024
# Statuses after which the same request can succeed a moment later.
_TRANSIENT_STATUSES = frozenset({408, 429, 500, 502, 503, 504})


class AzureBlobPayloadStorage(PayloadStorage):
    """Keeps payloads as block blobs in one container.

    A blob is uploaded as staged blocks of ``block_size`` bytes and becomes
    visible only when its block list is committed, so a writer that dies
    mid-upload leaves no partial blob (Azure discards uncommitted blocks after a
    week). Blobs are immutable: expire them with a lifecycle management rule
    on ``prefix`` (see docs/payloads.md).

    Args:
        container_client: An ``azure.storage.blob.aio.ContainerClient`` of an
            existing container, with credentials to read, write and check blobs.
            The caller owns it (and closes it).
        prefix: Put before each blob's name (its SHA-256), e.g. to share a
            container or to scope a lifecycle rule.
        block_size: The size of each staged block.
    """

    def __init__(
        self, container_client: ContainerClient, *, prefix: str = "flowforge/payloads/", block_size: int = 4 * _MiB
    ) -> None:
        if block_size <= 0:
            raise ValueError(f"block_size must be positive, not {block_size}")
        self._container = container_client
        self._prefix = prefix
        self._block_size = block_size

    def blob_name(self, key: str) -> str:
        """The name of the blob a payload is (or would be) stored under."""
        return self._prefix + key

    async def put(self, key: str, data: bytes) -> None:
        blob = self._container.get_blob_client(self.blob_name(key))
        if await blob.exists():
            return
        view = memoryview(data)
        blocks = []
        for index, start in enumerate(range(0, max(len(data), 1), self._block_size)):
            block_id = base64.b64encode(f"{index:08d}".encode()).decode()
            await blob.stage_block(block_id, bytes(view[start : start + self._block_size]))
            blocks.append(BlobBlock(block_id=block_id))
        await blob.commit_block_list(blocks)

    async def get(self, key: str) -> bytes | None:
        blob = self._container.get_blob_client(self.blob_name(key))
        try:
            downloader = await blob.download_blob()
            return await downloader.readall()
        except ResourceNotFoundError:
            return None

    def is_transient(self, error: BaseException) -> bool:
        if isinstance(error, (ServiceRequestError, ServiceResponseError)):
            return True
        if isinstance(error, HttpResponseError):
            return error.status_code in _TRANSIENT_STATUSES
        return super().is_transient(error)
