// The other pages: schedules, task queues, dead letters, limits and circuit breakers,
// namespaces and quotas, the audit log and the scheduler's leader.

import { can, rpc, showPayloads } from './api.js';
import { confirmAction } from './actions.js';
import { errorBox, h, link, path, pretty, replace, table, time } from './dom.js';

function workflowLink(namespace, execution) {
  return execution && execution.workflow_id
    ? link(path('namespaces', namespace, 'workflows', execution.workflow_id, execution.run_id || ''), execution.workflow_id) : '';
}

export async function schedulesPage(context, scheduleId) {
  const { namespace, main } = context;
  if (scheduleId) return scheduleDetail(context, scheduleId);
  const answer = await rpc('ListSchedules', { namespace, page_size: 200 });
  const rows = (answer.schedules || []).map((entry) => {
    const info = entry.info || {};
    const state = (entry.schedule || {}).state || {};
    return h('tr', {},
      h('td', {}, link(path('namespaces', namespace, 'schedules', entry.schedule_id), entry.schedule_id)),
      h('td', {}, ((entry.schedule || {}).action || {}).workflow_type || ''),
      h('td', {}, state.paused ? 'paused' : 'active'), h('td', { class: 'num' }, info.action_count || 0),
      h('td', {}, time((info.next_action_times || [])[0])));
  });
  replace(main, h('h1', {}, 'Schedules'), table(['Schedule', 'Workflow type', 'State', 'Runs', 'Next'], rows, { id: 'schedules' }));
  return null;
}

async function scheduleDetail({ namespace, main, me }, scheduleId) {
  const draw = async () => {
    const d = await rpc('DescribeSchedule', { namespace, schedule_id: scheduleId });
    const info = d.info || {};
    const state = (d.schedule || {}).state || {};
    const patch = (title, body) => () => confirmAction(title, `Schedule ${scheduleId}.`, [], async (v, reason) => {
      await rpc('PatchSchedule', { namespace, schedule_id: scheduleId, identity: 'console', note: reason, ...body }, { reason });
      await draw();
    });
    const buttons = can(me, 'PatchSchedule', namespace) ? [
      h('button', { type: 'button', 'data-action': 'trigger', onclick: patch('Trigger now', { trigger: {} }) }, 'Trigger now'),
      state.paused
        ? h('button', { type: 'button', 'data-action': 'unpause', onclick: patch('Unpause', { unpause: true }) }, 'Unpause')
        : h('button', { type: 'button', 'data-action': 'pause', onclick: patch('Pause', { pause: true }) }, 'Pause'),
    ] : [];
    replace(main, h('h1', {}, 'Schedule ', h('span', { class: 'wid' }, scheduleId)),
      h('p', {}, state.paused ? `Paused${state.note ? `: ${state.note}` : ''}` : 'Active'),
      h('div', { class: 'actions' }, buttons),
      h('section', { class: 'card' }, h('h2', {}, 'Next fires'), h('ul', {}, (info.next_action_times || []).map((t) => h('li', {}, time(t))))),
      h('section', { class: 'card' }, h('h2', {}, 'Recent fires'), table(['Nominal', 'Actual', 'Workflow', 'Trigger'],
        (info.recent_actions || []).map((a) => h('tr', {}, h('td', {}, time(a.nominal_time)), h('td', {}, time(a.actual_time)),
          h('td', {}, workflowLink(namespace, a.execution)), h('td', {}, a.trigger || ''))))),
      h('section', { class: 'card' }, h('h2', {}, 'Definition'), pretty({ ...d.schedule, action: { ...(d.schedule || {}).action, input: showPayloads(((d.schedule || {}).action || {}).input) } })));
  };
  await draw();
  return null;
}

export async function taskQueuesPage({ namespace, main, navigate }, queue) {
  const input = h('input', { name: 'queue', value: queue || '', placeholder: 'task queue', required: true, 'aria-label': 'Task queue' });
  const form = h('form', { class: 'query' }, input, h('button', { type: 'submit' }, 'Describe'));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    navigate(path('namespaces', namespace, 'task-queues', input.value.trim()));
  });
  const body = h('div');
  replace(main, h('h1', {}, 'Task queues'), form, body);
  if (!queue) return null;
  const d = await rpc('DescribeTaskQueue', { namespace, task_queue: queue });
  const kind = (t) => String(t || '').replace('TASK_QUEUE_TYPE_', '');
  replace(body,
    h('section', { class: 'card' }, h('h2', {}, 'Backlog'), table(['Kind', 'Ready tasks', 'Oldest task age', 'Dispatch rate /s'],
      (d.backlogs || []).map((b) => h('tr', {}, h('td', {}, kind(b.task_queue_type)), h('td', { class: 'num' }, b.ready_tasks || 0),
        h('td', {}, b.oldest_task_age || '0s'), h('td', { class: 'num' }, Number(b.dispatch_rate || 0).toFixed(2)))))),
    h('section', { class: 'card' }, h('h2', {}, 'Pollers'), table(['Identity', 'Kind', 'Last seen'],
      (d.pollers || []).map((p) => h('tr', {}, h('td', {}, p.identity), h('td', {}, kind(p.task_queue_type)), h('td', {}, time(p.last_access_time)))))));
  return null;
}

