"""The list query compiler: the SQL it writes holds no value, AND binds tighter than
OR, and every refusal names a position. (Which runs a query selects, on both stores,
is tests/integration/test_visibility.py.)"""

from __future__ import annotations

import pytest

from flowforge.server.errors import InvalidArgument
from flowforge.server.visibility import MAX_QUERY_LENGTH, compile_query

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
