// Building the document from data without ever parsing it as HTML: every value
// becomes a text node or an attribute value (never innerHTML).

const SVG = 'http://www.w3.org/2000/svg';

function fill(el, props, children) {
  for (const [key, value] of Object.entries(props || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'class') el.setAttribute('class', value);
    else if (key.startsWith('on')) el.addEventListener(key.slice(2), value);
    else el.setAttribute(key, value === true ? '' : String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

/** An HTML element: h('a', {href}, 'text', otherNode). */
export function h(tag, props, ...children) {
  return fill(document.createElement(tag), props, children);
}

/** An SVG element. */
export function s(tag, props, ...children) {
  return fill(document.createElementNS(SVG, tag), props, children);
}

/** Replaces the children of el. */
export function replace(el, ...children) {
  el.replaceChildren();
  return fill(el, {}, children);
}

/** A link inside the console (handled by the router without a reload). */
export function link(path, text, props = {}) {
  return h('a', { ...props, href: path, 'data-route': '' }, text);
}

/** Path segments, each encoded. */
export function path(...segments) {
  return '/' + segments.map((seg) => encodeURIComponent(seg)).join('/');
}

export function time(text) {
  if (!text) return '';
  const date = new Date(text);
  return Number.isNaN(date.getTime()) ? String(text) : date.toLocaleString();
}

export function duration(fromText, toText) {
  if (!fromText) return '';
  const ms = (toText ? new Date(toText) : new Date()) - new Date(fromText);
  if (!(ms >= 0)) return '';
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(1)} s`;
  if (ms < 3600000) return `${Math.floor(ms / 60000)} m ${Math.round((ms % 60000) / 1000)} s`;
  return `${(ms / 3600000).toFixed(1)} h`;
}

export function status(value) {
  const name = String(value || 'UNSPECIFIED').replace('WORKFLOW_EXECUTION_STATUS_', '');
  return h('span', { class: `badge st-${name}` }, name);
}

/** A <pre> with pretty JSON (or the text when it is not JSON). */
export function pretty(value) {
  return h('pre', { class: 'json' }, typeof value === 'string' ? value : JSON.stringify(value, null, 2));
}

export function errorBox(error) {
  return h('p', { class: 'error', role: 'alert' }, error && error.code ? `${error.code}: ${error.message}` : String(error));
}

export function table(headers, rows, props = {}) {
  return h('div', { class: 'scroll' },
    h('table', props, h('thead', {}, h('tr', {}, headers.map((title) => h('th', {}, title)))), h('tbody', {}, rows)));
}
