// Tab completion in the composer, as the terminal UI's composer completes (dsh.tui.prompt). Tab
// in a one-word draft `/na` completes a command: the page's own (commands.js) and the prompt
// commands `GET …/commands` lists. Tab at the end of a word `@some/pa` completes a path of the
// session's workspace, as `GET …/paths?prefix=` names them (dsh.agent.path_completion: relative
// to the workspace, a directory with its trailing `/`, hidden entries only after a dot, nothing
// outside the workspace). A path goes in as the mention that names it (dsh.agent.mentions, as
// the terminal UI inserts it: dsh.agent.path_completion.mention): `@name`, or `@"my notes.md"`
// when the name holds white space or a quote, a quoted directory left open (`@"my dir/`) so Tab
// goes on inside it, and an open `@"my d` completes as typed. One candidate is inserted whole, a
// directory with its `/` (so Tab goes on into it), anything else with a space after it; several: the text they all begin with, and
// they are named in the hint line under the composer (the first MAX_LISTED, then how many more),
// as text, a bidi control as its escape (dom.js). Esc clears the hint.
//
// For screen readers (the textbox pattern with list autocomplete): the textarea says it completes
// from a list (`aria-autocomplete="list"`) and which element holds it (`aria-controls`, and
// `aria-describedby` so its text is the textarea's description); the candidates are a list, one
// item each, labelled with their count. Each Tab's outcome is said through the polite status
// `#composer-status` (the text changed by the page is not read out otherwise): what it inserted,
// how many candidates there are and the first MAX_LISTED, that there is nothing to complete, or
// that Tab again moves on. Tab inserts what every candidate begins with, as the terminal UI does;
// while the list is open (the draft as Tab left it), Down and Up move a selection in it (not the
// prompt history), the textarea's `aria-activedescendant` pointing at the selected item, and Tab
// or Enter inserts the selected candidate as a lone one would be.
//
// No keyboard trap: Tab is taken only when the word at the cursor is such a `/command` or
// `@path` (with nothing selected); anywhere else it moves the focus, as in any form. A Tab that
// completed nothing (no candidate, or several with nothing more in common) says so in the hint,
// and Tab pressed again with the draft and the cursor as they were moves the focus on. Shift+Tab
// is never taken.
import { api, sessionPath } from './api.js';
import { PAGE_COMMAND_NAMES } from './commands.js';
import { el, say } from './dom.js';

export const MAX_LISTED = 8;

/** The session's prompt commands, `[{name, description, scope}]`, by name. */
export async function promptCommands(sessionId) {
  const { commands } = await api('GET', `${sessionPath(sessionId)}/commands`);
  return commands;
}

// White space as Python's `str.isspace` has it, which ends an unquoted mention (the mention
// parser's `\s`, dsh.agent.mentions) and a word of the terminal UI's composer; JavaScript's `\s`
// differs (it has U+FEFF, not U+001C-U+001F nor U+0085).
const WHITE = '\\t\\n\\v\\f\\r\\x1c-\\x1f \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000';
const SPACE = new RegExp(`[${WHITE}]`);
const NEEDS_QUOTES = new RegExp(`[${WHITE}"]`);

/** The `@` mention of the path `name`, as the terminal UI inserts it
 * (dsh.agent.path_completion.mention): `@name`, or quoted (`quoted`: the typed mention is, or the
 * name holds white space or a quote) `@"name"`, a directory's left open, `@"my dir/`. */
export function mention(name, quoted = false) {
  if (!quoted && !NEEDS_QUOTES.test(name)) return `@${name}`;
  return name.endsWith('/') ? `@"${name}` : `@"${name}"`;
}

/** What all the mentions of `total` paths begin with, the ones the server left out too: the
 * paths' `common`, after `@"` when every mention is quoted (`quoted`: the typed one is; or all
 * `quotedCount` of them must be), after `@` when none is; just `@` when some are. */
export function commonMention(common, total, quotedCount, quoted = false) {
  if (quoted || (total > 0 && quotedCount === total)) return `@"${common}`;
  return quotedCount === 0 ? `@${common}` : '@';
}

/** Where an `@"` whose quote is still open at `cursor` starts, on the cursor's line, at the start
 * of a word (after white space or an opening bracket or quote), else null (dsh.tui.prompt). */
function openQuote(draft, cursor) {
  if (cursor < 2) return null;
  const lineStart = draft.lastIndexOf('\n', cursor - 1) + 1;
  const at = draft.lastIndexOf('@"', cursor - 2);
  if (at < lineStart || draft.slice(at + 2, cursor).includes('"')) return null;
  if (at > 0 && !SPACE.test(draft[at - 1]) && !'([{\'"`'.includes(draft[at - 1])) return null;
  return at;
}

