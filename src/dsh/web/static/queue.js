// A draft sent while the session runs a turn or /compact here: queued, as the terminal UI queues
// it (dsh.tui.app_work), not refused. It shows below the conversation, marked "queued: sent when
// this turn ends", with "Take back" (or Esc in the box, the terminal UI's key), which puts it back
// in the box, before what was typed since.
// One at a time: another Enter meanwhile is refused in the terminal UI's words and its draft
// stays. When the work ends well (its `turn/end` says completed; a /compact that ended with no
// error) the draft is sent as if typed then; a turn that ended any other way (Stop, an error, a
// restart of dsh web) puts it back in the box, unsent, with a note, so the outcome is read first.
// It is kept with the session's unsent draft (unsent.js, composer.js `keep`): a reload or showing
// another session puts it back in the box, unsent (the page that queued it is gone).
import { shown } from './dom.js';

/** Another Enter while a draft is queued (the terminal UI's words, its key the page's button). */
export const QUEUED_ALREADY = 'A draft is queued already: "Take back" returns it to the box to edit or add to it.';
/** A queued draft whose turn did not end well: back in the box (the terminal UI's words). */
export const NOT_SENT = 'The queued draft was not sent: it is back in the box.';
export const QUEUED_MARK = 'queued: sent when this turn ends';

export class QueuedPrompt {
  // `row`: the row that shows it; `takeBack(text)`: put it back in the box.
  constructor(row, takeBack) {
    this.row = row;
    this.text = null;
    this.outcome = null;  // how the work it waits for ended: a turn/end's kind, or 'error'
    this.takeBack = takeBack;
    row.querySelector('.queued-take-back').addEventListener('click', () => this.unqueue());
    this.paint();
  }

  /** "Take back", or Esc in the box (the terminal UI's key): the queued draft back in the box.
   * False when none was queued. */
  unqueue() {
    const text = this.take();
    if (text !== null) this.takeBack(text);
    return text !== null;
  }

  has() {
    return this.text !== null;
  }

  queue(text) {
    this.text = text;
    this.outcome = null;
    this.paint();
  }

  /** The draft, no longer queued (null: none was). */
  take() {
    const text = this.text;
    this.text = null;
    this.paint();
    return text;
  }

  /** A logged event: the turn's end says whether it ended well. */
  event(event) {
    if (this.text !== null && event.type === 'turn/end') this.outcome = event.data.reason.kind;
  }

  /** The session's work failed (an `error` frame). */
  failed() {
    if (this.text !== null) this.outcome = 'error';
  }

  /** The session's run state (`running`: what runs, null: nothing): when the work ended, the
   * draft to send (`{send}`) or to put back (`{back}`), else null. */
  status(running) {
    if (this.text === null || running) return null;
    const ended = this.outcome;
    const text = this.take();
    return ended === null || ended === 'completed' ? { send: text } : { back: text };
  }

  paint() {
    const queued = this.text !== null;
    this.row.hidden = !queued;
    this.row.querySelector('.body').textContent = queued ? shown(this.text) : '';
    this.row.querySelector('.queued-mark').textContent = queued ? QUEUED_MARK : '';
  }
}
