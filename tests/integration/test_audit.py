"""The audit log end to end: operator and admin actions are appended with the
authenticated principal, ``flowforge audit verify`` passes on an untouched log and
fails naming the row after one is edited or deleted; PostgreSQL refuses both."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from flowforge import Client
from flowforge.api.v1 import access_pb2
from flowforge.api.v1 import workflow_service_pb2 as pb
from tests.integration._processes import ADMIN_KEY_FILE, ServerProcess, _env


def flowforge(auth_server_process: ServerProcess, key: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "flowforge.cli", *args, "--address", auth_server_process.address],
        capture_output=True,
        text=True,
        timeout=60,
        env=_env(FLOWFORGE_API_KEY=key),
    )


async def _act(auth_server_process: ServerProcess, admin_key: str) -> str:
    """Audited actions by an admin and an operator; returns the operator key's id."""
    admin = await Client.connect(auth_server_process.address, api_key=admin_key)
    created = await admin.workflow_service.call(
        "CreateApiKey",
        access_pb2.CreateApiKeyRequest(namespace="default", role="operator", name="ops", reason="on call"),
    )
    operator = await Client.connect(auth_server_process.address, api_key=created.key)
    await operator.workflow_service.call(
        "StartWorkflowExecution",
        pb.StartWorkflowExecutionRequest(namespace="default", workflow_id="w1", workflow_type="wf", task_queue="q"),
    )
    await operator.workflow_service.call(
        "TerminateWorkflowExecution",
        pb.TerminateWorkflowExecutionRequest(namespace="default", execution={"workflow_id": "w1"}, reason="stuck"),
    )
    await admin.workflow_service.call("RegisterNamespace", pb.RegisterNamespaceRequest(name="payments"))
    for client in (admin, operator):
        await client.close()
    return str(created.api_key.id)


async def _tamper(store_url: str, statement: str) -> None:
    """Runs ``statement`` on the store behind the server's back (past PostgreSQL's trigger)."""
    if not store_url.startswith("postgres"):
        with sqlite3.connect(store_url) as connection:
            connection.execute(statement)
        return
    connection = await asyncpg.connect(store_url)
    try:
        with pytest.raises(asyncpg.PostgresError, match="audit_log is append-only"):
            await connection.execute(statement)
        async with connection.transaction():
            await connection.execute("SET LOCAL session_replication_role = replica")  # triggers off: a superuser's edit
            await connection.execute(statement)
    finally:
        await connection.close()


async def test_actions_are_appended_with_the_principal(auth_server_process: ServerProcess, tmp_path: Path) -> None:
    admin_key = (tmp_path / ADMIN_KEY_FILE).read_text().strip()
    operator_id = await _act(auth_server_process, admin_key)
    listed = flowforge(auth_server_process, admin_key, "audit", "list", "--output", "json")
    assert listed.returncode == 0, listed.stderr
    rows: list[dict[str, Any]] = json.loads(listed.stdout)
    summary = [(r["seq"], r["action"], r["namespace"], r["target"], r["reason"]) for r in reversed(rows)]
    assert summary == [
        (1, "CreateApiKey", "*", summary[0][3], "--bootstrap-admin-key-file: the store had no admin key"),
        (2, "CreateApiKey", "default", f"apikey:{operator_id}", "on call"),
        (3, "TerminateWorkflowExecution", "default", "workflow:w1", "stuck"),
        (4, "RegisterNamespace", "payments", "", ""),
    ]
    assert rows[1]["principal"].startswith(f"apikey:{operator_id}")
    verified = flowforge(auth_server_process, admin_key, "audit", "verify")
    assert verified.returncode == 0 and "audit log intact: 4 rows" in verified.stdout, verified


async def test_dag_publishes_and_alias_moves_are_audited_with_the_dag_and_version(
    auth_server_process: ServerProcess, tmp_path: Path
) -> None:
    admin_key = (tmp_path / ADMIN_KEY_FILE).read_text().strip()
    admin = await Client.connect(auth_server_process.address, api_key=admin_key)
    first = await admin.publish_dag(
        {"name": "audited", "tasks": [{"id": "a", "activity": "A", "start_to_close_timeout": 5}]}
    )
    second = await admin.publish_dag(
        {"name": "audited", "tasks": [{"id": "b", "activity": "B", "start_to_close_timeout": 5}]}, alias="prod"
    )
    await admin.set_dag_alias("audited", "prod", first, reason="roll back")
    await admin.close()
    listed = flowforge(auth_server_process, admin_key, "audit", "list", "--output", "json")
    assert listed.returncode == 0, listed.stderr
    rows = [(r["action"], r["target"], r["reason"]) for r in reversed(json.loads(listed.stdout))][1:]
    assert rows == [
        ("PublishDag", f"dag:audited={first}", ""),
        ("PublishDag", f"dag:audited@prod={second}", ""),
        ("SetDagAlias", f"dag:audited@prod={first}", "roll back"),
    ]


@pytest.mark.parametrize(
    ("statement", "bad_row"),
    [
        ("UPDATE audit_log SET reason = 'routine' WHERE seq = 3", "row 3 was edited"),
        ("UPDATE audit_log SET principal = 'someone else' WHERE seq = 2", "row 2 was edited"),
        ("DELETE FROM audit_log WHERE seq = 2", "row 2 is missing"),
        ("DELETE FROM audit_log WHERE seq = 4", "row 4 is missing"),
    ],
)
async def test_verify_fails_naming_the_row_after_an_edit_or_a_delete(
    auth_server_process: ServerProcess, store_url: str, tmp_path: Path, statement: str, bad_row: str
) -> None:
    admin_key = (tmp_path / ADMIN_KEY_FILE).read_text().strip()
    await _act(auth_server_process, admin_key)
    assert flowforge(auth_server_process, admin_key, "audit", "verify").returncode == 0
    await _tamper(store_url, statement)
    verified = flowforge(auth_server_process, admin_key, "audit", "verify")
    assert verified.returncode == 1
    assert verified.stderr.startswith("error: audit log broken at row") and bad_row in verified.stderr, verified.stderr


async def test_a_key_of_one_namespace_is_refused_the_audit_log(
    auth_server_process: ServerProcess, tmp_path: Path
) -> None:
    admin_key = (tmp_path / ADMIN_KEY_FILE).read_text().strip()
    created = flowforge(
        auth_server_process, admin_key, "apikey", "create", "--namespace", "default", "--role", "admin", "-o", "json"
    )
    namespace_admin = json.loads(created.stdout)["key"]
    refused = flowforge(auth_server_process, namespace_admin, "audit", "verify")
    assert refused.returncode == 1 and "PERMISSION_DENIED" in refused.stderr
    listed = json.loads(flowforge(auth_server_process, namespace_admin, "audit", "list", "-o", "json").stdout)
    assert {r["namespace"] for r in listed} == {"default"}  # its own namespace's rows only
