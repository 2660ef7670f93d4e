"""Payload storage (claim-check) end to end, on both stores: large values travel as
references through workflow input, activity input and output and result while the
store grows by kilobytes; blobs are deduplicated, sealed by the codec, verified on
the way back, and survive a worker killed mid-upload."""

from __future__ import annotations

import base64
import hashlib
import json
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import asyncpg
import grpc
import pytest

from flowforge import Client, workflow
from flowforge._claim_check import REFERENCE_ENCODING
from flowforge.client import HistoryEvent, WorkflowHistory
from flowforge.converter import DataConverter
from flowforge.exceptions import RPCError
from flowforge.server import FlowForgeServer
from flowforge.storage import FileSystemPayloadStorage
from flowforge.testing import Replayer
from flowforge.worker import Worker
from tests.integration._payload_storage_app import Produce, make_bytes
from tests.integration._processes import _env
from tests.integration._reliability import DEADLINE_S, events, of_type
from tests.integration.test_payload_codec import SECRET, SealingCodec
from testsupport.large_payloads import TASK_QUEUE, RoundTrip, make_value, reverse_bytes
from testsupport.waiting import wait_until

MiB = 1024 * 1024


def blobs_in(directory: Path) -> list[Path]:
    return sorted(path for path in directory.glob("*/*") if not path.name.endswith(".tmp"))


async def store_bytes(store_url: str) -> int:
    """What the store occupies on disk: the SQLite file and its WAL, or PostgreSQL's tables."""
    if "://" not in store_url:
        return sum(
            Path(store_url + suffix).stat().st_size for suffix in ("", "-wal") if Path(store_url + suffix).exists()
        )
    connection = await asyncpg.connect(store_url)
    try:
        return int(
            await connection.fetchval(
                "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c"
                " JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public' AND c.relkind = 'r'"
            )
        )
    finally:
        await connection.close()


def references_in(history: WorkflowHistory) -> list[dict[str, Any]]:
    found = []

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            metadata = value.get("metadata", {})
            if isinstance(metadata, dict) and "encoding" in metadata:
                if base64.b64decode(metadata["encoding"]) == REFERENCE_ENCODING:
                    found.append(json.loads(base64.b64decode(value["data"])))
                return
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    for event in history.events:
        walk(event.attributes)
    return found


@pytest.mark.parametrize(
    "size_mib", [5, pytest.param(100, marks=[pytest.mark.slow, pytest.mark.timeout(600)])], ids=["5MiB", "100MiB"]
)
async def test_a_large_value_round_trips_by_reference_and_the_store_stays_small(
    server: FlowForgeServer, store_url: str, tmp_path: Path, size_mib: int
) -> None:
    storage = FileSystemPayloadStorage(tmp_path / "blobs")
    value = make_value(size_mib * MiB)
    before = await store_bytes(store_url)
    started = time.monotonic()
    converter = DataConverter(payload_storage=storage)
    async with await Client.connect(f"127.0.0.1:{server.port}", data_converter=converter) as client:
        async with Worker(client, task_queue=TASK_QUEUE, workflows=[RoundTrip], activities=[reverse_bytes]):
            # A workflow task that resolves 100 MiB values can outlast the default 10 s
            # task timeout on a loaded 2-core machine (see docs/payloads.md).
            handle = await client.start_workflow(
                RoundTrip.run,
                value,
                id=f"round-trip-{size_mib}",
                task_queue=TASK_QUEUE,
                task_timeout=timedelta(seconds=60),
            )
            assert await handle.result() == value
        history = await handle.fetch_history()  # references resolved for the caller
    elapsed = time.monotonic() - started
    grown = await store_bytes(store_url) - before
    print(f"{size_mib} MiB round trip: {elapsed:.1f}s, store grew by {grown / 1024:.0f} KiB")

    # The server refuses any payload over its limit, so the value itself never crossed gRPC.
    assert server.config.engine.max_payload_bytes < len(value)
    assert grown < 512 * 1024, f"the store grew by {grown} bytes"
    # The input, the activity's input and the result are one blob; the reversed value the other.
    assert len(blobs_in(storage.path)) == 2
    completed = of_type(history.events, "WorkflowExecutionCompleted")[0]
    assert completed.attributes["result"]["payloads"][0]["data"]  # resolved inline for the caller
    async with await Client.connect(f"127.0.0.1:{server.port}") as plain:  # no storage: sees references
        raw = await plain.get_workflow_handle(handle.id).fetch_history()
    references = references_in(raw)
    assert len(references) == 4  # input, activity input, activity output, result
    assert len({reference["sha256"] for reference in references}) == 2
    assert len(raw.to_json()) < 64 * 1024


