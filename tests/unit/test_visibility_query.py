"""The list query compiler: the SQL it writes holds no value, AND binds tighter than
OR, and every refusal names a position. (Which runs a query selects, on both stores,
is tests/integration/test_visibility.py.)"""

from __future__ import annotations

import base64
import json

import pytest

from flowforge.server.errors import InvalidArgument
from flowforge.server.stores.rows import ListOrder
from flowforge.server.visibility import MAX_QUERY_LENGTH, compile_query, list_order, page_after, page_token

CUSTOM = {"Region": "KEYWORD", "Amount": "INT", "DueAt": "DATETIME"}


def compiled(query: str) -> tuple[str, tuple]:
    result = compile_query(query, "default", CUSTOM)
    return result.where, result.params


def test_values_travel_as_parameters_never_in_the_sql_text() -> None:
    attempt = "x'; DROP TABLE executions; --"
    where, params = compiled(f"WorkflowId = \"{attempt}\" OR Region IN ('{attempt.replace(chr(39), chr(39) * 2)}')")
    assert "DROP" not in where and "x'" not in where
    assert params == (attempt, "default", "Region", attempt)
    assert where == (
        "((e.workflow_id = ?) OR e.run_id IN (SELECT sa.run_id FROM search_attributes sa"
        " WHERE sa.namespace = ? AND sa.name = ? AND sa.keyword_value IN (?)))"
    )


def test_and_binds_tighter_than_or_and_parentheses_override_it() -> None:
    assert compiled("WorkflowId = 'a' OR WorkflowId = 'b' AND WorkflowType = 'c'")[0] == (
        "((e.workflow_id = ?) OR ((e.workflow_id = ?) AND (e.workflow_type = ?)))"
    )
    assert compiled("(WorkflowId = 'a' OR WorkflowId = 'b') AND WorkflowType = 'c'")[0] == (
        "(((e.workflow_id = ?) OR (e.workflow_id = ?)) AND (e.workflow_type = ?))"
    )


def test_times_compare_as_utc_microseconds_and_statuses_as_stored() -> None:
    where, params = compiled("StartTime >= '2024-05-01T14:00:00.5+02:00' AND ExecutionStatus = 'ContinuedAsNew'")
    assert where == "((e.start_us >= ?) AND (e.status = ?))"
    assert params == (1714564800_500000, "CONTINUED_AS_NEW")


def test_an_empty_query_matches_everything_and_plain_filters_are_anded() -> None:
    assert compiled("") == ("1 = 1", ())
    result = compile_query("  ", "default", CUSTOM, equal={"status": "RUNNING"})
    assert (result.where, result.params) == ("e.status = ?", ("RUNNING",))


@pytest.mark.parametrize(
    ("query", "position", "expected"),
    [
        ("`Region = 'x'", 1, "a `quoted name` is not closed"),
        ("Region NOT = 'x'", 12, "expected BETWEEN or IN after NOT"),
        ("Region IS 'x'", 11, "expected NULL after IS"),
        ("Amount IN 1, 2", 11, "expected '(' after IN"),
        ("Amount IN (1 2)", 14, "expected ',' or ')' in the IN list"),
        ("Amount > 99999999999999999999", 10, "does not fit in a 64-bit Int"),
        ("DueAt STARTS_WITH '2024'", 1, "STARTS_WITH needs a Keyword attribute"),
        ("(" * 40 + "Region = 'x'" + ")" * 40, 33, "parentheses and NOTs nest deeper than 32 levels"),
        ("NOT " * 2000 + "Region = 'x'", 129, "parentheses and NOTs nest deeper than 32 levels"),
        ("StartTime > '0001-01-01T00:00:00+01:00'", 13, "outside the years 0001 to 9999"),
    ],
)
def test_refusals_name_the_position_and_what_was_expected(query: str, position: int, expected: str) -> None:
    with pytest.raises(InvalidArgument) as caught:
        compiled(query)
    message = caught.value.message
    assert message.startswith(f"invalid query at position {position}: ") and expected in message
    # The message repeats the query (around the position, if long) with a caret under it.
    _, shown, caret = message.splitlines()
    assert shown[caret.index("^")] == query[position - 1]


def test_a_query_over_the_length_limit_is_refused() -> None:
    with pytest.raises(InvalidArgument, match=f"the limit is {MAX_QUERY_LENGTH}"):
        compiled("WorkflowId = 'a' OR " * 600 + "WorkflowId = 'b'")


