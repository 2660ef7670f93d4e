"""A PayloadCodec set on the client is applied by the client and its worker only: the
server stores and forwards sealed payloads, and the store holds no plaintext, end to end
on both stores. Dataclasses and pydantic models round-trip through workflow and activity.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
import zlib
from collections.abc import Iterator, Sequence
from datetime import timedelta
from typing import Any

import pydantic
import pytest

from flowforge import Client, RetryPolicy, activity, workflow
from flowforge.api.v1 import common_pb2
from flowforge.client import HistoryEvent
from flowforge.converter import DataConverter, PayloadCodec
from flowforge.exceptions import ActivityError, ApplicationError, WorkflowFailureError
from flowforge.server import FlowForgeServer
from flowforge.testing import Replayer
from flowforge.worker import Worker
from tests.integration._reliability import DEADLINE_S, events, of_type
from testsupport.waiting import wait_until

TASK_QUEUE = "vault"
SECRET = "SECRET-PLAINTEXT-7f3a9c"
SEALED = b"binary/test-sealed"
_KEY = hashlib.sha256(b"test key").digest()


def _xor(data: bytes) -> bytes:
    return bytes(byte ^ _KEY[index % len(_KEY)] for index, byte in enumerate(data))


class SealingCodec(PayloadCodec):
    """Compresses and scrambles with a key: stands in for encryption (reversible, no plaintext left)."""

    async def encode(self, payloads: Sequence[common_pb2.Payload]) -> list[common_pb2.Payload]:
        return [
            common_pb2.Payload(metadata={"encoding": SEALED}, data=_xor(zlib.compress(p.SerializeToString())))
            for p in payloads
        ]

    async def decode(self, payloads: Sequence[common_pb2.Payload]) -> list[common_pb2.Payload]:
        return [
            common_pb2.Payload.FromString(zlib.decompress(_xor(p.data))) if p.metadata.get("encoding") == SEALED else p
            for p in payloads
        ]


@dataclasses.dataclass
class Secret:
    owner: str
    text: str


class Receipt(pydantic.BaseModel):
    owner: str
    text: str
    attempts: int


@activity.defn
async def store_secret(secret: Secret) -> Receipt:
    attempt = activity.info().attempt
    if attempt == 1:
        raise ApplicationError("the vault is busy", secret.text)  # failure details carry the secret
    return Receipt(owner=secret.owner, text=secret.text, attempts=attempt)


@workflow.defn
class Vault:
    def __init__(self) -> None:
        self._unlock_code: str | None = None

    @workflow.signal
    def unlock(self, code: str) -> None:
        self._unlock_code = code

    @workflow.query
    def unlocked_with(self) -> str | None:
        return self._unlock_code

    @workflow.run
    async def run(self, secret: Secret) -> Receipt:
        assert isinstance(secret, Secret)
        workflow.patched("sealed-markers")  # a marker's payloads are sealed too
        await workflow.wait_condition(lambda: self._unlock_code == secret.text)  # a sealed signal
        assert workflow.memo_value("note") == secret.text  # a sealed memo
        receipt = await workflow.execute_activity(
            store_secret,
            secret,
            start_to_close_timeout=timedelta(seconds=10),
            retry_policy=RetryPolicy(initial_interval=timedelta(milliseconds=50)),
        )
        assert isinstance(receipt, Receipt)
        return receipt


def _payloads_in(value: Any) -> Iterator[dict[str, Any]]:
    """Every payload (protobuf JSON form) inside history attributes."""
    if isinstance(value, dict):
        if isinstance(value.get("payloads"), list) and len(value) == 1:
            yield from value["payloads"]
            return
        if "encoding" in value.get("metadata", {}):  # a single payload: a memo field
            yield value
            return
        for item in value.values():
            yield from _payloads_in(item)
    elif isinstance(value, list):
        for item in value:
            yield from _payloads_in(item)


async def _stored_history(server: FlowForgeServer, run_id: str) -> list[Any]:
    async with server.store.transaction() as tx:
        return await tx.read_events("default", run_id)


async def _run_vault(server: FlowForgeServer, converter: DataConverter, workflow_id: str) -> tuple[Receipt, str]:
    async with await Client.connect(f"127.0.0.1:{server.port}", data_converter=converter) as client:
        async with Worker(client, task_queue=TASK_QUEUE, workflows=[Vault], activities=[store_secret]):
            handle = await client.start_workflow(
                Vault.run,
                Secret("ada", SECRET),
                id=workflow_id,
                task_queue=TASK_QUEUE,
                start_signal=Vault.unlock,
                start_signal_args=[SECRET],
                memo={"note": SECRET},
            )
            receipt = await handle.result()
            assert await handle.query(Vault.unlocked_with) == SECRET  # a sealed query result
    assert handle.run_id is not None
    return receipt, handle.run_id


def _plaintext_found(rows: list[Any]) -> bool:
    for row in rows:
        if SECRET in row.attributes:
            return True
        for payload in _payloads_in(json.loads(row.attributes)):
            if SECRET.encode() in base64.b64decode(payload.get("data", "")):
                return True
    return False


async def test_with_a_codec_the_store_holds_no_plaintext_and_the_client_sees_values(server: FlowForgeServer) -> None:
    receipt, run_id = await _run_vault(server, DataConverter(payload_codec=SealingCodec()), "vault-sealed")

    assert receipt == Receipt(owner="ada", text=SECRET, attempts=2)
    rows = await _stored_history(server, run_id)
    assert {"MarkerRecorded", "WorkflowExecutionSignaled", "WorkflowExecutionCompleted"} <= {r.event_type for r in rows}
    (started,) = [json.loads(r.attributes) for r in rows if r.event_type == "ActivityTaskStarted"]
    assert started["last_failure"]["message"] == "the vault is busy"  # messages stay readable
    assert list(_payloads_in(started["last_failure"]["details"]))  # details are payloads: sealed
    payloads = [p for row in rows for p in _payloads_in(json.loads(row.attributes))]
    assert len(payloads) >= 7  # input, signal, 2 marker details, activity input, failure details, 2 results
    assert {base64.b64decode(p["metadata"]["encoding"]) for p in payloads} == {SEALED}
    assert not _plaintext_found(rows)

    # A client without the codec sees only sealed payloads; a replayer given the codec replays them.
    async with await Client.connect(f"127.0.0.1:{server.port}") as plain_client:
        history = await plain_client.get_workflow_handle("vault-sealed").fetch_history()
        with pytest.raises(ValueError, match="unknown payload encoding"):
            await plain_client.get_workflow_handle("vault-sealed").result()
    await Replayer(workflows=[Vault], data_converter=DataConverter(payload_codec=SealingCodec())).replay_workflow(
        history
    )


async def test_without_a_codec_the_same_run_leaves_plaintext_in_the_store(server: FlowForgeServer) -> None:
    receipt, run_id = await _run_vault(server, DataConverter(), "vault-plain")

    assert receipt == Receipt(owner="ada", text=SECRET, attempts=2)
    assert _plaintext_found(await _stored_history(server, run_id))  # so the check above can fail


class WrongKeyCodec(SealingCodec):
    """A worker deployed without the right key: it cannot decode what it is given."""

    async def decode(self, payloads: Sequence[common_pb2.Payload]) -> list[common_pb2.Payload]:
        raise ValueError("wrong key")


@workflow.defn
class StoreOnce:
    @workflow.run
    async def run(self, secret: Secret) -> Receipt:
        return await workflow.execute_activity(
            store_secret,
            secret,
            start_to_close_timeout=timedelta(seconds=10),
            retry_policy=RetryPolicy(maximum_attempts=1),
        )


UNDECODABLE = "the payload codec could not decode the {} response (ValueError)"


async def test_a_workflow_task_a_worker_cannot_decode_fails_visibly(server: FlowForgeServer) -> None:
    address = f"127.0.0.1:{server.port}"
    sealing = DataConverter(payload_codec=SealingCodec())
    async with (
        await Client.connect(address, data_converter=sealing) as client,
        await Client.connect(address, data_converter=DataConverter(payload_codec=WrongKeyCodec())) as keyless,
    ):
        handle = await client.start_workflow(
            StoreOnce.run, Secret("ada", SECRET), id="undecodable-wft", task_queue=TASK_QUEUE
        )
        async with Worker(keyless, task_queue=TASK_QUEUE, workflows=[StoreOnce]):

            async def failures() -> list[HistoryEvent]:
                return of_type(await events(handle), "WorkflowTaskFailed")

            (failed, *_) = await wait_until(failures, timeout=DEADLINE_S, what="a WorkflowTaskFailed event")
        await handle.terminate(reason="test done")
    assert failed.attributes["failure"]["message"] == UNDECODABLE.format("PollWorkflowTaskQueue")
    assert failed.attributes["failure"]["type"] == "PayloadCodecError"


async def test_an_activity_task_a_worker_cannot_decode_fails_its_attempt(server: FlowForgeServer) -> None:
    address = f"127.0.0.1:{server.port}"
    sealing = DataConverter(payload_codec=SealingCodec())
    async with (
        await Client.connect(address, data_converter=sealing) as client,
        await Client.connect(address, data_converter=DataConverter(payload_codec=WrongKeyCodec())) as keyless,
    ):
        async with (
            Worker(client, task_queue=TASK_QUEUE, workflows=[StoreOnce]),
            Worker(keyless, task_queue=TASK_QUEUE, activities=[store_secret]),
        ):
            handle = await client.start_workflow(
                StoreOnce.run, Secret("ada", SECRET), id="undecodable-activity", task_queue=TASK_QUEUE
            )
            with pytest.raises(WorkflowFailureError) as raised:
                await handle.result()
    activity_error = raised.value.cause
    assert isinstance(activity_error, ActivityError)
    assert isinstance(activity_error.cause, ApplicationError)
    assert activity_error.cause.type == "PayloadCodecError"
    assert activity_error.cause.message == UNDECODABLE.format("PollActivityTaskQueue")


@workflow.defn
class Declines:
    @workflow.run
    async def run(self, card: str) -> None:
        raise ApplicationError(f"card {card} declined", type="Declined")


@workflow.defn
class HasABug:
    @workflow.run
    async def run(self, card: str) -> None:
        raise RuntimeError(f"cannot parse card {card}")


async def test_encoded_failure_attributes_keep_messages_from_the_server_but_not_from_the_client(
    server: FlowForgeServer,
) -> None:
    address = f"127.0.0.1:{server.port}"
    hiding = DataConverter(payload_codec=SealingCodec(), encode_failure_attributes=True)
    async with (
        await Client.connect(address, data_converter=hiding) as client,
        await Client.connect(address) as plain_client,
    ):
        async with Worker(client, task_queue=TASK_QUEUE, workflows=[Declines, HasABug]):
            declined = await client.start_workflow(Declines.run, SECRET, id="declines", task_queue=TASK_QUEUE)
            with pytest.raises(WorkflowFailureError) as raised:
                await declined.result()
            buggy = await client.start_workflow(HasABug.run, SECRET, id="has-a-bug", task_queue=TASK_QUEUE)

            async def failures() -> list[HistoryEvent]:
                return of_type(await events(buggy), "WorkflowTaskFailed")

            await wait_until(failures, timeout=DEADLINE_S, what="a WorkflowTaskFailed event")
            bug_seen_with_codec = (await buggy.describe()).pending_workflow_task
            bug_seen_without = (await plain_client.get_workflow_handle("has-a-bug").describe()).pending_workflow_task
            await buggy.terminate(reason="test done")
        with pytest.raises(WorkflowFailureError) as raised_without_codec:
            await plain_client.get_workflow_handle("declines").result()

    assert isinstance(raised.value.cause, ApplicationError)
    assert (raised.value.cause.message, raised.value.cause.type) == (f"card {SECRET} declined", "Declined")
    assert isinstance(raised_without_codec.value.cause, ApplicationError)
    assert raised_without_codec.value.cause.message == "Encoded failure"
    assert bug_seen_with_codec is not None and bug_seen_without is not None
    assert bug_seen_with_codec.last_failure == f"[WORKFLOW_WORKER_UNHANDLED_FAILURE] cannot parse card {SECRET}"
    assert bug_seen_without.last_failure == "[WORKFLOW_WORKER_UNHANDLED_FAILURE] Encoded failure"
    for handle in (declined, buggy):
        assert handle.run_id is not None
        assert not _plaintext_found(await _stored_history(server, handle.run_id))
