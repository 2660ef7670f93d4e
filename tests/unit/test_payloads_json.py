"""Payloads in history attributes: ``payloads_from_json`` decodes the shape
``payloads_json`` writes directly and agrees with protobuf's ``ParseDict`` on every
input, decoding or refusing alike (its direct path skips ``ParseDict``, which is most of
a workflow task's replay under the determinism guard)."""

from __future__ import annotations

from typing import Any
from unittest import mock

import pytest
from google.protobuf import json_format
from hypothesis import given
from hypothesis import strategies as st

from flowforge.api import schema
from flowforge.api.v1 import common_pb2
from flowforge.converter import default_converter


def _parse_dict(value: Any) -> common_pb2.Payloads:
    return json_format.ParseDict(value or {}, common_pb2.Payloads(), ignore_unknown_fields=True)


WRITTEN = [
    schema.payloads_json(default_converter.to_payloads([{"a": 1, "text": "é" * 40}, None, [1, 2], b"\xfb\xff"])),
    schema.payloads_json(common_pb2.Payloads(payloads=[common_pb2.Payload(data=b"\xfb\xef\xff", metadata={})])),
    schema.payloads_json(common_pb2.Payloads()),
]
OTHER_SHAPES: list[Any] = [
    {"payloads": [{"data": "-_-_"}]},  # the URL-safe alphabet, as ParseDict accepts it
    {"payloads": [{"data": "YWJj"}, {"metadata": {"encoding": "anNvbg"}}]},  # padding left out
    {"payloads": [{"data": "YWJj", "extra": 1}]},  # an unknown field: ParseDict ignores it
    {"payloads": [], "other": []},
    {"payloads": None},
    {"payloads": ["YWJj"]},  # ParseDict's own leniency, kept
]
REFUSED: list[Any] = [
    {"payloads": [{"data": 5}]},
    {"payloads": [{"metadata": {"encoding": None}}]},
    {"payloads": [{"metadata": []}]},
    {"payloads": {"data": "YWJj"}},
]


@pytest.mark.parametrize("value", WRITTEN + OTHER_SHAPES)
def test_payloads_from_json_decodes_as_parse_dict_does(value: Any) -> None:
    assert schema.payloads_from_json(value) == _parse_dict(value)


def test_what_payloads_json_writes_is_decoded_without_parse_dict() -> None:
    with mock.patch.object(json_format, "ParseDict", side_effect=AssertionError("ParseDict was called")):
        for value in WRITTEN[:2]:
            assert schema.payloads_from_json(value).payloads


@pytest.mark.parametrize("value", REFUSED)
def test_payloads_from_json_refuses_what_parse_dict_refuses(value: Any) -> None:
    with pytest.raises(json_format.ParseError):
        _parse_dict(value)
    with pytest.raises(json_format.ParseError):
        schema.payloads_from_json(value)


ENCODED = [
    common_pb2.Payloads(),
    common_pb2.Payloads(payloads=[common_pb2.Payload()]),  # an empty payload: {}
    common_pb2.Payloads(payloads=[common_pb2.Payload(metadata={"encoding": b""})]),  # an empty value is kept
    common_pb2.Payloads(payloads=[common_pb2.Payload(data=b"\xfb\xef\xff\x00")]),  # '+' and '/' in base64
    common_pb2.Payloads(
        payloads=[
            common_pb2.Payload(metadata={"encoding": b"json/plain", "é-key": b"\x00\x01", "z": b"x" * 100}, data=b"1"),
            common_pb2.Payload(data=b"\xff" * 1000),
            common_pb2.Payload(metadata={"encoding": b"binary/null"}),
        ]
    ),
    default_converter.to_payloads([{"a": 1, "text": "é" * 40}, None, [1, 2], b"\xfb\xff", "x" * 5000]),
]


@pytest.mark.parametrize("payloads", ENCODED)
def test_payloads_json_writes_what_message_to_dict_writes(payloads: common_pb2.Payloads) -> None:
    assert schema.payloads_json(payloads) == json_format.MessageToDict(payloads, preserving_proto_field_name=True)
    # And it reads back to the same message.
    assert schema.payloads_from_json(schema.payloads_json(payloads)) == payloads


@given(
    st.lists(
        st.tuples(st.dictionaries(st.text(max_size=8), st.binary(max_size=12), max_size=3), st.binary(max_size=40)),
        max_size=4,
    )
)
def test_payloads_json_agrees_with_message_to_dict_on_any_payloads(items: list[tuple[dict[str, bytes], bytes]]) -> None:
    payloads = common_pb2.Payloads(payloads=[common_pb2.Payload(metadata=m, data=d) for m, d in items])
    assert schema.payloads_json(payloads) == json_format.MessageToDict(payloads, preserving_proto_field_name=True)
