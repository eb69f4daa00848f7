// The JSON API and the live stream. The launch URL's ?token= (or the token a launch code from
// the browser dsh web started is traded for) is kept in this origin's
// localStorage (scheme, host and port: no other server on this machine can read it, where a
// cookie would be sent to every port of 127.0.0.1) and removed from the address bar (and with it
// from the history and from copied links) before anything else runs. Every API call presents it
// as a Bearer header, the WebSocket as its `dsh.token.<token>` subprotocol.
//
// A link's token is tried before anything else is asked (`tokenSettled`): kept once the server
// accepts it; when the server refuses it (a stale launch URL, a link in a reply or on another
// site) and the token kept here works, the page uses that one and says so once. A refused link
// token is never kept: it must not replace the one that works for the other tabs and the next
// reload.
//
// After any disconnect (a live stream that dropped, a fetch that failed on the network) nothing
// is sent with the token until the server at this address proved it knows it (`hello.js`): the
// port of a stopped dsh web is anyone's. One that cannot prove it is sent the token no more:
// every call fails with `NOT_DSH` (or, when no server ever took this page's token, as refused,
// a 401). The first load (the link's token tried, a launch code traded, the first calls) asks no
// proof: the page was just served from here.
import { askServer, canCheck } from './hello.js';

const TOKEN_KEY = 'dsh-token';
const LINK_TOKEN_REFUSED = 'The link\'s access token was wrong: this page uses the one this browser kept.';
const query = new URLSearchParams(location.search);
let launched = query.get('token');
const launchCode = query.get('launch'); // the browser dsh web started: traded for the token
if (launched !== null || launchCode !== null) history.replaceState(history.state, '', location.pathname + location.hash);
const stored = (() => {
  try { return localStorage.getItem(TOKEN_KEY); } catch { return null; }
})();
let token = launched ?? stored;
let unkept = launched;

function keepToken() {
  accepted = true;
  if (unkept === null) return;
  try { localStorage.setItem(TOKEN_KEY, unkept); } catch { /* storage off: this page only */ }
  unkept = null;
}

export const NOT_DSH = 'The server at this address is not the dsh web that opened this page (it stopped, and '
  + 'another program or a dsh web with another token took its port): this page no longer sends it its '
  + 'access token. Reload from the URL `dsh web` printed.';
const NO_WEBCRYPTO = 'This page cannot check that the server at its address is still the dsh web that opened '
  + 'it (a plain-http page from another machine has no WebCrypto), so it no longer sends it its access token: '
  + 'reload the page once dsh web is back.';
export const NEVER_ACCEPTED = 'dsh web does not accept this page\'s access token: open the URL `dsh web` printed.';
let trust = 'proven';  // 'proven' | 'unknown' (since a disconnect) | 'unproven' (for good)
let drops = 0;         // disconnects so far: a proof asked before the last one proves nothing
let accepted = false;  // the server took this page's token once (else a failed proof is a refusal)
let asking = null;     // the proof under way

/** The connection dropped (a stream closed, a fetch failed on the network): whatever answers
 * next proves it knows the token before it is sent it. */
export function connectionLost() {
  drops += 1;
  if (trust === 'proven') trust = 'unknown';
}

/** Whether the token may be sent now: 'proven', 'unreachable' (asked again at the next call) or
 * 'unproven' (never again). */
async function trusted() {
  if (trust !== 'unknown') return trust;
  if (!token) return 'proven';  // nothing to give away
  const before = drops;
  asking ??= askServer(token).finally(() => { asking = null; });
  const answer = await asking;
  if (answer === 'unreachable') return answer;
  if (trust === 'unknown' && drops === before) trust = answer;
  return trust === 'unknown' ? 'unreachable' : trust;
}

const refused = (response) => response.status === 401 || response.status === 429;
const answers = (candidate) => fetch('/api/warnings', { headers: { Authorization: `Bearer ${candidate}` } });

/** The link's token, or the kept one when the server refuses the link's and takes the kept one;
 * resolves to the notice to show then (else null). An unreachable server settles nothing: the
 * link's token stays, kept once a call succeeds with it. */
async function settleToken() {
  if (launchCode !== null) await tradeLaunchCode(launchCode);
  if (launched === null) return null;
  try {
    const tried = await answers(launched);
    if (tried.ok) keepToken();
    if (!refused(tried) || stored === null || stored === launched) return null;
    if (!(await answers(stored)).ok) return null;
  } catch {
    return null;
  }
  token = stored;
  unkept = null;
  return LINK_TOKEN_REFUSED;
}

/** The token for a launch code, asked by a fetch (`dsh.web.launch`): a redirect to
 * `/?token=` made it a visited URL, which the browser keeps in its history on disk. A spent or
 * late code leaves the kept token in use, as a page opened without a link. */
async function tradeLaunchCode(code) {
  try {
    const response = await fetch('/api/launch', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ code }),
    });
    const data = response.ok ? await response.json() : {};
    if (typeof data.token === 'string') launched = data.token;
  } catch { /* unreachable: the kept token, if any */ }
  if (launched !== null) {
    token = launched;
    unkept = launched;
  }
}

/** Settled before any API call is made (and before app.js opens the server's stream). */
export const tokenSettled = settleToken();

export class ApiError extends Error {
  constructor(status, code, message, extra = {}) {
    super(message);
    this.status = status;
    this.code = code;
    this.extra = extra;
  }
}

export async function api(method, path, body) {
  await tokenSettled;
  const asked = await trusted();
  if (asked === 'unreachable') throw new ApiError(0, 'NETWORK', 'cannot reach dsh web');
  // a server that never took the token and cannot prove it knows it: refused, as a 401 is
  if (asked === 'unproven' && !accepted) throw new ApiError(401, 'UNAUTHORIZED', NEVER_ACCEPTED);
  if (asked === 'unproven') throw new ApiError(0, 'NOT_DSH', canCheck() ? NOT_DSH : NO_WEBCRYPTO);
  const init = { method, headers: token ? { Authorization: `Bearer ${token}` } : {} };
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch (error) {
    connectionLost();
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

/** A live stream: with the token only while the server here is proven (the callers ask the API
 * first); else without it, refused by dsh web and closed as a drop, to be asked again. */
function socketTo(path) {
  const scheme = location.protocol === 'https:' ? 'wss' : 'ws';
  const sent = token && trust === 'proven';
  const socket = new WebSocket(`${scheme}://${location.host}${path}`, sent ? ['dsh', `dsh.token.${token}`] : ['dsh']);
  if (sent) socket.addEventListener('open', () => { accepted = true; });
  return socket;
}

export function liveSocket(id, afterSeq) {
  const query = new URLSearchParams({ after_seq: String(afterSeq) });
  return socketTo(`${sessionPath(id)}/live?${query}`);
}

/** The server's stream: its warnings (a session's come with that session's stream). */
export const serverSocket = () => socketTo('/api/live');
