"""Workflow updates as Temporal code sends and handles them."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from temporalio import workflow
from temporalio.client import (
    Client,
    WithStartWorkflowOperation,
    WorkflowUpdateFailedError,
    WorkflowUpdateStage,
)
from temporalio.common import WorkflowIDConflictPolicy
from temporalio.exceptions import ApplicationError
from temporalio.worker import Replayer, Worker

LANGUAGES = ("en", "fr", "de")


@workflow.defn
class Greeter:
    def __init__(self) -> None:
        self.language = "en"
        self.changes: list[str] = []
        self.done = False

    @workflow.run
    async def run(self) -> list[str]:
        await workflow.wait_condition(lambda: self.done)
        await workflow.wait_condition(workflow.all_handlers_finished)
        return self.changes

    @workflow.update
    async def set_language(self, language: str) -> str:
        previous = self.language
        await workflow.sleep(timedelta(milliseconds=10))
        self.language = language
        self.changes.append(language)
        return previous

    @set_language.validator
    def validate_language(self, language: str) -> None:
        if language not in LANGUAGES:
            raise ValueError(f"{language!r} is not supported")

    @workflow.update
    def refuse(self) -> None:
        raise ApplicationError("refused", type="Refused")

    @workflow.signal
    def finish(self) -> None:
        self.done = True


async def test_updates_validators_stages_and_deduplication(client: Client) -> None:
    task_queue = f"updates-{uuid.uuid4()}"
    async with Worker(client, task_queue=task_queue, workflows=[Greeter]):
        handle = await client.start_workflow(Greeter.run, id=f"greeter-{uuid.uuid4()}", task_queue=task_queue)
        assert await handle.execute_update(Greeter.set_language, "fr") == "en"

        with pytest.raises(WorkflowUpdateFailedError) as rejected:
            await handle.execute_update(Greeter.set_language, "xx")
        assert isinstance(rejected.value.cause, ApplicationError)
        assert "'xx' is not supported" in rejected.value.cause.message

        with pytest.raises(WorkflowUpdateFailedError) as failed:
            await handle.execute_update(Greeter.refuse)
        assert isinstance(failed.value.cause, ApplicationError) and failed.value.cause.type == "Refused"

        update = await handle.start_update(
            Greeter.set_language, "de", id="to-german", wait_for_stage=WorkflowUpdateStage.ACCEPTED
        )
        assert update.id == "to-german"
        assert await update.result() == "fr"
        # The same update id again: the first outcome, the handler not run again.
        assert await handle.execute_update(Greeter.set_language, "de", id="to-german") == "fr"
        assert await handle.get_update_handle_for(Greeter.set_language, "to-german").result() == "fr"

        await handle.signal(Greeter.finish)
        assert await handle.result() == ["fr", "de"]
    await Replayer(workflows=[Greeter]).replay_workflow(await handle.fetch_history())


async def test_update_with_start(client: Client) -> None:
    task_queue = f"updates-{uuid.uuid4()}"
    workflow_id = f"greeter-{uuid.uuid4()}"
    async with Worker(client, task_queue=task_queue, workflows=[Greeter]):
        for language, previous in (("fr", "en"), ("de", "fr")):
            operation = WithStartWorkflowOperation(
                Greeter.run,
                id=workflow_id,
                task_queue=task_queue,
                id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
            )
            result = await client.execute_update_with_start_workflow(
                Greeter.set_language, language, start_workflow_operation=operation
            )
            assert result == previous
        handle = await operation.workflow_handle()
        await handle.signal(Greeter.finish)
        assert await handle.result() == ["fr", "de"]
