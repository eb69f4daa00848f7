// Each session's unsent draft, kept in this tab's sessionStorage under `dsh-draft:<session id>`
// as it changes (typed, pasted, completed), so a reload brings it back into the composer, and
// each session shown gets its own draft back; once sent it is dropped. sessionStorage rather
// than localStorage: a draft stays with the tab it was typed in (two tabs on one session do not
// overwrite each other's) and goes with the tab, not left on the disk for good. It is never sent
// to the server, nor written to the session's log. With storage off or full, the draft is only
// in the box, as before.
const PREFIX = 'dsh-draft:';

/** The draft kept for `sessionId` ('' when none). */
export function keptDraft(sessionId) {
  try {
    return sessionStorage.getItem(PREFIX + sessionId) ?? '';
  } catch {
    return '';
  }
}

/** Keep `text` as the draft of `sessionId`; an empty one is dropped. */
export function keepDraft(sessionId, text) {
  try {
    if (text) sessionStorage.setItem(PREFIX + sessionId, text);
    else sessionStorage.removeItem(PREFIX + sessionId);
  } catch {
    // storage off, or full: the draft stays in the box only
  }
}
