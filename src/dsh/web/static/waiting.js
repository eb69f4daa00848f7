// A prompt sent but not logged yet: the page's mirror of the terminal UI's live tail
// (dsh.tui.live_tail). The loop logs a turn's prompt after the automatic compaction pass ahead of
// it, which a slow summariser makes minutes long, so the page shows the prompt at once, below the
// conversation, marked while a pass runs (the header says "compacting…"), until its user/message
// arrives. A turn that ends without logging it (failed before its first step) gives it back:
// `status` returns it, and the page puts it in the box, before what was typed since.
/** The mark under it while a pass runs: the terminal UI's words (dsh.tui.live_tail). */
export const WAITING_FOR_PASS = 'waiting: sent to the model once the compaction pass ends';

function isPersonsPrompt(event) {
  return event.type === 'user/message' && event.surfaceOp === 'append'
    && !!event.data.source && event.data.source.kind === 'user';
}

export class WaitingPrompt {
  constructor(row) {
    this.row = row;
    this.compacting = false;
    this.reset();
  }

  /** Nothing waits (another session is shown, or a send was refused). */
  reset() {
    this.pending = null;  // sent, the server's answer not in yet
    this.text = null;     // shown: the server took it, not logged yet
    this.started = this.ended = this.logged = false;
    this.paint();
  }

  /** `text` goes to the server as a prompt. */
  sending(text) {
    this.reset();
    this.pending = text;
  }

  /** The server took it (the box is cleared): shown until logged. Returns the text to put back
   * in the box when its turn already ended without logging it, else null. */
  sent() {
    const text = this.pending;
    this.pending = null;
    if (text === null || this.logged) return null;
    if (this.ended) {
      this.reset();
      return text;
    }
    this.text = text;
    this.paint();
    return null;
  }

  /** A logged event: the person's prompt ends the wait. */
  event(event) {
    if (isPersonsPrompt(event) && (this.pending !== null || this.text !== null)) {
      this.logged = true;
      this.text = null;
      this.paint();
    }
  }

  /** Whether a compaction pass runs (the header's progress). */
  progress(progress) {
    this.compacting = !!progress;
    this.paint();
  }

  /** The session's run state (`running`: what runs, or null): a turn that ended with the prompt
   * not logged gives it back (returned), else null. */
  status(running) {
    if (this.pending === null && this.text === null) return null;
    if (running === 'turn') this.started = true;
    if (running || !this.started) return null;
    if (this.pending !== null) {
      this.ended = !this.logged;
      return null;
    }
    const back = this.text;
    this.reset();
    return back;
  }

  paint() {
    const shown = this.text !== null;
    this.row.hidden = !shown;
    this.row.querySelector('.body').textContent = shown ? this.text : '';
    this.row.querySelector('.waiting-note').textContent = shown && this.compacting ? WAITING_FOR_PASS : '';
  }
}
