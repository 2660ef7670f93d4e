"""Worker construction refuses what it could not run."""

from datetime import timedelta

import pytest

from flowforge import activity, workflow
from flowforge.client import Client
from flowforge.worker import Worker


@activity.defn
async def charge(cents: int) -> None: ...


@activity.defn(name="charge")
def charge_again(cents: int) -> None: ...


def not_an_activity() -> None: ...


@workflow.defn
class Billing:
    @workflow.run
    async def run(self) -> None: ...


@workflow.defn(name="Billing")
class BillingV2:
    @workflow.run
    async def run(self) -> None: ...


class NotAWorkflow:
    async def run(self) -> None: ...


@pytest.fixture
async def client():
    # Nothing is called: construction must not need the server.
    client = await Client.connect("127.0.0.1:1", connect_timeout=None)
    yield client
    await client.close()


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({}, ValueError, "at least one workflow or activity"),
        ({"activities": [not_an_activity]}, TypeError, "not_an_activity is not an activity"),
        ({"workflows": [NotAWorkflow]}, TypeError, "is not a workflow"),
        ({"workflows": [Billing.run]}, TypeError, "is not a workflow"),
        ({"activities": [charge, charge_again]}, ValueError, "more than one activity .* 'charge'"),
        ({"workflows": [Billing, BillingV2]}, ValueError, "more than one workflow .* 'Billing'"),
        (
            {"activities": [charge], "max_concurrent_activities": 0},
            ValueError,
            "max_concurrent_activities must be at least 1",
        ),
        (
            {"workflows": [Billing], "max_concurrent_workflow_task_polls": 0},
            ValueError,
            "max_concurrent_workflow_task_polls must be at least 1",
        ),
        (
            {"workflows": [Billing], "max_cached_workflows": -1},
            ValueError,
            "max_cached_workflows must not be negative",
        ),
        (
            {"activities": [charge], "graceful_shutdown_timeout": timedelta(seconds=-1)},
            ValueError,
            "graceful_shutdown_timeout",
        ),
        (
            {"activities": [charge], "task_transport": "carrier-pigeon"},
            ValueError,
            "task_transport must be 'stream' or 'unary'",
        ),
    ],
)
async def test_invalid_configurations_are_refused(client, options, error, message):
    with pytest.raises(error, match=message):
        Worker(client, task_queue="billing", **options)


async def test_an_empty_task_queue_is_refused(client):
    with pytest.raises(ValueError, match="task_queue"):
        Worker(client, task_queue="", activities=[charge])


async def test_a_valid_worker_needs_no_server_to_be_built(client):
    worker = Worker(client, task_queue="billing", workflows=[Billing], activities=[charge])

    assert worker.task_queue == "billing"


# --------------------------------------------------------------------------- build ids


@workflow.defn
class Invoicing:
    @workflow.run
    async def run(self) -> None: ...


async def test_the_default_build_id_is_a_stable_hash_of_the_workflow_code(client: Client) -> None:
    first = Worker(client, task_queue="q", workflows=[Billing, Invoicing])
    again = Worker(client, task_queue="q", workflows=[Invoicing, Billing])
    changed = Worker(client, task_queue="q", workflows=[BillingV2, Invoicing])  # same names, other code

    assert first.build_id == again.build_id
    assert len(first.build_id) == 20 and int(first.build_id, 16) >= 0
    assert changed.build_id != first.build_id
    assert Worker(client, task_queue="q", workflows=[Billing], build_id="v7").build_id == "v7"
