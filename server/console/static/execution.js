// /namespaces/{ns}/workflows/{workflow_id}[/{run_id}]: the execution, its timeline
// (live: a long-poll on its history that the server parks on the run's notifier), the
// DAG, compact and full history, the history JSON for the Replayer, and the actions.

import { codecEnabled, decodePayload, decodeRemote, rpc, showPayloads } from './api.js';
import { dagNodes, dagSvg } from './dag.js';
import { executionActions } from './actions.js';
import { duration, errorBox, h, link, path, pretty, replace, status, table, time } from './dom.js';

const PAGE = 1000;

function parsed(event) {
  let attrs = {};
  try {
    attrs = event.attributes_json ? JSON.parse(event.attributes_json) : {};
  } catch {
    attrs = { unreadable: event.attributes_json };
  }
  return { ...event, event_id: Number(event.event_id), attrs };
}

/** Attributes with every Payloads shown decoded (codec output shown as such). */
function readable(value) {
  if (Array.isArray(value)) return value.map(readable);
  if (value && typeof value === 'object') {
    if (Array.isArray(value.payloads)) return showPayloads(value);
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, readable(v)]));
  }
  return value;
}

/** A search attribute's value without its type's wrapper ({keyword_value: 'x'} -> 'x'). */
function attributeValue(value) {
  const entries = value && typeof value === 'object' ? Object.entries(value) : [];
  return entries.length === 1 && entries[0][0].endsWith('_value') ? entries[0][1] : value;
}

function summary(e) {
  const a = e.attrs;
  const bits = [a.activity_type, a.activity_id && `id ${a.activity_id}`, a.signal_name, a.timer_id && `timer ${a.timer_id}`,
    a.workflow_type && e.event_type !== 'WorkflowExecutionStarted' && a.workflow_type, a.workflow_id && e.event_type !== 'WorkflowExecutionStarted' && a.workflow_id,
    a.attempt > 1 && `attempt ${a.attempt}`, a.failure && (a.failure.message || 'failure'), a.reason, a.identity];
  return bits.filter(Boolean).join(' · ');
}

/** Payloads as pretty JSON; encoded ones are sent to the codec server, if one is set. */
function payloadBlock(payloads) {
  const block = pretty(showPayloads(payloads));
  const list = (payloads && payloads.payloads) || [];
  if (codecEnabled() && list.some((p) => decodePayload(p).encoded)) {
    decodeRemote(list).then((decoded) => {
      replace(block, JSON.stringify(showPayloads({ payloads: decoded }), null, 2));
      block.classList.add('decoded');
      block.title = 'decoded by the codec server, in this browser';
    }, (error) => block.append(`\n(${error.message})`));
  }
  return block;
}

async function readHistory(namespace, execution, after) {
  const events = [];
  for (;;) {
    const page = await rpc('GetWorkflowExecutionHistory', { namespace, execution, after_event_id: after, maximum_page_size: PAGE });
    const got = (page.events || []).map(parsed);
    events.push(...got);
    if (got.length) after = got[got.length - 1].event_id;
    if (!page.has_more || !got.length) return events;
  }
}

function historyDocument(workflowId, events) {
  return JSON.stringify({
    workflow_id: workflowId,
    events: events.map((e) => ({ event_id: e.event_id, event_type: e.event_type, event_time: e.event_time, attributes: e.attrs })),
  }, null, 2);
}

