// Operator actions behind a confirmation and a reason. A button is shown only when
// the caller's roles allow the RPC (from /api/v1/whoami); the server checks anyway.

import { can, jsonPayloads, rpc } from './api.js';
import { errorBox, h, path, replace } from './dom.js';

/**
 * Opens the confirmation dialog. fields: [{name, label, kind: 'text'|'json'|'select', options, value}].
 * submit(values, reason) performs the action; the dialog closes when it succeeds.
 */
export function confirmAction(title, warning, fields, submit) {
  const dialog = document.getElementById('dialog');
  const inputs = {};
  const rows = fields.map((f) => {
    let input;
    if (f.kind === 'select') input = h('select', { name: f.name }, f.options.map(([value, text]) => h('option', { value }, text)));
    else if (f.kind === 'json') input = h('textarea', { name: f.name, rows: 4, spellcheck: 'false' }, f.value || '');
    else input = h('input', { name: f.name, value: f.value || '', required: f.required || false });
    inputs[f.name] = input;
    return h('label', {}, f.label, input);
  });
  const reason = h('textarea', { name: 'reason', rows: 2, required: true, maxlength: 4000 });
  const problem = h('div');
  const form = h('form', { method: 'dialog', class: 'confirm' },
    h('h2', {}, title), h('p', {}, warning), rows, h('label', {}, 'Reason (recorded in the audit log)', reason), problem,
    h('div', { class: 'buttons' },
      h('button', { type: 'button', class: 'secondary', onclick: () => dialog.close() }, 'Back'),
      h('button', { type: 'submit', class: 'danger', id: 'confirm' }, 'Confirm')));
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const values = Object.fromEntries(Object.entries(inputs).map(([k, input]) => [k, input.value]));
    try {
      await submit(values, reason.value.trim());
      dialog.close();
    } catch (error) {
      replace(problem, errorBox(error));
    }
  });
  replace(dialog, form);
  dialog.showModal();
}

function parseJson(text) {
  if (!text.trim()) return undefined;
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new Error(`the input is not JSON: ${error.message}`);
  }
}

/** The action buttons of an execution page. */
export function executionActions({ me, namespace, navigate }, execution, describe, events, refresh) {
  const running = describe.status === 'WORKFLOW_EXECUTION_STATUS_RUNNING';
  const base = { namespace, execution, identity: 'console' };
  const act = (method, body) => async (values, reason) => {
    await rpc(method, body(values, reason), { reason });
    await refresh();
  };
  const buttons = [];
  const add = (method, text, open, when = running) => {
    if (when && can(me, method, namespace)) buttons.push(h('button', { type: 'button', 'data-action': method, onclick: open }, text));
  };
  add('SignalWorkflowExecution', 'Signal', () => confirmAction('Signal', 'Deliver a signal to this run.',
    [{ name: 'signal', label: 'Signal name', required: true }, { name: 'input', label: 'Input (JSON, optional)', kind: 'json' }],
    act('SignalWorkflowExecution', (v) => {
      const input = parseJson(v.input);
      return { ...base, signal_name: v.signal, input: input === undefined ? undefined : jsonPayloads(input) };
    })));
  add('RequestCancelWorkflowExecution', 'Cancel', () => confirmAction('Cancel', 'Ask the workflow to cancel; it may clean up first.', [],
    act('RequestCancelWorkflowExecution', (v, reason) => ({ ...base, reason }))));
  add('TerminateWorkflowExecution', 'Terminate', () => confirmAction('Terminate', 'End the run now; no workflow code runs.', [],
    act('TerminateWorkflowExecution', (v, reason) => ({ ...base, reason }))));
  const completions = events.filter((e) => e.event_type === 'WorkflowTaskCompleted');
  add('ResetWorkflowExecution', 'Reset', () => confirmAction('Reset', 'Start a new run that keeps the history up to the chosen workflow task.',
    [{ name: 'event', label: 'Reset to the workflow task completed at', kind: 'select', options: completions.map((e) => [String(e.event_id), `event ${e.event_id} (${e.event_time})`]) }],
    async (v, reason) => {
      const answer = await rpc('ResetWorkflowExecution', { ...base, event_id: Number(v.event), reason }, { reason });
      navigate(path('namespaces', namespace, 'workflows', execution.workflow_id, answer.run_id));
    }), completions.length > 0);
  add('PauseWorkflowExecution', 'Pause', () => confirmAction('Pause', 'Nothing of the run is dispatched while paused; signals and fired timers wait.', [],
    act('PauseWorkflowExecution', (v, reason) => ({ ...base, reason }))), running && !describe.pause);
  add('UnpauseWorkflowExecution', 'Unpause', () => confirmAction('Unpause', 'Dispatch the run again.', [],
    act('UnpauseWorkflowExecution', (v, reason) => ({ ...base, reason }))), running && Boolean(describe.pause));
  return buttons;
}
