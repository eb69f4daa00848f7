// The page's connection to dsh web: its two live streams (the shown session's, below, and the
// server's, warnings.js) and what the page shows while one of them is down. A stream that drops
// (dsh web stopped or restarted, the network went) is retried a second later, asking the API
// first: a browser cannot read why a WebSocket handshake failed, and a refused token retried
// every second would only be refused again. Until each dropped stream is back (its `hello`, the
// state it brings afresh: the run state, the approvals still asked, the session list), the page
// says so in a bar under the header ("Disconnected from dsh web: reconnecting…", a polite status)
// and what cannot work without the server is off: Send, Stop, "New session" and the approvals'
// answers (`body[data-connection="lost"]`; the header's run state and figures are the last known,
// dimmed). A refused token stops the retries: the bar says the page is disconnected, the toast
// what to do.
import { api, ApiError, liveSocket, sessionPath } from './api.js';
import { say } from './dom.js';

const $ = (id) => document.getElementById(id);
const RECONNECT_MS = 1000;
export const LOST = 'Disconnected from dsh web: reconnecting…';
export const REFUSED = 'Disconnected from dsh web: it no longer accepts this page\'s access token.';
export const TOKEN_REFUSED = 'dsh web no longer accepts this page\'s access token (was it restarted?): '
  + 'open the URL `dsh web` printed.';

const links = new Map();  // stream name → 'lost' | 'refused' (a stream that is up has no entry)
let onChange = () => {};

/** Whether some stream is down: what needs the server is off. */
export const offline = () => links.size > 0;

/** `changed`: called when the page goes offline or is back, to draw the composer's buttons
 * (header.js reads `offline()`). */
export function whenChanged(changed) {
  onChange = changed;
}

/** The stream `name` is up (`up`: true), down and retried (false) or refused ('refused'); a
 * stream the page closed itself (another session shown) counts as up. */
export function linkState(name, up) {
  const was = offline();
  if (up === true) links.delete(name);
  else links.set(name, up === 'refused' ? 'refused' : 'lost');
  const lost = offline();
  const text = !lost ? '' : [...links.values()].includes('refused') ? REFUSED : LOST;
  const bar = $('connection');
  if (bar.textContent !== text) {
    bar.textContent = text;
    if (text) say($('state-announcer'), text);
    else if (was) say($('state-announcer'), 'Connected to dsh web again.');
  }
  bar.hidden = !lost;
  document.body.dataset.connection = lost ? 'lost' : 'up';
  for (const button of document.querySelectorAll('#approvals button[data-answer], #new-session')) {
    button.disabled = lost;
  }
  if (lost !== was) onChange();
}

/** Whether the API refuses this page's token (asked before a stream is opened again). */
export async function tokenRefused() {
  try {
    await api('GET', '/api/warnings');
  } catch (error) {
    return error instanceof ApiError && (error.status === 401 || error.status === 429);
  }
  return false;
}

/** The shown session's live stream: opened after its first history page, from the last event
 * the page fed (`afterSeq()`, read at each reconnection), its frames to `onFrame`; a drop is
 * retried a second later, unless the server refuses the token (`onRefused`). */
export class SessionStream {
  constructor(onFrame, onRefused) {
    this.onFrame = onFrame;
    this.onRefused = onRefused;
    this.socket = null;
    this.generation = 0;
  }

  open(sessionId, afterSeq) {
    const generation = ++this.generation;
    const socket = liveSocket(sessionId, afterSeq());
    this.socket = socket;
    socket.onmessage = (message) => {
      if (generation !== this.generation) return;
      const frame = JSON.parse(message.data);
      this.onFrame(frame);
      if (frame.kind === 'hello') linkState('session', true);  // drawn afresh from it first
    };
    socket.onclose = () => {
      if (generation !== this.generation) return;
      this.socket = null;
      linkState('session', false);
      setTimeout(() => this.reopen(generation, sessionId, afterSeq), RECONNECT_MS);
    };
  }

  async reopen(generation, sessionId, afterSeq) {
    if (generation !== this.generation) return;
    let refused = false;
    try {
      await api('GET', sessionPath(sessionId));
    } catch (error) {
      refused = error instanceof ApiError && (error.status === 401 || error.status === 429);
    }
    if (generation !== this.generation) return;
    if (refused) {
      linkState('session', 'refused');
      this.onRefused();
    } else {
      this.open(sessionId, afterSeq);
    }
  }

  /** No stream (another session is shown, or none): nothing of this one is retried. */
  close() {
    this.generation += 1;
    if (this.socket) {
      this.socket.onclose = null;
      this.socket.close();
      this.socket = null;
    }
    linkState('session', true);
  }
}
