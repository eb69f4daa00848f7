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
// what to do. So does a server that cannot prove it knows the token (`hello.js`: dsh web
// stopped and another program, or a dsh web with another token, took its port): the API is
// asked no more and no stream is opened with the token; the bar says the server here is not
// the dsh web that opened the page. While nothing answers, only that proof is asked, without
// the token, once a second.
import { api, ApiError, connectionLost, liveSocket, sessionPath } from './api.js';
import { say } from './dom.js';

const $ = (id) => document.getElementById(id);
const RECONNECT_MS = 1000;
export const LOST = 'Disconnected from dsh web: reconnecting…';
export const REFUSED = 'Disconnected from dsh web: it no longer accepts this page\'s access token.';
export const TOKEN_REFUSED = 'dsh web no longer accepts this page\'s access token (was it restarted?): '
  + 'open the URL `dsh web` printed.';
export const NOT_DSH_BAR = 'Disconnected: the server at this address is not the dsh web that opened this page. '
  + 'Reload from the URL `dsh web` printed.';
const SAID = { lost: LOST, refused: REFUSED, 'not-dsh': NOT_DSH_BAR };

const links = new Map();  // stream name → 'lost' | 'refused' | 'not-dsh' (one that is up: none)
let onChange = () => {};

/** Whether some stream is down: what needs the server is off. */
export const offline = () => links.size > 0;

/** `changed`: called when the page goes offline or is back, to draw the composer's buttons
 * (header.js reads `offline()`). */
export function whenChanged(changed) {
  onChange = changed;
}

/** The stream `name` is up (`up`: true), down and retried (false), refused ('refused') or given
 * up on a server that is not this page's dsh web ('not-dsh'); a stream the page closed itself
 * (another session shown) counts as up. */
export function linkState(name, up) {
  const was = offline();
  if (up === true) links.delete(name);
  else links.set(name, up === 'refused' || up === 'not-dsh' ? up : 'lost');
  const lost = offline();
  const states = [...links.values()];
  const text = !lost ? '' : SAID[['not-dsh', 'refused'].find((s) => states.includes(s)) ?? 'lost'];
  const bar = $('connection');
  if (bar.textContent !== text) {
    bar.textContent = text;
    if (text) say($('state-announcer'), text);
    else if (was) say($('state-announcer'), 'Connected to dsh web again.');
  }
  bar.hidden = !lost;
  document.body.dataset.connection = lost ? 'lost' : 'up';
  for (const button of document.querySelectorAll('#approvals button[data-answer], #approvals button[data-action], #new-session')) {
    button.disabled = lost;
  }
  if (lost !== was) onChange();
}

/** What the server says of this page's token, asked through the API (`path`) before a stream is
 * opened again: 'up', 'refused', 'not-dsh' (it cannot prove it knows the token: `api.js`; `why`
 * says what the page could not check) or 'down' (nothing answered: ask again a second later). */
export async function serverAnswer(path) {
  try {
    await api('GET', path);
  } catch (error) {
    if (!(error instanceof ApiError)) return { answer: 'up' };
    if (error.code === 'NOT_DSH') return { answer: 'not-dsh', why: error.message };
    if (error.status === 401 || error.status === 429) return { answer: 'refused', why: TOKEN_REFUSED };
    if (error.status === 0) return { answer: 'down' };
  }
  return { answer: 'up' };  // or an error the stream says again (a session gone)
}

/** The shown session's live stream: opened after its first history page, from the last event
 * the page fed (`afterSeq()`, read at each reconnection), its frames to `onFrame`; a drop is
 * retried a second later, unless the server refuses the token or is not this page's dsh web
 * (`onRefused`, with what the toast says). */
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
      connectionLost();
      linkState('session', false);
      this.retry(generation, sessionId, afterSeq);
    };
  }

  retry(generation, sessionId, afterSeq) {
    setTimeout(() => this.reopen(generation, sessionId, afterSeq), RECONNECT_MS);
  }

  async reopen(generation, sessionId, afterSeq) {
    if (generation !== this.generation) return;
    const { answer, why } = await serverAnswer(sessionPath(sessionId));
    if (generation !== this.generation) return;
    if (answer === 'up') {
      this.open(sessionId, afterSeq);
    } else if (answer === 'down') {
      this.retry(generation, sessionId, afterSeq);
    } else {
      linkState('session', answer);
      this.onRefused(why);
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
