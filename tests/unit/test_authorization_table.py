"""The declared authorization table covers every RPC, and roles include what docs/architecture.md says."""

from __future__ import annotations

import re

import pytest
from google.protobuf.descriptor import FileDescriptor

from flowforge.api.v1 import access_pb2, command_pb2, common_pb2, event_pb2, workflow_service_pb2
from flowforge.server.auth.api_keys import ApiKeyAuthenticator, new_api_key
from flowforge.server.auth.principal import Principal
from flowforge.server.auth.roles import RPC_RULES, NamespaceSource, Role, parse_role
from flowforge.server.stores.rows import ApiKeyRow
from flowforge.server.tokens import TaskToken, TokenKey, TokenSigner, token_namespace

_API_FILES: list[FileDescriptor] = [
    m.DESCRIPTOR for m in (workflow_service_pb2, access_pb2, event_pb2, common_pb2, command_pb2)
]


def _declared_rpcs() -> set[str]:
    return {
        f"/{service.full_name}/{method.name}"
        for file in _API_FILES
        for service in file.services_by_name.values()
        for method in service.methods
    }


def test_every_rpc_of_every_service_is_in_the_table() -> None:
    missing = sorted(_declared_rpcs() - RPC_RULES.keys())
    assert not missing, f"RPCs without an authorization rule (add them to RPC_RULES): {missing}"


def test_the_table_names_only_rpcs_that_exist() -> None:
    assert not sorted(RPC_RULES.keys() - _declared_rpcs())


def test_every_namespaced_rule_reads_a_field_its_request_has() -> None:
    methods = {
        f"/{service.full_name}/{method.name}": method
        for file in _API_FILES
        for service in file.services_by_name.values()
        for method in service.methods
    }
    for name, rule in RPC_RULES.items():
        fields = methods[name].input_type.fields_by_name
        if rule.source is NamespaceSource.FIELD:
            # A dotted path reads into a message field (a stream's hello.namespace).
            *path, last = rule.field.split(".")
            for part in path:
                assert part in fields and fields[part].message_type is not None, name
                fields = fields[part].message_type.fields_by_name
            assert last in fields, name
        if rule.source is NamespaceSource.TASK_TOKEN:
            assert "task_token" in fields and "namespace" in fields, name


@pytest.mark.parametrize(
    ("role", "includes"),
    [
        (Role.READER, {Role.READER}),
        (Role.WRITER, {Role.READER, Role.WRITER}),
        (Role.WORKER, {Role.READER, Role.WORKER}),
        (Role.OPERATOR, {Role.READER, Role.WRITER, Role.OPERATOR}),
        (Role.ADMIN, set(Role)),
    ],
)
def test_each_role_includes_the_ones_before_it(role: Role, includes: set[Role]) -> None:
    assert {r for r in Role if role.includes(r)} == includes


def test_parse_role_names_the_roles_there_are() -> None:
    assert parse_role(" Operator ") is Role.OPERATOR
    with pytest.raises(ValueError, match="reader, writer, worker, operator, admin"):
        parse_role("root")


def test_a_grant_covers_its_namespace_and_star_covers_all() -> None:
    scoped = Principal("p", {"alpha": frozenset({Role.WRITER})})
    assert scoped.allows(Role.READER, "alpha") and scoped.allows(Role.WRITER, "alpha")
    assert not scoped.allows(Role.READER, "beta") and not scoped.allows(Role.OPERATOR, "alpha")
    assert not scoped.allows(Role.READER, "*")
    everywhere = Principal("q", {"*": frozenset({Role.READER}), "alpha": frozenset({Role.WORKER})})
    assert everywhere.allows(Role.READER, "beta") and everywhere.allows(Role.READER, "*")
    assert everywhere.allows(Role.WORKER, "alpha") and not everywhere.allows(Role.WORKER, "beta")


def test_task_token_namespace_is_read_without_the_secret() -> None:
    raw = TokenSigner([TokenKey("0", b"s" * 32, 0)], now_us=lambda: 0).sign(TaskToken("beta", 7, 1, "ACTIVITY", "run"))
    assert token_namespace(raw) == "beta"
    assert token_namespace(b"") is None and token_namespace(b"ff1.!!!.x") is None and token_namespace(b"junk") is None


async def test_an_api_key_is_stored_only_as_a_salted_hash_and_checked_against_it() -> None:
    issued = new_api_key(
        name="ci", namespace="alpha", role=Role.WORKER, created_by="t", now_us=1_000_000, expires_in_s=60
    )
    secret = issued.key.split("_", 2)[2]
    assert secret.encode() not in repr(issued.row).encode()
    assert issued.key.startswith(f"ffk_{issued.row.key_id}_")
    rows = {issued.row.key_id: issued.row}
    now = [2_000_000]

    async def lookup(key_id: str) -> ApiKeyRow | None:
        return rows.get(key_id)

    keys = ApiKeyAuthenticator(lookup, cache_s=0.0, now_us=lambda: now[0])
    principal = await keys.authenticate(issued.key)
    assert principal is not None and principal.name == f"apikey:{issued.row.key_id}"
    assert principal.allows(Role.WORKER, "alpha") and not principal.allows(Role.WRITER, "alpha")
    assert await keys.authenticate(issued.key[:-1] + ("A" if issued.key[-1] != "A" else "B")) is None
    assert await keys.authenticate("ffk_0000000000000000_" + "a" * 43) is None
    assert await keys.authenticate("ffk_x") is None
    now[0] = 62_000_000  # past the expiry
    assert await keys.authenticate(issued.key) is None


def test_docs_security_md_lists_every_rpc_under_its_minimal_role() -> None:
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "security.md").read_text()
    rows = {
        line.split("|")[1].strip(" `"): line.split("|")[2]
        for line in text.splitlines()
        if line.startswith("| `") and line.split("|")[1].strip(" `") in {r.value for r in Role}
    }
    misplaced = [
        f"{method.rpartition('/')[2]} ({rule.role.value})"
        for method, rule in RPC_RULES.items()
        if method.rpartition("/")[2] not in re.split(r"[^A-Za-z]+", rows.get(rule.role.value, ""))
    ]
    assert not misplaced, f"docs/security.md's roles table lacks these RPCs in their role's row: {misplaced}"
