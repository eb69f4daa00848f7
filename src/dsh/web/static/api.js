// The JSON API and the live stream. The access token comes from the page URL (?token=) and is
// sent as a Bearer header on every API call; the WebSocket carries it as ?token= (browsers
// cannot set headers there).
export const TOKEN = new URLSearchParams(location.search).get('token') || '';

export class ApiError extends Error {
  constructor(status, code, message, extra = {}) {
    super(message);
    this.status = status;
    this.code = code;
    this.extra = extra;
  }
}

export async function api(method, path, body) {
  const init = { method, headers: { Authorization: `Bearer ${TOKEN}` } };
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
  const query = new URLSearchParams({ token: TOKEN, after_seq: String(afterSeq) });
  return new WebSocket(`${scheme}://${location.host}${sessionPath(id)}/live?${query}`);
}
