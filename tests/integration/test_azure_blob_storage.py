"""AzureBlobPayloadStorage against Azurite (installed from npm by the ``azurite`` fixture):
a large value round-trips through a workflow on both stores as staged blocks, and a
missing or corrupted blob is an error naming the reference."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator

import pytest
from azure.core.exceptions import HttpResponseError, ServiceRequestError
from azure.storage.blob.aio import BlobServiceClient, ContainerClient

from flowforge import Client
from flowforge._claim_check import ClaimCheckCodec, reference_name
from flowforge.api.v1 import common_pb2
from flowforge.contrib.azure import AzureBlobPayloadStorage
from flowforge.converter import DataConverter
from flowforge.server import FlowForgeServer
from flowforge.storage import PayloadStorageError
from flowforge.worker import Worker
from testsupport.azurite import AzuriteServer
from testsupport.large_payloads import TASK_QUEUE, RoundTrip, make_value, reverse_bytes

MiB = 1024 * 1024


@pytest.fixture
async def container(azurite: AzuriteServer) -> AsyncIterator[ContainerClient]:
    """A fresh container on Azurite, deleted afterwards."""
    async with BlobServiceClient.from_connection_string(azurite.connection_string) as service:
        client = await service.create_container(f"payloads-{uuid.uuid4().hex[:12]}")
        try:
            yield client
        finally:
            await client.delete_container()
            await client.close()


async def blob_names(container: ContainerClient) -> list[str]:
    return sorted([blob.name async for blob in container.list_blobs()])


async def test_a_large_value_round_trips_through_azure_blob_storage(
    server: FlowForgeServer, container: ContainerClient
) -> None:
    storage = AzureBlobPayloadStorage(container, block_size=1 * MiB)
    value = make_value(5 * MiB)
    converter = DataConverter(payload_storage=storage)
    async with await Client.connect(f"127.0.0.1:{server.port}", data_converter=converter) as client:
        async with Worker(client, task_queue=TASK_QUEUE, workflows=[RoundTrip], activities=[reverse_bytes]):
            handle = await client.start_workflow(RoundTrip.run, value, id="azure-round-trip", task_queue=TASK_QUEUE)
            assert await handle.result() == value

    names = await blob_names(container)
    assert len(names) == 2 and all(name.startswith("flowforge/payloads/") for name in names)
    committed, uncommitted = await container.get_blob_client(names[0]).get_block_list("all")
    assert len(committed) == 6 and not uncommitted  # 5 MiB and a few bytes of envelope in 1 MiB blocks


def _large_payload() -> common_pb2.Payload:
    return common_pb2.Payload(metadata={"encoding": b"binary/plain"}, data=make_value(300 * 1024))


async def test_the_same_payload_is_uploaded_once(container: ContainerClient) -> None:
    codec = ClaimCheckCodec(AzureBlobPayloadStorage(container), 64 * 1024)
    first = await codec.encode([_large_payload()])
    second = await codec.encode([_large_payload()])
    assert first == second
    assert len(await blob_names(container)) == 1
    assert await codec.decode(second) == [_large_payload()]


async def test_a_missing_or_corrupted_blob_names_the_reference(container: ContainerClient) -> None:
    storage = AzureBlobPayloadStorage(container)
    codec = ClaimCheckCodec(storage, 64 * 1024)
    (reference,) = await codec.encode([_large_payload()])
    blob = container.get_blob_client(storage.blob_name(json.loads(reference.data)["sha256"]))

    await blob.upload_blob(b"tampered", overwrite=True)
    with pytest.raises(PayloadStorageError, match="corrupted") as corrupted:
        await codec.decode([reference])
    assert corrupted.value.reference == reference_name(reference)

    await blob.delete_blob()
    with pytest.raises(PayloadStorageError, match="not in payload storage") as missing:
        await codec.decode([reference])
    assert missing.value.reference == reference_name(reference)


def test_network_errors_and_throttling_are_transient_but_refusals_are_not() -> None:
    storage = AzureBlobPayloadStorage(ContainerClient.from_container_url("http://127.0.0.1:9/account/never-called"))
    throttled, forbidden = HttpResponseError("busy"), HttpResponseError("no")
    throttled.status_code, forbidden.status_code = 503, 403
    assert storage.is_transient(ServiceRequestError("connection reset"))
    assert storage.is_transient(throttled)
    assert not storage.is_transient(forbidden)
