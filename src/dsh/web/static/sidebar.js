// The session list: each session's title (its latest /title, else its first prompt), workspace,
// age (since it was last written) and state: running or open here, busy elsewhere, or idle.
import { api } from './api.js';
import { filterSessions, fmtWhen } from './chrome.js';
import { el, shown } from './dom.js';

const $ = (id) => document.getElementById(id);

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

function item(s, selected) {
  const a = el('a', 'session-item');
  a.href = `#s=${encodeURIComponent(s.id)}`;
  a.dataset.id = s.id;
  if (s.id === selected) a.classList.add('selected');
  const state = sessionState(s);
  a.dataset.state = state.key;
  const title = el('div', 'session-title', s.title || 'Untitled session');
  if (!s.title) title.classList.add('untitled');
  const meta = el('div', 'meta');
  const last = s.lastActive || s.createdAt;
  const age = el('span', 'age', fmtAge(last));
  age.title = `last written ${fmtWhen(last)}; created ${fmtWhen(s.createdAt)}`;
  meta.append(age, el('span', `state ${state.key}`, state.text));
  const where = el('div', 'where', s.cwd);
  where.title = shown(s.cwd);
  const sid = el('div', 'sid', s.id);
  sid.append(el('span', 'sr-only', ` created ${fmtWhen(s.createdAt)}`));
  a.append(title, meta, where, sid);
  return a;
}

export async function loadSessionList(selected, onError) {
  let data;
  try {
    data = await api('GET', '/api/sessions');
  } catch (error) {
    onError(error.message);
    return;
  }
  $('session-list').replaceChildren(...data.sessions.map((s) => item(s, selected)));
  filterSessions();
}