# ----------------------------------------------------------------------------- ORDER BY


@pytest.mark.parametrize(
    ("query", "column", "descending", "where"),
    [
        ("", "start_us", True, "1 = 1"),
        ("ORDER BY StartTime ASC", "start_us", False, "1 = 1"),
        ("order by CloseTime", "close_us", True, "1 = 1"),
        ("ORDER BY WorkflowId Desc", "workflow_id", True, "1 = 1"),
        ("WorkflowType = 'a' ORDER BY WorkflowType asc", "workflow_type", False, "(e.workflow_type = ?)"),
        ("(WorkflowId = 'a' OR WorkflowId = 'b') ORDER BY ExecutionStatus", "status", True, None),
    ],
)
def test_order_by_compiles_to_a_column_and_a_direction(
    query: str, column: str, descending: bool, where: str | None
) -> None:
    result = compile_query(query, "default", CUSTOM)
    assert result.order == ListOrder(column, descending)
    assert list_order(query) == result.order
    if where is not None:
        assert result.where == where


def test_order_and_by_are_not_reserved_words() -> None:
    # A custom attribute may be called Order; only ORDER followed by BY starts the clause.
    result = compile_query("Order = 'x' ORDER BY WorkflowId", "default", {"Order": "KEYWORD"})
    assert result.params == ("default", "Order", "x") and result.order == ListOrder("workflow_id")


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("ORDER BY RunId", "cannot order by 'RunId': ORDER BY takes one of StartTime, CloseTime, WorkflowId"),
        ("ORDER BY Region", "cannot order by 'Region'"),
        ("ORDER BY 'StartTime'", "expected an attribute name after ORDER BY, found the string 'StartTime'"),
        ("ORDER BY StartTime, CloseTime", "ORDER BY takes one attribute"),
        ("ORDER BY StartTime DESC ASC", "expected the end of the query, found 'ASC'"),
        ("ORDER BY StartTime WorkflowId = 'a'", "expected the end of the query, found 'WorkflowId'"),
        ("WorkflowId = 'a' WorkflowId = 'b'", "expected AND, OR or the end of the query, found 'WorkflowId'"),
    ],
)
def test_bad_orders_are_refused_naming_what_was_expected(query: str, expected: str) -> None:
    with pytest.raises(InvalidArgument) as raised:
        compile_query(query, "default", CUSTOM)
    assert expected in raised.value.message


@pytest.mark.parametrize(
    ("order", "key"),
    [
        (ListOrder(), (5, "run")),
        (ListOrder("start_us", descending=False), (5, "run")),
        (ListOrder("close_us"), (None, 5, "run")),
        (ListOrder("close_us", descending=False), (7, 5, "run")),
        (ListOrder("workflow_id"), ("<id>", 5, "run")),
        (ListOrder("status", descending=False), ("RUNNING", 5, "run")),
    ],
)
def test_page_tokens_round_trip_in_their_own_order_only(order: ListOrder, key: tuple[object, ...]) -> None:
    token = page_token(order, key)
    assert page_after(order, token) == key
    other = ListOrder("workflow_type", descending=not order.descending)
    with pytest.raises(InvalidArgument, match="next_page_token belongs to a list ordered by"):
        page_after(other, token)


def test_the_default_orders_tokens_keep_their_old_form() -> None:
    assert base64.urlsafe_b64decode(page_token(ListOrder(), (123, "run"))) == b'[123,"run"]'


@pytest.mark.parametrize(
    "body",
    [
        {"order": "WorkflowId ASC", "after": [1, 2, "run"]},  # an id that is a number
        {"order": "WorkflowId ASC", "after": ["a", 2]},  # too short
        {"order": "WorkflowId ASC", "after": ["a", None, "run"]},  # no start time
        {"order": "WorkflowId ASC", "after": ["a" * 3000, 2, "run"]},  # longer than an id can be
        {"order": "WorkflowId ASC", "after": ["a", 2**63, "run"]},  # past 64 bits
        {"order": "WorkflowId ASC", "after": ["a", True, "run"]},
        {"order": "WorkflowId ASC", "after": ["a", 2, "run"], "more": 1},
    ],
)
def test_forged_page_tokens_are_malformed(body: object) -> None:
    token = base64.urlsafe_b64encode(json.dumps(body).encode())
    with pytest.raises(InvalidArgument, match="next_page_token is malformed"):
        page_after(ListOrder("workflow_id", descending=False), token)
