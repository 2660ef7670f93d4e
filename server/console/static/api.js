// The console's JSON API (/api/v1/{Service}/{Method}: the gRPC API in protobuf JSON),
// the caller's bearer (an API key or an OIDC login's token; sessionStorage only) and
// what its roles allow.

const BEARER = 'flowforge.bearer';
const EXPIRES = 'flowforge.bearerExpires'; // ms since the epoch; absent: no known expiry
const END_SESSION = 'flowforge.endSession'; // the provider's logout URL of an OIDC login's bearer
const ROLE_INCLUDES = {
  reader: ['reader'],
  writer: ['reader', 'writer'],
  worker: ['reader', 'worker'],
  operator: ['reader', 'writer', 'operator'],
  admin: ['reader', 'writer', 'worker', 'operator', 'admin'],
};

export class ApiError extends Error {
  constructor(httpStatus, code, message) {
    super(message);
    this.httpStatus = httpStatus;
    this.code = code;
  }
}

/** The bearer sent with every call ('' when none, or when it has expired). */
export function bearer() {
  return bearerExpired() ? '' : sessionStorage.getItem(BEARER) || '';
}

/** Whether the bearer held has passed its expiry (an OIDC token's; an API key has none here). */
export function bearerExpired() {
  const expires = Number(sessionStorage.getItem(EXPIRES));
  return Boolean(sessionStorage.getItem(BEARER)) && expires > 0 && Date.now() >= expires;
}

/** Keeps `token` for this tab only; '' forgets it (signing out). `endSession` is the
 * provider's logout endpoint when the token came from an OIDC login that has one. */
export function setBearer(token, expiresAt = 0, endSession = '') {
  sessionStorage.removeItem(EXPIRES);
  sessionStorage.removeItem(END_SESSION);
  if (!token) {
    sessionStorage.removeItem(BEARER);
    return;
  }
  sessionStorage.setItem(BEARER, token);
  if (expiresAt > 0) sessionStorage.setItem(EXPIRES, String(expiresAt));
  if (endSession) sessionStorage.setItem(END_SESSION, endSession);
}

/** The provider's logout endpoint of the bearer held ('' for an API key or a provider without one). */
export function endSession() {
  return sessionStorage.getItem(BEARER) ? sessionStorage.getItem(END_SESSION) || '' : '';
}

function headers(reason) {
  const result = { 'Content-Type': 'application/json' };
  const token = bearer();
  if (token) result.Authorization = `Bearer ${token}`;
  if (reason) result['X-FlowForge-Reason'] = encodeURIComponent(reason);
  return result;
}

async function answer(response, { announce401 = true } = {}) {
  const body = await response.json().catch(() => ({}));
  // A bearer refused mid-page (expired, revoked): the router asks for credentials again.
  if (response.status === 401 && announce401) window.dispatchEvent(new CustomEvent('flowforge:unauthenticated'));
  if (!response.ok) throw new ApiError(response.status, body.code || String(response.status), body.message || response.statusText);
  return body;
}

/** Calls an RPC: rpc('DescribeWorkflowExecution', {...}). */
export async function rpc(method, body, { service = 'WorkflowService', signal, reason } = {}) {
  const response = await fetch(`/api/v1/${service}/${method}`, {
    method: 'POST', headers: headers(reason), body: JSON.stringify(body || {}), signal,
  });
  return answer(response);
}

/** Who the key is: {name, grants: {namespace: [roles]}, auth_required, rules: {Method: role}}. */
export async function whoami() {
  return answer(await fetch('/api/v1/whoami', { headers: headers() }), { announce401: false });
}

/** How to sign in, read before signing in: {auth_required, oidc: {issuer, client_id, scopes, audience} | null}. */
export async function consoleConfig() {
  return answer(await fetch('/api/v1/console-config'), { announce401: false });
}

/** Whether `me` may call `method` in `namespace` (the server decides anyway). */
export function can(me, method, namespace) {
  const needed = me && me.rules ? me.rules[method] : undefined;
  if (!needed) return false;
  const scopes = namespace === '*' ? ['*'] : [namespace, '*'];
  return scopes.some((scope) => (me.grants[scope] || []).some((held) => ROLE_INCLUDES[held].includes(needed)));
}

function bytes(b64) {
  return Uint8Array.from(atob(b64 || ''), (c) => c.charCodeAt(0));
}

function text(b64) {
  return new TextDecoder().decode(bytes(b64));
}

/** A payload as shown: {value} for JSON, or {encoded, encoding, size} for what a codec made. */
export function decodePayload(payload) {
  const metadata = Object.fromEntries(Object.entries(payload.metadata || {}).map(([k, v]) => [k, text(v)]));
  const encoding = metadata.encoding || '';
  if (encoding === 'json/plain') {
    try {
      return { value: JSON.parse(text(payload.data)) };
    } catch {
      return { encoded: true, encoding, metadata, size: bytes(payload.data).length };
    }
  }
  if (encoding === 'binary/null') return { value: null };
  return { encoded: true, encoding, metadata, size: bytes(payload.data).length };
}

/** Payloads ({payloads: [...]}) as a JSON-able value for display. */
export function showPayloads(payloads) {
  const list = (payloads && payloads.payloads) || [];
  const shown = list.map((p) => {
    const d = decodePayload(p);
    return d.encoded ? { '(encoded)': d.encoding, metadata: d.metadata, bytes: d.size } : d.value;
  });
  return shown.length === 1 ? shown[0] : shown;
}

/** A JSON value as a json/plain payload. */
export function jsonPayloads(value) {
  const data = btoa(String.fromCharCode(...new TextEncoder().encode(JSON.stringify(value))));
  return { payloads: [{ metadata: { encoding: btoa('json/plain') }, data }] };
}

let codec = null;

/** Decode payloads with this remote codec server (null: show them encoded). */
export function useCodec(endpoint, namespace) {
  codec = endpoint ? { endpoint, namespace } : null;
}

export function codecEnabled() {
  return codec !== null;
}

/** Payload list decoded by the codec server (Temporal's protocol: POST {endpoint}/decode). */
export async function decodeRemote(payloads) {
  const response = await fetch(`${codec.endpoint}/decode`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'X-Namespace': codec.namespace },
    body: JSON.stringify({ payloads }),
  });
  if (!response.ok) throw new Error(`the codec server answered ${response.status}`);
  return (await response.json()).payloads || [];
}
