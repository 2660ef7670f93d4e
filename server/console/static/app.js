// The router: each path draws its page into <main>; links marked data-route move
// without a reload. With authentication on, it asks for an API key first.

import { ApiError, apiKey, setApiKey, useCodec, whoami } from './api.js';
import { errorBox, h, link, path, replace } from './dom.js';
import { workflowList } from './workflows.js';
import { executionPage } from './execution.js';
import { auditPage, batchesPage, deadLettersPage, limitsPage, namespacesPage, schedulerPage, schedulesPage, taskQueuesPage } from './pages.js';

const main = document.getElementById('main');
let me = null;
let leave = null; // stops the live parts of the page being left

function namespaceOf(parts) {
  return parts[0] === 'namespaces' && parts[1] ? parts[1] : sessionStorage.getItem('flowforge.namespace') || 'default';
}

function drawNav(namespace) {
  const ns = (...rest) => path('namespaces', namespace, ...rest);
  replace(document.getElementById('nav'),
    link(ns('workflows'), 'Workflows'), link(ns('schedules'), 'Schedules'), link(ns('task-queues'), 'Task queues'),
    link(ns('dead-letters'), 'Dead letters'), link(ns('limits'), 'Limits'), link(ns('batches'), 'Batches'), link('/namespaces', 'Namespaces'), link('/audit', 'Audit'),
    link('/scheduler', 'Scheduler'));
  const who = document.getElementById('who');
  replace(who, me ? me.name : '');
  if (me && me.auth_required) {
    who.append(' ', h('button', { class: 'link', type: 'button', onclick: () => { setApiKey(''); route(); } }, 'Sign out'));
  }
}

function keyForm(message) {
  const input = h('input', { type: 'password', name: 'key', autocomplete: 'off', placeholder: 'ffk_…', required: true });
  const form = h('form', { class: 'card narrow', id: 'key-form' },
    h('h1', {}, 'API key'),
    h('p', {}, 'This server requires credentials. The key stays in this browser tab (sessionStorage) and is sent as the bearer.'),
    message ? h('p', { class: 'error' }, message) : null,
    input, h('button', { type: 'submit' }, 'Continue'));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    setApiKey(input.value.trim());
    route();
  });
  replace(main, form);
  input.focus();
}

async function route() {
  if (leave) leave();
  leave = null;
  const parts = location.pathname.split('/').filter(Boolean).map(decodeURIComponent);
  try {
    me = await whoami();
  } catch (error) {
    me = null;
    drawNav(namespaceOf(parts));
    if (error instanceof ApiError && error.httpStatus === 401) {
      keyForm(apiKey() ? error.message : '');
      return;
    }
    replace(main, errorBox(error));
    return;
  }
  const namespace = namespaceOf(parts);
  sessionStorage.setItem('flowforge.namespace', namespace);
  useCodec(me.codec_endpoint, namespace);
  drawNav(namespace);
  const context = { me, namespace, main, params: new URLSearchParams(location.search), navigate };
  const [first, , section, ...rest] = parts;
  let page;
  if (first === 'namespaces' && parts.length >= 3) {
    page = {
      workflows: () => (rest.length ? executionPage(context, rest[0], rest[1] || '') : workflowList(context)),
      schedules: () => schedulesPage(context, rest[0]),
      'task-queues': () => taskQueuesPage(context, rest[0]),
      'dead-letters': () => deadLettersPage(context),
      limits: () => limitsPage(context),
      batches: () => batchesPage(context),
    }[section];
  } else if (first === 'namespaces') {
    page = () => namespacesPage(context);
  } else if (first === 'audit') {
    page = () => auditPage(context);
  } else if (first === 'scheduler') {
    page = () => schedulerPage(context);
  } else if (!first) {
    navigate(path('namespaces', namespace, 'workflows'), true);
    return;
  }
  if (!page) {
    replace(main, h('p', { class: 'error' }, 'No such page.'));
    return;
  }
  try {
    leave = (await page()) || null;
  } catch (error) {
    replace(main, errorBox(error));
  }
}

function navigate(to, replaceState = false) {
  if (replaceState) history.replaceState(null, '', to);
  else history.pushState(null, '', to);
  route();
}

document.addEventListener('click', (event) => {
  const anchor = event.target.closest && event.target.closest('a[data-route]');
  if (!anchor || event.ctrlKey || event.metaKey || event.shiftKey || event.button !== 0) return;
  event.preventDefault();
  navigate(anchor.getAttribute('href'));
});
window.addEventListener('popstate', route);
route();