export async function deadLettersPage({ namespace, main, me }) {
  const draw = async () => {
    const answer = await rpc('ListDeadLetters', { namespace, limit: 200 });
    const act = (method, title, id) => () => confirmAction(title, `Dead letter ${id}.`, [], async (v, reason) => {
      await rpc(method, { namespace, id, reason, identity: 'console' }, { reason });
      await draw();
    });
    const rows = (answer.dead_letters || []).map((d) => h('tr', { 'data-id': d.id },
      h('td', { class: 'mono' }, d.id), h('td', {}, workflowLink(namespace, { workflow_id: d.workflow_id, run_id: d.run_id })),
      h('td', {}, d.activity_type), h('td', { class: 'num' }, d.attempt || 0), h('td', {}, (d.failure || {}).message || ''),
      h('td', {}, time(d.dead_lettered_time)),
      h('td', {}, can(me, 'RetryDeadLetters', namespace) ? h('button', { type: 'button', 'data-action': 'retry', onclick: act('RetryDeadLetters', 'Retry', d.id) }, 'Retry') : null,
        can(me, 'DiscardDeadLetters', namespace) ? h('button', { type: 'button', 'data-action': 'discard', onclick: act('DiscardDeadLetters', 'Discard', d.id) }, 'Discard') : null)));
    replace(main, h('h1', {}, 'Dead letters'),
      table(['Id', 'Workflow', 'Activity type', 'Attempts', 'Failure', 'Parked', ''], rows, { id: 'dead-letters' }));
  };
  await draw();
  return null;
}

export async function namespacesPage({ main, me }) {
  const draw = async () => {
    const answer = await rpc('ListNamespaces', {});
    const edit = (n) => () => confirmAction(`Quotas of ${n.name}`, 'Empty means unchanged; 0 removes a quota.', [
      { name: 'retention', label: 'Retention (seconds)', value: String(parseFloat(n.retention || '0') || '') },
      { name: 'running', label: 'Max running executions', value: String(n.max_running_executions || '') },
      { name: 'rate', label: 'Starts per second', value: String(n.start_rate || '') },
      { name: 'activities', label: 'Max concurrent activities', value: String(n.max_concurrent_activities || '') },
    ], async (v, reason) => {
      const number = (text) => (text.trim() === '' ? undefined : Number(text));
      await rpc('UpdateNamespace', {
        name: n.name, retention: v.retention.trim() ? `${Number(v.retention)}s` : undefined,
        max_running_executions: number(v.running), start_rate: number(v.rate), max_concurrent_activities: number(v.activities),
      }, { reason });
      await draw();
    });
    const rows = (answer.namespaces || []).map((n) => h('tr', { 'data-namespace': n.name },
      h('td', {}, link(path('namespaces', n.name, 'workflows'), n.name)), h('td', {}, n.retention || ''),
      h('td', { class: 'num' }, n.max_running_executions || '—'), h('td', { class: 'num' }, n.start_rate || '—'),
      h('td', { class: 'num' }, n.max_concurrent_activities || '—'), h('td', {}, n.description || ''),
      h('td', {}, can(me, 'UpdateNamespace', n.name) ? h('button', { type: 'button', 'data-action': 'quotas', onclick: edit(n) }, 'Quotas') : null)));
    replace(main, h('h1', {}, 'Namespaces'),
      table(['Namespace', 'Retention', 'Max running', 'Starts /s', 'Max activities', 'Description', ''], rows, { id: 'namespaces' }));
  };
  await draw();
  return null;
}

export async function limitsPage({ me, namespace, main }) {
  const breakers = breakerSection({ me, namespace });
  const answer = await rpc('ListConcurrencyLimits', { namespace });
  const rows = (answer.limits || []).map((l) => h('tr', {},
    h('td', { class: 'mono' }, l.concurrency_key), h('td', { class: 'num' }, l.running || 0), h('td', { class: 'num' }, l.max_running || 0),
    h('td', { class: 'num' }, l.waiting || 0), h('td', {}, time(l.update_time))));
  const rates = await rpc('ListRateLimits', { namespace }).catch(() => ({ limits: [] }));
  const rateRows = (rates.limits || []).map((r) => h('tr', {},
    h('td', { class: 'mono' }, r.task_queue || ''), h('td', { class: 'mono' }, r.concurrency_key || ''),
    h('td', { class: 'num' }, r.per_second || 0), h('td', {}, time(r.update_time))));
  replace(main, h('h1', {}, 'Concurrency limits ', h('small', { class: 'muted' }, namespace)),
    table(['Key', 'Running', 'Max running', 'Waiting', 'Updated'], rows, { id: 'limits' }),
    h('h2', {}, 'Dispatch rate limits'), table(['Task queue', 'Key', 'Per second', 'Updated'], rateRows, { id: 'rate-limits' }));
  main.append(h('h2', {}, 'Circuit breakers'), breakers.section);
  await breakers.draw();
  return null;
}

