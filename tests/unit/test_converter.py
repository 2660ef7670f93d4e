"""The default data converter: values to JSON payloads and back, rebuilt from type hints."""

from __future__ import annotations

import dataclasses
import enum
import json
import subprocess
import sys
import uuid
from datetime import UTC, date, datetime
from typing import Any, Optional, Union

import pydantic
import pytest

from flowforge.converter import DataConverter, default_converter


class Tier(enum.Enum):
    GOLD = "gold"
    STANDARD = "standard"


@dataclasses.dataclass
class Address:
    city: str
    since: date


@dataclasses.dataclass
class Customer:
    id: uuid.UUID
    tier: Tier
    addresses: list[Address]
    by_kind: dict[str, Address]
    created_at: datetime
    nickname: str | None = None


class Order(pydantic.BaseModel):
    order_id: str
    customer: Customer
    quantities: tuple[int, int]


CUSTOMER = Customer(
    id=uuid.UUID("12345678-1234-5678-1234-567812345678"),
    tier=Tier.GOLD,
    addresses=[Address("Paris", date(2020, 1, 2))],
    by_kind={"billing": Address("Lyon", date(2021, 3, 4))},
    created_at=datetime(2024, 5, 1, 9, 30, tzinfo=UTC),
)


def round_trip(value: Any, hint: Any) -> Any:
    return default_converter.from_payload(default_converter.to_payload(value), hint)


def test_a_nested_dataclass_comes_back_as_the_dataclass_its_hint_names() -> None:
    assert round_trip(CUSTOMER, Customer) == CUSTOMER


def test_a_pydantic_model_comes_back_as_the_model_with_nested_dataclasses() -> None:
    order = Order(order_id="o-1", customer=CUSTOMER, quantities=(2, 3))
    back = round_trip(order, Order)
    assert isinstance(back, Order) and back == order
    assert isinstance(back.customer, Customer) and back.customer.tier is Tier.GOLD


@pytest.mark.parametrize(
    ("value", "hint"),
    [
        ([CUSTOMER, CUSTOMER], list[Customer]),
        ({"a": CUSTOMER}, dict[str, Customer]),
        (CUSTOMER, Optional[Customer]),
        (None, Optional[Customer]),
        (CUSTOMER, Union[int, Customer]),
        ({"x", "y"}, set[str]),
        ((1, "two"), tuple[int, str]),
        (Tier.STANDARD, Tier),
    ],
    ids=["list", "dict", "optional", "optional-none", "union", "set", "tuple", "enum"],
)
def test_generic_hints_rebuild_their_items(value: Any, hint: Any) -> None:
    assert round_trip(value, hint) == value


def test_without_a_hint_values_come_back_as_plain_json() -> None:
    assert round_trip(Address("Paris", date(2020, 1, 2)), None) == {"city": "Paris", "since": "2020-01-02"}


def test_bytes_and_none_keep_their_own_encodings() -> None:
    assert default_converter.to_payload(b"\x00\x01").metadata["encoding"] == b"binary/plain"
    assert round_trip(b"\x00\x01", bytes) == b"\x00\x01"
    assert default_converter.to_payload(None).metadata["encoding"] == b"binary/null"


def test_a_value_json_cannot_hold_is_refused_naming_its_type() -> None:
    with pytest.raises(TypeError, match="complex"):
        default_converter.to_payload(1j)


def test_a_converter_without_a_codec_has_none_and_cannot_encode_failures() -> None:
    assert DataConverter().payload_codec is None
    with pytest.raises(ValueError, match="needs a payload_codec"):
        DataConverter(encode_failure_attributes=True)


def test_the_converter_works_without_pydantic_and_never_imports_it() -> None:
    program = (
        "import sys; sys.modules['pydantic'] = None\n"  # importing pydantic now fails
        "import dataclasses\n"
        "from flowforge.converter import default_converter as c\n"
        "@dataclasses.dataclass\nclass A:\n    x: int\n"
        "assert c.from_payload(c.to_payload(A(1)), A) == A(1)\n"
    )
    subprocess.run([sys.executable, "-c", program], check=True)


# json/plain data as other encoders may write it: json.loads guesses UTF-16/32 and BOMs;
# the converter's quick path for plain UTF-8 must decode (or refuse) every one alike.
JSON_DATA = [
    b'{"a":1}',
    b"7",
    b"12",
    b" [1, 2] \n",
    '{"é": "ü"}'.encode(),
    '"x"'.encode("utf-8-sig"),
    '{"a": 1}'.encode("utf-16"),
    '"x"'.encode("utf-16-le"),
    '"x"'.encode("utf-16-be"),
    '"x"'.encode("utf-32"),
    '"x"'.encode("utf-32-le"),
    b"",
    b"\x00",
    b"a\x00",
    b"1\x00\x00\x00",
    b'{"a":',
    b"tru",
    b"\xff\xfe",
    b'"\xed\xa0\x80"',  # a lone surrogate, which json.loads lets through
]


@pytest.mark.parametrize("data", JSON_DATA)
def test_json_payload_data_decodes_or_fails_as_json_loads_does(data: bytes) -> None:
    payload = default_converter.to_payload(0)
    payload.data = data

    def outcome(decode: Any) -> tuple[str, Any]:
        try:
            return "value", decode()
        except Exception as error:
            return type(error).__name__, str(error)

    assert outcome(lambda: default_converter.from_payload(payload)) == outcome(lambda: json.loads(data))
