// The header's figures and states for the shown session: its title (a new session's, until its
// first prompt, "New session"), context use, cache-hit ratio and spend so far (`$0.0420 · 183k
// tok`, /cost's figure, new with each request's stats; tokens alone when no price is known), a running /compact's progress,
// its approval mode when it is not the default `ask` (as the terminal UI's status bar shows it),
// whether a turn or /compact runs here or another process holds the session; the composer is
// usable when the session is loaded and held by none, or when no session is shown (Enter starts
// one: composer.js), and Send and Stop only while the page is connected (connection.js); while something runs, Send queues the draft (queue.js).
// A screen reader hears each change of those states through the polite status
// `#state-announcer` (the pills themselves only show): the run state ("running", "/compact
// running", "idle" when it ends), "busy in another process", and a /compact's progress
// ("compacting…", then each region); the states of a session just opened once, an idle one's
// not at all.
import { fmtTokens } from './chrome.js';
import { offline } from './connection.js';
import { say, shown } from './dom.js';

const $ = (id) => document.getElementById(id);
const said = new Map();  // a pill's id → the text said of it last, for the session shown

/** Say a pill's `text` when it changed; `ended`: what to say when it goes blank. */
function sayChange(id, text, ended = '') {
  const before = said.get(id) ?? '';
  said.set(id, text);
  if (text === before) return;
  if (text || ended) say($('state-announcer'), text || ended);
}

export function renderTitle(info) {
  if (!info) {
    $('session-title').textContent = 'No session selected';
    $('session-title').title = '';
    return;
  }
  const title = shown(info.title || (info.draft ? 'New session' : `Session ${info.id}`));
  $('session-title').textContent = title;
  $('session-title').title = title;  // the whole of it, when the header cuts it
}

/** The approval mode (`{mode, allow}`, null: none known) when it is not `ask`: `auto` stands
 * out, every tool call running unasked. */
export function renderApproval(approval) {
  const mode = approval ? approval.mode : 'ask';
  const box = $('approval-mode');
  box.hidden = mode === 'ask';
  box.textContent = mode === 'ask' ? '' : `approval ${mode}`;
  box.classList.toggle('auto', mode === 'auto');
}

export function renderStats(stats) {
  const spend = stats && stats.spend ? stats.spend.text : null;  // /cost's figure (dsh.agent.spend)
  $('cost').textContent = spend || '';
  $('cost').title = spend ? "Spent so far: /cost's estimated total at list prices, and the billed tokens" : '';
  if (!stats) {
    $('context-use').textContent = '';
    $('cache-hit').textContent = '';
    return;
  }
  const pct = stats.contextRatio === null ? '–' : `${Math.round(stats.contextRatio * 100)}%`;
  $('context-use').textContent = `context ${fmtTokens(stats.contextTokens)} / ${fmtTokens(stats.contextWindow)} (${pct})`;
  const hit = stats.cacheHitRatio === null ? '–' : `${Math.round(stats.cacheHitRatio * 100)}%`;
  $('cache-hit').textContent = `cache hit ${hit}`;
}

export function renderProgress(progress) {
  const box = $('progress');
  if (!progress) {
    box.hidden = true;
    box.textContent = '';
    said.delete('progress');  // its end is the run state's
    return;
  }
  box.hidden = false;
  box.textContent = progress.total === null
    ? 'compacting…'
    : `compacting · ${progress.done} of ${progress.total} regions`;
  sayChange('progress', box.textContent);
}

/** The run state, "busy elsewhere" and the composer's buttons; returns what runs (null: nothing).
 * `none`: no session is shown (a fresh page): the composer is usable, Enter starting one. */
export function renderRunState(info, none = false) {
  const running = info ? info.running : null;
  const box = $('run-state');
  box.hidden = !running;
  box.textContent = running === 'turn' ? 'running' : running === 'compact' ? '/compact running' : '';
  $('cancel').hidden = !running;
  $('cancel').disabled = offline();
  const holder = info ? info.heldBy : null;
  const busy = $('busy-elsewhere');
  busy.hidden = !holder;
  busy.textContent = holder ? `busy in another process (pid ${holder})` : '';
  const usable = none || (!!info && !holder);
  $('prompt').disabled = !usable;
  $('send').disabled = !usable || offline();  // while something runs, it queues (queue.js)
  $('send').title = running ? 'Queue the draft: it is sent when this turn ends' : '';
  if (!info) {  // no session, or another one loading: its states are said anew
    said.clear();
  } else {
    sayChange('run-state', box.textContent, 'idle');
    sayChange('busy-elsewhere', busy.textContent, 'no longer busy in another process');
  }
  return running;
}
