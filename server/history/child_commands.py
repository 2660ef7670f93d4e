"""The commands that reach other runs: start a child, signal or cancel a pending one.

Like every command they are applied in memory (commands.py): a child start
builds the child's run as a new mutation, a signal or cancel request changes the
child's loaded mutation; all of them are saved with the completing workflow task.
"""

from __future__ import annotations

from flowforge.api.schema import (
    ChildWorkflowExecutionStartedAttributes,
    EventType,
    ExternalWorkflowExecutionSignaledAttributes,
    ParentClosePolicy,
    RequestCancelExternalWorkflowExecutionInitiatedAttributes,
    RetryPolicyJSON,
    SignalExternalWorkflowExecutionFailedAttributes,
    SignalExternalWorkflowExecutionFailedCause,
    SignalExternalWorkflowExecutionInitiatedAttributes,
    StartChildWorkflowExecutionFailedAttributes,
    StartChildWorkflowExecutionFailedCause,
    StartChildWorkflowExecutionInitiatedAttributes,
    duration_s,
    message_to_json_dict,
    payloads_json,
)
from flowforge.api.v1 import command_pb2, common_pb2
from flowforge.server.history.command_state import Applying, StartedChild
from flowforge.server.history.data import StartSignal, TaskPriority, header_attributes
from flowforge.server.history.executions import Executions
from flowforge.server.history.flow_control import priority_from_proto
from flowforge.server.history.mutation import new_run
from flowforge.server.history.visibility_writes import stored_values, visibility_attributes
from flowforge.server.retries import StoredRetryPolicy
from flowforge.server.stores.base import ChildExecutionRow, ConcurrencyConflict, DuplicateRunningExecution

__all__ = ["ChildCommands"]


