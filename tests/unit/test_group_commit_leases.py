"""Group commit (server/history/group_commit.py) with a scripted transaction: the reports
and leases that start in one turn of the event loop share a transaction, and a lease
whose caller goes away is never left leased to nobody (alone it rolls back, queued it
leaves the queue, in a group under way it is given back once the group commits)."""

from __future__ import annotations

import asyncio
from typing import Any

from flowforge.server.history.group_commit import Body, GroupCommit
from testsupport.waiting import wait_until


class ScriptedTransactions:
    """Runs each transaction's body with ``tx=None``, the n-th (from 1) once
    ``gates[n]`` is set if there is one; records what each committed. An unshielded
    transaction is cancelled with its caller (rolled back)."""

    def __init__(self, *gated: int) -> None:
        self.gates = {number: asyncio.Event() for number in gated}
        self.committed: list[list[Any]] = []
        self.began = 0

    async def __call__(self, body: Body[list[Any]], *, shielded: bool = True) -> list[Any]:
        if shielded:
            return await asyncio.shield(self(body, shielded=False))
        self.began += 1
        if self.began in self.gates:
            await self.gates[self.began].wait()
        results = await body(None)  # type: ignore[arg-type]
        self.committed.append(results)
        return results


def _returns(value: Any) -> Body[Any]:
    async def body(tx: Any) -> Any:
        return value

    return body


async def test_reports_and_leases_started_in_one_turn_share_one_transaction() -> None:
    transactions = ScriptedTransactions()
    group = GroupCommit(transactions)

    async def give_back(leased: Any) -> None:
        raise AssertionError("nothing was abandoned")

    results = await asyncio.gather(
        group.run("run-b", _returns("b")),
        group.run("", _returns("leased"), lease=give_back),
        group.run("run-a", _returns("a")),
    )

    assert results == ["b", "leased", "a"]
    assert transactions.committed == [["leased", "a", "b"]]  # by run id; leases first


async def test_a_lone_lease_whose_caller_goes_away_rolls_back() -> None:
    transactions = ScriptedTransactions(1)
    group = GroupCommit(transactions)
    given_back: list[Any] = []

    async def give_back(leased: Any) -> None:
        given_back.append(leased)

    lease = asyncio.ensure_future(group.run("", _returns("leased"), lease=give_back))
    await wait_until(lambda: transactions.began == 1, timeout=10, what="the lease's transaction")
    lease.cancel()
    await asyncio.gather(lease, return_exceptions=True)
    transactions.gates[1].set()

    assert await group.run("run-a", _returns("a")) == "a"  # the group is free again
    assert transactions.committed == [["a"]]  # the lease was cancelled with its caller
    assert given_back == []


async def test_a_lease_whose_caller_goes_away_is_dropped_when_queued_and_given_back_when_under_way() -> None:
    transactions = ScriptedTransactions(1, 3, 4)
    group = GroupCommit(transactions)
    given_back: list[Any] = []

    async def give_back(leased: Any) -> None:
        given_back.append(leased)

    # A report alone holds a transaction open; a lease and a report queue behind it.
    first = asyncio.ensure_future(group.run("run-a", _returns("a")))
    await wait_until(lambda: transactions.began == 1, timeout=10, what="the first transaction")
    queued_lease = asyncio.ensure_future(group.run("", _returns("dropped"), lease=give_back))
    queued_report = asyncio.ensure_future(group.run("run-b", _returns("b")))
    await asyncio.sleep(0)
    queued_lease.cancel()  # before its group began: it leaves the queue
    await asyncio.gather(queued_lease, return_exceptions=True)
    transactions.gates[1].set()
    assert await asyncio.wait_for(asyncio.gather(first, queued_report), 10) == ["a", "b"]
    assert transactions.committed == [["a"], ["b"]]

    # A lease in a group under way commits with it, and is given back once it has.
    holder = asyncio.ensure_future(group.run("run-c", _returns("c")))
    await wait_until(lambda: transactions.began == 3, timeout=10, what="the third transaction")
    lease = asyncio.ensure_future(group.run("", _returns("leased"), lease=give_back))
    report = asyncio.ensure_future(group.run("run-d", _returns("d")))
    await asyncio.sleep(0)
    transactions.gates[3].set()
    await wait_until(lambda: transactions.began == 4, timeout=10, what="the group's transaction")
    lease.cancel()
    await asyncio.gather(lease, return_exceptions=True)
    assert given_back == []
    transactions.gates[4].set()
    assert await asyncio.wait_for(asyncio.gather(holder, report), 10) == ["c", "d"]
    await wait_until(lambda: given_back == ["leased"], timeout=10, what="the abandoned lease to be given back")
    assert transactions.committed[-1] == ["leased", "d"]