@workflow.defn
class Mailbox:
    """Holds what a signal brings; a query reads it back."""

    def __init__(self) -> None:
        self._letter: bytes | None = None

    @workflow.signal
    def deliver(self, letter: bytes) -> None:
        self._letter = letter

    @workflow.query
    def letter(self) -> bytes | None:
        return self._letter

    @workflow.run
    async def run(self) -> int:
        await workflow.wait_condition(lambda: self._letter is not None)
        assert self._letter is not None
        return len(self._letter)


async def test_signal_arguments_and_query_results_travel_by_reference(server: FlowForgeServer, tmp_path: Path) -> None:
    storage = FileSystemPayloadStorage(tmp_path / "blobs")
    letter = make_value(1 * MiB)
    converter = DataConverter(payload_storage=storage)
    async with await Client.connect(f"127.0.0.1:{server.port}", data_converter=converter) as client:
        async with Worker(client, task_queue=TASK_QUEUE, workflows=[Mailbox]):
            handle = await client.start_workflow(Mailbox.run, id="mailbox", task_queue=TASK_QUEUE)
            await handle.signal(Mailbox.deliver, letter)
            assert await handle.result() == len(letter)
            assert await handle.query(Mailbox.letter) == letter
    async with await Client.connect(f"127.0.0.1:{server.port}") as plain:
        raw = await plain.get_workflow_handle("mailbox").fetch_history()
    assert len(references_in(raw)) == 1  # the signal's argument; the query result never enters history
    assert len(blobs_in(storage.path)) == 1  # the query result is the same bytes: the same blob


async def test_with_an_encrypting_codec_the_stored_blobs_hold_no_plaintext(
    server: FlowForgeServer, tmp_path: Path
) -> None:
    storage = FileSystemPayloadStorage(tmp_path / "blobs")
    value = SECRET.encode() + make_value(256 * 1024) + SECRET.encode()  # incompressible: stays over the threshold
    converter = DataConverter(payload_codec=SealingCodec(), payload_storage=storage)
    async with await Client.connect(f"127.0.0.1:{server.port}", data_converter=converter) as client:
        async with Worker(client, task_queue=TASK_QUEUE, workflows=[RoundTrip], activities=[reverse_bytes]):
            handle = await client.start_workflow(RoundTrip.run, value, id="sealed-blobs", task_queue=TASK_QUEUE)
            assert await handle.result() == value
    blobs = blobs_in(storage.path)
    assert len(blobs) == 2
    for blob in blobs:
        content = blob.read_bytes()
        assert SECRET.encode() not in content and SECRET.encode()[::-1] not in content


@pytest.mark.parametrize("damage", ["deleted", "corrupted"])
async def test_a_missing_or_corrupted_blob_fails_the_task_naming_the_reference(
    server: FlowForgeServer, tmp_path: Path, damage: str
) -> None:
    storage = FileSystemPayloadStorage(tmp_path / "blobs")
    converter = DataConverter(payload_storage=storage)
    async with await Client.connect(f"127.0.0.1:{server.port}", data_converter=converter) as client:
        handle = await client.start_workflow(
            RoundTrip.run, make_value(200 * 1024), id=f"damaged-{damage}", task_queue=TASK_QUEUE
        )
        (blob,) = blobs_in(storage.path)
        if damage == "deleted":
            blob.unlink()
        else:
            blob.write_bytes(b"not what was stored")
        # The history is read without storage: the client's own would fail on the damaged blob too.
        plain = await Client.connect(f"127.0.0.1:{server.port}")
        async with plain, Worker(client, task_queue=TASK_QUEUE, workflows=[RoundTrip], activities=[reverse_bytes]):

            async def failures() -> list[HistoryEvent]:
                return of_type(await events(plain.get_workflow_handle(handle.id)), "WorkflowTaskFailed")

            (failed, *_) = await wait_until(failures, timeout=DEADLINE_S, what="a WorkflowTaskFailed event")
        await handle.terminate(reason="test done")
    failure = failed.attributes["failure"]
    assert failure["type"] == "PayloadStorageError"
    assert f"sha256:{blob.name}" in failure["message"]
    assert ("not in payload storage" if damage == "deleted" else "corrupted") in failure["message"]


