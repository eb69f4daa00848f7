// What a tool card without its result says in its summary, in the terminal UI's words
// (dsh.tui.running_cards): `running… 12 s`, how long since its call was logged (the event's
// time, so a page that joins or reloads mid-call counts from the call's start; nothing for the
// first second), or since the page saw its approval answered; `waiting for your approval` while
// an approval the page was asked matches it (the approval names the card's call: `callId`). A
// card counts only while the session shown runs a turn here or is busy in another process: a
// stored session's card without a result (its process ended mid-call) stays a plain
// `running…`. One timer for the page ticks once a second while some card counts, and stops when
// none does; a card's text is written only when it changed. Under a running card, the last lines
// its command printed so far (`tail` frames, dsh.agent.tool_progress: masked, escapes shown), one
// row each cut to the card's width; they go with its result (`done`) or an empty `tail`.
// While another process runs the turn (the terminal UI, `dsh run`), the page cannot tell a call
// that runs there from one waiting there for its approval (neither is logged, nor in the side
// file the page follows): such a card says `in another process… 12 s`, never `running`, and its
// title says why.
import { el } from './dom.js';

export const RUNNING = 'running…';
export const ASKING = 'waiting for your approval';
export const ELSEWHERE = 'in another process…';
const ELSEWHERE_TITLE = 'Running in another process, or waiting there for its approval: this page cannot tell which';
const SHOWN_AFTER_MS = 1000;
const TICK_MS = 1000;

export function runningText(ms, words = RUNNING) {
  return ms < SHOWN_AFTER_MS ? words : `${words} ${Math.floor(ms / 1000)} s`;
}

/** `value` as JSON with its objects' keys sorted: arguments compared whatever their order. */
function canonical(value) {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    const keys = Object.keys(value).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonical(value[k])}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/** A pending approval as the cards match it: its call's id (else its tool and arguments). */
function asked(approval) {
  return { tool: approval.tool, args: canonical(approval.args), callId: approval.callId ?? null };
}

function parsedArguments(text) {
  try {
    return canonical(JSON.parse(text));
  } catch {
    return null;
  }
}

export class RunningCards {
  constructor(clock = () => Date.now()) {
    this.clock = clock;
    this.cards = new Map();      // card seq -> {status, name, args, since}
    this.asked = new Map();      // approval id -> {tool, args}
    this.live = false;
    this.elsewhere = false;  // the turn runs in another process
    this.timer = null;
  }

  /** A card without a result: `status` its status element, `time` its call's logged time (ms),
   * `callId` its call's id. */
  add(seq, status, name, argumentsText, time, callId = null) {
    const now = this.clock();
    const since = typeof time === 'number' ? Math.min(time, now) : now;  // a clock ahead of ours
    this.cards.set(seq, { seq, status, name, args: parsedArguments(argumentsText), since, callId });
    this.update();
  }

  /** The card at `seq` has its result, or left the view. */
  done(seq) {
    this.tail(seq, []);
    if (this.cards.get(seq)?.titled) this.cards.get(seq).status.removeAttribute('title');
    if (this.cards.delete(seq)) this.update();
  }

  /** The last `lines` the running call logged at `seq` printed ([]: none). */
  tail(seq, lines) {
    const card = this.cards.get(seq);
    if (!card) return;
    if (!card.tail && lines.length) {
      card.tail = el('div', 'tool-tail');
      card.status.closest('.tool-card').after(card.tail);
    }
    if (!card.tail) return;
    card.tail.replaceChildren(...lines.map((line) => el('div', null, line)));
    if (!lines.length) {
      card.tail.remove();
      card.tail = null;
    }
  }

  /** Whether the session shown runs a turn (here or, `elsewhere`, in another process). */
  running(live, elsewhere = false) {
    if (live === this.live && elsewhere === this.elsewhere) return;
    this.live = live;
    this.elsewhere = elsewhere;
    this.update();
  }

  /** The approvals pending now, all of them (a page that joined, or came back). */
  pending(approvals) {
    this.asked = new Map(approvals.map((a) => [a.id, asked(a)]));
    this.update();
  }

  asking(approval) {
    this.asked.set(approval.id, asked(approval));
    this.update();
  }

  /** The approval `id` was answered: its card counts from now. */
  answered(id) {
    const card = this.askingCards().get(id);
    if (!this.asked.delete(id)) return;
    if (card) card.since = this.clock();
    this.update();
  }

  stop() {
    this.cards.clear();
    this.asked.clear();
    this.update();
  }

  // Each pending approval's card: the newest card of its call (ids repeat across replies, not
  // within the calls running); from a server that does not say the call, the first without one
  // with its tool and arguments, else the first with its tool.
  askingCards() {
    const taken = new Map();
    const used = new Set();
    for (const [id, { tool, args, callId }] of this.asked) {
      const free = [...this.cards.values()].filter((c) => c.name === tool && !used.has(c));
      const card = callId
        ? free.filter((c) => c.callId === callId).reduce((a, c) => (a && a.seq > c.seq ? a : c), null)
        : free.find((c) => c.args === args) || free[0];
      if (card) {
        taken.set(id, card);
        used.add(card);
      }
    }
    return taken;
  }

  // Say again what each card says; the timer runs while some card counts.
  update() {
    const now = this.clock();
    const asking = new Set(this.askingCards().values());
    let counting = false;
    for (const card of this.cards.values()) {
      let text = RUNNING;
      if (asking.has(card)) text = ASKING;
      else if (this.live) {
        text = runningText(now - card.since, this.elsewhere ? ELSEWHERE : RUNNING);
        counting = true;
      }
      if (card.status.textContent !== text) card.status.textContent = text;
      const titled = this.live && this.elsewhere && !asking.has(card);
      if (titled !== !!card.titled) {
        card.titled = titled;
        if (titled) card.status.title = ELSEWHERE_TITLE;
        else card.status.removeAttribute('title');
      }
    }
    if (counting && this.timer === null) this.timer = setInterval(() => this.update(), TICK_MS);
    else if (!counting && this.timer !== null) {
      clearInterval(this.timer);
      this.timer = null;
    }
  }
}
