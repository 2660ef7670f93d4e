"""SQL shared by the SQLite and PostgreSQL stores: one mixin per concern of the
contract (:mod:`flowforge.server.stores.contract`), combined in :class:`SQLTransaction`.

Statements are written once with ``?`` placeholders; a store subclasses
:class:`SQLTransaction` and supplies the dialect primitives of
:class:`~flowforge.server.stores._sql.core.SQLCore`.
"""

from __future__ import annotations

import abc

from flowforge.server.stores._sql.access import AccessSQL
from flowforge.server.stores._sql.activity_records import ActivityRecordSQL
from flowforge.server.stores._sql.batches import BatchSQL
from flowforge.server.stores._sql.breakers import BreakerSQL
from flowforge.server.stores._sql.dags import DagSQL
from flowforge.server.stores._sql.executions import ExecutionSQL, update_executions_sql
from flowforge.server.stores._sql.flow_control import FlowControlSQL
from flowforge.server.stores._sql.leases import LeaseSQL
from flowforge.server.stores._sql.limits import LimitSQL
from flowforge.server.stores._sql.lineage import LineageSQL
from flowforge.server.stores._sql.namespaces import NamespaceSQL
from flowforge.server.stores._sql.outbox import LifecycleOutboxSQL
from flowforge.server.stores._sql.queries import QuerySQL
from flowforge.server.stores._sql.retention import RetentionSQL
from flowforge.server.stores._sql.schedules import ScheduleSQL
from flowforge.server.stores._sql.tasks import TaskSQL
from flowforge.server.stores._sql.timers import TimerSQL
from flowforge.server.stores._sql.triggers import TriggerSQL
from flowforge.server.stores._sql.visibility import VisibilitySQL, list_executions_sql
from flowforge.server.stores.contract import Transaction

__all__ = ["SQLTransaction", "list_executions_sql", "update_executions_sql"]


class SQLTransaction(
    NamespaceSQL,
    AccessSQL,
    ExecutionSQL,
    TaskSQL,
    FlowControlSQL,
    BreakerSQL,
    TimerSQL,
    QuerySQL,
    LineageSQL,
    TriggerSQL,
    DagSQL,
    ScheduleSQL,
    LeaseSQL,
    VisibilitySQL,
    LifecycleOutboxSQL,
    RetentionSQL,
    ActivityRecordSQL,
    LimitSQL,
    BatchSQL,
    Transaction,
    abc.ABC,
):
    """Implements :class:`Transaction` on top of a dialect's primitives."""
