"""What every room of the engine shares: the store's transactions and reads, the
limits, the namespace check and the fencing of leases."""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from opentelemetry import trace
from opentelemetry.trace import Tracer

from flowforge.api.schema import ExecutionStatus, TaskKind, TaskState
from flowforge.api.v1 import common_pb2
from flowforge.server import audit
from flowforge.server.clock import Clock, SystemClock
from flowforge.server.errors import FailedPrecondition, InvalidArgument, NotFound, Unavailable
from flowforge.server.history.data import EngineConfig
from flowforge.server.history.input_checks import check_failure, check_payloads
from flowforge.server.history.mutation import close_channel
from flowforge.server.history.parked_closes import ParkedCloses, PendingClose
from flowforge.server.history.quiet_runs import QuietRuns
from flowforge.server.metrics import ServerMetrics
from flowforge.server.observations import collecting
from flowforge.server.stores.base import (
    ConcurrencyConflict,
    ExecutionRow,
    NamespaceRow,
    Store,
    StoreUnavailable,
    TaskRow,
    Transaction,
)
from flowforge.server.tokens import TaskToken, TokenSigner, create_first_token_key, load_token_keys

__all__ = ["EngineCore"]

_T = TypeVar("_T")

# Attempts of a transaction that keeps meeting concurrent writers of the same rows.
_CONFLICT_ATTEMPTS = 20