class ChildCommands(Executions):
    """Handlers of the child workflow commands (entries of the command table)."""

    def _start_child_workflow_execution(self, applying: Applying, command: command_pb2.Command) -> None:
        m, a = applying.m, command.start_child_workflow_execution
        parent = m.row
        policy_name = common_pb2.ParentClosePolicy.Name(
            a.parent_close_policy or common_pb2.PARENT_CLOSE_POLICY_TERMINATE
        )
        policy = ParentClosePolicy(policy_name.removeprefix("PARENT_CLOSE_POLICY_"))
        task_queue = a.task_queue or parent.task_queue
        retry: dict[str, RetryPolicyJSON] = (
            {"retry_policy": StoredRetryPolicy.from_proto(a.retry_policy).to_json()}
            if a.HasField("retry_policy")
            else {}
        )
        initiated: StartChildWorkflowExecutionInitiatedAttributes = {
            "workflow_id": a.workflow_id,
            "workflow_type": a.workflow_type,
            "task_queue": task_queue,
            "input": payloads_json(a.input),
            "workflow_execution_timeout": duration_s(a.workflow_execution_timeout),
            "workflow_run_timeout": duration_s(a.workflow_run_timeout),
            "workflow_task_timeout": duration_s(a.workflow_task_timeout),
            "parent_close_policy": policy,
            "workflow_task_completed_event_id": applying.completed_id,
        }
        if a.HasField("retry_policy"):
            initiated["retry_policy"] = retry["retry_policy"]
        if a.header.fields:
            initiated["header"] = message_to_json_dict(a.header)
        initiated_id = m.append(EventType.START_CHILD_WORKFLOW_EXECUTION_INITIATED, initiated)
        if a.workflow_id in applying.running_workflow_ids:
            failed: StartChildWorkflowExecutionFailedAttributes = {
                "initiated_event_id": initiated_id,
                "workflow_id": a.workflow_id,
                "workflow_type": a.workflow_type,
                "cause": StartChildWorkflowExecutionFailedCause.WORKFLOW_ALREADY_EXISTS,
            }
            applying.outcomes.append((EventType.START_CHILD_WORKFLOW_EXECUTION_FAILED, failed))
            return
        child = new_run(
            m.tx,
            m.now,
            namespace=parent.namespace,
            workflow_id=a.workflow_id,
            workflow_type=a.workflow_type,
            task_queue=task_queue,
            input=a.input,
            identity=f"parent {parent.workflow_id}",
            execution_timeout_s=duration_s(a.workflow_execution_timeout),
            run_timeout_s=duration_s(a.workflow_run_timeout),
            task_timeout_s=duration_s(a.workflow_task_timeout),
            default_task_timeout_s=self.config.default_workflow_task_timeout_s,
            started={
                "parent_workflow_namespace": parent.namespace,
                "parent_workflow_id": parent.workflow_id,
                "parent_run_id": parent.run_id,
                "parent_initiated_event_id": initiated_id,
                **retry,
                **header_attributes(a.header),
                **visibility_attributes(a.search_attributes, a.memo),
            },
            priority=priority_from_proto(a.priority, TaskPriority.of_run(parent)),
        )
        applying.running_workflow_ids.add(a.workflow_id)
        link = ChildExecutionRow(
            namespace=parent.namespace,
            parent_run_id=parent.run_id,
            initiated_event_id=initiated_id,
            workflow_id=a.workflow_id,
            run_id=child.row.run_id,
            workflow_type=a.workflow_type,
            parent_close_policy=policy,
        )
        values = stored_values(applying.attribute_types, parent.namespace, a.search_attributes)
        applying.started_children.append(StartedChild(child, link, values, a.memo))
        started: ChildWorkflowExecutionStartedAttributes = {
            "initiated_event_id": initiated_id,
            "workflow_id": a.workflow_id,
            "workflow_type": a.workflow_type,
            "run_id": child.row.run_id,
        }
        applying.outcomes.append((EventType.CHILD_WORKFLOW_EXECUTION_STARTED, started))

    def _request_cancel_external_workflow_execution(self, applying: Applying, command: command_pb2.Command) -> None:
        """Delivers the cancel request to the child; a child that closed meanwhile
        needs none (its outcome is on its way to the parent)."""
        m, a = applying.m, command.request_cancel_external_workflow_execution
        initiated: RequestCancelExternalWorkflowExecutionInitiatedAttributes = {
            "workflow_id": a.workflow_id,
            "run_id": a.run_id,
            "child_workflow_only": True,
            "workflow_task_completed_event_id": applying.completed_id,
        }
        m.append(EventType.REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED, initiated)
        child = applying.pending_child_run(a.workflow_id, a.run_id)
        if child is not None and child.request_cancel(f"cancelled by its parent {m.row.workflow_id}", "server"):
            applying.changed_children[child.row.run_id] = child

    def _signal_external_workflow_execution(self, applying: Applying, command: command_pb2.Command) -> None:
        """Delivers the signal to the child and reports back whether it could."""
        m, a = applying.m, command.signal_external_workflow_execution
        initiated: SignalExternalWorkflowExecutionInitiatedAttributes = {
            "workflow_id": a.workflow_id,
            "run_id": a.run_id,
            "signal_name": a.signal_name,
            "input": payloads_json(a.input),
            "child_workflow_only": True,
            "workflow_task_completed_event_id": applying.completed_id,
        }
        initiated_id = m.append(EventType.SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED, initiated)
        child = applying.pending_child_run(a.workflow_id, a.run_id)
        if child is None:
            failed: SignalExternalWorkflowExecutionFailedAttributes = {
                "initiated_event_id": initiated_id,
                "workflow_id": a.workflow_id,
                "run_id": a.run_id,
                "cause": SignalExternalWorkflowExecutionFailedCause.EXTERNAL_WORKFLOW_EXECUTION_NOT_FOUND,
            }
            applying.outcomes.append((EventType.SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_FAILED, failed))
            return
        signal = StartSignal(a.signal_name, a.input)
        child.deliver([(EventType.WORKFLOW_EXECUTION_SIGNALED, signal.attributes(f"parent {m.row.workflow_id}"))])
        applying.changed_children[child.row.run_id] = child
        signaled: ExternalWorkflowExecutionSignaledAttributes = {
            "initiated_event_id": initiated_id,
            "workflow_id": a.workflow_id,
            "run_id": child.row.run_id,
        }
        applying.outcomes.append((EventType.EXTERNAL_WORKFLOW_EXECUTION_SIGNALED, signaled))

    async def _save_started_child(self, started: StartedChild) -> None:
        """Writes a child run a command started, with its visibility data and its link to the parent."""
        tx = started.run.tx
        try:
            await started.run.save()
        except DuplicateRunningExecution:
            # Started by someone else since the load: run the completion again, which sees it.
            raise ConcurrencyConflict(started.link.workflow_id) from None
        await self._write_visibility(tx, started.run.row, started.search_attributes, started.memo)
        await tx.insert_child_execution(started.link)