/** The namespace's circuit breakers, each with Open or Close for the roles that may. */
function breakerSection({ me, namespace }) {
  const section = table(['Activity type', 'State', 'Since', 'Opens at', 'Window', 'Open for', 'Reason', ''], [], { id: 'breakers' });
  const body = section.querySelector('tbody');
  const draw = async () => {
    const answer = await rpc('ListBreakers', { namespace });
    const force = (method, title, type) => () => confirmAction(`${title} the breaker of ${type}`,
      method === 'OpenBreaker' ? 'Its activities are held until it closes.' : 'The activities it held are handed out now.', [],
      async (v, reason) => {
        await rpc(method, { namespace, activity_type: type, reason, identity: 'console' }, { reason });
        await draw();
      });
    replace(body, (answer.breakers || []).map((b) => {
      const [method, title] = b.state === 'closed' ? ['OpenBreaker', 'Open'] : ['CloseBreaker', 'Close'];
      return h('tr', { 'data-activity-type': b.activity_type },
        h('td', { class: 'mono' }, b.activity_type), h('td', {}, h('span', { class: `badge breaker-${b.state}` }, b.state)),
        h('td', {}, time(b.since)), h('td', { class: 'num' }, `${Math.round((b.failure_rate || 0) * 100)}% failed of ≥ ${b.min_calls || 0} calls`),
        h('td', {}, `${b.successes || 0} ok, ${b.failures || 0} failed in ${b.window_seconds || 0} s`),
        h('td', {}, `${b.open_seconds || 0} s${b.probe_in_flight ? ', probing' : ''}`), h('td', {}, b.reason || ''),
        h('td', {}, can(me, method, namespace)
          ? h('button', { type: 'button', 'data-action': method === 'OpenBreaker' ? 'open' : 'close', onclick: force(method, title, b.activity_type) }, title)
          : null));
    }));
  };
  return { section, draw };
}

export async function batchesPage({ namespace, main }) {
  const answer = await rpc('ListBatchOperations', { namespace, limit: 100 });
  const rows = (answer.operations || []).map((b) => h('tr', { 'data-job': b.job_id },
    h('td', { class: 'mono' }, b.job_id), h('td', {}, b.operation), h('td', { class: 'mono' }, b.query), h('td', {}, b.state),
    h('td', { class: 'num' }, `${b.done || 0} / ${b.total || 0}`), h('td', { class: 'num' }, b.failed || 0),
    h('td', {}, b.reason), h('td', {}, b.identity), h('td', {}, time(b.create_time))));
  replace(main, h('h1', {}, 'Batch operations ', h('small', { class: 'muted' }, namespace)),
    table(['Job', 'Operation', 'Query', 'State', 'Done', 'Failed', 'Reason', 'By', 'Started'], rows, { id: 'batches' }));
  return null;
}

export async function auditPage({ main }) {
  const body = h('tbody');
  const more = h('button', { type: 'button', class: 'more', hidden: true }, 'More');
  const problem = h('div');
  let token = '';
  const load = async () => {
    const answer = await rpc('ListAuditLog', { page_size: 100, next_page_token: token || undefined }, { service: 'AccessService' });
    body.append(...(answer.records || []).map((r) => h('tr', {},
      h('td', { class: 'num' }, r.seq), h('td', {}, time(r.time)), h('td', {}, r.principal), h('td', {}, r.action),
      h('td', {}, r.namespace || ''), h('td', { class: 'mono' }, r.target || ''), h('td', {}, r.reason || ''))));
    token = answer.next_page_token || '';
    more.hidden = !token;
  };
  more.addEventListener('click', () => load().catch((error) => replace(problem, errorBox(error))));
  replace(main, h('h1', {}, 'Audit log'), problem, h('div', { class: 'scroll' }, h('table', { id: 'audit' },
    h('thead', {}, h('tr', {}, ['#', 'Time', 'Who', 'Action', 'Namespace', 'Target', 'Reason'].map((t) => h('th', {}, t)))), body)), more);
  await load();
  return null;
}

export async function schedulerPage({ main }) {
  const d = await rpc('GetSchedulerStatus', {});
  replace(main, h('h1', {}, 'Scheduler'), h('section', { class: 'card' }, h('dl', { class: 'facts' },
    h('dt', {}, 'Leader'), h('dd', { id: 'leader' }, d.leader_identity || (d.lease_expire_time ? '(hidden)' : 'none')),
    h('dt', {}, 'Leader since'), h('dd', {}, time(d.leader_since)), h('dt', {}, 'Lease until'), h('dd', {}, time(d.lease_expire_time)),
    h('dt', {}, 'Fencing token'), h('dd', {}, d.fencing_token || 0), h('dt', {}, 'This replica'),
    h('dd', {}, `${d.replica_identity || ''}${d.replica_is_leader ? ' (leader)' : ''}`))),
  h('section', { class: 'card' }, h('h2', {}, 'Leader changes seen by this replica'), table(['Time', 'Event', 'Holder', 'Fencing token'],
    (d.replica_leader_changes || []).map((c) => h('tr', {}, h('td', {}, time(c.time)), h('td', {}, c.event || ''), h('td', {}, c.holder || ''), h('td', {}, c.fencing_token || 0))))));
  return null;
}
