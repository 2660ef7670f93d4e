"""@activity.defn and the activity-context functions outside an activity."""

import dataclasses
import logging
from typing import TYPE_CHECKING

import pytest

from flowforge import activity
from flowforge.activity import _Definition

if TYPE_CHECKING:
    from decimal import Decimal


@dataclasses.dataclass
class Customer:
    id: str
    email: str


@activity.defn
async def create_customer(req: dict, region: str = "eu") -> Customer:
    return Customer(id="c-1", email=req["email"])


@activity.defn(name="send-welcome-mail")
def send_welcome_mail(customer: Customer) -> None:
    pass


@activity.defn
def untyped(a, b):
    return a


class Billing:
    def __init__(self, currency: str) -> None:
        self.currency = currency

    @activity.defn
    async def charge(self, customer: Customer, cents: int) -> str:
        return f"{cents} {self.currency}"


def test_bare_decorator_on_an_async_function():
    definition = create_customer.__flowforge_activity_definition__

    assert definition == _Definition(
        name="create_customer",
        fn=create_customer,
        is_async=True,
        arg_type_hints=(dict, str),
        return_type_hint=Customer,
    )


def test_named_decorator_on_a_sync_function_returns_the_function_unchanged():
    definition = send_welcome_mail.__flowforge_activity_definition__

    assert (definition.name, definition.is_async) == ("send-welcome-mail", False)
    assert definition.arg_type_hints == (Customer,)
    assert definition.return_type_hint is type(None)
    assert send_welcome_mail(Customer("c", "e")) is None


def test_missing_annotations_mean_no_hints():
    definition = untyped.__flowforge_activity_definition__

    assert definition.arg_type_hints == (None, None)
    assert definition.return_type_hint is None


def test_unresolvable_annotations_mean_no_hints():
    @activity.defn
    def price(amount: "Decimal") -> "Decimal":
        return amount

    definition = price.__flowforge_activity_definition__

    assert definition.arg_type_hints == (None,)
    assert definition.return_type_hint is None


def test_from_callable_binds_methods_and_drops_self():
    billing = Billing("EUR")

    definition = _Definition.from_callable(billing.charge)

    assert definition.name == "charge"
    assert definition.fn == billing.charge
    assert definition.arg_type_hints == (Customer, int)
    assert definition.return_type_hint is str


def test_from_callable_rejects_undecorated_functions():
    def plain() -> None: ...

    with pytest.raises(TypeError, match=r"plain is not an activity: decorate it with @activity\.defn"):
        _Definition.from_callable(plain)


@pytest.mark.parametrize("bad", [42, "name"])
def test_defn_rejects_non_callables(bad):
    with pytest.raises(TypeError, match="needs a function"):
        activity.defn(bad)


def test_defn_rejects_generators():
    def numbers():
        yield 1

    async def async_numbers():
        yield 1

    for generator in (numbers, async_numbers):
        with pytest.raises(TypeError, match="not be a generator"):
            activity.defn(generator)


def test_defn_rejects_an_empty_name():
    with pytest.raises(TypeError, match="must not be empty"):
        activity.defn(name="")(untyped)


@pytest.mark.parametrize("call", [activity.info, activity.is_cancelled, lambda: activity.heartbeat("progress")])
def test_context_functions_raise_outside_an_activity(call):
    with pytest.raises(RuntimeError, match="not in an activity"):
        call()


def test_logger_outside_an_activity_logs_plainly(caplog):
    with caplog.at_level(logging.INFO, logger="flowforge.activity"):
        activity.logger.info("hello %s", "world")

    (record,) = caplog.records
    assert record.getMessage() == "hello world"
    assert not hasattr(record, "flowforge_activity")


def test_public_names():
    assert sorted(activity.__all__) == [
        "Info",
        "defn",
        "heartbeat",
        "info",
        "is_cancelled",
        "is_worker_shutdown",
        "logger",
        "raise_complete_async",
        "wait_for_cancelled",
        "wait_for_cancelled_sync",
    ]
