"""The SDK's typed search attribute values: a Python value picks its indexed type, and
what cannot be indexed is refused before anything is sent."""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime, timedelta, timezone

import pytest

from flowforge.common import _search_attributes_from_proto, _search_attributes_to_proto


def test_each_python_type_becomes_its_indexed_type_and_comes_back_equal() -> None:
    due = datetime(2024, 5, 1, 14, 0, 0, 123456, tzinfo=timezone(timedelta(hours=2)))
    proto = _search_attributes_to_proto(
        {"Region": "eu", "Amount": 120, "Score": 4.5, "Vip": True, "DueAt": due, "Legacy": ["from-a-list"]}
    )
    kinds = {name: value.WhichOneof("value") for name, value in proto.indexed_fields.items()}
    assert kinds == {
        "Region": "keyword_value",
        "Amount": "int_value",
        "Score": "double_value",
        "Vip": "bool_value",
        "DueAt": "datetime_value",
        "Legacy": "keyword_value",
    }
    assert _search_attributes_from_proto(proto) == {
        "Amount": 120,
        "DueAt": due.astimezone(UTC),
        "Legacy": "from-a-list",
        "Region": "eu",
        "Score": 4.5,
        "Vip": True,
    }


def test_none_is_an_empty_value_that_an_upsert_uses_to_remove() -> None:
    proto = _search_attributes_to_proto({"Stage": None})
    assert proto.indexed_fields["Stage"].WhichOneof("value") is None
    assert _search_attributes_from_proto(proto) == {}


@pytest.mark.parametrize(
    ("value", "error", "message"),
    [
        (datetime(2024, 5, 1), ValueError, "naive datetime"),
        (2**63, ValueError, "does not fit in a 64-bit Int"),
        (math.nan, ValueError, "must be a finite number"),
        (["a", "b"], TypeError, "a list of 2 values"),
        ({"a": 1}, TypeError, "is a dict; use str (Keyword), int (Int)"),
    ],
)
def test_values_that_cannot_be_indexed_are_refused(value: object, error: type, message: str) -> None:
    with pytest.raises(error, match=re.escape(message)):
        _search_attributes_to_proto({"Field": value})
