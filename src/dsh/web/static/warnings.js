// dsh's warnings in the page, as the terminal UI shows them (its toasts and /warnings). The
// server keeps each distinct warning as one entry {id, session, level, text, count, first, last,
// shownAsError} (identical ones coalesced there: a repeat is the same id with a higher count;
// shownAsError: a failure this page shows as its error toast, listed here without a toast of
// its own, so it shows once) and sends the server's own over its stream (WS /api/live, open for
// the page's life) and a session's over that session's live stream; each stream's hello carries
// the entries kept so far.
//
// One that arrives live shows as a toast at the top right (over the conversation's oldest lines,
// never over the composer); a repeat while its toast is up updates the count in it; a toast goes
// after `toastMs` or with its ✕. Entries a hello brings are listed without a toast: the ⚠ button
// is marked instead (its name says so to a screen reader: "Warnings and errors: 2, new ones
// unseen"). The ⚠ button opens the list of every entry this page got, with its count and times;
// Esc (wherever the focus is, a modal dialog's own Esc first) or a click outside the list closes
// it, the focus going back where it was when it opened if it was in the list. The list belongs to the page: it survives switching sessions and reconnecting;
// "Clear" empties it (an entry comes back only when it repeats); a reload starts it again from
// what the server kept (its own warnings and the shown session's).
import { connectionLost, serverSocket } from './api.js';
import { linkState, serverAnswer } from './connection.js';
import { el, focusOrigin, hidePanel, shown } from './dom.js';
import { modalOpen } from './modal.js';

const $ = (id) => document.getElementById(id);
const TOAST_MS = 12000;
const MAX_TOASTS = 3;
const RECONNECT_MS = 1000;

const clock = (ms) => new Date(ms).toLocaleTimeString(undefined, { hour12: false });
const toastSelector = (id) => `.warning-toast[data-id="${CSS.escape(id)}"]`;

function row(entry) {
  const item = el('li', `warning-row ${entry.level}`);
  item.dataset.id = entry.id;
  item.append(el('span', 'when', clock(entry.first)), ' ', el('span', 'level', `${entry.level}:`), ' ', el('span', 'text', entry.text));
  if (entry.count > 1) item.append(el('span', 'again', ` (${entry.count} times, last at ${clock(entry.last)})`));
  item.append(el('div', 'where', entry.session ? `session ${entry.session}` : 'server'));
  return item;
}

export class PageWarnings {
  constructor() {
    this.entries = new Map();  // id → entry, in the order they first came
    this.cleared = new Map();  // id → its count when the list was cleared
    this.timers = new Map();   // id → the timer of its toast
    this.toastMs = TOAST_MS;   // null: a toast stays until its ✕
    this.unread = false;
    this.socket = null;
    this.refused = false;  // the server refused this page's token, or is not its dsh web: no more reconnecting
    this.origin = null;  // focused when the list opened
    this.others = null;  // what the server's stream brings besides warnings goes there (app.js)
    $('warnings-toggle').addEventListener('click', () => this.toggle());
    $('warnings-close').addEventListener('click', () => this.toggle(false));
    // Esc anywhere closes the list (before the composer's Esc stops a turn; a modal dialog over
    // it takes its own first), and so does a click outside it, the ⚠ button's aside.
    document.addEventListener('keydown', (event) => {
      if (event.key !== 'Escape' || !this.panelOpen() || modalOpen() || event.isComposing) return;
      event.preventDefault();
      event.stopPropagation();
      this.toggle(false);
    }, true);
    document.addEventListener('pointerdown', (event) => {
      if (!this.panelOpen() || modalOpen()) return;
      if (event.target.closest('#warnings-panel, #warnings-toggle, #warning-toasts')) return;
      this.toggle(false);
    }, true);
    $('warnings-clear').addEventListener('click', () => this.clear());
    $('warning-toasts').addEventListener('click', (event) => {
      const close = event.target.closest('button.toast-close');
      if (close) this.dropToast(close.closest('.warning-toast').dataset.id);
    });
  }

  /** A hello's entries: listed, no toast (the ⚠ button says there is something new). */
  kept(warnings) {
    for (const warning of warnings || []) {
      if (this.take(warning) && !this.panelOpen()) this.unread = true;
    }
    this.paint();
  }

  /** One that came live: listed, and a toast (a repeat updates its toast if it is up); one
   * the page shows as an error already (its error toast) is only listed. */
  arrived(warning) {
    const entry = this.take(warning);
    if (!entry) return;
    if (!this.panelOpen()) this.unread = true;
    if (!entry.shownAsError) this.toast(entry);
    this.paint();
  }