/** What Tab would complete in `draft` with the cursor at `cursor`: `{kind: 'command' | 'path',
 * start, end}` (the word is `draft.slice(start, end)`; a path's also `partial`, what follows its
 * `@` or `@"`, and `quoted`, whether it is in an open `@"`), or null. */
export function completionTarget(draft, cursor) {
  if (draft.startsWith('/') && !SPACE.test(draft)) return { kind: 'command', start: 0, end: draft.length };
  const at = openQuote(draft, cursor);
  if (at !== null) return { kind: 'path', start: at, end: cursor, partial: draft.slice(at + 2, cursor), quoted: true };
  let start = cursor;
  while (start > 0 && !SPACE.test(draft[start - 1])) start -= 1;
  if (!draft.startsWith('@', start) || start >= cursor) return null;
  return { kind: 'path', start, end: cursor, partial: draft.slice(start + 1, cursor), quoted: false };
}

/** The longest text every one of `texts` begins with (characters, not UTF-16 halves). */
export function commonPrefix(texts) {
  if (!texts.length) return '';
  let prefix = Array.from(texts[0]);
  for (const text of texts.slice(1)) {
    const chars = Array.from(text);
    let n = 0;
    while (n < prefix.length && n < chars.length && prefix[n] === chars[n]) n += 1;
    prefix = prefix.slice(0, n);
  }
  return prefix.join('');
}

/** What `candidates` (whole words, sorted; `common`: what they all begin with) make of the target
 * word: `{replacement, draft, cursor}` (the word's replacement, the draft and the cursor after
 * it), or null when that changes nothing. */
export function completed(draft, target, candidates, common) {
  if (!candidates.length) return null;
  const current = draft.slice(target.start, target.end);
  let replacement = candidates.length === 1 ? candidates[0] : common;
  if (candidates.length === 1 && !replacement.endsWith('/')) replacement += ' ';
  if (replacement.length <= current.length) return null;
  return {
    replacement,
    draft: draft.slice(0, target.start) + replacement + draft.slice(target.end),
    cursor: target.start + replacement.length,
  };
}

export class Completion {
  // `box`: the composer's textarea; `hint`: the line under it; `status`: the polite live region
  // that says each Tab's outcome; `sessionId()`: the shown session.
  constructor(box, hint, status, sessionId) {
    this.box = box;
    this.hint = hint;
    this.status = status;
    this.sessionId = sessionId;
    this.stuck = null;  // {draft, cursor} after a Tab that completed nothing: Tab again moves on
    this.open = null;  // the list shown: {draft, cursor, start, names, selected (-1: none)}
  }

  /** The composer's keydown (Tab, Esc; Up, Down and Enter in an open list); calls
   * `preventDefault` on a key it takes. */
  onKey(event) {
    if (event.key === 'Escape') {
      if (!this.hint.hidden) {
        event.preventDefault();
        this.clear();
      }
      return;
    }
    if (event.key !== 'Tab' || event.shiftKey || event.ctrlKey || event.altKey || event.metaKey) return;
    const box = this.box;
    if (event.isComposing || box.selectionStart !== box.selectionEnd || !this.sessionId()) return;
    const draft = box.value;
    const cursor = box.selectionEnd;
    const target = completionTarget(draft, cursor);
    if (!target) return;
    const stuck = this.stuck;
    if (stuck && stuck.draft === draft && stuck.cursor === cursor) {
      this.clear();  // the focus moves on
      return;
    }
    event.preventDefault();
    this.complete(target, draft, cursor);
  }

  async complete(target, draft, cursor) {
    const sessionId = this.sessionId();
    const word = draft.slice(target.start, target.end);
    const unchanged = () => this.box.value === draft && this.box.selectionEnd === cursor
      && this.sessionId() === sessionId;
    let found;
    try {
      found = target.kind === 'command'
        ? await this.commands(sessionId, word)
        : await this.paths(sessionId, target);
    } catch (error) {
      if (!unchanged()) return;
      this.say(`Cannot complete ${word}: ${error.message}`);
      this.stuck = { draft, cursor };
      return;
    }
    if (!unchanged()) return;  // typed on, or another session: this answer is stale
    const done = completed(draft, target, found.candidates, found.common);
    if (done) {
      this.box.setRangeText(done.replacement, target.start, target.end, 'end');
      this.box.dispatchEvent(new Event('input', { bubbles: true }));  // as typing would
    }
    this.stuck = done ? null : { draft, cursor };
    if (found.candidates.length > 1) {
      this.list(found.candidates, found.total);
      const end = this.box.selectionEnd;
      this.open = { draft: this.box.value, cursor: end, start: target.start, names: found.candidates, selected: -1 };
    }
    else if (!found.candidates.length) this.say(`Nothing to complete for ${word} (Tab again moves on)`);
    else this.clear();
    if (found.candidates.length) say(this.status, outcome(done, found.candidates, found.total));
  }

