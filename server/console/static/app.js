// The router: each path draws its page into <main>; links marked data-route move
// without a reload. With authentication on, it asks for an API key or an OIDC login first.

import { ApiError, bearer, bearerExpired, consoleConfig, setBearer, useCodec, whoami } from './api.js';
import { CALLBACK_PATH, completeSignIn, providerLogoutUrl, providerName, signIn } from './oidc.js';
import { errorBox, h, link, path, replace } from './dom.js';
import { workflowList } from './workflows.js';
import { executionPage } from './execution.js';
import { auditPage, batchesPage, deadLettersPage, limitsPage, namespacesPage, schedulerPage, schedulesPage, taskQueuesPage } from './pages.js';

const main = document.getElementById('main');
let me = null;
let config = null; // how to sign in (/api/v1/console-config), read once
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
    who.append(' ', h('button', { class: 'link', type: 'button', onclick: signOut }, 'Sign out'));
  }
}

/** Forgets the bearer; after an OIDC login whose provider offers it, ends that session too. */
function signOut() {
  const logout = providerLogoutUrl(config && config.oidc);
  setBearer('');
  if (logout) location.assign(logout);
  else route();
}

function signInForm(message) {
  const input = h('input', { type: 'password', name: 'key', autocomplete: 'off', placeholder: 'ffk_…', required: true });
  const alert = h('p', { class: 'error', role: 'alert', hidden: !message }, message || '');
  const form = h('form', { class: 'card narrow', id: 'key-form' },
    h('h1', {}, 'Sign in'),
    h('p', {}, 'This server requires credentials. They stay in this browser tab (sessionStorage) and are sent as the bearer.'),
    alert, input, h('button', { type: 'submit' }, 'Continue with this API key'));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    setBearer(input.value.trim());
    route();
  });
  const oidc = config && config.oidc;
  if (oidc) {
    const button = h('button', { type: 'button', id: 'oidc-sign-in' }, `Sign in with ${providerName(oidc)}`);
    button.addEventListener('click', () => {
      button.disabled = true;
      const here = location.pathname === CALLBACK_PATH ? '/' : location.pathname + location.search + location.hash;
      signIn(oidc, here).catch((error) => {
        button.disabled = false;
        alert.hidden = false;
        replace(alert, String(error.message || error));
      });
    });
    form.append(h('p', { class: 'muted' }, 'or'), button);
  }
  replace(main, form);
  input.focus();
}

/** Back from the provider: the token is kept and the page the login started from opens. */
async function finishSignIn() {
  try {
    if (!config.oidc) throw new Error('This server has no OIDC sign-in configured.');
    navigate(await completeSignIn(config.oidc), true);
  } catch (error) {
    history.replaceState(null, '', '/'); // the code and state leave the address bar
    drawNav(namespaceOf([]));
    signInForm(String(error.message || error));
  }
}

async function route() {
  if (leave) leave();
  leave = null;
  const parts = location.pathname.split('/').filter(Boolean).map(decodeURIComponent);
  try {
    config = config || (await consoleConfig());
    if (location.pathname === CALLBACK_PATH) {
      me = null;
      await finishSignIn();
      return;
    }
    if (bearerExpired()) {
      setBearer('');
      me = null;
      drawNav(namespaceOf(parts));
      signInForm('Your sign-in has expired; sign in again.');
      return;
    }
    me = await whoami();
  } catch (error) {
    me = null;
    drawNav(namespaceOf(parts));
    if (error instanceof ApiError && error.httpStatus === 401) {
      signInForm(bearer() ? error.message : '');
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
// A call refused with 401 mid-page (the token expired or was revoked): ask again.
window.addEventListener('flowforge:unauthenticated', () => { if (me) route(); });
route();
