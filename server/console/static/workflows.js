// /namespaces/{ns}/workflows: the visibility query box (list_workflows' language),
// status filters with counts, keyset paging ("More") and sortable columns.

import { can, jsonPayloads, rpc } from './api.js';
import { confirmAction } from './actions.js';
import { duration, errorBox, h, link, path, replace, status, table, time } from './dom.js';

const STATUSES = ['Running', 'Completed', 'Failed', 'Canceled', 'Terminated', 'ContinuedAsNew', 'TimedOut'];
const PAGE = 50;

function withStatus(query, chosen) {
  if (!chosen) return query;
  const clause = `ExecutionStatus = '${chosen}'`;
  return query ? `(${query}) AND ${clause}` : clause;
}

export async function workflowList({ me, namespace, main, params, navigate }) {
  const query = params.get('q') || '';
  const chosen = params.get('status') || '';
  const input = h('input', { type: 'search', name: 'q', value: query, placeholder: "WorkflowType = 'Order' AND StartTime > '2024-01-01T00:00:00Z'", 'aria-label': 'Visibility query' });
  const form = h('form', { class: 'query', id: 'query-form' }, input, h('button', { type: 'submit' }, 'Search'));
  const go = (q, st) => {
    const search = new URLSearchParams();
    if (q) search.set('q', q);
    if (st) search.set('status', st);
    navigate(path('namespaces', namespace, 'workflows') + (search.toString() ? `?${search}` : ''));
  };
  form.addEventListener('submit', (event) => { event.preventDefault(); go(input.value.trim(), chosen); });
  const chips = h('div', { class: 'chips', id: 'status-filters' });
  const body = h('tbody');
  const more = h('button', { type: 'button', class: 'more', hidden: true }, 'More');
  const problem = h('div');
  const columns = [
    ['Workflow ID', (e) => e.execution.workflow_id], ['Type', (e) => e.workflow_type || ''],
    ['Status', (e) => e.status || ''], ['Start', (e) => e.start_time || ''], ['Close', (e) => e.close_time || ''],
    ['Events', (e) => Number(e.history_length || 0)],
  ];
  const rows = [];
  let sort = null;
  const draw = () => {
    const list = sort ? [...rows].sort((a, b) => {
      const [x, y] = [columns[sort.col][1](a), columns[sort.col][1](b)];
      return (x < y ? -1 : x > y ? 1 : 0) * sort.dir;
    }) : rows;
    replace(body, list.map((e) => h('tr', {},
      h('td', {}, link(path('namespaces', namespace, 'workflows', e.execution.workflow_id, e.execution.run_id), e.execution.workflow_id, { class: 'wid' })),
      h('td', {}, e.workflow_type), h('td', {}, status(e.status)), h('td', {}, time(e.start_time)),
      h('td', {}, e.close_time ? time(e.close_time) : `running ${duration(e.start_time)}`), h('td', { class: 'num' }, e.history_length || 0))));
  };
  const heads = columns.map(([title], index) => h('th', {}, h('button', {
    type: 'button', class: 'sort', onclick: () => {
      sort = sort && sort.col === index ? { col: index, dir: -sort.dir } : { col: index, dir: 1 };
      draw();
    },
  }, title)));
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
      namespace, query: withStatus(query, chosen), page_size: PAGE, next_page_token: token || undefined,
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
      type: 'button', class: `chip${st === chosen ? ' on' : ''}`, 'data-status': st || 'All', onclick: () => go(query, st),
    }, `${st || 'All'} ${count === null ? '' : count}`)));
}