  async commands(sessionId, word) {
    const names = new Set([...PAGE_COMMAND_NAMES, ...(await promptCommands(sessionId)).map((c) => c.name)]);
    const typed = word.slice(1).toLowerCase();
    const candidates = [...names].filter((name) => name.startsWith(typed)).map((name) => `/${name}`).sort();
    return { candidates, common: commonPrefix(candidates), total: candidates.length };
  }

  async paths(sessionId, target) {
    const query = new URLSearchParams({ prefix: target.partial });
    const answer = await api('GET', `${sessionPath(sessionId)}/paths?${query}`);
    return {
      candidates: answer.candidates.map((name) => mention(name, target.quoted)),
      // of every candidate, the ones past the cap too
      common: commonMention(answer.common, answer.total, answer.quoted, target.quoted),
      total: answer.total,
    };
  }

  /** Name the candidates in the hint line, a list of them (each as text), and how many more
   * there are. */
  list(candidates, total) {
    const named = candidates.slice(0, MAX_LISTED).map((name, at) => {
      const item = el('li', 'candidate', name);
      item.id = `completion-${at}`;
      return item;
    });
    const more = total - named.length;
    if (more > 0) named.push(el('li', 'more', `(+${more} more)`));
    const list = el('ul', 'candidates');
    list.setAttribute('role', 'list');  // kept a list to screen readers without its bullets
    list.append(...named);
    this.hint.replaceChildren(list);
    this.hint.hidden = false;
  }

  /** A note in the hint line, said through the status too. */
  say(message) {
    this.open = null;
    this.hint.replaceChildren(el('span', 'hint-note', message));
    this.hint.hidden = false;
    say(this.status, message);
  }

  /** Down, Up, Tab or Enter while the list is open and the draft as it left it: the selection
   * moves, or the selected candidate goes in. True when the key was taken. */
  inList(event) {
    const open = this.open;
    if (!open || event.altKey || event.ctrlKey || event.metaKey || event.shiftKey || event.isComposing) return false;
    const box = this.box;
    if (box.value !== open.draft || box.selectionStart !== open.cursor || box.selectionEnd !== open.cursor) return false;
    const items = [...this.hint.querySelectorAll('.candidate')];
    if (event.key === 'ArrowDown' || event.key === 'ArrowUp') {
      event.preventDefault();
      const step = event.key === 'ArrowDown' ? 1 : -1;
      const from = open.selected < 0 && step < 0 ? items.length : open.selected;
      this.select(items, (from + step + items.length) % items.length);
      return true;
    }
    if ((event.key !== 'Enter' && event.key !== 'Tab') || open.selected < 0) return false;
    event.preventDefault();
    const name = open.names[open.selected];
    const replacement = name.endsWith('/') ? name : `${name} `;
    box.setRangeText(replacement, open.start, open.cursor, 'end');
    box.dispatchEvent(new Event('input', { bubbles: true }));  // as typing would
    this.clear();
    say(this.status, `Completed ${name}`);
    return true;
  }

  select(items, index) {
    items.forEach((item, at) => {
      item.classList.toggle('selected', at === index);
    });
    this.open.selected = index;
    this.box.setAttribute('aria-activedescendant', items[index].id);
    say(this.status, this.open.names[index]);
  }

  /** Empty the hint; the next Tab completes again. */
  clear() {
    this.stuck = null;
    this.open = null;
    this.box.removeAttribute('aria-activedescendant');
    this.hint.replaceChildren();
    this.hint.hidden = true;
  }
}

/** What the status says of a Tab that found `candidates` (of `total`): what it inserted (`done`,
 * or null: nothing), the candidates when there are several, and when Tab again moves on. One
 * candidate is always inserted: it is longer than the word (a directory named in full lists what
 * it holds instead). */
export function outcome(done, candidates, total) {
  if (candidates.length === 1) return `Completed ${candidates[0]}`;
  const inserted = done ? done.replacement : null;
  const listed = candidates.slice(0, MAX_LISTED).join(', ');
  const more = total > MAX_LISTED ? `, the first ${MAX_LISTED}` : '';
  const named = `${total} completions${more}: ${listed}`;
  return inserted ? `Completed to ${inserted}; ${named}` : `${named} (Tab again moves on)`;
}
