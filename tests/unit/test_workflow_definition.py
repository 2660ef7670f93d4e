"""Declaring workflows with the flowforge.workflow decorators, and where its functions may be called."""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest

from flowforge import testing, workflow
from flowforge.api.v1 import common_pb2


@workflow.defn
class Onboarding:
    def __init__(self) -> None:
        self.approved_by = ""

    @workflow.run
    async def run(self, req: dict) -> dict:
        return req

    @workflow.signal
    async def approve(self, who: str) -> None:
        self.approved_by = who

    @workflow.signal(name="reject-application")
    def reject(self, reason: str) -> None: ...

    @workflow.query
    def status(self) -> str:
        return "approved" if self.approved_by else "pending"


def test_a_workflow_is_named_after_its_class_and_records_its_run_method_and_handlers() -> None:
    definition = workflow._Definition.from_class(Onboarding)

    assert definition.name == "Onboarding"
    assert definition.cls is Onboarding
    assert definition.run_fn is Onboarding.run
    assert sorted(definition.signals) == ["approve", "reject-application"]
    assert definition.signals["reject-application"].fn is Onboarding.reject
    assert sorted(definition.queries) == ["status"]


def test_a_client_can_find_the_definition_from_the_run_method() -> None:
    assert workflow._Definition.from_run_fn(Onboarding.run) is workflow._Definition.from_class(Onboarding)


def test_the_workflow_type_name_can_be_chosen() -> None:
    @workflow.defn(name="customer-onboarding")
    class OnboardingV2:
        @workflow.run
        async def run(self) -> None: ...

    assert workflow._Definition.from_class(OnboardingV2).name == "customer-onboarding"


def test_run_arg_types_are_the_hints_of_the_run_parameters_after_self() -> None:
    @workflow.defn
    class Typed:
        @workflow.run
        async def run(self, req: dict, count: int, untyped) -> None: ...  # type: ignore[no-untyped-def]

    assert workflow._Definition.from_class(Typed).run_arg_types() == [dict, int, None]


def test_an_undecorated_class_or_function_is_not_a_workflow() -> None:
    class Subclass(Onboarding):
        pass

    async def run(req: dict) -> dict:
        return req

    with pytest.raises(TypeError, match=r"is not a workflow: decorate the class with @workflow\.defn"):
        workflow._Definition.from_class(Subclass)
    with pytest.raises(TypeError, match="is not a workflow run method"):
        workflow._Definition.from_run_fn(run)


def test_a_workflow_needs_exactly_one_run_method() -> None:
    class NoRun:
        async def go(self) -> None: ...

    class TwoRuns:
        @workflow.run
        async def first(self) -> None: ...

        @workflow.run
        async def second(self) -> None: ...

    with pytest.raises(TypeError, match=r"NoRun needs exactly one @workflow.run method \(found: none\)"):
        workflow.defn(NoRun)
    with pytest.raises(TypeError, match=r"TwoRuns needs exactly one @workflow.run method \(found: first, second\)"):
        workflow.defn(TwoRuns)


def test_the_run_method_must_be_async() -> None:
    with pytest.raises(TypeError, match=r"@workflow\.run method .*run must be declared with async def"):

        class Blocking:
            @workflow.run
            def run(self) -> None: ...


def test_a_query_handler_must_not_be_async() -> None:
    with pytest.raises(TypeError, match=r"@workflow\.query method .*status must be a plain def"):

        class AsyncQuery:
            @workflow.query
            async def status(self) -> str: ...


def test_two_signal_handlers_cannot_share_a_name() -> None:
    class Clash:
        @workflow.run
        async def run(self) -> None: ...

        @workflow.signal(name="go")
        def first(self) -> None: ...

        @workflow.signal(name="go")
        def second(self) -> None: ...

    with pytest.raises(TypeError, match="two signal handlers named 'go'"):
        workflow.defn(Clash)


def test_cancellation_types_have_the_wire_values() -> None:
    assert [(t.name, t.value) for t in workflow.ActivityCancellationType] == [
        ("TRY_CANCEL", common_pb2.ACTIVITY_CANCELLATION_TYPE_TRY_CANCEL),
        ("WAIT_CANCELLATION_COMPLETED", common_pb2.ACTIVITY_CANCELLATION_TYPE_WAIT_CANCELLATION_COMPLETED),
        ("ABANDON", common_pb2.ACTIVITY_CANCELLATION_TYPE_ABANDON),
    ]


@pytest.mark.parametrize(
    "call",
    [
        workflow.info,
        workflow.now,
        workflow.random,
        workflow.uuid4,
        lambda: workflow.start_activity("charge", start_to_close_timeout=timedelta(seconds=1)),
    ],
    ids=["info", "now", "random", "uuid4", "start_activity"],
)
async def test_workflow_functions_refuse_to_run_outside_workflow_code(call) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(RuntimeError, match="not in workflow code"):
        call()


async def test_workflow_coroutines_refuse_to_run_outside_workflow_code() -> None:
    with pytest.raises(RuntimeError, match="not in workflow code"):
        await workflow.sleep(timedelta(seconds=1))
    with pytest.raises(RuntimeError, match="not in workflow code"):
        await workflow.execute_activity("charge", start_to_close_timeout=timedelta(seconds=1))
    with pytest.raises(RuntimeError, match="not in workflow code"):
        await workflow.wait_condition(lambda: True)


def test_the_workflow_logger_logs_plainly_outside_workflow_code(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="flowforge.workflow")

    workflow.logger.info("loading %d workflows", 3)

    (record,) = caplog.records
    assert record.getMessage() == "loading 3 workflows"
    assert record.filename == "test_workflow_definition.py"


@pytest.mark.parametrize("module", [workflow, testing], ids=lambda module: module.__name__)
def test_every_public_name_is_documented(module) -> None:  # type: ignore[no-untyped-def]
    undocumented = [name for name in module.__all__ if name != "logger" and not getattr(module, name).__doc__]
    assert undocumented == []
