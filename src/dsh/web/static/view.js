// The conversation DOM: one row per transcript item, kept in log (seq) order whatever order
// the items arrive in (live events append; older history pages prepend). Every row is a pure
// function of the projector's state, so a session watched live and the same session reloaded
// render the same rows. Rows live in blocks (RowBlocks); blocks far from the viewport are parked
// (swapped for a spacer of their height), so the page stays light however far you scroll back.
// Each message begins with a heading (level 2, under the session's title), so a screen reader's
// heading keys go from message to message: its author ("You", "Assistant", "System"), shown, or
// for a tool card ("Tool: bash") and injected context, for a screen reader only.
import { renderMarkdown } from './markdown.js';
import { renderUnifiedDiff } from './diff.js';
import { callSummary, renderArguments } from './tools.js';
import { RowBlocks } from './blocks.js';
import { el, plain } from './dom.js';
import { RUNNING, RunningCards } from './running.js';
import { unrunRow } from './unrun.js';

const PREVIEW_CHARS = 120;

function preview(text) {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length <= PREVIEW_CHARS ? flat : `${flat.slice(0, PREVIEW_CHARS - 1)}…`;
}

/** A message's head: its author as its heading, and room for its copy button. */
function who(author) {
  const head = el('div', 'who');
  head.append(el('h2', 'author', author));
  return head;
}

export function compactedText(details) {
  return `Compacted ${details.items} history items (~${details.tokens} tokens)`;
}

export class TranscriptView {
  // `scroller`: the scrolling element around `root`; given, far blocks are parked.
  constructor(root, projector, scroller = null) {
    this.root = root;
    this.projector = projector;
    this.blocks = new RowBlocks(root, scroller);
    this.order = [];             // seqs of rows, ascending
    this.rows = new Map();       // seq -> row element
    this.cards = new Map();      // card seq (its call's; an unpaired result's own) -> {row, card, ...}
    this.results = new Map();    // result seq -> {at: the card seq it shows in, result}
    this.markers = new Map();    // passId -> row element
    this.times = new Map();      // seq -> the event's time (ms), for the hover timestamps
    this.sources = new WeakMap();  // message row -> its text as written, for its copy button
    this.running = new RunningCards();  // the cards without a result: what their status says
  }

  ingest(events) {
    for (const event of events) {
      this.times.set(event.seq, event.time);
      this.apply(this.projector.feed(event));
    }
  }

  sourceOf(row) {
    return this.sources.get(row);
  }

  // Every row in seq order, parked ones included.
  allRows() {
    return this.order.map((seq) => this.rows.get(seq));
  }

  // The rows' markup in order, whatever blocks hold them: the view's content, for comparisons.
  html() {
    return this.allRows().map((row) => row.outerHTML).join('');
  }

  // Bring `row` into the middle of the viewport (its block back first if it was parked).
  reveal(row) {
    if (!row) return null;
    this.blocks.unpark(row.parentNode);
    row.scrollIntoView({ block: 'center' });
    return row;
  }

  // The newest rows' block back in the page (before scrolling to the end).
  revealEnd() {
    const last = this.blocks.list[this.blocks.list.length - 1];
    if (last) this.blocks.unpark(last);
  }

  disconnect() {
    this.blocks.disconnect();
    this.running.stop();
  }

  apply(changes) {
    for (const change of changes) {
      if (change.op === 'add') this.add(change.item);
      else if (change.op === 'pair') this.moveResult(change.resultSeq, change.cardSeq);
      else if (change.op === 'marker') this.refreshMarker(change.passId);
      else if (change.op === 'move-marker') this.moveMarker(change.passId, change.seq);
      else if (change.op === 'rekey-marker') this.rekeyMarker(change.from, change.to);
      else if (change.op === 'drop-marker') this.dropMarker(change.passId);
    }
  }

  // ---- placement ---------------------------------------------------------------------------

