// OIDC login from the browser, as Temporal's UI does it: the authorization code flow
// with PKCE (S256) for a public client, so no client secret exists in the page. The
// state, nonce and verifier of a login in progress, and then the token, are kept in
// this tab's sessionStorage only.

import { endSession, setBearer } from './api.js';

export const CALLBACK_PATH = '/auth/callback';
const PENDING = 'flowforge.oidcPending';
const LOOPBACK = ['127.0.0.1', '[::1]', 'localhost'];

function base64url(bytes) {
  return btoa(String.fromCharCode(...bytes)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

function randomText(size) {
  return base64url(crypto.getRandomValues(new Uint8Array(size)));
}

async function codeChallenge(verifier) {
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier));
  return base64url(new Uint8Array(digest));
}

/** The claims of a JWT, unverified (the server verifies what it is sent). */
function claims(jwt) {
  const part = String(jwt).split('.')[1] || '';
  const padded = part.replace(/-/g, '+').replace(/_/g, '/') + '='.repeat((4 - (part.length % 4)) % 4);
  try {
    return JSON.parse(new TextDecoder().decode(Uint8Array.from(atob(padded), (c) => c.charCodeAt(0))));
  } catch {
    return null;
  }
}

/** A provider endpoint the page may use: https (http to loopback only), on the issuer's origin
 * when the page fetches it (the CSP lets the page connect to that origin only). */
function endpoint(value, name, issuer, { fetched }) {
  let url;
  try {
    url = new URL(value);
  } catch {
    throw new Error(`The provider's discovery document has no valid ${name}.`);
  }
  const secure = url.protocol === 'https:' || (url.protocol === 'http:' && LOOPBACK.includes(url.hostname));
  if (!secure) throw new Error(`The provider's ${name} ${url.href} is not https.`);
  if (fetched && url.origin !== new URL(issuer).origin) {
    throw new Error(`The provider's ${name} ${url.href} is not on the issuer's origin, which is the only one this console may call.`);
  }
  return url;
}

async function discover(oidc) {
  const url = `${oidc.issuer.replace(/\/$/, '')}/.well-known/openid-configuration`;
  let response;
  try {
    response = await fetch(url, { credentials: 'omit' });
  } catch {
    throw new Error(`Could not reach the sign-in provider at ${url}.`);
  }
  if (!response.ok) throw new Error(`The sign-in provider answered ${response.status} for ${url}.`);
  const doc = await response.json();
  // OIDC Discovery 4.3: the document must name exactly the issuer it was fetched for.
  if (doc.issuer !== oidc.issuer) throw new Error(`The provider says it is ${doc.issuer}, not ${oidc.issuer}.`);
  return {
    authorize: endpoint(doc.authorization_endpoint, 'authorization_endpoint', oidc.issuer, { fetched: false }),
    token: endpoint(doc.token_endpoint, 'token_endpoint', oidc.issuer, { fetched: true }),
    // RP-initiated logout (optional): Sign out ends the provider's session there too.
    endSession: doc.end_session_endpoint
      ? endpoint(doc.end_session_endpoint, 'end_session_endpoint', oidc.issuer, { fetched: false })
      : null,
  };
}

/** A display name for the provider ("Sign in with login.example.com"). */
export function providerName(oidc) {
  return new URL(oidc.issuer).host;
}

/** Leaves for the provider's login; it sends the browser back to CALLBACK_PATH. */
export async function signIn(oidc, returnTo) {
  const { authorize, token, endSession: logout } = await discover(oidc);
  const pending = {
    state: randomText(16), nonce: randomText(16), verifier: randomText(32), returnTo, tokenEndpoint: token.href,
    endSession: logout ? logout.href : '',
  };
  sessionStorage.setItem(PENDING, JSON.stringify(pending));
  const query = {
    response_type: 'code',
    client_id: oidc.client_id,
    redirect_uri: location.origin + CALLBACK_PATH,
    scope: oidc.scopes.join(' '),
    state: pending.state,
    nonce: pending.nonce,
    code_challenge: await codeChallenge(pending.verifier),
    code_challenge_method: 'S256',
  };
  // Auth0 issues a JWT access token (one the server can verify) only for a named API.
  if (oidc.audience) query.audience = oidc.audience;
  for (const [name, value] of Object.entries(query)) authorize.searchParams.set(name, value);
  location.assign(authorize.href);
}

/** On CALLBACK_PATH: checks the answer belongs to the login this tab started, trades the code
 * for a token and keeps it. Returns the path to go back to; throws with what went wrong. */
export async function completeSignIn(oidc) {
  const params = new URLSearchParams(location.search);
  const pending = JSON.parse(sessionStorage.getItem(PENDING) || 'null');
  sessionStorage.removeItem(PENDING); // one answer per login: a replayed callback finds nothing
  if (!pending || !params.get('state') || params.get('state') !== pending.state) {
    throw new Error('This sign-in answer does not belong to a sign-in started in this tab (state mismatch); sign in again.');
  }
  if (params.get('error')) {
    throw new Error(`The provider refused the sign-in: ${params.get('error')} ${params.get('error_description') || ''}`.trim());
  }
  const code = params.get('code');
  if (!code) throw new Error('The provider sent no authorization code.');
  const response = await fetch(pending.tokenEndpoint, {
    method: 'POST',
    credentials: 'omit',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      code,
      redirect_uri: location.origin + CALLBACK_PATH,
      client_id: oidc.client_id,
      code_verifier: pending.verifier,
    }),
  });
  const body = await response.json().catch(() => ({}));
  if (!response.ok || !body.access_token) {
    throw new Error(`The provider gave no token: ${body.error || response.status} ${body.error_description || ''}`.trim());
  }
  if (body.id_token) {
    const identity = claims(body.id_token);
    if (!identity || identity.nonce !== pending.nonce || identity.iss !== oidc.issuer) {
      throw new Error('The provider\'s ID token is not for this sign-in (nonce or issuer); sign in again.');
    }
  }
  const access = claims(body.access_token);
  const lifetime = Number(body.expires_in);
  const expiresAt = lifetime > 0 ? Date.now() + lifetime * 1000 : access && access.exp ? access.exp * 1000 : 0;
  setBearer(body.access_token, expiresAt, pending.endSession || '');
  const back = String(pending.returnTo || '/');
  return back.startsWith('/') && !back.startsWith('//') ? back : '/';
}

/** Where Sign out sends the browser to end the provider's session too (OIDC RP-Initiated
 * Logout), back to the console's root after; '' when the bearer is not from such a login.
 * Register `{console origin}/` as a post-logout redirect URI at the provider. */
export function providerLogoutUrl(oidc) {
  const logout = endSession();
  if (!oidc || !logout) return '';
  const url = new URL(logout);
  url.searchParams.set('client_id', oidc.client_id);
  url.searchParams.set('post_logout_redirect_uri', `${location.origin}/`);
  return url.href;
}
