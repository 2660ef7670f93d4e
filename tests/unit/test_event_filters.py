"""The trigger filter language: ``PATH OP JSON`` conditions over an event, and the
input paths that map event fields to workflow arguments (docs/events.md)."""

from __future__ import annotations

import pytest

from flowforge.server.errors import InvalidArgument
from flowforge.server.events import parse_condition, parse_path, trigger_row

EVENT = {
    "id": "e-1",
    "source": "shop",
    "type": "order.paid",
    "subject": "order/42",
    "data": {
        "currency": "EUR",
        "amount": 120,
        "express": True,
        "customer": {"tier": "gold", "tags": ["vip", "eu"]},
        "lines": [{"sku": "A"}, {"sku": "B"}],
        "note": None,
    },
}


@pytest.mark.parametrize(
    "condition, holds",
    [
        ('data.currency == "EUR"', True),
        ('data.currency == "USD"', False),
        ('data.currency != "USD"', True),
        ("data.amount == 120", True),
        ("data.amount == 120.0", True),  # JSON numbers compare by value
        ("data.amount != 0", True),
        ("data.express == true", True),
        ("data.express == 1", False),  # true is not 1 (it is in Python)
        ("data.amount == true", False),
        ("data.note == null", True),
        ('data.customer.tier in ["gold", "platinum"]', True),
        ('data.customer.tier not in ["gold"]', False),
        ('data.customer.tags == ["vip", "eu"]', True),
        ('data.customer == {"tags": ["vip", "eu"], "tier": "gold"}', True),
        ('data.lines.1.sku == "B"', True),
        ('data.lines.7.sku == "B"', False),
        ('subject == "order/42"', True),
        ('type in ["order.paid", "order.refunded"]', True),
        ('source != "crm"', True),
        # A missing path equals nothing: == and in fail, != and not in hold.
        ('data.missing == "x"', False),
        ('data.missing != "x"', True),
        ('data.missing in ["x"]', False),
        ('data.missing not in ["x"]', True),
        ('data.currency.deeper == "x"', False),
        ('  data.currency   ==   "EUR"  ', True),
        ('data.currency  not   in  ["USD"]', True),
    ],
)
def test_a_condition_holds_exactly_when_its_comparison_does(condition: str, holds: bool) -> None:
    assert parse_condition(condition).holds(EVENT) is holds


@pytest.mark.parametrize(
    "condition, message",
    [
        ('data.currency = "EUR"', "OP one of ==, !=, in, not in"),
        ("data.currency == EUR", "is not a JSON value"),
        ('data.currency in "EUR"', "needs a JSON list"),
        ('payload.currency == "EUR"', "must start with one of id, source, type, subject, time, data"),
        ('subject.part == "x"', "only 'data' has fields below it"),
        ('data..currency == "x"', "is not 'PATH OP VALUE'"),
        ("data.a-b == 1 2", "is not a JSON value"),
        ("", "is not 'PATH OP VALUE'"),
        ('data.currency contains "E"', "OP one of"),
    ],
)
def test_a_malformed_condition_is_invalid_argument_saying_what_is_wrong(condition: str, message: str) -> None:
    with pytest.raises(InvalidArgument) as error:
        parse_condition(condition)
    assert message in error.value.message


def test_conditions_are_stored_in_canonical_form() -> None:
    row = trigger_row(
        namespace="default",
        trigger_id="t",
        event_type="order.paid",
        filter=['data.region  in ["eu","us"]', "data.amount!=0", "data.x not  in [1]"],
        input_paths=["data.amount"],
        workflow_type="W",
        task_queue="q",
        workflow_id_prefix="",
        execution_timeout_s=0,
        run_timeout_s=0,
        task_timeout_s=0,
    )
    assert row.filter == '["data.region in [\\"eu\\", \\"us\\"]", "data.amount != 0", "data.x not in [1]"]'
    assert row.workflow_id_prefix == "t-"
    # The canonical form parses back to the same condition.
    for condition in ['data.region in ["eu", "us"]', "data.amount != 0", "data.x not in [1]"]:
        assert parse_condition(condition).canonical() == condition


def test_a_trigger_refuses_bad_input_paths_and_too_many_conditions() -> None:
    def row(**overrides):
        fields = dict(
            namespace="default",
            trigger_id="t",
            event_type="e",
            filter=[],
            input_paths=[],
            workflow_type="W",
            task_queue="q",
            workflow_id_prefix="",
            execution_timeout_s=0,
            run_timeout_s=0,
            task_timeout_s=0,
        )
        return trigger_row(**{**fields, **overrides})

    with pytest.raises(InvalidArgument, match=r"input path 'body\.x' must start with one of"):
        row(input_paths=["body.x"])
    with pytest.raises(InvalidArgument, match="at most 32 filter conditions"):
        row(filter=["data.a == 1"] * 33)
    with pytest.raises(InvalidArgument, match="at most 32 input paths"):
        row(input_paths=["data"] * 33)
    with pytest.raises(InvalidArgument, match="workflow_id_prefix is longer than 200"):
        row(workflow_id_prefix="p" * 201)


def test_paths_name_event_fields_and_keys_below_data() -> None:
    assert parse_path("data", "input path") == ("data",)
    assert parse_path("data.lines.0.sku", "input path") == ("data", "lines", "0", "sku")
    assert parse_path("id", "input path") == ("id",)
