// The composer's history of earlier prompts: Up on the box's first line and Down on its last walk
// it, as in the terminal UI, and it is the terminal UI's own (`GET /api/prompt-history`: the file
// `$DSH_HOME/prompt_history.jsonl`, dsh.web.prompt_history_route), the shown session's prompts the
// newest. Walking back keeps the draft being typed; Down past the newest prompt brings it back.
// Each draft that leaves the box is remembered here at once and appended to the file (a failed
// append loses only that entry). While the history cannot be had (the server unreachable), the
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
  }

  /** The history for the session shown (`sessionId`, null for none). */
  async load(sessionId) {
    const asked = ++this.asked;
    this.index = null;
    const query = sessionId ? `?session=${encodeURIComponent(sessionId)}` : '';
    try {
      const answer = await api('GET', `${HISTORY_PATH}${query}`);
      if (asked === this.asked && Array.isArray(answer.prompts)) {
        this.prompts = answer.prompts.filter((p) => typeof p === 'string' && p);
      }
    } catch {
      /* the history stays as it was: a reconnect loads it again */
    }
  }

  /** A draft that left the box (sent, queued or run here). */
  remember(text) {
    this.index = null;
    if (!text.trim()) return;
    this.prompts = withNewest(this.prompts, text);
    api('POST', HISTORY_PATH, { text }).catch(() => { /* this page still has it */ });
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
