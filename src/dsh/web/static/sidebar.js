// The session list: each session's title (its latest /title, else its first prompt), workspace,
// age (since it was last written) and state: running or open here, busy elsewhere, or idle.
// The shown session's state is the header's: its item is drawn from the info the header shows
// (`showSessionState`, which the page calls whenever the header's run state changes: a `status`
// or `holder` frame, a load), not from the list as it was read, so a `dsh run` taking the
// session in another process shows as busy in both at once, and as idle in both once it ends.
// The other sessions' states follow the server's `session-state` frames (`sessionStateChanged`:
// a turn or /compact here starting or ending, a session opened or released here, another process
// taking or releasing a writer lock, dsh.web.list_states). A list read while one came may have
// been read before that change: its item keeps the state that came after the list was asked.
// A frame about a session the list does not show (created since it was read: in another tab, by
// the terminal UI's /new in another process) has the list read again (app.js), so it shows. Two
// reads never overlap: one asked while another is under way is made once that one is done.
import { api } from './api.js';
import { filterSessions, fmtWhen } from './chrome.js';
import { el, shown } from './dom.js';

const $ = (id) => document.getElementById(id);
const pushed = new Map();  // session id → { state, at }: the latest frame of it, and when it came
let arrivals = 0;          // frames so far (a clock: `at` of each)

export function fmtAge(ms, now = Date.now()) {
  const seconds = Math.max(0, Math.round((now - ms) / 1000));
  if (seconds < 60) return 'just now';
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ago`;
  if (seconds < 86400) return `${Math.floor(seconds / 3600)} h ago`;
  if (seconds < 7 * 86400) return `${Math.floor(seconds / 86400)} d ago`;
  return fmtWhen(ms);
}

export function sessionState(s) {
  if (s.running) return { key: 'running', text: s.running === 'compact' ? '/compact running' : 'running' };
  if (s.open) return { key: 'live', text: 'live here' };
  if (s.heldBy) return { key: 'busy', text: `busy elsewhere (pid ${s.heldBy})` };
  return { key: 'idle', text: 'idle' };
}

/** `s`'s state (a list row's, or the shown session's info) on its item `a`. */
function paintState(a, s) {
  const state = sessionState(s);
  a.dataset.state = state.key;
  const badge = a.querySelector('.meta .state');
  badge.className = `state ${state.key}`;
  badge.textContent = state.text;
}

const itemOf = (id) => document.querySelector(`#session-list .session-item[data-id="${CSS.escape(id)}"]`);

/** The shown session's item takes the state its header shows (`info`: the page's info of it,
 * null while none is loaded). */
export function showSessionState(info) {
  if (!info) return;
  const a = itemOf(info.id);
  if (a) paintState(a, info);
}

/** A `session-state` frame (`s`: {id, open, running, heldBy}): the session's item takes it,
 * unless it is the one shown (`shownId`), whose item is the header's. False when the list has
 * no item for it (and it is not the one shown): the list should be read again. */
export function sessionStateChanged(s, shownId) {
  arrivals += 1;
  pushed.set(s.id, { state: s, at: arrivals });
  if (s.id === shownId) return true;
  const a = itemOf(s.id);
  if (a) paintState(a, s);
  return !!a;
}

function item(s, selected) {
  const a = el('a', 'session-item');
  a.href = `#s=${encodeURIComponent(s.id)}`;
  a.dataset.id = s.id;
  if (s.id === selected) a.classList.add('selected');
  const title = el('div', 'session-title', s.title || 'Untitled session');
  if (!s.title) title.classList.add('untitled');
  const meta = el('div', 'meta');
  const last = s.lastActive || s.createdAt;
  const age = el('span', 'age', fmtAge(last));
  age.title = `last written ${fmtWhen(last)}; created ${fmtWhen(s.createdAt)}`;
  meta.append(age, el('span', 'state'));
  const where = el('div', 'where', s.cwd);
  where.title = shown(s.cwd);
  const sid = el('div', 'sid', s.id);
  sid.append(el('span', 'sr-only', ` created ${fmtWhen(s.createdAt)}`));
  a.append(title, meta, where, sid);
  paintState(a, s);
  return a;
}

let reading = null;  // the read under way
let next = null;     // the arguments of one asked meanwhile

/** The list, read afresh; `shownInfo()`: the info the header shows now (read once the list
 * came: a frame may have changed it meanwhile), whose state the shown session's item takes. */
export function loadSessionList(selected, onError, shownInfo = () => null) {
  if (reading) {
    next = [selected, onError, shownInfo];
    return reading;
  }
  reading = (async () => {
    try {
      await readSessionList(selected, onError, shownInfo);
      while (next) {
        const args = next;
        next = null;
        await readSessionList(...args);
      }
    } finally {
      reading = null;
    }
  })();
  return reading;
}

async function readSessionList(selected, onError, shownInfo) {
  const asked = arrivals;
  let data;
  try {
    data = await api('GET', '/api/sessions');
  } catch (error) {
    onError(error.message);
    return;
  }
  const newer = (s) => {
    const frame = pushed.get(s.id);
    return frame && frame.at > asked ? { ...s, ...frame.state } : s;
  };
  $('session-list').replaceChildren(...data.sessions.map((s) => item(newer(s), selected)));
  showSessionState(shownInfo());
  filterSessions();
}