async def test_a_worker_killed_mid_upload_leaves_a_correct_execution_after_the_retry(
    server: FlowForgeServer, tmp_path: Path
) -> None:
    blob_dir, marker = tmp_path / "blobs", tmp_path / "upload-started"
    address = f"127.0.0.1:{server.port}"
    log = open(tmp_path / "worker.log", "wb")
    worker = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.integration._payload_storage_app",
            address,
            TASK_QUEUE,
            str(blob_dir),
            str(marker),
        ],
        env=_env(),
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        converter = DataConverter(payload_storage=FileSystemPayloadStorage(blob_dir))
        async with await Client.connect(address, data_converter=converter) as client:
            handle = await client.start_workflow(Produce.run, 5 * MiB, id="killed-mid-upload", task_queue=TASK_QUEUE)
            await wait_until(marker.exists, timeout=DEADLINE_S, what="the worker to start uploading")
            worker.kill()  # SIGKILL
            worker.wait(timeout=30)
            assert list(blob_dir.glob("*/*.tmp")), "the killed upload left its partial temporary file"
            assert not blobs_in(blob_dir), "no partial blob under a real name"
            async with Worker(client, task_queue=TASK_QUEUE, workflows=[Produce], activities=[make_bytes]):
                assert await handle.result() == make_value(5 * MiB)
        (blob,) = blobs_in(blob_dir)
        assert hashlib.sha256(blob.read_bytes()).hexdigest() == blob.name
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait(timeout=30)
        log.close()


async def test_the_replayer_resolves_references_given_the_storage(server: FlowForgeServer, tmp_path: Path) -> None:
    storage = FileSystemPayloadStorage(tmp_path / "blobs")
    converter = DataConverter(payload_storage=storage)
    async with await Client.connect(f"127.0.0.1:{server.port}", data_converter=converter) as client:
        async with Worker(client, task_queue=TASK_QUEUE, workflows=[RoundTrip], activities=[reverse_bytes]):
            handle = await client.start_workflow(
                RoundTrip.run, make_value(100 * 1024), id="replayed", task_queue=TASK_QUEUE
            )
            await handle.result()
    async with await Client.connect(f"127.0.0.1:{server.port}") as plain:
        raw = await plain.get_workflow_handle(handle.id).fetch_history()
    assert references_in(raw)
    await Replayer(workflows=[RoundTrip], data_converter=converter).replay_workflow(raw)


async def test_without_storage_an_over_limit_payload_is_refused_naming_payload_storage(
    server: FlowForgeServer,
) -> None:
    async with await Client.connect(f"127.0.0.1:{server.port}") as client:
        with pytest.raises(RPCError) as by_server:  # over the server's payload limit
            await client.start_workflow(RoundTrip.run, make_value(3 * MiB), id="too-big", task_queue=TASK_QUEUE)
        with pytest.raises(RPCError) as by_client:  # over the gRPC message limit: refused before sending
            await client.start_workflow(RoundTrip.run, make_value(65 * MiB), id="far-too-big", task_queue=TASK_QUEUE)
    for error in (by_server.value, by_client.value):
        assert error.status == grpc.StatusCode.INVALID_ARGUMENT
        assert "payload storage" in error.message
    assert "payload limit" in by_server.value.message