class EngineCore:
    """The store, the clock, the limits and the token signer, with the transaction
    helpers every operation of the engine runs through."""

    def __init__(self, store: Store, config: EngineConfig | None = None, clock: Clock | None = None) -> None:
        self.store = store
        self.config = config or EngineConfig()
        #: Every deadline is measured on this clock (a virtual one under time skipping).
        self.clock: Clock = clock or SystemClock()
        self._signer: TokenSigner | None = None
        self._known_namespaces: set[str] = set()
        # namespace -> (monotonic expiry, row): the quotas as last read (namespaces.py).
        self._namespace_quotas: dict[str, tuple[float, NamespaceRow]] = {}
        # namespace -> name -> type of custom search attributes; a registered type never changes.
        self._attribute_types: dict[str, dict[str, str]] = {}
        self._rng = random.Random()
        #: Runs whose history long-polls can park again without a read (quiet_runs.py).
        self._quiet_runs = QuietRuns()
        #: Close events for the result() long polls parked in this process (parked_closes.py).
        self._parked_closes = ParkedCloses()
        #: Called with a deadline (µs) that may be earlier than the reaper's next wake-up.
        self.on_new_deadline: Callable[[int], None] = lambda _deadline: None
        #: Fed what each committed transaction did (history/observations.py).
        self.metrics = ServerMetrics()
        #: Traces each transaction of a traced RPC (server/tracing.py); None: no spans.
        self.tracer: Tracer | None = None

    async def start(self) -> None:
        """Loads (or creates, once) the keys that sign task tokens."""
        self._signer = TokenSigner(await self._transaction(create_first_token_key), now_us=self.clock.now_us)

    async def reload_token_keys(self) -> None:
        """Takes up keys another replica added (a rotation; docs/security.md)."""
        self.signer.replace_keys(await self.read(load_token_keys))

    @property
    def signer(self) -> TokenSigner:
        """Signs and verifies task tokens (after :meth:`start`)."""
        assert self._signer is not None, "HistoryEngine.start() was not awaited"
        return self._signer

    # ------------------------------------------------------------------ transactions and reads

    async def _transaction(self, body: Callable[[Transaction], Awaitable[_T]], *, shielded: bool = True) -> _T:
        """Runs ``body`` in a transaction, again from the start on a concurrency conflict.

        A shielded transaction runs to its end even if the caller goes away (the
        gRPC call is cancelled): a report that reached the server is recorded
        rather than rolled back half-way. Leases are not shielded, so a poll
        whose caller left rolls back instead of leasing to nobody.
        """
        if shielded:
            return await asyncio.shield(self._transaction(body, shielded=False))
        latency = self.metrics.store_transaction_latency
        for attempt in range(1, _CONFLICT_ATTEMPTS + 1):
            began = time.perf_counter()
            closes: list[PendingClose] = []
            committed = False
            try:
                with collecting() as observations, self._transaction_span(attempt):
                    async with self.store.transaction() as tx:
                        result = await body(tx)
                        # An audited RPC's row goes in with its change (server/audit.py).
                        audited = await audit.append_pending(tx, self.clock.now_us())
                        # For the result() waiters parked here (parked_closes.py).
                        closes = self._parked_closes.closing(observations)
                if audited is not None:
                    audited.appended = True
            except ConcurrencyConflict:
                self.metrics.series(latency, "conflict").observe(time.perf_counter() - began)
                self.metrics.store_conflicts.inc()
                if attempt == _CONFLICT_ATTEMPTS:
                    raise Unavailable("too much contention on one execution; retry the call") from None
                await asyncio.sleep(self._rng.uniform(0, 0.002 * attempt))
            except StoreUnavailable as error:
                self.metrics.series(latency, "unavailable").observe(time.perf_counter() - began)
                raise Unavailable(f"the store is unavailable ({error}); retry with backoff") from error
            except BaseException:
                self.metrics.series(latency, "rolled_back").observe(time.perf_counter() - began)
                raise
            else:
                committed = True
                self.metrics.series(latency, "committed").observe(time.perf_counter() - began)
                # Committed: now, and only now, what it did counts (observations.py).
                self.metrics.record(observations)
                return result
            finally:
                # Wakes the waiters too: PostgreSQL's NOTIFY comes back through the
                # LISTEN connection, maybe later.
                for run_id in self._parked_closes.settle(closes, committed):
                    self.store.notifier.notify(close_channel(run_id))
        raise AssertionError("unreachable")

    def _transaction_span(self, attempt: int) -> contextlib.AbstractContextManager[object]:
        """A span for one attempt, under the RPC's span when the RPC is traced."""
        if self.tracer is None or not trace.get_current_span().get_span_context().is_valid:
            return contextlib.nullcontext()
        return self.tracer.start_as_current_span("store.transaction", attributes={"flowforge.attempt": attempt})

    async def transaction(self, body: Callable[[Transaction], Awaitable[_T]]) -> _T:
        """Runs ``body`` in one write transaction, retried from the start on a
        concurrency conflict and shielded from the caller going away: for features
        beside the engine that write their own rows together with a start."""
        return await self._transaction(body)

    async def read(self, body: Callable[[Transaction], Awaitable[_T]], *, one_statement: bool = False) -> _T:
        """Runs ``body`` on a read-only snapshot; UNAVAILABLE if the store is down.
        ``one_statement``: the body runs one SELECT at most (see :meth:`Store.read`)."""
        try:
            async with self.store.read(one_statement=one_statement) as tx:
                return await body(tx)
        except StoreUnavailable as error:
            raise Unavailable(f"the store is unavailable ({error}); retry with backoff") from error

    # ------------------------------------------------------------------ limits and namespaces

    def check_payloads(self, payloads: common_pb2.Payloads, what: str) -> None:
        """INVALID_ARGUMENT if ``payloads`` is over the server's payload limit."""
        check_payloads(payloads, what, self.config.max_payload_bytes)

    def check_failure(self, failure: common_pb2.Failure, what: str) -> None:
        """INVALID_ARGUMENT if ``failure`` is over the server's payload limit."""
        check_failure(failure, what, self.config.max_payload_bytes)

    async def ensure_namespace(self, name: str) -> None:
        """Raises NOT_FOUND unless the namespace exists (positive answers are cached)."""
        if name in self._known_namespaces:
            return
        row = await self.read(lambda tx: tx.get_namespace(name))
        if row is None:
            raise NotFound(
                f"namespace {name!r} does not exist; create it with `flowforge namespace create {name}`"
                " or use 'default'"
            )
        self._known_namespaces.add(name)

    # ------------------------------------------------------------------ leases (rule 3)

    def _sign(self, task: TaskRow) -> bytes:
        assert task.task_id is not None
        return self.signer.sign(TaskToken(task.namespace, task.task_id, task.fencing_token, task.kind, task.run_id))

    def _token(self, raw_token: bytes, namespace: str, kind: TaskKind) -> TaskToken:
        """The verified token of a report; INVALID_ARGUMENT if forged, edited or of another namespace."""
        token = self.signer.verify(raw_token, kind)
        if namespace and namespace != token.namespace:
            raise InvalidArgument(f"the task token belongs to namespace {token.namespace!r}, not {namespace!r}")
        return token

    async def _leased_task(self, tx: Transaction, token: TaskToken) -> TaskRow:
        """The task ``token`` leases, locked; FAILED_PRECONDITION if the lease is gone."""
        task = await tx.get_task(token.task_id, for_update=True)
        if (
            task is None
            or task.state != TaskState.LEASED
            or task.fencing_token != token.fencing_token
            or task.namespace != token.namespace
            or task.run_id != token.run_id
        ):
            raise FailedPrecondition(
                f"this {token.kind.lower()} task is no longer leased with this token (it was completed already,"
                " or its lease expired and it was given to another attempt); the report changes nothing"
            )
        return task

    async def _execution_of(self, tx: Transaction, task: TaskRow) -> ExecutionRow:
        """The run of a locked task, locked too (after the task: one lock order), so
        reports on parallel activities of one run queue instead of conflicting."""
        row = await tx.get_execution(task.namespace, task.run_id, for_update=True)
        assert row is not None and row.status == ExecutionStatus.RUNNING, "task rows are deleted when their run closes"
        return row
