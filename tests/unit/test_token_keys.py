"""Task token keys rotate: a new key signs once active, the old one is accepted until its grace ends."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json

import pytest

from flowforge.api.schema import TaskKind
from flowforge.server.errors import InvalidArgument
from flowforge.server.tokens import TaskToken, TokenKey, TokenSigner, token_namespace

TOKEN = TaskToken("ns", 7, 3, "ACTIVITY", "run-1")
OLD, NEW = TokenKey("0", b"o" * 32, 0), TokenKey("1", b"n" * 32, 1_000, previous_accepted_until_us=50_000)


def test_a_new_key_signs_only_once_active_and_the_old_one_is_accepted_until_its_grace_ends() -> None:
    now = [500]
    signer = TokenSigner([OLD, NEW], now_us=lambda: now[0], activation_delay_us=10_000)
    before = signer.sign(TOKEN)
    assert signer.signing_key_id == "0" and before.startswith(b"ff2.0.")
    now[0] = 11_000  # NEW's activation is over
    after = signer.sign(TOKEN)
    assert signer.signing_key_id == "1" and after.startswith(b"ff2.1.")
    assert signer.verify(before, "ACTIVITY") == TOKEN == signer.verify(after, None)
    now[0] = 50_000  # the old key's grace is over
    with pytest.raises(InvalidArgument, match="key '0', which this server no longer accepts"):
        signer.verify(before, "ACTIVITY")
    assert signer.verify(after, "ACTIVITY") == TOKEN


def test_forged_edited_and_unknown_key_tokens_are_refused() -> None:
    signer = TokenSigner([OLD], now_us=lambda: 0)
    raw = signer.sign(TOKEN)
    prefix, kid, body, mac = raw.split(b".")
    edited_body = base64.urlsafe_b64encode(json.dumps(["other", 7, 4, "ACTIVITY", "run-1"]).encode()).rstrip(b"=")
    for bad in (b".".join([prefix, kid, edited_body, mac]), b".".join([prefix, b"9", body, mac]), b"ff2.0", raw + b"x"):
        with pytest.raises(InvalidArgument):
            signer.verify(bad, None)
    assert token_namespace(raw) == "ns"


def test_tokens_of_the_first_format_verify_with_key_0() -> None:
    body = base64.urlsafe_b64encode(json.dumps(["ns", 7, 3, "ACTIVITY", "run-1"]).encode()).rstrip(b"=")
    mac = base64.urlsafe_b64encode(hmac.new(OLD.secret, body, hashlib.sha256).digest()).rstrip(b"=")
    legacy = b"ff1." + body + b"." + mac
    signer = TokenSigner([OLD, NEW], now_us=lambda: 0)
    assert signer.verify(legacy, "ACTIVITY") == TOKEN and token_namespace(legacy) == "ns"


def test_a_token_verifies_alike_on_the_replica_that_signed_it_and_on_another() -> None:
    """The signer recognizes its own recent tokens without recomputing the MAC; what
    it answers (the token, a refused kind, a key rotated out) is what another replica
    decoding the bytes answers."""
    now = [500]
    signer = TokenSigner([OLD, NEW], now_us=lambda: now[0], activation_delay_us=10_000)
    other = TokenSigner([OLD, NEW], now_us=lambda: now[0], activation_delay_us=10_000)
    raw = signer.sign(TaskToken("ns", 7, 3, TaskKind.ACTIVITY, "run-1"))
    assert signer.verify(raw, "ACTIVITY") == other.verify(raw, "ACTIVITY") == TOKEN
    assert type(signer.verify(raw, None).kind) is type(other.verify(raw, None).kind) is str
    for verifier in (signer, other):
        with pytest.raises(InvalidArgument, match="needs a workflow task token"):
            verifier.verify(raw, "WORKFLOW")
    now[0] = 50_000  # the old key's grace is over
    for verifier in (signer, other):
        with pytest.raises(InvalidArgument, match="no longer accepts"):
            verifier.verify(raw, "ACTIVITY")
