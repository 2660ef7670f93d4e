"""GroupCommit's concurrency: how many report transactions run at once, and how the
reports that find none free are grouped. A fake transaction runner that holds each
transaction open until the test lets it commit; the stores' side is in
tests/integration/test_group_commit.py."""

from __future__ import annotations

import asyncio
import gc
import logging
import random
from typing import Any, cast

import pytest

from flowforge.server.history.group_commit import Body, GroupCommit
from flowforge.server.stores.base import Transaction
from testsupport.waiting import wait_until, within

DEADLINE_S = 10.0


class HeldTransactions:
    """Runs bodies in fake transactions that stay open until :meth:`commit` or
    :meth:`commit_all` lets them end."""

    def __init__(self) -> None:
        self.open = 0
        self.most_open = 0
        self.begun: list[list[Any]] = []  # each transaction's answers, in the order they began
        self.under_way: list[list[Any]] = []  # the answers of those not yet committed
        self._all_committed = False
        self._commit: dict[tuple[Any, ...], asyncio.Event] = {}

    @property
    def sizes(self) -> list[int]:
        """Reports per transaction, in the order they began."""
        return [len(answers) for answers in self.begun]

    async def __call__(self, body: Body[list[Any]], *, shielded: bool = True) -> list[Any]:
        if shielded:  # as EngineCore._transaction: a report runs on if its caller goes away
            return await asyncio.shield(self(body, shielded=False))
        self.open += 1
        self.most_open = max(self.most_open, self.open)
        try:
            results = await body(cast(Transaction, None))  # the bodies ignore it
            self.begun.append(results)
            self.under_way.append(results)
            commit = self._event(tuple(results))
            try:
                await commit.wait()
            finally:
                self.under_way.remove(results)
            return results
        finally:
            self.open -= 1

    def _event(self, answers: tuple[Any, ...]) -> asyncio.Event:
        event = self._commit.setdefault(answers, asyncio.Event())
        if self._all_committed:
            event.set()
        return event

    def commit(self, *answers: Any) -> None:
        """Lets the transaction whose reports answer ``answers`` end (now or once it begins)."""
        self._event(answers).set()

    def commit_all(self) -> None:
        """Lets every transaction end, those under way and those to come."""
        self._all_committed = True
        for event in self._commit.values():
            event.set()


def report(value: int) -> Body[int]:
    async def body(_tx: Transaction) -> int:
        return value

    return body


async def test_reports_run_in_as_many_transactions_at_once_as_allowed_and_the_rest_in_one_group() -> None:
    transactions = HeldTransactions()
    group = GroupCommit(transactions, max_in_flight=3)
    answers = []
    for i in range(3):  # one after another: each finds a free transaction, runs alone
        answers.append(asyncio.create_task(group.run(f"run-{i}", report(i))))
        await wait_until(lambda: transactions.open == len(answers), timeout=DEADLINE_S, what="one more open")
    # Three at once, not waiting for each other; the next four queue.
    answers += [asyncio.create_task(group.run(f"run-{i}", report(i))) for i in range(3, 7)]
    await asyncio.sleep(0)  # each queued report has run up to its wait
    assert transactions.sizes == [1, 1, 1]
    transactions.commit_all()
    assert await asyncio.gather(*answers) == list(range(7))
    # The first transaction to end committed the queued four together.
    assert transactions.sizes == [1, 1, 1, 4]
    assert transactions.most_open == 3


async def test_reports_that_arrive_in_one_loop_turn_share_a_transaction_though_others_are_free() -> None:
    # As a worker stream message's reports do: one transaction, not one each.
    transactions = HeldTransactions()
    group = GroupCommit(transactions, max_in_flight=3)
    transactions.commit_all()
    assert await asyncio.gather(*(group.run(f"run-{i}", report(i)) for i in range(5))) == list(range(5))
    assert transactions.sizes == [5]


async def test_with_one_in_flight_a_report_waits_for_the_transaction_under_way() -> None:
    transactions = HeldTransactions()
    group = GroupCommit(transactions)
    first = asyncio.create_task(group.run("run-0", report(0)))
    await wait_until(lambda: transactions.open == 1, timeout=DEADLINE_S, what="the first transaction open")
    others = [asyncio.create_task(group.run(f"run-{i}", report(i))) for i in range(1, 4)]
    await asyncio.sleep(0)  # each queued report has run up to its wait
    assert transactions.sizes == [1]
    transactions.commit_all()
    assert await asyncio.gather(first, *others) == [0, 1, 2, 3]
    assert transactions.sizes == [1, 3]
    assert transactions.most_open == 1


async def test_a_freed_place_takes_a_new_report_at_once() -> None:
    # Once every transaction ended, none counts as under way: a new report runs alone
    # at once, and one more beside it.
    transactions = HeldTransactions()
    group = GroupCommit(transactions, max_in_flight=2)
    transactions.commit_all()
    assert await asyncio.gather(*(group.run(f"run-{i}", report(i)) for i in range(5))) == list(range(5))
    first = asyncio.create_task(group.run("a", report(10)))
    await wait_until(lambda: len(transactions.sizes) == 2, timeout=DEADLINE_S, what="the first alone")
    assert await asyncio.gather(first, group.run("b", report(11))) == [10, 11]
    assert transactions.sizes == [5, 1, 1]


