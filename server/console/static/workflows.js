// /namespaces/{ns}/workflows: the visibility query box (list_workflows' language),
// status filters with counts, keyset paging ("More") and columns sorted by the server
// (a header click lists again with ORDER BY; "More" follows that order's page token).

import { can, jsonPayloads, rpc } from './api.js';
import { confirmAction } from './actions.js';
import { duration, errorBox, h, link, path, replace, status, table, time } from './dom.js';

const STATUSES = ['Running', 'Completed', 'Failed', 'Canceled', 'Terminated', 'ContinuedAsNew', 'TimedOut'];
const PAGE = 50;

// Ordered by these visibility attributes (each has an index); times newest first at first.
const ORDERS = { 'Workflow ID': 'WorkflowId', Type: 'WorkflowType', Status: 'ExecutionStatus', Start: 'StartTime', Close: 'CloseTime' };
const DEFAULT_ORDER = 'StartTime DESC';
// A typed query's own ORDER BY (at its end, where the language puts it).
const ORDER_BY = /(?:^|\s)ORDER\s+BY\s+([A-Za-z_]+)(?:\s+(ASC|DESC))?\s*$/i;

/** The query's condition and its order ("Attribute DIR"), an ORDER BY typed in the box split off. */
export function splitOrder(query) {
  const found = query.match(ORDER_BY);
  if (!found) return { filter: query, order: '' };
  return { filter: query.slice(0, found.index).trim(), order: `${found[1]} ${(found[2] || 'DESC').toUpperCase()}` };
}

function withStatus(query, chosen) {
  if (!chosen) return query;
  const clause = `ExecutionStatus = '${chosen}'`;
  return query ? `(${query}) AND ${clause}` : clause;
}

export async function workflowList({ me, namespace, main, params, navigate }) {
  const typed = splitOrder(params.get('q') || '');
  const query = typed.filter;
  const order = params.get('sort') || typed.order || DEFAULT_ORDER;
  const chosen = params.get('status') || '';
  const input = h('input', { type: 'search', name: 'q', value: order === DEFAULT_ORDER ? query : `${query} ORDER BY ${order}`.trim(), placeholder: "WorkflowType = 'Order' AND StartTime > '2024-01-01T00:00:00Z'", 'aria-label': 'Visibility query' });
  const form = h('form', { class: 'query', id: 'query-form' }, input, h('button', { type: 'submit' }, 'Search'));
  const go = (q, st, by) => {
    const search = new URLSearchParams();
    if (q) search.set('q', q);
    if (st) search.set('status', st);
    if (by && by !== DEFAULT_ORDER) search.set('sort', by);
    navigate(path('namespaces', namespace, 'workflows') + (search.toString() ? `?${search}` : ''));
  };
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const next = splitOrder(input.value.trim());
    go(next.filter, chosen, next.order || DEFAULT_ORDER);
  });
  const chips = h('div', { class: 'chips', id: 'status-filters' });
  const body = h('tbody');
  const more = h('button', { type: 'button', class: 'more', hidden: true }, 'More');
  const problem = h('div');
  const [orderedBy, direction] = order.split(' ');
  const rows = [];
  const draw = () => {
    replace(body, rows.map((e) => h('tr', {},
      h('td', {}, link(path('namespaces', namespace, 'workflows', e.execution.workflow_id, e.execution.run_id), e.execution.workflow_id, { class: 'wid' })),
      h('td', {}, e.workflow_type), h('td', {}, status(e.status)), h('td', {}, time(e.start_time)),
      h('td', {}, e.close_time ? time(e.close_time) : `running ${duration(e.start_time)}`), h('td', { class: 'num' }, e.history_length || 0))));
  };
  // A click lists again in that column's order from the first page; a second click reverses it.
  const heads = ['Workflow ID', 'Type', 'Status', 'Start', 'Close', 'Events'].map((title) => {
    const attribute = ORDERS[title];
    if (!attribute) return h('th', {}, title);
    const active = attribute === orderedBy;
    const first = attribute.endsWith('Time') ? 'DESC' : 'ASC';
    const next = active ? (direction === 'DESC' ? 'ASC' : 'DESC') : first;
    return h('th', active ? { 'aria-sort': direction === 'DESC' ? 'descending' : 'ascending' } : {}, h('button', {
      type: 'button', class: 'sort', 'data-order': attribute, onclick: () => go(query, chosen, `${attribute} ${next}`),
    }, title, active ? (direction === 'DESC' ? ' ▼' : ' ▲') : ''));
  });
  const matching = withStatus(query, chosen);
  const batch = matching && can(me, 'StartBatchOperation', namespace) ? h('button', {
    type: 'button', 'data-action': 'batch', onclick: () => confirmAction('Batch operation', `On every execution matching: ${matching}`, [
      { name: 'operation', label: 'Operation', kind: 'select', options: [['cancel', 'Cancel'], ['terminate', 'Terminate'], ['signal', 'Signal'], ['reset', 'Reset'], ['pause', 'Pause']] },
      { name: 'signal', label: 'Signal name (signal)' }, { name: 'input', label: 'Signal input (JSON, optional)', kind: 'json' },
      { name: 'reset', label: 'Reset to (reset)', kind: 'select', options: [['last', 'last workflow task'], ['first', 'first workflow task']] },
    ], async (v, reason) => {
      const input = v.input.trim() ? JSON.parse(v.input) : undefined;
      await rpc('StartBatchOperation', {
        namespace, operation: v.operation, query: matching, reason, identity: 'console',
        signal_name: v.operation === 'signal' ? v.signal : undefined,
        signal_input: v.operation === 'signal' && input !== undefined ? jsonPayloads(input) : undefined,
        reset_type: v.operation === 'reset' ? v.reset : undefined,
      }, { reason });
      navigate(path('namespaces', namespace, 'batches'));
    }),
  }, 'Batch…') : null;
  replace(main, h('h1', {}, 'Workflows ', h('small', { class: 'muted' }, namespace)), form, h('div', { class: 'actions' }, chips, batch), problem,
    h('div', { class: 'scroll' }, h('table', { id: 'workflows' }, h('thead', {}, h('tr', {}, heads)), body)), more);

  let token = '';
  const load = async () => {
    const answer = await rpc('ListWorkflowExecutions', {
      namespace, query: `${withStatus(query, chosen)} ORDER BY ${order}`.trim(), page_size: PAGE, next_page_token: token || undefined,
    });
    rows.push(...(answer.executions || []));
    token = answer.next_page_token || '';
    more.hidden = !token;
    draw();
  };
  more.addEventListener('click', () => load().catch((error) => replace(problem, errorBox(error))));
  try {
    await load();
  } catch (error) {
    replace(problem, errorBox(error));
    return;
  }
  // Counts: everything the query matches, then by status.
  const counts = await Promise.all([undefined, ...STATUSES].map((st) =>
    rpc('CountWorkflowExecutions', { namespace, query: withStatus(query, st) }).then((a) => Number(a.count || 0), () => null)));
  replace(chips, [['', counts[0]], ...STATUSES.map((st, i) => [st, counts[i + 1]])]
    .filter(([st, count]) => !st || count)
    .map(([st, count]) => h('button', {
      type: 'button', class: `chip${st === chosen ? ' on' : ''}`, 'data-status': st || 'All', onclick: () => go(query, st, order),
    }, `${st || 'All'} ${count === null ? '' : count}`)));
}
