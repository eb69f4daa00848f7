// The calls of one reply that tools.max_calls_per_reply kept from running, as ONE card
// (dsh.transcript.call_fold): the page's mirror of that module's words, held equal by a browser
// test. Collapsed, the card says how many did not run and why, with the tool names they gave
// (`bash ×200, read_file ×68`); opened, one line per call (its tool and what it was about, as a
// tool card's summary says it), where find looks too.
import { el } from './dom.js';
import { callSummary } from './tools.js';

const LIMIT_OPTION = 'tools.max_calls_per_reply';
const PREVIEW_CHARS = 120;

/** dsh.transcript.call_fold.over_limit_note. */
export function overLimitNote(asked, limit) {
  const count = asked - limit;
  const calls = count === 1 ? '1 more call' : `${count} more calls`;
  return `${calls} not run: the reply asked for ${asked}, at most ${limit} run per reply `
    + `(${LIMIT_OPTION})`;
}

/** dsh.transcript.call_fold.calls_by_name: each name once with its count, most first (a tie
 * in the order they first come). */
export function callsByName(names) {
  const counts = new Map();
  for (const name of names) counts.set(name, (counts.get(name) || 0) + 1);
  const ranked = [...counts].sort((a, b) => b[1] - a[1]);  // stable: first come first
  return ranked.map(([name, count]) => `${name} ×${count}`).join(', ');
}

function preview(text) {
  const flat = String(text).replace(/\s+/g, ' ').trim();
  return flat.length <= PREVIEW_CHARS ? flat : `${flat.slice(0, PREVIEW_CHARS - 1)}…`;
}

/** The row of an `unrun` item ({seq, asked, limit, calls: [{callId, name, arguments}]}). */
export function unrunRow(item) {
  const row = el('div', 'row unrun');
  row.append(el('h2', 'sr-only', 'Tool calls not run'));
  const card = el('details', 'unrun-card');
  const summary = el('summary');
  summary.append(
    el('span', 'unrun-note', overLimitNote(item.asked, item.limit)),
    el('span', 'unrun-names', callsByName(item.calls.map((call) => call.name))),
  );
  const list = el('ol', 'unrun-calls');
  for (const call of item.calls) {
    const line = el('li', 'unrun-call');
    line.append(el('span', 'tool-name', call.name), el('code', 'tool-preview', preview(callSummary(call.name, call.arguments))));
    list.append(line);
  }
  card.append(summary, list);
  row.append(card);
  return row;
}