async def test_a_failed_report_whose_caller_went_away_is_noted_not_left_unretrieved(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Its answer fails with nobody awaiting it: asyncio would log that as a
    # never-retrieved exception with a traceback (an error line in the server's log).
    transactions = HeldTransactions()
    group = GroupCommit(transactions)
    unretrieved: list[dict[str, Any]] = []
    asyncio.get_running_loop().set_exception_handler(lambda _loop, context: unretrieved.append(context))

    async def failing(_tx: Transaction) -> int:
        raise ValueError("the report's own words")

    first = asyncio.create_task(group.run("run-0", report(0)))
    await wait_until(lambda: transactions.open == 1, timeout=DEADLINE_S, what="the first transaction open")
    gone = asyncio.create_task(group.run("run-1", failing))
    await asyncio.sleep(0)  # queued behind the first
    gone.cancel()
    with caplog.at_level(logging.INFO, logger="flowforge.server.history.group_commit"):
        transactions.commit_all()
        assert await first == 0
        await wait_until(lambda: "caller went away failed" in caplog.text, timeout=DEADLINE_S, what="the note")
    del gone
    gc.collect()
    assert unretrieved == []
    assert "ValueError" in caplog.text and "own words" not in caplog.text


async def test_a_report_whose_run_a_transaction_under_way_holds_waits_for_it_and_its_company_does_not() -> None:
    # Begun beside it, it would wait on the run's row lock with its whole group.
    transactions = HeldTransactions()
    group = GroupCommit(transactions, max_in_flight=3)
    first = asyncio.create_task(group.run("run-0", report(0)))
    await wait_until(lambda: transactions.open == 1, timeout=DEADLINE_S, what="the first transaction open")
    # In one loop turn: one more of run-0 and one of run-1; a transaction is free.
    again, other = (
        asyncio.create_task(group.run(run_id, report(value))) for run_id, value in (("run-0", 1), ("run-1", 2))
    )
    await wait_until(lambda: transactions.open == 2, timeout=DEADLINE_S, what="run-1's transaction open")
    transactions.commit(2)
    assert await within(other, timeout=DEADLINE_S, what="run-1's answer") == 2
    assert transactions.begun == [[0], [2]]  # run-0's second report did not begin beside its first
    assert not again.done()
    transactions.commit(0)
    assert await within(first, timeout=DEADLINE_S, what="the first answer") == 0
    transactions.commit(1)
    assert await within(again, timeout=DEADLINE_S, what="the held-back answer") == 1
    assert transactions.begun == [[0], [2], [1]]
    assert transactions.most_open == 2


async def test_a_report_held_back_joins_the_next_group_rather_than_one_of_its_own() -> None:
    # While another transaction is under way, the reports held back for the one that
    # ended wait for it to end, and go with what queued meanwhile (no smaller groups).
    transactions = HeldTransactions()
    group = GroupCommit(transactions, max_in_flight=2)
    first = asyncio.create_task(group.run("run-0", report(0)))
    await wait_until(lambda: transactions.open == 1, timeout=DEADLINE_S, what="run-0's transaction open")
    second = asyncio.create_task(group.run("run-1", report(1)))
    await wait_until(lambda: transactions.open == 2, timeout=DEADLINE_S, what="run-1's transaction open")
    # Both transactions under way: these two queue.
    queued = [asyncio.create_task(group.run(run_id, report(value))) for run_id, value in (("run-0", 2), ("run-2", 3))]
    await asyncio.sleep(0)  # each queued report has run up to its wait
    transactions.commit(1)  # run-1's transaction ends and takes the queue: run-2's report, not run-0's
    assert await within(second, timeout=DEADLINE_S, what="run-1's answer") == 1
    await wait_until(lambda: transactions.begun[-1] == [3], timeout=DEADLINE_S, what="run-2's report begun")
    transactions.commit(0)  # run-0's ends while run-2's is under way
    assert await within(first, timeout=DEADLINE_S, what="the first answer") == 0
    late = asyncio.create_task(group.run("run-3", report(4)))
    transactions.commit(2, 4)
    transactions.commit(3)
    assert await within(asyncio.gather(*queued, late), timeout=DEADLINE_S, what="the answers") == [2, 3, 4]
    assert transactions.begun == [[0], [1], [3], [2, 4]]
    assert transactions.most_open == 2


@pytest.mark.parametrize("seed", range(5))
async def test_no_two_transactions_under_way_hold_one_run_and_every_report_commits_once(seed: int) -> None:
    # Reports of a few runs arrive (one to three per loop turn) while random
    # transactions under way commit: whatever the order, none begins holding a run
    # another holds, and every report is answered once, with its own answer.
    rng = random.Random(seed)
    transactions = HeldTransactions()
    group = GroupCommit(transactions, max_in_flight=4)
    beside: list[tuple[str, int]] = []

    def run_report(run_id: str, number: int) -> Body[tuple[str, int]]:
        async def body(_tx: Transaction) -> tuple[str, int]:
            if any(run_id == other for answers in transactions.under_way for other, _ in answers):
                beside.append((run_id, number))
            return run_id, number

        return body

    answers: list[asyncio.Task[tuple[str, int]]] = []
    while len(answers) < 200:
        if rng.random() < 0.5:
            for _ in range(rng.randint(1, 3)):
                run_id = f"run-{rng.randrange(6)}"
                answers.append(asyncio.create_task(group.run(run_id, run_report(run_id, len(answers)))))
        elif transactions.under_way:
            transactions.commit(*rng.choice(transactions.under_way))
        await asyncio.sleep(0)
    transactions.commit_all()
    got = await within(asyncio.gather(*answers), timeout=DEADLINE_S, what="every answer")
    assert [number for _, number in got] == list(range(len(answers)))
    assert beside == []
    committed = [answer for began in transactions.begun for answer in began]
    assert sorted(committed, key=lambda answer: answer[1]) == got  # each once
    assert transactions.most_open <= 4
