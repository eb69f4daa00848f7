// The header's figures and states for the shown session: its title, context use and cache-hit
// ratio, a running /compact's progress, whether a turn or /compact runs here or another process
// holds the session; the composer is usable only when the session is loaded and held by none.
import { fmtTokens } from './chrome.js';
import { shown } from './dom.js';

const $ = (id) => document.getElementById(id);

export function renderTitle(info) {
  $('session-title').textContent = info ? shown(info.title || `Session ${info.id}`) : 'No session selected';
}

export function renderStats(stats) {
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
    return;
  }
  box.hidden = false;
  box.textContent = progress.total === null
    ? 'compacting…'
    : `compacting · ${progress.done} of ${progress.total} regions`;
}

/** The run state, "busy elsewhere" and the composer's buttons; returns what runs (null: nothing). */
export function renderRunState(info) {
  const running = info ? info.running : null;
  const box = $('run-state');
  box.hidden = !running;
  box.textContent = running === 'turn' ? 'running' : running === 'compact' ? '/compact running' : '';
  $('cancel').hidden = !running;
  const holder = info ? info.heldBy : null;
  const busy = $('busy-elsewhere');
  busy.hidden = !holder;
  busy.textContent = holder ? `busy in another process (pid ${holder})` : '';
  const usable = !!info && !holder;
  $('prompt').disabled = !usable;
  $('send').disabled = !usable || !!running;
  return running;
}