export async function executionPage(context, workflowId, runId) {
  const { namespace, main, me } = context;
  const request = { namespace, execution: { workflow_id: workflowId, run_id: runId } };
  let describe = await rpc('DescribeWorkflowExecution', request);
  const execution = { workflow_id: workflowId, run_id: describe.execution.run_id };
  const events = await readHistory(namespace, execution, 0);
  // The history, read after describe, may hold newer events: describe again so the head does
  // not lag them (the run may then wait with no next event to refresh it, e.g. held by a breaker).
  if (events.length && Number(describe.history_length || 0) < events[events.length - 1].event_id) {
    describe = await rpc('DescribeWorkflowExecution', { namespace, execution });
  }
  const stop = new AbortController();

  const head = h('section', { class: 'card', id: 'summary' });
  const actions = h('div', { class: 'actions', id: 'actions' });
  const details = h('div', { id: 'details' });
  const timeline = h('tbody', { id: 'timeline' });
  const full = h('div', { id: 'full-history' });
  const dagBox = h('div', { class: 'dag-box', id: 'dag' });
  const nodeDetail = h('div', { id: 'node-detail' });
  const liveNote = h('span', { class: 'muted', id: 'live' });
  const started = events.length ? events[0].event_time : describe.start_time;

  const timelineRow = (e) => h('tr', { 'data-event-id': e.event_id, class: `ev ev-${e.event_type}` },
    h('td', { class: 'num' }, e.event_id), h('td', { class: 'muted' }, `+${duration(started, e.event_time)}`),
    h('td', {}, e.event_type), h('td', { class: 'sum' }, summary(e)));
  const fullEntry = (e) => h('details', { 'data-event-id': e.event_id },
    h('summary', {}, `${e.event_id} ${e.event_type} — ${time(e.event_time)}`), pretty(readable(e.attrs)));

  const tabs = {
    Timeline: h('div', {}, h('p', {}, liveNote), table(['#', 'After', 'Event', ''], [], { class: 'timeline' })),
    DAG: h('div', {}, dagBox, nodeDetail),
    History: full,
  };
  tabs.Timeline.querySelector('table').replaceChild(timeline, tabs.Timeline.querySelector('tbody'));
  const tabBar = h('div', { class: 'tabs', role: 'tablist' });
  const tabBody = h('div', { class: 'tab-body' });
  // The tab is in the address (#dag, #history), so it can be linked to.
  let current = Object.keys(tabs).find((name) => `#${name.toLowerCase()}` === location.hash) || 'Timeline';
  const show = (name) => {
    current = name;
    history.replaceState(null, '', name === 'Timeline' ? location.pathname + location.search : `#${name.toLowerCase()}`);
    if (name === 'History' && !full.childElementCount) full.append(...events.map(fullEntry));
    replace(tabBody, tabs[name]);
    for (const button of tabBar.children) button.setAttribute('aria-selected', String(button.dataset.tab === name));
  };
  for (const name of Object.keys(tabs)) {
    tabBar.append(h('button', { type: 'button', role: 'tab', 'data-tab': name, onclick: () => show(name) }, name));
  }
  const download = h('button', {
    type: 'button', id: 'download', onclick: () => {
      const blob = new Blob([historyDocument(workflowId, events)], { type: 'application/json' });
      const anchor = h('a', { href: URL.createObjectURL(blob), download: `${workflowId}-${execution.run_id}.history.json` });
      anchor.click();
      setTimeout(() => URL.revokeObjectURL(anchor.href), 1000);
    },
  }, 'Download history JSON');

  const drawHead = () => {
    const d = describe;
    const first = events[0] ? events[0].attrs : {};
    const last = events.length ? events[events.length - 1] : null;
    const closing = last && /^WorkflowExecution(Completed|Failed|Canceled|Terminated|TimedOut|ContinuedAsNew)$/.test(last.event_type) ? last : null;
    const links = [];
    if (d.parent_execution && d.parent_execution.workflow_id) {
      links.push(h('li', {}, 'Parent: ', link(path('namespaces', namespace, 'workflows', d.parent_execution.workflow_id, d.parent_execution.run_id || ''), d.parent_execution.workflow_id)));
    }
    if (d.continued_execution_run_id) {
      links.push(h('li', {}, 'Continued from run: ', link(path('namespaces', namespace, 'workflows', workflowId, d.continued_execution_run_id), d.continued_execution_run_id)));
    }
    if (closing && closing.event_type === 'WorkflowExecutionContinuedAsNew') {
      links.push(h('li', {}, 'Continued as new: ', link(path('namespaces', namespace, 'workflows', workflowId, closing.attrs.new_execution_run_id), closing.attrs.new_execution_run_id)));
    }
    for (const e of events) {
      if (e.event_type === 'ChildWorkflowExecutionStarted') {
        links.push(h('li', {}, `Child ${e.attrs.workflow_type || ''}: `, link(path('namespaces', namespace, 'workflows', e.attrs.workflow_id, e.attrs.run_id || ''), e.attrs.workflow_id)));
      }
    }
    replace(head,
      h('h1', { class: 'wid' }, workflowId),
      h('p', {}, status(d.status), ' ', h('span', { id: 'workflow-type' }, d.workflow_type)),
      h('dl', { class: 'facts' },
        h('dt', {}, 'Run ID'), h('dd', { class: 'mono' }, execution.run_id),
        h('dt', {}, 'Task queue'), h('dd', {}, d.task_queue),
        h('dt', {}, 'Started'), h('dd', {}, time(d.start_time)),
        h('dt', {}, 'Closed'), h('dd', {}, d.close_time ? `${time(d.close_time)} (${duration(d.start_time, d.close_time)})` : '—'),
        h('dt', {}, 'Events'), h('dd', { id: 'history-length' }, d.history_length || events.length),
        d.pause ? [h('dt', {}, 'Paused'), h('dd', { id: 'paused' }, `since ${time(d.pause.pause_time)} by ${d.pause.identity || '?'}: ${d.pause.reason || ''}`)] : null,
        d.origin_json ? [h('dt', {}, 'Origin'), h('dd', { class: 'mono' }, d.origin_json)] : null),
      links.length ? h('ul', { class: 'links' }, links) : null);
    const io = [h('h2', {}, 'Input'), payloadBlock(first.input)];
    if (closing && closing.attrs.result) io.push(h('h2', {}, 'Result'), payloadBlock(closing.attrs.result));
    if (closing && closing.attrs.failure) io.push(h('h2', {}, 'Failure'), pretty(readable(closing.attrs.failure)));
    const attributes = Object.fromEntries(Object.entries((d.search_attributes || {}).indexed_fields || {})
      .map(([name, value]) => [name, attributeValue(value)]));
    // Each memo field is one payload (not a list of them).
    const memo = Object.fromEntries(Object.entries((d.memo || {}).fields || {})
      .map(([name, payload]) => [name, showPayloads({ payloads: [payload] })]));
    const pending = (d.pending_activities || []).map((p) => h('tr', {},
      h('td', {}, p.activity_id), h('td', {}, p.activity_type), h('td', {}, p.state), h('td', { class: 'num' }, p.attempt || 1),
      h('td', {}, waiting(p, d)), h('td', {}, p.last_failure ? p.last_failure.message || 'failed' : '')));
    const task = d.pending_workflow_task;
    replace(details,
      h('section', { class: 'card' }, io),
      Object.keys(attributes).length || Object.keys(memo).length
        ? h('section', { class: 'card' }, h('h2', {}, 'Search attributes'), pretty(attributes), h('h2', {}, 'Memo'), pretty(memo)) : null,
      pending.length ? h('section', { class: 'card', id: 'pending' }, h('h2', {}, 'Pending activities'),
        table(['Activity', 'Type', 'State', 'Attempt', 'Why it waits', 'Last failure'], pending)) : null,
      task ? h('section', { class: 'card' }, h('h2', {}, 'Workflow task'),
        h('p', {}, `${task.state}, attempt ${task.attempt || 1}`, task.last_failure ? ` — ${task.last_failure.message}` : '')) : null);
    replace(dagBox, dagSvg(dagNodes(d, events), (node) => replace(nodeDetail, nodeCard(node, d, namespace))));
    replace(actions, executionActions(context, execution, d, events, refresh));
  };

  const refresh = async () => {
    describe = await rpc('DescribeWorkflowExecution', { namespace, execution });
    drawHead();
  };

  replace(main, head, actions, h('div', { class: 'bar' }, tabBar, download), tabBody, details);
  timeline.append(...events.map(timelineRow));
  drawHead();
  show(current);

  // Live: park on the history until new events come (no work on the server meanwhile).
  (async () => {
    while (!stop.signal.aborted) {
      const running = describe.status === 'WORKFLOW_EXECUTION_STATUS_RUNNING';
      replace(liveNote, running ? '● live' : 'closed');
      try {
        const after = events.length ? events[events.length - 1].event_id : 0;
        const page = await rpc('GetWorkflowExecutionHistory', {
          namespace, execution, after_event_id: after, wait_new_event: running, wait_timeout: '25s', maximum_page_size: PAGE,
        }, { signal: stop.signal });
        const got = (page.events || []).map(parsed).filter((e) => e.event_id > after);
        if (!got.length) {
          if (running) continue;
          return; // closed, and every event is shown
        }
        events.push(...got);
        timeline.append(...got.map(timelineRow));
        if (full.childElementCount) full.append(...got.map(fullEntry));
        await refresh();
      } catch (error) {
        if (stop.signal.aborted) return;
        replace(liveNote, errorBox(error));
        await new Promise((resolve) => setTimeout(resolve, 3000));
      }
    }
  })();
  return () => stop.abort();
}

