// The composer's history of earlier prompts: Up on the box's first line and Down on its last walk
// it, as in the terminal UI, and it is the terminal UI's own (`GET /api/prompt-history`: the file
// `$DSH_HOME/prompt_history.jsonl`, dsh.web.prompt_history_route), the shown session's prompts the
// newest. Walking back keeps the draft being typed; Down past the newest prompt brings it back.
// Each prompt sent and each command run is remembered here at once and appended to the file (a
// failed append loses only that entry); a draft queued is remembered only once it is sent (one
// taken back never is). The file is read again when a session is shown, when the page comes back
// (its window focused, the live stream reconnected) and when a walk starts, so what the terminal
// UI sent meanwhile is there. While the history cannot be had (the server unreachable), the
// arrows move the caret as usual.
import { api } from './api.js';

export const HISTORY_PATH = '/api/prompt-history';

/** `prompts` (oldest first) with `text` as the newest, each text once. */
export function withNewest(prompts, text) {
  return [...prompts.filter((p) => p !== text), text];
}

export class PromptRecall {
  // `box`: the composer's textarea.
  constructor(box) {
    this.box = box;
    this.prompts = [];
    this.index = null;  // the entry shown (null: the draft being typed)
    this.draft = '';
    this.asked = 0;  // the newest load's number: an older answer arriving late is dropped
    this.sessionId = null;
    this.since = [];  // remembered here and not yet seen in an answer: their append may lag
    window.addEventListener('focus', () => this.refresh());
  }

  /** The history for the session shown (`sessionId`, null for none). */
  load(sessionId) {
    this.sessionId = sessionId;
    this.index = null;
    return this.refresh();
  }

  /** Read the history again; a walk under way stays on the prompt it shows. */
  async refresh() {
    const asked = ++this.asked;
    const query = this.sessionId ? `?session=${encodeURIComponent(this.sessionId)}` : '';
    try {
      const answer = await api('GET', `${HISTORY_PATH}${query}`);
      if (asked !== this.asked || !Array.isArray(answer.prompts)) return;
      const shown = this.index === null ? null : this.prompts[this.index];
      const first = shown !== null && this.index === this.prompts.length - 1 && this.box.value === shown;
      let prompts = answer.prompts.filter((p) => typeof p === 'string' && p);
      this.since = this.since.filter((text) => !prompts.includes(text));
      for (const text of this.since) prompts = withNewest(prompts, text);
      this.prompts = prompts;
      if (shown === null) return;
      if (first && prompts.length && prompts[prompts.length - 1] !== shown) {  // a newer one came
        this.index = prompts.length - 1;
        this.show(prompts[this.index]);
        return;
      }
      const at = prompts.lastIndexOf(shown);
      this.index = at >= 0 ? at : null;
    } catch {
      /* the history stays as it was: the next load asks again */
    }
  }

  /** A prompt sent or a command run (a draft queued is remembered once it is sent). */
  remember(text) {
    this.index = null;
    if (!text.trim()) return;
    this.prompts = withNewest(this.prompts, text);
    this.since.push(text);
    api('POST', HISTORY_PATH, { text }).catch(() => { /* this page still has it */ });
  }

  /** The draft left the box without being sent (queued): a walk ends. */
  left() {
    this.index = null;
  }

  /** A key in the box: Up on its first line shows an earlier prompt, Down on its last a later
   * one (the event then does nothing else). */
  onKey(event) {
    if (event.altKey || event.ctrlKey || event.metaKey || event.shiftKey || event.isComposing) return;
    const box = this.box;
    if (box.selectionStart !== box.selectionEnd) return;
    if (event.key === 'ArrowUp' && !box.value.slice(0, box.selectionStart).includes('\n')) {
      if (this.step(-1)) event.preventDefault();
    } else if (event.key === 'ArrowDown' && !box.value.slice(box.selectionEnd).includes('\n')) {
      if (this.step(1)) event.preventDefault();
    }
  }

  /** Show an earlier (-1) or later (1) prompt; false when there is none to show. */
  step(by) {
    if (this.index === null && by < 0) this.refresh();  // what the terminal UI sent since
    if (!this.prompts.length) return false;
    let index;
    if (this.index === null) {
      if (by > 0) return false;
      this.draft = this.box.value;
      index = this.prompts.length - 1;
    } else {
      index = this.index + by;
      if (index >= this.prompts.length) {
        this.index = null;
        this.show(this.draft);
        return true;
      }
      index = Math.max(0, index);
    }
    this.index = index;
    this.show(this.prompts[index]);
    return true;
  }

  show(text) {
    this.box.value = text;
    this.box.setSelectionRange(text.length, text.length);
    this.box.dispatchEvent(new Event('input'));  // kept as the session's draft, hints redone
  }
}
