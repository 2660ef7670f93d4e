"""Visibility: search attributes and memos, written with the events that set them
(docs/visibility.md), the registry of attribute types, and list/count queries."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from flowforge.api.schema import message_to_json_dict
from flowforge.api.v1 import common_pb2
from flowforge.server.errors import AlreadyExists, FailedPrecondition, InvalidArgument
from flowforge.server.history.input_checks import check_visibility_input
from flowforge.server.history.namespaces import Namespaces
from flowforge.server.stores.base import ExecutionRow, Transaction
from flowforge.server.visibility import (
    MAX_ATTRIBUTES_PER_NAMESPACE,
    VALUE_TYPES,
    check_attribute_name,
    compile_query,
    page_after,
    stored_value,
    value_proto,
)
from flowforge.server.visibility import page_token as page_token_of

__all__ = ["StoredValues", "VisibilityWrites", "stored_values", "visibility_attributes"]

# name -> the value to store (None: remove the attribute).
StoredValues = dict[str, Any]
# run_id -> its search attributes and memo.
_Visibility = dict[str, tuple[common_pb2.SearchAttributes, common_pb2.Memo]]


def stored_values(
    types: dict[str, str], namespace: str, attributes: common_pb2.SearchAttributes, *, removals: bool = False
) -> StoredValues:
    """name -> StoredValue (None: remove, with ``removals``), checked against the registered ``types``."""
    values: StoredValues = {}
    for name, value in sorted(attributes.indexed_fields.items()):
        if name not in types:
            raise InvalidArgument(
                f"search attribute {name!r} is not registered in namespace {namespace!r}; register it first"
                f" with `flowforge search-attribute create --name {name} --type Keyword` (or Int, Double, Bool,"
                " Datetime) or client.add_search_attributes()"
            )
        if removals and value.WhichOneof("value") is None:
            values[name] = None
        else:
            values[name] = stored_value(name, types[name], value)
    return values


def visibility_attributes(search_attributes: common_pb2.SearchAttributes, memo: common_pb2.Memo) -> dict[str, Any]:
    """The WorkflowExecutionStarted attributes for a start's search attributes and memo (if any)."""
    attributes: dict[str, Any] = {}
    if search_attributes.indexed_fields:
        attributes["search_attributes"] = message_to_json_dict(search_attributes)
    if memo.fields:
        attributes["memo"] = message_to_json_dict(memo)
    return attributes


