// The JSON API and the live stream. The launch URL's ?token= was exchanged for an HttpOnly,
// SameSite=Strict cookie by the page's own answer; the cookie authenticates every API call,
// static file and the WebSocket, so the token is removed from the address bar (and with it from
// the history and from copied links) before anything else runs.
if (new URLSearchParams(location.search).has('token')) {
  history.replaceState(history.state, '', location.pathname + location.hash);
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
  const init = { method, headers: {}, credentials: 'same-origin' };
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
  const data = await response.json().catch(() => ({}));
  if (!response.ok) {
    const e = data.error || {};
    throw new ApiError(response.status, e.code || 'HTTP_' + response.status, e.message || response.statusText, e);
  }
  return data;
}

export const sessionPath = (id) => `/api/sessions/${encodeURIComponent(id)}`;

export function liveSocket(id, afterSeq) {
  const scheme = location.protocol === 'https:' ? 'wss' : 'ws';
  const query = new URLSearchParams({ after_seq: String(afterSeq) });
  return new WebSocket(`${scheme}://${location.host}${sessionPath(id)}/live?${query}`);
}
