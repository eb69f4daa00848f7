// The JSON API and the live stream. The launch URL's ?token= is kept in this origin's
// localStorage (scheme, host and port: no other server on this machine can read it, where a
// cookie would be sent to every port of 127.0.0.1) and removed from the address bar (and with it
// from the history and from copied links) before anything else runs. Every API call presents it
// as a Bearer header, the WebSocket as its `dsh.token.<token>` subprotocol. A launched token is
// kept once the server accepted it: a link to this page with another token (in a reply, on
// another site) must not replace the one that works for the other tabs and the next reload.
const TOKEN_KEY = 'dsh-token';
const launched = new URLSearchParams(location.search).get('token');
if (launched !== null) history.replaceState(history.state, '', location.pathname + location.hash);
const token = launched ?? (() => {
  try { return localStorage.getItem(TOKEN_KEY); } catch { return null; }
})();
let unkept = launched;

function keepToken() {
  if (unkept === null) return;
  try { localStorage.setItem(TOKEN_KEY, unkept); } catch { /* storage off: this page only */ }
  unkept = null;
}

export class ApiError extends Error {
  constructor(status, code, message, extra = {}) {
    super(message);
    this.status = status;
    this.code = code;
    this.extra = extra;
  }
}

export async function api(method, path, body) {
  const init = { method, headers: token ? { Authorization: `Bearer ${token}` } : {} };
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch (error) {
    throw new ApiError(0, 'NETWORK', `cannot reach dsh web: ${error.message}`);
  }
  if (response.ok) keepToken();
  const data = await response.json().catch(() => ({}));
  if (!response.ok) {
    const e = data.error || {};
    throw new ApiError(response.status, e.code || 'HTTP_' + response.status, e.message || response.statusText, e);
  }
  return data;
}

export const sessionPath = (id) => `/api/sessions/${encodeURIComponent(id)}`;

function socketTo(path) {
  const scheme = location.protocol === 'https:' ? 'wss' : 'ws';
  const protocols = token ? ['dsh', `dsh.token.${token}`] : ['dsh'];
  return new WebSocket(`${scheme}://${location.host}${path}`, protocols);
}

export function liveSocket(id, afterSeq) {
  const query = new URLSearchParams({ after_seq: String(afterSeq) });
  return socketTo(`${sessionPath(id)}/live?${query}`);
}

/** The server's stream: its warnings (a session's come with that session's stream). */
export const serverSocket = () => socketTo('/api/live');
