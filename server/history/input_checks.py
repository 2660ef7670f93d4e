"""Checks of what a request carries that need no state: sizes, names, counts.

Each raises :class:`~flowforge.server.errors.InvalidArgument` with a message a
person can act on, before anything is written (rule 8 of docs/architecture.md).
"""

from __future__ import annotations

from flowforge.api.v1 import common_pb2
from flowforge.server.errors import InvalidArgument
from flowforge.server.visibility import MAX_ATTRIBUTES_PER_EXECUTION, check_attribute_name

__all__ = [
    "MAX_NAME_LENGTH",
    "check_failure",
    "check_name",
    "check_payloads",
    "check_search_attribute_names",
    "check_visibility_input",
]

MAX_NAME_LENGTH = 1000


def check_payloads(payloads: common_pb2.Payloads, what: str, max_bytes: int) -> None:
    """Refuses payloads over ``max_bytes`` (data and metadata, keys included, of all its values)."""
    size = sum(len(p.data) + sum(len(k) + len(v) for k, v in p.metadata.items()) for p in payloads.payloads)
    if size > max_bytes:
        raise InvalidArgument(
            f"{what} is {size} bytes, over the server's payload limit of {max_bytes}"
            " bytes; configure payload storage in the client's DataConverter (payload_storage=..., see"
            " docs/payloads.md) so large payloads are stored by reference"
        )


def check_failure(failure: common_pb2.Failure, what: str, max_bytes: int) -> None:
    """Refuses a failure over ``max_bytes`` serialized."""
    size = failure.ByteSize()
    if size > max_bytes:
        raise InvalidArgument(f"{what} is {size} bytes, over the server's payload limit of {max_bytes} bytes")


def check_name(where: str, field: str, value: str, *, required: bool) -> None:
    """Refuses a missing (if ``required``), over-long or unprintable name."""
    if not value:
        if required:
            raise InvalidArgument(f"{where}: {field} is required")
        return
    if len(value) > MAX_NAME_LENGTH:
        raise InvalidArgument(f"{where}: {field} is {len(value)} characters long; the limit is {MAX_NAME_LENGTH}")
    if any(ord(ch) < 32 for ch in value):
        raise InvalidArgument(f"{where}: {field} must not contain control characters")


def check_search_attribute_names(attributes: common_pb2.SearchAttributes, where: str) -> None:
    """Refuses too many search attributes in one call, or a malformed name."""
    if len(attributes.indexed_fields) > MAX_ATTRIBUTES_PER_EXECUTION:
        raise InvalidArgument(
            f"{where}: {len(attributes.indexed_fields)} search attributes; at most"
            f" {MAX_ATTRIBUTES_PER_EXECUTION} per call"
        )
    for name in attributes.indexed_fields:
        check_attribute_name(name)


def check_visibility_input(
    attributes: common_pb2.SearchAttributes, memo: common_pb2.Memo, where: str, max_bytes: int
) -> None:
    """What can be checked of a run's visibility data without the registry: names, counts, the memo's size."""
    check_search_attribute_names(attributes, where)
    check_payloads(common_pb2.Payloads(payloads=memo.fields.values()), "the memo", max_bytes)