/** What the DAG shows about a clicked node: an activity's every attempt, a child's link. */
function nodeCard(node, d, namespace) {
  const attempts = (d.activity_attempts || []).filter((a) => a.activity_id === node.id);
  return h('section', { class: 'card' }, h('h2', {}, `${node.label} — ${node.state}`), h('p', { class: 'mono' }, node.sub),
    node.workflowId ? h('p', {}, link(path('namespaces', namespace, 'workflows', node.workflowId), `open child ${node.workflowId}`)) : null,
    attempts.length ? table(['Attempt', 'Worker', 'Started', 'Ended', 'Outcome', 'Failure'], attempts.map((a) => h('tr', {},
      h('td', { class: 'num' }, a.attempt || 1), h('td', {}, a.identity || ''), h('td', {}, time(a.started_time)),
      h('td', {}, time(a.ended_time)), h('td', {}, a.outcome || ''), h('td', {}, (a.failure || {}).message || '')))) : null);
}

/** Why a pending activity waits, from what describe says about it. */
function waiting(p, d) {
  const known = new Set(['activity_id', 'activity_type', 'state', 'attempt', 'last_heartbeat_time', 'next_attempt_schedule_time', 'last_failure', 'last_worker_identity', 'waiting_reason']);
  const reasons = [];
  if (d.pause) reasons.push('the run is paused');
  if (p.waiting_reason) reasons.push(p.waiting_reason); // a concurrency slot, an open breaker, ...
  else if (p.next_attempt_schedule_time) reasons.push(`retry backoff until ${time(p.next_attempt_schedule_time)}`);
  else if (p.state === 'SCHEDULED') reasons.push(`waiting for a worker on ${d.task_queue}`);
  else if (p.state === 'STARTED') reasons.push(`running on ${p.last_worker_identity || 'a worker'}${p.last_heartbeat_time ? `, heartbeat ${time(p.last_heartbeat_time)}` : ''}`);
  // Fields other features add (a concurrency slot, an open breaker, a pause): shown as they come.
  for (const [key, value] of Object.entries(p)) if (!known.has(key)) reasons.push(`${key.replaceAll('_', ' ')}: ${typeof value === 'object' ? JSON.stringify(value) : value}`);
  return reasons.join('; ');
}