  // The entry `warning` updates, or null when it brings nothing new: this page has that count
  // already (a hello repeating what came live), or it was cleared and has not come again since.
  take(warning) {
    const known = this.entries.get(warning.id);
    const seen = known ? known.count : (this.cleared.get(warning.id) ?? 0);
    if (warning.count <= seen) return null;
    const entry = known ? Object.assign(known, warning) : { ...warning };
    this.entries.set(warning.id, entry);
    return entry;
  }

  toast(entry) {
    const box = $('warning-toasts');
    let toast = box.querySelector(toastSelector(entry.id));
    if (!toast) {
      toast = el('div', `warning-toast ${entry.level === 'warning' ? 'warning' : 'error'}`);
      toast.dataset.id = entry.id;
      const close = el('button', 'toast-close', '✕');
      close.type = 'button';
      close.setAttribute('aria-label', 'Dismiss this warning (it stays in the list)');
      toast.append(el('span', 'toast-text'), close);
      box.append(toast);
      while (box.children.length > MAX_TOASTS) this.dropToast(box.firstElementChild.dataset.id);
    }
    const times = entry.count > 1 ? ` (${entry.count} times)` : '';
    toast.querySelector('.toast-text').textContent = shown(`${entry.level}: ${entry.text}${times}`);
    clearTimeout(this.timers.get(entry.id));
    if (this.toastMs !== null) {
      this.timers.set(entry.id, setTimeout(() => this.dropToast(entry.id), this.toastMs));
    }
  }

  dropToast(id) {
    clearTimeout(this.timers.get(id));
    this.timers.delete(id);
    $('warning-toasts').querySelector(toastSelector(id))?.remove();
  }

  panelOpen() {
    return !$('warnings-panel').hidden;
  }

  // Opened, or closed (Esc, its ✕, the ⚠ button, a click outside): the focus, when it was in the
  // list, goes back where it was when the list opened (the ⚠ button, opened by a click there);
  // elsewhere (the composer, the ⚠ button, where a click outside put it) it stays.
  toggle(open = !this.panelOpen()) {
    if (open && !this.panelOpen()) this.origin = focusOrigin($('warnings-toggle'));
    if (open) $('warnings-panel').hidden = false;
    else if (this.panelOpen()) hidePanel($('warnings-panel'), this.origin, $('warnings-toggle'));
    $('warnings-toggle').setAttribute('aria-expanded', String(open));
    if (open) this.unread = false;
    this.paint();
  }

  clear() {
    for (const [id, entry] of this.entries) this.cleared.set(id, entry.count);
    this.entries.clear();
    for (const id of [...this.timers.keys()]) this.dropToast(id);
    $('warning-toasts').replaceChildren();
    this.unread = false;
    this.paint();
  }

  paint() {
    const count = this.entries.size;
    const button = $('warnings-toggle');
    button.hidden = count === 0;
    button.textContent = `⚠ ${count}`;
    button.classList.toggle('unread', this.unread);
    // what the sign and the marking show, said: "⚠ 2" alone reads as a symbol and a number
    button.setAttribute('aria-label', `Warnings and errors: ${count}${this.unread ? ', new ones unseen' : ''}`);
    $('warnings-list').replaceChildren(...[...this.entries.values()].map(row));
    $('warnings-none').hidden = count > 0;
  }

  /** The server's stream, for the page's life: it reconnects a second after it drops, unless
   * the server refuses the token or is not this page's dsh web (asked through the API first,
   * as for a session's stream: `serverAnswer`; while nothing answers, asked again each second).
   * `others`: called with every frame after this has taken its warnings (each `hello`, the
   * sessions' `session-state` frames). */
  listen(others = this.others) {
    this.others = others;
    const socket = serverSocket();
    this.socket = socket;
    socket.onmessage = (message) => {
      const data = JSON.parse(message.data);
      if (data.kind === 'hello') {
        this.kept(data.warnings);
        linkState('server', true);
      }
      else if (data.kind === 'warning') this.arrived(data.warning);
      if (this.others) this.others(data);
    };
    socket.onclose = () => {
      this.socket = null;
      connectionLost();  // the token goes to this address again once it proved it knows it
      linkState('server', false);  // the page says it is disconnected until the next hello
      setTimeout(() => this.relisten(), RECONNECT_MS);
    };
  }

  async relisten() {
    const { answer } = await serverAnswer('/api/warnings');
    if (answer === 'down') {
      setTimeout(() => this.relisten(), RECONNECT_MS);
    } else if (answer === 'up') {
      this.listen();
    } else {
      this.refused = true;  // the bar says so; the session's stream's toast says what to do
      linkState('server', answer);
    }
  }
}
