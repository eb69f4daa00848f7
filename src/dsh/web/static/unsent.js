// Each session's unsent draft, kept in this tab's sessionStorage under `dsh-draft:<session id>`
// as it changes (typed, pasted, completed; with no session shown, under `dsh-draft:`, until Enter
// starts a session with it), so a reload brings it back into the composer, and
// each session shown gets its own draft back; once sent it is dropped. sessionStorage rather
// than localStorage: a draft stays with the tab it was typed in (two tabs on one session do not
// overwrite each other's) and goes with the tab, not left on the disk for good. It is never sent
// to the server, nor written to the session's log. With storage off or full, the draft is only
// in the box, as before.
const PREFIX = 'dsh-draft:';
const key = (sessionId) => PREFIX + (sessionId ?? '');

/** The draft kept for `sessionId` (null: no session shown; '' when none). */
export function keptDraft(sessionId) {
  try {
    return sessionStorage.getItem(key(sessionId)) ?? '';
  } catch {
    return '';
  }
}

/** Keep `text` as the draft of `sessionId`; an empty one is dropped. */
export function keepDraft(sessionId, text) {
  try {
    if (text) sessionStorage.setItem(key(sessionId), text);
    else sessionStorage.removeItem(key(sessionId));
  } catch {
    // storage off, or full: the draft stays in the box only
  }
}

// The `!cmd` output a rewound prompt was sent with (a terminal UI's: fork_route.py hands it apart
// from what was typed), kept the same way under `dsh-sent-with:<session id>` as a JSON list of
// blocks, until the session's next prompt goes with them ahead of it.
const SENT_WITH = 'dsh-sent-with:';

/** The `!cmd` output blocks waiting for `sessionId`'s next prompt ([] when none). */
export function keptSentWith(sessionId) {
  try {
    const blocks = JSON.parse(sessionStorage.getItem(SENT_WITH + sessionId) ?? '[]');
    return Array.isArray(blocks) ? blocks.filter((b) => typeof b === 'string') : [];
  } catch {
    return [];
  }
}

/** Keep `blocks` for `sessionId`'s next prompt; none drops them. */
export function keepSentWith(sessionId, blocks) {
  try {
    if (blocks.length) sessionStorage.setItem(SENT_WITH + sessionId, JSON.stringify(blocks));
    else sessionStorage.removeItem(SENT_WITH + sessionId);
  } catch {
    // storage off, or full: the output is not sent again (the note said what it was)
  }
}
