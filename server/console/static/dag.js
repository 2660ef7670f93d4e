// The execution's DAG as SVG: activities as nodes (state colour, attempt, duration),
// depends_on edges, children and timers as their own nodes. Layered layout: a node's
// layer is the longest dependency path to it; within a layer, nodes are ordered by
// the mean position of their parents, which keeps edges short and few crossing.

import { duration, s } from './dom.js';

const W = 180;
const H = 52;
const GAP_X = 24;
const GAP_Y = 48;

/** Nodes {id, kind, label, sub, state, deps} from describe's dag and the history. */
export function dagNodes(describe, events) {
  const times = {};
  for (const e of events) {
    const a = e.attrs;
    if (e.event_type === 'ActivityTaskScheduled') times[e.event_id] = { start: e.event_time };
    const scheduled = a.scheduled_event_id;
    if (scheduled && times[scheduled] && /^ActivityTask(Completed|Failed|TimedOut|Canceled)$/.test(e.event_type)) {
      times[scheduled].end = e.event_time;
    }
  }
  const nodes = (describe.dag || []).map((n) => {
    const t = times[n.scheduled_event_id] || {};
    const took = t.start ? duration(t.start, t.end) : '';
    return {
      id: n.activity_id, kind: 'activity', label: n.activity_type, state: n.state || 'SCHEDULED',
      sub: [n.activity_id, Number(n.attempt) > 1 && `attempt ${n.attempt}`, took].filter(Boolean).join(' · '),
      deps: n.depends_on_activity_ids || [],
    };
  });
  const timers = {};
  const children = {};
  for (const e of events) {
    const a = e.attrs;
    if (e.event_type === 'TimerStarted') timers[a.timer_id] = { id: `timer:${a.timer_id}`, kind: 'timer', label: `timer ${a.timer_id}`, sub: a.start_to_fire_timeout != null ? `fires after ${a.start_to_fire_timeout} s` : '', state: 'STARTED', deps: [] };
    if (e.event_type === 'TimerFired' && timers[a.timer_id]) timers[a.timer_id].state = 'COMPLETED';
    if (e.event_type === 'TimerCanceled' && timers[a.timer_id]) timers[a.timer_id].state = 'CANCELED';
    if (e.event_type === 'StartChildWorkflowExecutionInitiated') children[a.workflow_id] = { id: `child:${a.workflow_id}`, kind: 'child', label: a.workflow_type || 'child', sub: a.workflow_id, state: 'STARTED', deps: [], workflowId: a.workflow_id };
    const child = children[a.workflow_id];
    if (child && e.event_type.startsWith('ChildWorkflowExecution')) {
      child.state = { ChildWorkflowExecutionCompleted: 'COMPLETED', ChildWorkflowExecutionFailed: 'FAILED', ChildWorkflowExecutionCanceled: 'CANCELED', ChildWorkflowExecutionTerminated: 'FAILED', ChildWorkflowExecutionTimedOut: 'TIMED_OUT' }[e.event_type] || child.state;
    }
  }
  return [...nodes, ...Object.values(timers), ...Object.values(children)];
}

function layers(nodes) {
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const depth = new Map();
  const visiting = new Set();
  const layerOf = (n) => {
    if (depth.has(n.id)) return depth.get(n.id);
    if (visiting.has(n.id)) return 0; // a cycle cannot happen; never loop if it does
    visiting.add(n.id);
    let d = 0;
    for (const dep of n.deps) if (byId.has(dep)) d = Math.max(d, layerOf(byId.get(dep)) + 1);
    depth.set(n.id, d);
    return d;
  };
  const rows = [];
  for (const n of nodes) (rows[layerOf(n)] ||= []).push(n);
  const x = new Map();
  rows.forEach((row) => {
    const weight = (n) => {
      const parents = n.deps.filter((d) => x.has(d));
      return parents.length ? parents.reduce((sum, d) => sum + x.get(d), 0) / parents.length : Infinity;
    };
    row.sort((a, b) => weight(a) - weight(b));
    row.forEach((n, i) => x.set(n.id, i));
  });
  return rows;
}

/** The SVG of the nodes; onPick(node) when one is clicked. */
export function dagSvg(nodes, onPick) {
  const rows = layers(nodes);
  const widest = Math.max(1, ...rows.map((r) => r.length));
  const width = widest * (W + GAP_X) + GAP_X;
  const height = rows.length * (H + GAP_Y) + GAP_Y;
  const at = new Map();
  rows.forEach((row, r) => {
    const offset = (width - row.length * (W + GAP_X) + GAP_X) / 2;
    row.forEach((n, i) => at.set(n.id, { x: offset + i * (W + GAP_X), y: GAP_Y / 2 + r * (H + GAP_Y) }));
  });
  const edges = [];
  for (const n of nodes) {
    for (const dep of n.deps) {
      const [from, to] = [at.get(dep), at.get(n.id)];
      if (!from) continue;
      const [x1, y1, x2, y2] = [from.x + W / 2, from.y + H, to.x + W / 2, to.y];
      const mid = (y1 + y2) / 2;
      edges.push(s('path', { class: 'dag-edge', 'data-from': dep, 'data-to': n.id, d: `M${x1},${y1} C${x1},${mid} ${x2},${mid} ${x2},${y2 - 4}`, 'marker-end': 'url(#arrow)' }));
    }
  }
  const boxes = nodes.map((n) => {
    const p = at.get(n.id);
    const group = s('g', { class: `dag-node kind-${n.kind} state-${n.state}`, 'data-id': n.id, transform: `translate(${p.x},${p.y})`, tabindex: 0 },
      s('title', {}, `${n.label}\n${n.sub}\n${n.state}`),
      s('rect', { width: W, height: H, rx: n.kind === 'timer' ? 26 : 6 }),
      s('text', { x: 10, y: 20, class: 'label' }, n.label.length > 24 ? `${n.label.slice(0, 23)}…` : n.label),
      s('text', { x: 10, y: 38, class: 'sub' }, n.sub.length > 30 ? `${n.sub.slice(0, 29)}…` : n.sub));
    if (onPick) {
      group.addEventListener('click', () => onPick(n));
      group.addEventListener('keydown', (event) => { if (event.key === 'Enter') onPick(n); });
    }
    return group;
  });
  return s('svg', { class: 'dag', width, height, viewBox: `0 0 ${width} ${height}`, role: 'img', 'aria-label': `DAG of ${nodes.length} nodes` },
    s('defs', {}, s('marker', { id: 'arrow', viewBox: '0 0 10 10', refX: 8, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse' }, s('path', { d: 'M0,0 L10,5 L0,10 z' }))),
    edges, boxes);
}