class VisibilityWrites(Namespaces):
    """Search attributes and memos of runs, and the namespace's attribute registry."""

    def _check_visibility_input(
        self, attributes: common_pb2.SearchAttributes, memo: common_pb2.Memo, where: str
    ) -> None:
        check_visibility_input(attributes, memo, where, self.config.max_payload_bytes)

    async def check_visibility(
        self, namespace: str, attributes: common_pb2.SearchAttributes, memo: common_pb2.Memo
    ) -> None:
        """Raises INVALID_ARGUMENT unless a later start could carry these (a schedule's action):
        types never change once registered, so what passes now passes at every fire."""
        self._check_visibility_input(attributes, memo, "search_attributes")
        await self.ensure_namespace(namespace)
        await self.read(lambda tx: self._stored_values(tx, namespace, attributes))

    async def _registered_types(self, tx: Transaction, namespace: str, names: Iterable[str]) -> dict[str, str]:
        """The namespace's registered attribute types, read again only when ``names`` holds one
        this replica has not seen registered (types never change, so cached ones stay true)."""
        types = self._attribute_types.get(namespace, {})
        if not set(names) <= types.keys():
            types = self._attribute_types[namespace] = await tx.get_search_attribute_types(namespace)
        return types

    async def _stored_values(
        self, tx: Transaction, namespace: str, attributes: common_pb2.SearchAttributes, *, removals: bool = False
    ) -> StoredValues:
        """name -> StoredValue (None: remove), checked against the namespace's registered types."""
        if not attributes.indexed_fields:
            return {}
        types = await self._registered_types(tx, namespace, attributes.indexed_fields)
        return stored_values(types, namespace, attributes, removals=removals)

    @staticmethod
    async def _write_visibility(
        tx: Transaction, row: ExecutionRow, values: StoredValues, memo: common_pb2.Memo | None = None
    ) -> None:
        for name, value in values.items():
            if value is None:
                await tx.delete_search_attribute(row.run_id, name)
        await tx.set_search_attributes(
            row.namespace, row.run_id, {name: value for name, value in values.items() if value is not None}
        )
        if memo is not None and memo.fields:
            await tx.insert_memo(row.namespace, row.run_id, memo.SerializeToString(deterministic=True))

    async def add_search_attributes(self, namespace: str, attributes: dict[str, str]) -> None:
        """Registers custom attributes (name -> type); the same type again is a no-op."""
        for name, value_type in attributes.items():
            check_attribute_name(name)
            if value_type not in VALUE_TYPES:
                raise InvalidArgument(f"search attribute {name!r} needs a type: one of {', '.join(VALUE_TYPES)}")
        await self.ensure_namespace(namespace)

        async def body(tx: Transaction) -> None:
            existing = await tx.get_search_attribute_types(namespace)
            if len(existing.keys() | attributes.keys()) > MAX_ATTRIBUTES_PER_NAMESPACE:
                raise FailedPrecondition(
                    f"namespace {namespace!r} would have {len(existing.keys() | attributes.keys())} custom search"
                    f" attributes; the limit is {MAX_ATTRIBUTES_PER_NAMESPACE} (reuse a registered one)"
                )
            for name, value_type in sorted(attributes.items()):
                if name not in existing:
                    await tx.insert_search_attribute_type(namespace, name, value_type, self.clock.now_us())
                elif existing[name] != value_type:
                    raise AlreadyExists(
                        f"search attribute {name!r} is already registered in namespace {namespace!r} as"
                        f" {existing[name]}; a type cannot change, register a new name instead"
                    )

        await self._transaction(body)

    async def list_search_attributes(self, namespace: str) -> dict[str, str]:
        """The namespace's custom search attributes: name -> type."""
        await self.ensure_namespace(namespace)
        return await self.read(lambda tx: tx.get_search_attribute_types(namespace))

    async def list_executions(
        self,
        namespace: str,
        query: str,
        *,
        page_size: int,
        page_token: bytes,
        equal: dict[str, str],
    ) -> tuple[list[ExecutionRow], _Visibility, bytes]:
        """The runs matching ``query`` (one page, in its ``ORDER BY``, newest first by
        default), their visibility data, and the token of the next page (empty after
        a page that was not full). ``page_token`` is the one the previous page returned."""
        await self.ensure_namespace(namespace)

        async def body(tx: Transaction) -> tuple[list[ExecutionRow], _Visibility, bytes]:
            condition = compile_query(query, namespace, await tx.get_search_attribute_types(namespace), equal=equal)
            rows = await tx.list_executions(
                namespace, condition, limit=page_size, after=page_after(condition.order, page_token)
            )
            token = page_token_of(condition.order, condition.order.key(rows[-1])) if len(rows) == page_size else b""
            return rows, await self._visibility_of(tx, namespace, [r.run_id for r in rows]), token

        return await self.read(body)

    async def count_executions(self, namespace: str, query: str) -> int:
        """How many runs match ``query``."""
        await self.ensure_namespace(namespace)

        async def body(tx: Transaction) -> int:
            condition = compile_query(query, namespace, await tx.get_search_attribute_types(namespace))
            return await tx.count_executions(namespace, condition)

        return await self.read(body)

    async def visibility(self, namespace: str, run_id: str) -> tuple[common_pb2.SearchAttributes, common_pb2.Memo]:
        """The run's current search attributes and its memo (for describe)."""
        found = await self.read(lambda tx: self._visibility_of(tx, namespace, [run_id]))
        return found[run_id]

    async def _visibility_of(
        self, tx: Transaction, namespace: str, run_ids: list[str]
    ) -> dict[str, tuple[common_pb2.SearchAttributes, common_pb2.Memo]]:
        values = await tx.get_search_attributes(namespace, run_ids)
        types = await self._registered_types(tx, namespace, {name for run in values.values() for name in run})
        memos = await tx.get_memos(namespace, run_ids)
        found = {}
        for run_id in run_ids:
            attributes = common_pb2.SearchAttributes()
            for name, value in values.get(run_id, {}).items():
                attributes.indexed_fields[name].CopyFrom(value_proto(types[name], value))
            memo = common_pb2.Memo()
            if run_id in memos:
                memo.ParseFromString(memos[run_id])
            found[run_id] = (attributes, memo)
        return found