  insert(seq, row) {
    row.dataset.seq = String(seq);
    const time = this.times.get(seq);
    if (time !== undefined && !row.title) row.title = new Date(time).toLocaleString();
    let lo = 0;
    let hi = this.order.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.order[mid] < seq) lo = mid + 1; else hi = mid;
    }
    const prev = lo > 0 ? this.rows.get(this.order[lo - 1]) : null;
    this.blocks.place(row, prev, lo === this.order.length);
    this.order.splice(lo, 0, seq);
    this.rows.set(seq, row);
  }

  remove(seq) {
    const row = this.rows.get(seq);
    if (!row) return;
    this.running.done(seq);
    this.blocks.take(row);
    this.rows.delete(seq);
    const index = this.order.indexOf(seq);
    if (index >= 0) this.order.splice(index, 1);
  }

  /** A note the page shows and the log does not hold (a command's answer: `/cost`, `/model`):
   * a row after the newest, as the terminal UI's notes are; a reload, or showing the session
   * again, does not show it. Between two events' rows it takes a seq between theirs. */
  note(text) {
    const last = this.order.length ? this.order[this.order.length - 1] : -1;
    const whole = Math.floor(last);
    const row = el('div', 'row notice local', text);
    row.title = 'Shown in this page only: not in the session\'s log';
    this.insert(whole + (last - whole + 1) / 2, row);
    return row;
  }

  // ---- items -------------------------------------------------------------------------------

  add(item) {
    if (item.kind === 'message') this.addMessage(item);
    else if (item.kind === 'tool-call') this.addToolCall(item);
    else if (item.kind === 'tool-result') this.addToolResult(item);
    else if (item.kind === 'marker') this.addMarker(item);
    else if (item.kind === 'unrun') this.insert(item.seq, unrunRow(item));
    else if (item.kind === 'notice') {
      const row = el('div', `row notice${item.tone ? ` ${item.tone}` : ''}`, item.text);
      this.insert(item.seq, row);
    }
  }

  addMessage(item) {
    const message = item.message;
    const text = message.content.filter((b) => b.type === 'text').map((b) => b.text).join('');
    const reasoning = message.content.filter((b) => b.type === 'reasoning').map((b) => b.text).join('');
    let row;
    if (message.role === 'assistant') {
      if (!text && !reasoning && !item.interrupted && !item.notRun) return;
      row = el('div', 'row assistant');
      row.append(who('Assistant'));
      if (reasoning) {
        const details = el('details', 'reasoning');
        details.append(el('summary', '', 'Reasoning'), el('div', 'reasoning-text', plain(reasoning)));
        row.append(details);
      }
      if (text) row.append(this.markdown(text, true));  // its lines as written
      if (item.interrupted) row.append(el('div', 'interrupted', '(interrupted)'));
      if (item.notRun) row.append(el('div', 'not-run', item.notRun));
      if (text) this.copyable(row, text);
    } else if (message.source && message.source.kind === 'plugin') {
      row = el('div', 'row context');
      row.append(el('h2', 'sr-only', 'Injected context'));
      const details = el('details');
      details.append(el('summary', '', `Injected context · ${message.source.plugin}`), this.markdown(text));
      row.append(details);
    } else {
      row = el('div', `row ${message.role === 'system' ? 'system' : 'user'}`);
      const breaks = message.role === 'user';  // a prompt's lines as typed
      row.append(who(message.role === 'system' ? 'System' : 'You'), this.markdown(text, breaks));
      this.copyable(row, text);
    }
    this.insert(item.seq, row);
  }

  markdown(text, breaks = false) {
    const body = el('div', 'body md');
    body.innerHTML = renderMarkdown(text, { breaks });
    for (const table of body.querySelectorAll('table')) {  // a wide one scrolls in its own box
      const box = el('div', 'table-wrap');
      table.replaceWith(box);
      box.append(table);
    }
    for (const pre of body.querySelectorAll('pre')) {
      const button = el('button', 'copy copy-code', 'Copy');
      button.type = 'button';
      button.setAttribute('aria-label', 'Copy code');
      pre.append(button);
    }
    return body;
  }

  copyable(row, text) {
    const button = el('button', 'copy copy-message', 'Copy');
    button.type = 'button';
    button.setAttribute('aria-label', 'Copy message');
    row.querySelector('.who').append(button);
    this.sources.set(row, text);
  }

  newCard(seq, callId, name, argumentsText) {
    const row = el('div', 'row tool');
    row.dataset.call = callId;
    row.append(el('h2', 'sr-only', `Tool: ${name}`));
    const card = el('details', 'tool-card');
    const summary = el('summary');
    const status = el('span', 'tool-status', argumentsText === null ? '' : RUNNING);
    summary.append(
      el('span', 'tool-name', name),
      el('code', 'tool-preview', argumentsText === null ? '' : preview(callSummary(name, argumentsText))),
      status,
    );
    card.append(summary);
    if (argumentsText !== null) {
      const args = el('div', 'tool-section tool-arguments');
      args.append(el('div', 'label', name === 'bash' ? 'Command' : 'Arguments'), renderArguments(name, argumentsText));
      card.append(args);
    }
    row.append(card);
    this.insert(seq, row);
    if (argumentsText !== null) this.running.add(seq, status, name, argumentsText, this.times.get(seq), callId);
    return { row, card };
  }

  addCard(seq, callId, name, argumentsText) {
    const { row, card } = this.newCard(seq, callId, name, argumentsText);
    const entry = { row, card, resultSeq: null, callId, name, argumentsText };
    this.cards.set(seq, entry);
    return entry;
  }

  addToolCall(item) {
    this.addCard(item.seq, item.callId, item.name, item.arguments);
  }

  addToolResult(item) {
    const result = { text: item.text, isError: item.isError, diff: item.diff, callId: item.callId, name: item.name };
    this.placeResult(item.seq, item.cardSeq, result);
  }

  // Result `seq` into the card of the call at `cardSeq`; with none shown, a card of its own.
  placeResult(seq, cardSeq, result) {
    let entry = cardSeq === null ? undefined : this.cards.get(cardSeq);
    let at = cardSeq;
    if (!entry) {
      entry = this.addCard(seq, result.callId, result.name || 'tool', null);
      at = seq;
    }
    this.results.set(seq, { at, result });
    entry.resultSeq = seq;
    this.running.done(at);
    this.fillResult(entry, result);
  }

  // The projector paired result `seq` with another card (an older page brought its call).
  moveResult(seq, cardSeq) {
    const placed = this.results.get(seq);
    if (!placed) return;
    if (placed.at === seq) {  // it was a card of its own
      this.cards.delete(seq);
      this.remove(seq);
    } else {
      const entry = this.cards.get(placed.at);
      if (entry.resultSeq === seq) {  // (another result of the batch may have taken it)
        this.remove(placed.at);
        this.addCard(placed.at, entry.callId, entry.name, entry.argumentsText);
      }
    }
    this.placeResult(seq, cardSeq, placed.result);
  }

  fillResult(entry, result) {
    const card = entry.card;
    const { text, isError, diff } = result;
    const argsDiff = card.querySelector('.tool-arguments .diff');
    if (diff && argsDiff) {  // the edit as it landed in the file, not its arguments alone
      argsDiff.replaceWith(renderUnifiedDiff(argsDiff.querySelector('.diff-path').textContent, diff));
    }
    card.querySelector('.tool-result-section')?.remove();
    const section = el('div', 'tool-section tool-result-section');
    const label = entry.name === 'bash' ? 'Output' : 'Result';
    section.append(el('div', 'label', isError ? `${label} (error)` : label), el('pre', 'tool-output', text));
    card.append(section);
    card.classList.toggle('error', isError);
    card.querySelector('.tool-status').textContent = isError ? 'error' : 'done';
  }

  // ---- compaction markers ------------------------------------------------------------------

  addMarker(item) {
    const row = el('div', 'row marker');
    row.dataset.pass = item.passId;
    this.markers.set(item.passId, row);
    this.renderMarker(row, item.passId);
    this.insert(item.seq, row);
  }

  moveMarker(passId, seq) {
    const row = this.markers.get(passId);
    if (!row) return;
    this.remove(Number(row.dataset.seq));
    this.insert(seq, row);
  }

  rekeyMarker(from, to) {
    const row = this.markers.get(from);
    if (!row) return;
    this.markers.delete(from);
    this.markers.set(to, row);
    row.dataset.pass = to;
    this.renderMarker(row, to);
  }

  dropMarker(passId) {
    const row = this.markers.get(passId);
    if (!row) return;
    this.markers.delete(passId);
    this.remove(Number(row.dataset.seq));
  }

  refreshMarker(passId) {
    const row = this.markers.get(passId);
    if (row) this.renderMarker(row, passId);
  }

  renderMarker(row, passId) {
    const details = this.projector.details.get(passId);
    const manual = this.projector.manual.get(passId);
    const wasOpen = row.querySelector('details.marker-details')?.open ?? false;
    row.replaceChildren();
    row.classList.toggle('manual', !!manual);
    const head = el('div', 'marker-head');
    if (manual) {
      head.append(el('span', 'marker-command', `/${manual.name}${manual.args ? ` ${manual.args}` : ''}`));
    }
    head.append(el('span', 'marker-title', '… earlier context was compacted …'));
    row.append(head);
    if (!details) {
      row.append(el('div', 'marker-unavailable', 'Compaction summary unavailable'));
      return;
    }
    const disclosure = el('details', 'marker-details');
    disclosure.append(el('summary', '', 'Details'), el('div', 'marker-stats', compactedText(details)));
    let index = 0;
    for (const summary of details.summaries) {
      const block = el('div', 'marker-summary');
      block.dataset.summarySeq = String(summary.seq);
      const label = summary.kind === 'index' ? `Index checkpoint ${++index}` : 'State checkpoint';
      block.append(el('div', 'summary-kind', label), el('div', 'summary-text', summary.text));
      disclosure.append(block);
    }
    disclosure.open = wasOpen;
    row.append(disclosure);
  }
}
