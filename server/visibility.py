"""Visibility: search attribute types and values, and the list query language.

A list query (``client.list_workflows("WorkflowType = 'Order' AND Amount > 100")``)
is tokenized, parsed by recursive descent into a small tree, type-checked against
the built-in attributes and the custom attributes registered in the namespace, and
compiled into a parameterized SQL condition: values only ever travel as bind
parameters, never inside the SQL text. The grammar, the types and the index each
filter uses are in docs/visibility.md::

    query      := [or_expr] [order_by] EOF
    order_by   := "ORDER" "BY" name ["ASC" | "DESC"]
    or_expr    := and_expr ("OR" and_expr)*
    and_expr   := not_expr ("AND" not_expr)*
    not_expr   := "NOT" not_expr | primary
    primary    := "(" or_expr ")" | predicate
    predicate  := name ("=" | "!=" | "<>" | "<" | "<=" | ">" | ">=") value
                | name ["NOT"] "BETWEEN" value "AND" value
                | name ["NOT"] "IN" "(" value ("," value)* ")"
                | name "STARTS_WITH" string
                | name "IS" ["NOT"] "NULL"
    value      := string | number | "TRUE" | "FALSE"

Every condition is two-valued (a comparison with an absent value is false, and
``NOT`` of it true), so ``NOT`` and ``!=`` behave as a reader expects. ``ORDER BY`` takes
one of :data:`ORDER_ATTRIBUTES` (``ASC`` or the default ``DESC``); ties are broken by
StartTime and the run id in the same direction, and runs without a CloseTime come last.
Its words are not reserved: they mean ``ORDER BY`` only where a condition cannot go on.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import dataclasses
import json
import math
import re
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any, NoReturn

from flowforge.api.schema import ExecutionStatus
from flowforge.api.v1 import common_pb2
from flowforge.server.errors import InvalidArgument
from flowforge.server.stores.rows import CompiledQuery, ListOrder, StoredValue

__all__ = [
    "MAX_ATTRIBUTES_PER_NAMESPACE",
    "MAX_QUERY_LENGTH",
    "ORDER_ATTRIBUTES",
    "QUERY_COST_BUDGET",
    "SYSTEM_ATTRIBUTES",
    "CompiledQuery",
    "StoredValue",
    "check_attribute_name",
    "compile_query",
    "list_order",
    "page_after",
    "page_token",
    "stored_value",
    "value_proto",
]

KEYWORD, INT, DOUBLE, BOOL, DATETIME = "KEYWORD", "INT", "DOUBLE", "BOOL", "DATETIME"
VALUE_TYPES = (KEYWORD, INT, DOUBLE, BOOL, DATETIME)

MAX_QUERY_LENGTH = 10_000
MAX_NAME_LENGTH = 64
MAX_KEYWORD_LENGTH = 2_048
MAX_ATTRIBUTES_PER_EXECUTION = 64
MAX_ATTRIBUTES_PER_NAMESPACE = 100
_MAX_NESTING = 32
#: The cost budget of one list or count query: a condition on a built-in attribute
#: costs 1, one on a custom attribute (a subquery on search_attributes) 4, and an IN
#: list one more per 16 values. Past it the query is refused before it reaches the store.
QUERY_COST_BUDGET = 64
_CUSTOM_CONDITION_COST = 4
_INT64 = (-(2**63), 2**63 - 1)

#: Built-in attributes: name -> (executions column, type). Always present, never set by users.
SYSTEM_ATTRIBUTES: dict[str, tuple[str, str]] = {
    "WorkflowId": ("workflow_id", KEYWORD),
    "RunId": ("run_id", KEYWORD),
    "WorkflowType": ("workflow_type", KEYWORD),
    "TaskQueue": ("task_queue", KEYWORD),
    "ExecutionStatus": ("status", KEYWORD),
    "StartTime": ("start_us", DATETIME),
    "CloseTime": ("close_us", DATETIME),
}
_NULLABLE_SYSTEM_COLUMNS = {"close_us"}
#: The built-in attributes a list can be ordered by (each has an index that serves it).
ORDER_ATTRIBUTES = ("StartTime", "CloseTime", "WorkflowId", "WorkflowType", "ExecutionStatus")
_ATTRIBUTE_OF_COLUMN = {column: name for name, (column, _) in SYSTEM_ATTRIBUTES.items()}
# A status is matched whatever its case and underscores ('Running', 'ContinuedAsNew', 'TIMED_OUT').
_STATUS_BY_SPELLING = {status.replace("_", "").lower(): status.value for status in ExecutionStatus}
_TEMPORAL_STATUS_NAMES = ", ".join(f"'{s.title().replace('_', '')}'" for s in ExecutionStatus)

_KEYWORDS = {"AND", "OR", "NOT", "BETWEEN", "IN", "IS", "NULL", "TRUE", "FALSE", "STARTS_WITH"}
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NUMBER = re.compile(r"-?\d+(\.\d+)?([eE][+-]?\d+)?")
_COMPARISONS = ("<=", ">=", "!=", "<>", "=", "<", ">")
_ORDERED_TYPES = (INT, DOUBLE, DATETIME)
# The column of search_attributes that holds each type (Bool as 0/1).
_VALUE_COLUMNS = {
    KEYWORD: "keyword_value",
    INT: "int_value",
    DOUBLE: "double_value",
    BOOL: "int_value",
    DATETIME: "datetime_us",
}
_TYPE_LABELS = {KEYWORD: "Keyword", INT: "Int", DOUBLE: "Double", BOOL: "Bool", DATETIME: "Datetime"}


# ----------------------------------------------------------------------------- values


def check_attribute_name(name: str) -> None:
    """Raises INVALID_ARGUMENT unless ``name`` can be a custom search attribute."""
    if not _NAME.fullmatch(name) or len(name) > MAX_NAME_LENGTH:
        raise InvalidArgument(
            f"search attribute name {name[:80]!r} is invalid: use 1 to {MAX_NAME_LENGTH} letters, digits or"
            " underscores, not starting with a digit (e.g. 'CustomerId')"
        )
    if name.upper() in _KEYWORDS:
        raise InvalidArgument(f"search attribute name {name!r} is a reserved word of the query language")
    if name in SYSTEM_ATTRIBUTES:
        raise InvalidArgument(f"search attribute {name!r} is built in; it is set by the server, not by you")


def stored_value(name: str, value_type: str, proto: common_pb2.SearchAttributeValue) -> StoredValue:
    """Checks a value against its attribute's registered type and returns its columns.

    An Int value is accepted for a Double attribute; any other mismatch, a keyword
    over the size limit or a non-finite double is INVALID_ARGUMENT.
    """
    kind = proto.WhichOneof("value")
    given = {
        "keyword_value": KEYWORD,
        "int_value": INT,
        "double_value": DOUBLE,
        "bool_value": BOOL,
        "datetime_value": DATETIME,
    }.get(kind or "")
    if given is None:
        raise InvalidArgument(f"search attribute {name!r} has no value")
    if given == INT and value_type == DOUBLE:
        given = DOUBLE
        double = float(proto.int_value)
    else:
        double = proto.double_value
    if given != value_type:
        raise InvalidArgument(
            f"search attribute {name!r} is registered as {_TYPE_LABELS[value_type]}, but the value given is a"
            f" {_TYPE_LABELS[given]}"
        )
    if value_type == KEYWORD:
        if len(proto.keyword_value) > MAX_KEYWORD_LENGTH:
            raise InvalidArgument(
                f"search attribute {name!r} is {len(proto.keyword_value)} characters long; a Keyword holds at"
                f" most {MAX_KEYWORD_LENGTH} (put larger data in the memo)"
            )
        return StoredValue(keyword_value=proto.keyword_value)
    if value_type == INT:
        return StoredValue(int_value=proto.int_value)
    if value_type == BOOL:
        return StoredValue(int_value=int(proto.bool_value))
    if value_type == DOUBLE:
        if not math.isfinite(double):
            raise InvalidArgument(f"search attribute {name!r} must be a finite number, not {double}")
        return StoredValue(double_value=double)
    return StoredValue(datetime_us=proto.datetime_value.ToMicroseconds())


def value_proto(value_type: str, value: StoredValue) -> common_pb2.SearchAttributeValue:
    """The wire form of a stored value."""
    if value_type == KEYWORD:
        return common_pb2.SearchAttributeValue(keyword_value=value.keyword_value)
    if value_type == INT:
        return common_pb2.SearchAttributeValue(int_value=value.int_value)
    if value_type == BOOL:
        return common_pb2.SearchAttributeValue(bool_value=bool(value.int_value))
    if value_type == DOUBLE:
        return common_pb2.SearchAttributeValue(double_value=value.double_value)
    proto = common_pb2.SearchAttributeValue()
    proto.datetime_value.FromMicroseconds(value.datetime_us or 0)
    return proto


# ----------------------------------------------------------------------------- tokens


@dataclasses.dataclass(frozen=True)
class _Token:
    kind: str  # NAME, KEYWORD, STRING, NUMBER, OP, "(", ")", ",", EOF
    text: str  # the value (a string's content, a keyword upper-cased)
    position: int  # 1-based character position in the query

    def describe(self) -> str:
        if self.kind == "EOF":
            return "the end of the query"
        if self.kind == "STRING":
            return f"the string {self.text!r}"
        return f"{self.text!r}"


class _QueryError(InvalidArgument):
    def __init__(self, query: str, position: int, what: str) -> None:
        # A long query is shown around the position only.
        start = 0 if len(query) <= 200 else max(0, position - 100)
        line = query[start : start + 200]
        super().__init__(f"invalid query at position {position}: {what}\n  {line}\n  {' ' * (position - 1 - start)}^")
        self.position = position


def _tokenize(query: str) -> list[_Token]:
    tokens: list[_Token] = []
    index = 0
    while index < len(query):
        char = query[index]
        position = index + 1
        if char.isspace():
            index += 1
        elif char in "(),":
            tokens.append(_Token(char, char, position))
            index += 1
        elif char in "'\"":
            text, index = _read_string(query, index)
            tokens.append(_Token("STRING", text, position))
        elif char == "`":
            end = query.find("`", index + 1)
            if end == -1:
                raise _QueryError(query, position, "a `quoted name` is not closed")
            tokens.append(_Token("NAME", query[index + 1 : end], position))
            index = end + 1
        elif (op := next((o for o in _COMPARISONS if query.startswith(o, index)), None)) is not None:
            tokens.append(_Token("OP", "!=" if op == "<>" else op, position))
            index += len(op)
        elif (number := _NUMBER.match(query, index)) is not None:
            tokens.append(_Token("NUMBER", number.group(), position))
            index = number.end()
        elif (name := _NAME.match(query, index)) is not None:
            word = name.group()
            kind = "KEYWORD" if word.upper() in _KEYWORDS else "NAME"
            tokens.append(_Token(kind, word.upper() if kind == "KEYWORD" else word, position))
            index = name.end()
        else:
            raise _QueryError(query, position, f"unexpected character {char!r}")
    tokens.append(_Token("EOF", "", len(query) + 1))
    return tokens


def _read_string(query: str, start: int) -> tuple[str, int]:
    """A quoted string; a backslash escapes the next character, a doubled quote is one quote."""
    quote = query[start]
    out: list[str] = []
    index = start + 1
    while index < len(query):
        char = query[index]
        if char == "\\" and index + 1 < len(query):
            out.append(query[index + 1])
            index += 2
        elif char == quote and query.startswith(quote * 2, index):
            out.append(quote)
            index += 2
        elif char == quote:
            return "".join(out), index + 1
        else:
            out.append(char)
            index += 1
    raise _QueryError(query, start + 1, f"the string starting here is not closed with {quote}")


# ----------------------------------------------------------------------------- syntax tree


@dataclasses.dataclass(frozen=True)
class _Predicate:
    name: _Token
    operator: str  # =, !=, <, <=, >, >=, BETWEEN, IN, STARTS_WITH, IS NULL
    values: tuple[_Token, ...]
    negated: bool = False  # NOT BETWEEN, NOT IN, IS NOT NULL


@dataclasses.dataclass(frozen=True)
class _Not:
    operand: _Node


@dataclasses.dataclass(frozen=True)
class _Junction:
    operator: str  # AND, OR
    operands: tuple[_Node, ...]


_Node = _Predicate | _Not | _Junction


class _QueryPass:
    """What the parser and the compiler share: the query they reject at a token."""

    def __init__(self, query: str) -> None:
        self._query = query

    def _fail(self, token: _Token, what: str) -> NoReturn:
        raise _QueryError(self._query, token.position, what)


class _Parser(_QueryPass):
    def __init__(self, query: str) -> None:
        super().__init__(query)
        self._tokens = _tokenize(query)
        self._index = 0
        self._depth = 0

    def parse(self) -> tuple[_Node | None, ListOrder]:
        """The condition (None if there is none) and the order."""
        node = None if self._peek().kind == "EOF" or self._at_order_by() else self._or()
        ordered = self._at_order_by()
        order = self._order_by() if ordered else ListOrder()
        token = self._peek()
        if token.kind != "EOF":
            expected = "AND, OR or the end" if node is not None and not ordered else "the end"
            self._fail(token, f"expected {expected} of the query, found {token.describe()}")
        return node, order

    def _at_order_by(self) -> bool:
        first, second = self._tokens[self._index], self._tokens[min(self._index + 1, len(self._tokens) - 1)]
        return (
            first.kind == "NAME"
            and first.text.upper() == "ORDER"
            and second.kind == "NAME"
            and second.text.upper() == "BY"
        )

    def _order_by(self) -> ListOrder:
        self._index += 2  # ORDER BY
        name = self._next()
        if name.kind != "NAME":
            self._fail(name, f"expected an attribute name after ORDER BY, found {name.describe()}")
        if name.text not in ORDER_ATTRIBUTES:
            self._fail(
                name,
                f"cannot order by {name.text!r}: ORDER BY takes one of {', '.join(ORDER_ATTRIBUTES)}"
                " (each has an index; custom attributes have none that orders)",
            )
        descending = True
        direction = self._peek()
        if direction.kind == "NAME" and direction.text.upper() in ("ASC", "DESC"):
            descending = self._next().text.upper() == "DESC"
        following = self._peek()
        if following.kind == ",":
            self._fail(following, "ORDER BY takes one attribute (ties are broken by StartTime, then the run id)")
        return ListOrder(SYSTEM_ATTRIBUTES[name.text][0], descending)

    def _peek(self) -> _Token:
        return self._tokens[self._index]

    def _next(self) -> _Token:
        token = self._tokens[self._index]
        self._index += 1
        return token

    def _at_keyword(self, word: str) -> bool:
        token = self._peek()
        return token.kind == "KEYWORD" and token.text == word

    def _or(self) -> _Node:
        return self._junction("OR", self._and)

    def _and(self) -> _Node:
        return self._junction("AND", self._not)

    def _junction(self, operator: str, operand: Callable[[], _Node]) -> _Node:
        """``operand (operator operand)*``: the one operand, or a junction of them all."""
        operands = [operand()]
        while self._at_keyword(operator):
            self._next()
            operands.append(operand())
        return operands[0] if len(operands) == 1 else _Junction(operator, tuple(operands))

    def _not(self) -> _Node:
        if self._at_keyword("NOT"):
            with self._nested(self._next()):
                return _Not(self._not())
        return self._primary()

    @contextlib.contextmanager
    def _nested(self, token: _Token) -> Iterator[None]:
        """Bounds the recursion (parentheses and NOTs), so no query can exhaust the stack."""
        self._depth += 1
        if self._depth > _MAX_NESTING:
            self._fail(token, f"parentheses and NOTs nest deeper than {_MAX_NESTING} levels")
        yield
        self._depth -= 1

    def _primary(self) -> _Node:
        token = self._peek()
        if token.kind == "(":
            with self._nested(self._next()):
                node = self._or()
                closing = self._next()
                if closing.kind != ")":
                    self._fail(
                        closing,
                        f"expected ')' to close the '(' at position {token.position}, found {closing.describe()}",
                    )
                return node
        if token.kind != "NAME":
            self._fail(token, f"expected an attribute name or '(', found {token.describe()}")
        return self._predicate(self._next())

    def _predicate(self, name: _Token) -> _Predicate:
        token = self._next()
        if token.kind == "OP":
            return _Predicate(name, token.text, (self._value(),))
        negated = False
        if token.kind == "KEYWORD" and token.text == "NOT":
            negated = True
            token = self._next()
            if not (token.kind == "KEYWORD" and token.text in ("BETWEEN", "IN")):
                self._fail(token, f"expected BETWEEN or IN after NOT, found {token.describe()}")
        if token.kind == "KEYWORD" and token.text == "BETWEEN":
            low = self._value()
            and_token = self._next()
            if not (and_token.kind == "KEYWORD" and and_token.text == "AND"):
                self._fail(and_token, f"expected AND between the bounds of BETWEEN, found {and_token.describe()}")
            return _Predicate(name, "BETWEEN", (low, self._value()), negated)
        if token.kind == "KEYWORD" and token.text == "IN":
            opening = self._next()
            if opening.kind != "(":
                self._fail(opening, f"expected '(' after IN, found {opening.describe()}")
            values = [self._value()]
            while self._peek().kind == ",":
                self._next()
                values.append(self._value())
            closing = self._next()
            if closing.kind != ")":
                self._fail(closing, f"expected ',' or ')' in the IN list, found {closing.describe()}")
            return _Predicate(name, "IN", tuple(values), negated)
        if token.kind == "KEYWORD" and token.text == "STARTS_WITH":
            return _Predicate(name, "STARTS_WITH", (self._value(),))
        if token.kind == "KEYWORD" and token.text == "IS":
            if self._at_keyword("NOT"):
                self._next()
                negated = True
            null = self._next()
            if not (null.kind == "KEYWORD" and null.text == "NULL"):
                self._fail(null, f"expected NULL after IS{' NOT' if negated else ''}, found {null.describe()}")
            return _Predicate(name, "IS NULL", (), negated)
        return self._fail(
            token,
            f"expected an operator (=, !=, <, <=, >, >=, BETWEEN, IN, STARTS_WITH, IS NULL) after"
            f" {name.text!r}, found {token.describe()}",
        )

    def _value(self) -> _Token:
        token = self._next()
        if token.kind in ("STRING", "NUMBER") or (token.kind == "KEYWORD" and token.text in ("TRUE", "FALSE")):
            return token
        return self._fail(
            token, f"expected a value (a 'quoted string', a number, TRUE or FALSE), found {token.describe()}"
        )


# ----------------------------------------------------------------------------- compiling


def compile_query(
    query: str, namespace: str, custom_attributes: dict[str, str], *, equal: dict[str, str] | None = None
) -> CompiledQuery:
    """Parses and type-checks ``query`` against the built-in attributes and the
    namespace's ``custom_attributes`` (name -> type).

    ``equal`` adds ``column = value`` conditions on executions columns (the
    request's plain filters), ANDed with the query.

    Raises:
        InvalidArgument: The query is malformed, names an unknown attribute or
            compares one with a value of another type; the message gives the
            position and what was expected there.
    """
    if len(query) > MAX_QUERY_LENGTH:
        raise InvalidArgument(f"the query is {len(query)} characters long; the limit is {MAX_QUERY_LENGTH}")
    tree, order = _Parser(query).parse()
    compiler = _Compiler(query, namespace, custom_attributes)
    conditions = [compiler.compile(tree)] if tree is not None else []
    for column, value in (equal or {}).items():
        conditions.append(f"e.{column} = ?")
        compiler.params.append(value)
    return CompiledQuery(" AND ".join(conditions) or "1 = 1", tuple(compiler.params), order)


def list_order(query: str) -> ListOrder:
    """The order of ``query`` (its ``ORDER BY``, else newest first); INVALID_ARGUMENT if
    it does not parse. Needs no attribute types: the order is of built-in ones only."""
    if len(query) > MAX_QUERY_LENGTH:
        raise InvalidArgument(f"the query is {len(query)} characters long; the limit is {MAX_QUERY_LENGTH}")
    return _Parser(query).parse()[1]


# ----------------------------------------------------------------------------- page tokens


def _order_label(order: ListOrder) -> str:
    return f"{_ATTRIBUTE_OF_COLUMN[order.column]} {'DESC' if order.descending else 'ASC'}"


def page_token(order: ListOrder, key: tuple[Any, ...]) -> bytes:
    """The token of the page after the run at ``key`` (``order.key(row)`` of the last one
    listed): its keyset cursor, with the order it belongs to unless it is the default
    one (whose tokens stay the plain ``[start_us, run_id]`` they always were)."""
    body: object = list(key) if order == ListOrder() else {"order": _order_label(order), "after": list(key)}
    return base64.urlsafe_b64encode(json.dumps(body, separators=(",", ":")).encode())


def page_after(order: ListOrder, token: bytes) -> tuple[Any, ...] | None:
    """The keyset cursor inside ``token`` for a list in ``order`` (None: the first page).

    Raises:
        InvalidArgument: the token is malformed, or from a list in another order.
    """
    if not token:
        return None
    malformed = InvalidArgument("next_page_token is malformed; pass back the one the last page returned")
    try:
        body = json.loads(base64.urlsafe_b64decode(token))
    except (ValueError, binascii.Error):
        raise malformed from None
    if isinstance(body, list):
        label, after = "StartTime DESC", body  # the default order's tokens carry no label
    elif isinstance(body, dict) and set(body) == {"order", "after"} and isinstance(body["order"], str):
        label, after = body["order"], body["after"]
    else:
        raise malformed
    if label != _order_label(order):
        raise InvalidArgument(
            f"next_page_token belongs to a list ordered by {label[:40]}, not {_order_label(order)};"
            " list again from the first page (without a token)"
        )
    if not isinstance(after, list) or len(after) != len(order.key_columns):
        raise malformed
    for column, value in zip(order.key_columns, after, strict=True):
        if not _cursor_value_fits(column, value):
            raise malformed
    return tuple(after)


def _cursor_value_fits(column: str, value: object) -> bool:
    """Whether ``value`` can be the ``column`` of a run (a cursor's value, checked before use)."""
    if column in ("start_us", "close_us"):
        if value is None:
            return column == "close_us"
        return isinstance(value, int) and not isinstance(value, bool) and _INT64[0] <= value <= _INT64[1]
    return isinstance(value, str) and len(value) <= MAX_KEYWORD_LENGTH


class _Compiler(_QueryPass):
    def __init__(self, query: str, namespace: str, custom_attributes: dict[str, str]) -> None:
        super().__init__(query)
        self._namespace = namespace
        self._custom = custom_attributes
        self.params: list[Any] = []
        self._cost = 0

    def compile(self, node: _Node) -> str:
        if isinstance(node, _Junction):
            return "(" + f" {node.operator} ".join(self.compile(operand) for operand in node.operands) + ")"
        if isinstance(node, _Not):
            return f"(NOT {self.compile(node.operand)})"
        return self._predicate(node)

    def _attribute(self, name: _Token) -> tuple[str | None, str]:
        """(executions column or None for a custom attribute, type)."""
        if name.text in SYSTEM_ATTRIBUTES:
            return SYSTEM_ATTRIBUTES[name.text]
        if name.text in self._custom:
            return None, self._custom[name.text]
        known = sorted(SYSTEM_ATTRIBUTES) + sorted(self._custom)
        same_but_case = [k for k in known if k.lower() == name.text.lower()]
        hint = f"; did you mean {same_but_case[0]!r}?" if same_but_case else f"; known attributes: {', '.join(known)}"
        return self._fail(
            name,
            f"unknown search attribute {name.text!r} (custom ones are registered with"
            f" `flowforge search-attribute create`){hint}",
        )

    def _predicate(self, p: _Predicate) -> str:
        column, value_type = self._attribute(p.name)
        self._cost += (1 if column is not None else _CUSTOM_CONDITION_COST) + len(p.values) // 16
        if self._cost > QUERY_COST_BUDGET:
            self._fail(
                p.name,
                f"the query is too expensive (over the cost budget of {QUERY_COST_BUDGET}: a condition on a"
                f" built-in attribute costs 1, on a custom one {_CUSTOM_CONDITION_COST}); use fewer conditions",
            )
        label = _TYPE_LABELS[value_type]
        op = p.operator
        if op in ("<", "<=", ">", ">=", "BETWEEN") and value_type not in _ORDERED_TYPES:
            self._fail(
                p.name,
                f"{p.name.text!r} is a {label} attribute: {op} needs an Int, Double or Datetime one"
                " (use =, !=, IN or STARTS_WITH)",
            )
        if op == "STARTS_WITH" and value_type != KEYWORD:
            self._fail(p.name, f"STARTS_WITH needs a Keyword attribute; {p.name.text!r} is a {label}")
        if op == "IN" and value_type == BOOL:
            self._fail(p.name, f"{p.name.text!r} is a Bool attribute: compare it with = TRUE or = FALSE")
        values = [self._value(p.name, value_type, token) for token in p.values]
        target = f"e.{column}" if column is not None else f"sa.{_VALUE_COLUMNS[value_type]}"
        if op == "IS NULL":
            condition = None
        elif op == "BETWEEN":
            condition = f"{target} BETWEEN ? AND ?"
        elif op == "IN":
            condition = f"{target} IN ({', '.join('?' for _ in values)})"
        elif op == "STARTS_WITH":
            prefix = values[0]
            values = [len(prefix), prefix]
            condition = f"substr({target}, 1, ?) = ?"
        else:
            condition = f"{target} {'<>' if op == '!=' else op} ?"
        if condition is not None and p.negated:
            # Like !=: NOT IN / NOT BETWEEN match runs that have a value outside the set.
            condition = f"NOT ({condition})"
        if column is None:
            return self._custom_predicate(p, condition, values)
        if condition is None:
            return f"e.{column} IS {'NOT ' if p.negated else ''}NULL"
        self.params.extend(values)
        if column in _NULLABLE_SYSTEM_COLUMNS:
            condition = f"e.{column} IS NOT NULL AND {condition}"
        return f"({condition})"

    def _custom_predicate(self, p: _Predicate, condition: str | None, values: list[Any]) -> str:
        """Matches the runs that have a row for the attribute satisfying ``condition``;
        the index on (namespace, name, value, run_id) finds them."""
        self.params.extend([self._namespace, p.name.text])
        matching = "SELECT sa.run_id FROM search_attributes sa WHERE sa.namespace = ? AND sa.name = ?"
        if condition is not None:
            matching += f" AND {condition}"
            self.params.extend(values)
        # IS NULL: no row for the attribute; IS NOT NULL: a row.
        outside = p.operator == "IS NULL" and not p.negated
        return f"e.run_id {'NOT IN' if outside else 'IN'} ({matching})"

    def _value(self, name: _Token, value_type: str, token: _Token) -> Any:
        label = _TYPE_LABELS[value_type]
        expected = {
            KEYWORD: "a 'quoted string'",
            INT: "an integer",
            DOUBLE: "a number",
            BOOL: "TRUE or FALSE",
            DATETIME: "an RFC 3339 time in quotes, e.g. '2024-05-01T12:00:00Z'",
        }[value_type]
        mismatch = f"{name.text!r} is a {label} attribute: expected {expected}, found {token.describe()}"
        if value_type == KEYWORD:
            if token.kind != "STRING":
                self._fail(token, mismatch)
            if name.text == "ExecutionStatus":
                status = _STATUS_BY_SPELLING.get(token.text.replace("_", "").lower())
                if status is None:
                    self._fail(token, f"{token.text!r} is not an execution status; use one of {_TEMPORAL_STATUS_NAMES}")
                return status
            return token.text
        if value_type == BOOL:
            if token.kind != "KEYWORD":
                self._fail(token, mismatch)
            return int(token.text == "TRUE")
        if value_type == DATETIME:
            if token.kind != "STRING":
                self._fail(token, mismatch)
            return self._datetime_us(token, mismatch)
        if token.kind != "NUMBER":
            self._fail(token, mismatch)
        if value_type == INT:
            if not re.fullmatch(r"-?\d+", token.text):
                self._fail(token, mismatch)
            number = int(token.text)
            if not _INT64[0] <= number <= _INT64[1]:
                self._fail(token, f"{token.text} does not fit in a 64-bit Int")
            return number
        number_value = float(token.text)
        if not math.isfinite(number_value):
            self._fail(token, f"{token.text} is not a finite number")
        return number_value

    def _datetime_us(self, token: _Token, mismatch: str) -> int:
        try:
            moment = datetime.fromisoformat(token.text)
        except ValueError:
            return self._fail(token, mismatch)
        if moment.tzinfo is None:
            self._fail(token, f"{token.text!r} has no UTC offset: add 'Z' or e.g. '+02:00'")
        try:
            delta = moment.astimezone(UTC) - datetime(1970, 1, 1, tzinfo=UTC)
        except OverflowError:
            return self._fail(token, f"{token.text!r} is outside the years 0001 to 9999 in UTC")
        return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
