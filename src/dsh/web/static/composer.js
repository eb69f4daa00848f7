// The composer: Enter sends the draft as a prompt (Shift+Enter: a new line; Up on the first line
// and Down on the last walk the drafts sent before, the terminal UI's too: prompt_recall.js). A `/word` that is
// one of the page's own commands (commands.js, the terminal UI's of the same name; the name in
// any case) runs here: `/compact [focus]` compacts; `/undo [--dry-run]` takes back the file edits
// of the last turn (or says what it would); `/context` opens the Context panel (context.js);
// `/cost` says the billed tokens per model and their list-price estimate (a note); `/title` says
// the session's title, `/title TEXT` renames it (logged: the header and the session list show
// it); `/model` names the model the session's next turns run on with the models its server lists,
// `/model NAME` runs them on NAME (refused, the draft kept, when the server does not list it);
// `/retry` sends the last turn's prompt again when that turn failed or was cancelled (else a note);
// `/rewind` lists the prompts, `/rewind N` and `/fork` open a copy of the session (up to turn N,
// what was typed for it in the box, the `!cmd` output it was sent with shown and sent again ahead
// of the next prompt, as the terminal UI does; or whole);
// `/approval [MODE]` names the session's approval mode or changes it (ask, auto or read-only;
// the terminal UI's words, which the server makes); `/diff` shows the workspace's changes since
// its last commit (changes.js); `/new` (or `/clear`) does what "New session" does; `/help` lists
// these, your prompt commands and the keys (help.js). Any other `/word` is a prompt command
// (`$DSH_HOME/commands/word.md`, the workspace's `.dsh/commands/word.md`), whose text the server
// sends, or it is refused with the commands there are (`//…` sends `/…`). Stop cancels what
// runs, and so does Esc when it has no list to close nor queued draft to take back. A session not open here is resumed before anything that acts on it is sent (a prompt,
// `/compact`, `/undo`, `/approval`, `/title TEXT`, `/model`, `/retry`); what only reads (`/context`,
// `/cost`, `/title`, `/diff`, `/help`) and `/new` do not resume it. Each session's unsent draft
// is kept in the browser as it changes (unsent.js): a reload, or showing the session again,
// brings it back; sent, it is dropped. Tab completes a `/command` or an `@path` of the session's
// workspace (completion.js); Esc clears its hint. The page's "Skip to composer" link, its first
// stop of Tab, brings the focus here. While a turn or /compact runs, a draft that is not one of
// the page's own commands is queued (queue.js) and sent when that work ends well. On a page with
// no session shown the box is usable too: Enter starts a new session as "New session" does and
// sends the draft there (`start`), or keeps it in the box, saying why, when none could start.
import { api, ApiError, sessionPath } from './api.js';
import { ChangesPanel } from './changes.js';
import { offline } from './connection.js';
import { PAGE_COMMAND_LIST, PAGE_COMMAND_NAMES } from './commands.js';
import { Completion, promptCommands } from './completion.js';
import { say } from './dom.js';
import { HelpPanel } from './help.js';
import { keepDraft, keepSentWith, keptDraft, keptSentWith } from './unsent.js';
import { NOT_SENT, QUEUED_ALREADY, QueuedPrompt } from './queue.js';
import { PromptRecall } from './prompt_recall.js';
import { errorLine } from './projection.js';

const $ = (id) => document.getElementById(id);
/** `/new` in a new session nothing happened in yet: the terminal UI's words. */
export const ALREADY_NEW = 'This is a new session already: the next prompt starts it.';
/** Enter while the page is disconnected from dsh web (connection.js). */
export const NOT_CONNECTED = 'Not sent: the page is disconnected from dsh web (reconnecting…). The draft stays.';

const APPROVAL_MODES = ['ask', 'auto', 'read-only'];
/** Under each `!cmd` output block a rewound prompt was sent with: the terminal UI's words. */
export const SENT_AGAIN = '(sent to the model with your next prompt, as it was with this one)';

/** `/approval ARG`'s refusal of an ARG that names no mode, word for word the server's and the
 * terminal UI's (dsh.agent.approval_command.chosen_mode: the argument as one printable line, as
 * Python's repr quotes it; held equal by a browser test). The page says it without asking the
 * server, as it does the unknown commands. */
export function approvalRefusal(arg) {
  const text = errorLine(arg, Infinity);
  const quote = text.includes("'") && !text.includes('"') ? '"' : "'";
  let inner = text.replace(/\\/g, '\\\\');
  if (quote === "'") inner = inner.replace(/'/g, "\\'");
  return `/approval takes ask, auto or read-only, not ${quote}${inner}${quote}.`;
}

/** What a draft sends as a prompt: leading blank lines and trailing whitespace dropped, the first
 * line's indentation kept (a pasted code block stays as it was); `//…` sends `/…`. */
export function promptText(draft) {
  const text = draft.replace(/\s+$/, '').replace(/^(?:[ \t]*\r?\n)+/, '');
  return text.trimStart().startsWith('//') ? text.replace('//', '/') : text;
}

/** A draft's `/name` as typed (else null), that name lower-cased, and what follows it. */
function parsed(draft) {
  const text = draft.trim();
  const command = /^\/[^\s/]*(?=\s|$)/.exec(text);  // not `//…`, nor a path like /usr/lib/x
  const typed = command ? command[0] : null;
  return { typed, name: typed && typed.slice(1).toLowerCase(), arg: typed ? text.slice(typed.length).trim() : '' };
}

export class Composer {
  // `page`: { sessionId(), info(), resumed(session), approvalMode(approval), toast(message,
  // options), newSession(), showContext(), waiting(), sent() } from the page controller (`resumed`: the
  // session info a resume answered; `approvalMode`: the mode `/approval` found or chose;
  // `newSession`: "New session", true when it started one, false when it kept the new one shown;
  // `showContext`: open the Context panel, its figures fetched afresh; `waiting`: the prompt
  // shown until it is logged, waiting.js; `sent`: the draft went).
  constructor(page) {
    this.page = page;
    this.changes = new ChangesPanel();
    this.help = new HelpPanel();
    this.completion = new Completion($('prompt'), $('composer-hint'), $('composer-status'), () => page.sessionId());
    this.recall = new PromptRecall($('prompt'));  // up / down: earlier prompts
    this.queued = new QueuedPrompt($('queued-prompt'), (text) => {
      this.putBack(text);
      this.focus();
    });
    $('composer').addEventListener('submit', (event) => { event.preventDefault(); this.submit(); });
    $('prompt').addEventListener('keydown', (event) => {
      if (this.completion.inList(event)) return;  // Up, Down, Enter in an open completion list
      if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
        event.preventDefault();
        this.submit();
      } else {
        this.completion.onKey(event);  // Esc closes its list first
        if (event.key === 'Escape' && !event.defaultPrevented && this.queued.unqueue()) event.preventDefault();
        if (event.key === 'Escape' && !event.defaultPrevented && this.page.info()?.running) {
          event.preventDefault();  // nothing else to take back: Esc stops the turn, as Stop does
          this.cancel();
        }
        if (!event.defaultPrevented) this.recall.onKey(event);
      }
    });
    $('prompt').addEventListener('input', () => this.keep());  // completion.js fires it too
    $('cancel').addEventListener('click', () => this.cancel());
    $('skip-link').addEventListener('click', (event) => {
      event.preventDefault();  // `#composer` in the address would name no session (app.js)
      this.focus();
    });
  }

  /** The focus to the prompt box; with none to type in, say why. */
  focus() {
    if (!$('prompt').disabled) {
      $('prompt').focus();
      return;
    }
    say($('state-announcer'), this.page.info()
      ? 'The composer is off: another process is writing this session.'
      : 'The composer is off until this session is loaded.');
  }

  async ensureOpen() {
    const info = this.page.info();
    if (info && info.open) return;
    const data = await api('POST', `${sessionPath(this.page.sessionId())}/resume`);
    this.page.resumed(data.session);
  }

  async submit() {
    const box = $('prompt');
    const sessionId = this.page.sessionId();
    if (!box.value.trim()) return;
    if (offline()) {
      this.page.toast(NOT_CONNECTED);
      return;
    }
    if (!sessionId) {
      await this.start(box.value);
      return;
    }
    if (this.page.info()?.running && !PAGE_COMMAND_NAMES.includes(parsed(box.value).name)) {
      if (this.queued.has()) {
        this.page.toast(QUEUED_ALREADY);  // the draft stays
        return;
      }
      this.queued.queue(box.value);
      this.recall.left();  // remembered once it is sent: one taken back never was
      box.value = '';
      this.completion.clear();
      this.keep();
      say($('state-announcer'), 'Queued: sent when this turn ends');
      this.page.sent();
      return;
    }
    await this.go(box.value, true);
  }

  /** Enter on a page with no session shown: a new session is started (as "New session" does, in
   * the server's default workspace) and shown, then `draft` goes to it as to any new session: a
   * prompt is its first turn, a command runs there (`/help` lists that workspace's prompt
   * commands, `/model NAME` chooses the model its turns run on); `/new` and `/clear` only start
   * it. Refused, nothing is shown and the draft stays in the box (the toast says why). */
  async start(draft) {
    if (this.starting) return;  // Enter again while it starts
    this.starting = true;
    const { name } = parsed(draft);
    const only = name === 'new' || name === 'clear';
    this.page.toast('');
    let shown;
    try {
      shown = await this.page.startWith(only ? '' : draft);
    } catch (error) {
      const why = error instanceof ApiError ? error.message : String(error);
      this.page.toast(`Not sent: no new session could be started (${why}). The draft stays.`);
      return;
    } finally {
      this.starting = false;
    }
    keepDraft(null, '');  // now the new session's (or sent)
    if (only) this.recall.remember(draft.trimEnd());
    else if (shown) await this.go(draft, true);
  }

  /** Send or run `draft` (`fromBox`: the box's, cleared once it went; else the queued one, put
   * back in the box when it is refused). */
  async go(draft, fromBox) {
    const box = $('prompt');
    const sessionId = this.page.sessionId();
    const { typed, name, arg } = parsed(draft);
    // The last error goes before sending, not after: the error of a turn that fails at once
    // may come over the live stream before the answer to the send does.
    this.page.toast('');
    try {
      if (!(await this.run(typed, name, arg, draft))) {  // refused: the draft stays
        if (!fromBox) this.putBack(draft);
        return;
      }
      this.recall.remember(draft.trimEnd());  // sent (a queued one too), or run
      if (this.page.sessionId() === sessionId) {  // not another session's draft, shown meanwhile
        if (fromBox) {
          box.value = '';
          this.completion.clear();
        }
        this.keep();
      } else {
        keepDraft(sessionId, '');
      }
      this.page.sent();
    } catch (error) {
      this.page.toast(error instanceof ApiError ? error.message : String(error));
      if (!fromBox && this.page.sessionId() === sessionId) this.putBack(draft);
    }
  }

  /** A logged event (a turn's end says how the work a queued draft waits for ended). */
  workEvent(event) {
    this.queued.event(event);
  }

  /** The session's work failed (an `error` frame). */
  workFailed() {
    this.queued.failed();
  }

  /** The session's run state (`running`; `unknown`: how the work ended is not known, a page that
   * came back): a queued draft is sent once the work ended well, else put back in the box. */
  workStatus(running, unknown = false) {
    if (unknown && !running) this.queued.failed();
    const ended = this.queued.status(running);
    if (!ended) return;
    if (ended.back !== undefined) {
      this.putBack(ended.back);
      this.page.note(NOT_SENT);
    } else {
      this.go(ended.send, false);
    }
  }

  /** Run the draft (`typed`: the `/name` it starts with, as typed, else null; `name`: that name
   * lower-cased; `arg`: what follows it): a command that only reads, or `/new`, here; anything
   * else is sent to the session, open here first. False when the page refused it (the toast
   * says why). */
  async run(typed, name, arg, draft) {
    const path = sessionPath(this.page.sessionId());
    if (name === 'diff') {
      await this.diff();
    } else if (name === 'new' || name === 'clear') {
      if (!(await this.page.newSession())) this.page.note(ALREADY_NEW);
    } else if (name === 'context') {
      this.page.showContext();
    } else if (name === 'cost') {
      this.page.note((await api('GET', `${path}/cost`)).note);
    } else if (name === 'help') {
      this.help.show(await promptCommands(this.page.sessionId()));
    } else if (name === 'title' && !arg) {
      this.page.note((await api('GET', `${path}/title`)).note);
    } else if (name === 'rewind' || name === 'fork') {  // the session is only read: not resumed
      return this.fork(name, arg);
    } else {
      return this.send(typed, name, arg, draft);
    }
    return true;
  }

  /** Send the draft (`typed`, `name`, `arg`: as `run` has them) to the session, open here
   * first; false when the page refused it (the toast says why). */
  async send(typed, name, arg, draft) {
    await this.ensureOpen();
    const path = sessionPath(this.page.sessionId());
    if (name === null) {  // the `!cmd` output a rewound prompt was sent with goes ahead of it
      const sessionId = this.page.sessionId();
      await this.prompt([...keptSentWith(sessionId), promptText(draft)].join('\n\n'));
      keepSentWith(sessionId, []);
    } else if (name === 'retry') {  // the last turn's prompt again, if it did not complete
      const answer = await api('GET', `${path}/retry`);
      this.page.note(answer.note);
      if (answer.prompt !== null) await this.prompt(answer.prompt);
    } else if (name === 'compact') {
      const answer = await api('POST', `${path}/compact`, arg ? { focus: arg } : {});
      if (answer.answer) this.page.note(answer.answer);  // a new session's: nothing logged
    } else if (name === 'undo') {
      if (arg !== '' && arg !== '--dry-run') {
        this.page.toast(`Usage: /undo [--dry-run] (not ${arg})`);
        return false;
      }
      await this.undo(arg === '--dry-run');
    } else if (name === 'approval') {
      if (arg && !APPROVAL_MODES.includes(arg)) {
        this.page.toast(approvalRefusal(arg));
        return false;
      }
      await this.approval(arg);
    } else if (name === 'title') {  // with its text: `run` says the title without it
      this.page.note((await api('POST', `${path}/title`, { title: arg })).note);
    } else if (name === 'model') {
      const answer = arg ? await api('POST', `${path}/model`, { name: arg }) : await api('GET', `${path}/model`);
      this.page.note(answer.note);
    } else {  // a prompt command's text is sent by the server
      const commands = await promptCommands(this.page.sessionId());
      if (!commands.some((c) => c.name === name)) {
        const yours = commands.map((c) => `, /${c.name}`).join('');
        this.page.toast(`Unknown command ${typed} (commands: ${PAGE_COMMAND_LIST}${yours}; // sends /)`);
        return false;
      }
      await api('POST', `${path}/prompt`, { text: promptText(draft), command: true });
    }
    return true;
  }

  /** Send `text` as the session's next prompt, shown below the conversation once the server
   * took it (waiting.js). */
  async prompt(text) {
    this.page.waiting().sending(text);
    try {
      await api('POST', `${sessionPath(this.page.sessionId())}/prompt`, { text });
    } catch (error) {
      this.page.waiting().reset();
      throw error;
    }
  }

  /** `/rewind` lists the session's prompts; `/rewind N` and `/fork` make a copy of the session
   * (up to turn N, or whole: fork_route.py) and open it, turn N's prompt in its composer. */
  async fork(name, arg) {
    const path = sessionPath(this.page.sessionId());
    if (name === 'rewind' && !arg) {
      const { turns } = await api('GET', `${path}/turns`);
      const rows = turns.slice().reverse().map((t) => `  ${t.turn}  ${t.prompt.trim().split('\n', 1)[0]}`);
      this.page.note(rows.length
        ? ['/rewind N opens a copy of the session up to turn N, its prompt in the composer:', ...rows].join('\n')
        : 'Nothing to rewind: no prompt has started a turn in this session yet.');
      return true;
    }
    if (name === 'rewind' && !/^[1-9][0-9]*$/.test(arg)) {
      this.page.toast(`Usage: /rewind [N] (a turn number, not ${arg})`);
      return false;
    }
    if (name === 'fork' && arg) {
      this.page.toast('Usage: /fork (it takes nothing after it)');
      return false;
    }
    const made = await api('POST', `${path}/fork`, name === 'rewind' ? { beforeTurn: Number(arg) } : {});
    if (made.prompt !== null) keepDraft(made.id, made.prompt);  // in the box once it shows
    // the `!cmd` output that prompt was sent with goes again with the copy's next one
    keepSentWith(made.id, made.sentWith);
    const again = made.sentWith.map((block) => `\n\n${block}\n${SENT_AGAIN}`).join('');
    this.page.opened(made.id, made.note + again);
    return true;
  }

  /** `/diff`: the workspace's changes since its last commit in their dialog, or the server's
   * one line saying there are none or why they cannot be read (a note). */
  async diff() {
    const answer = await api('GET', `${sessionPath(this.page.sessionId())}/diff`);
    if (answer.note) this.page.note(answer.note);
    else this.changes.show(answer);
  }

  /** `/undo`: what it logged (its note, the note to the model) comes over the live stream; a dry
   * run, "nothing to undo" or a refusal before the log was read logs nothing, so its lines show
   * here, in the toast (a note unless it refused). */
  async undo(dryRun) {
    const answer = await api('POST', `${sessionPath(this.page.sessionId())}/undo`, dryRun ? { dryRun } : {});
    if (answer.logged) return;
    if (answer.ok) this.page.note(answer.lines.join('\n'));
    else this.page.toast(answer.lines.join('\n'));
  }

  /** `/approval` names the session's approval mode, `/approval MODE` changes it: the server's
   * answer says it in the terminal UI's words (a note), and the header shows the mode. A mode
   * but ask, auto or read-only is refused (an error, the draft kept). */
  async approval(mode) {
    const path = `${sessionPath(this.page.sessionId())}/approval`;
    const answer = mode ? await api('POST', path, { mode }) : await api('GET', path);
    this.page.approvalMode({ mode: answer.mode, allow: answer.allow });
    this.page.note(answer.note);
  }

  /** Another session is shown: its own draft comes back into the box (what the hint named was
   * the last one's). */
  reset() {
    this.queued.take();  // it is in its session's kept draft (`keep`)
    const sessionId = this.page.sessionId();
    $('prompt').value = keptDraft(sessionId);  // no session: the draft typed with none shown
    this.completion.clear();
    this.recall.load(sessionId);
  }

  /** A prompt that never reached the log (its turn ended first, waiting.js; null: none): back
   * in the box, before what was typed since, and kept as the session's draft. */
  putBack(text) {
    if (text === null) return;
    const box = $('prompt');
    box.value = box.value.trim() ? `${text}\n${box.value}` : text;
    this.keep();
  }

  /** The draft as it is now, kept for the session shown, after the queued one if any: a reload
   * puts that back in the box, unsent. */
  keep() {
    const sessionId = this.page.sessionId();
    const box = $('prompt').value;
    const queued = this.queued.text;
    keepDraft(sessionId, queued === null ? box : box.trim() ? `${queued}\n${box}` : queued);
  }

  async cancel() {
    try {
      await api('POST', `${sessionPath(this.page.sessionId())}/cancel`);
    } catch (error) {
      this.page.toast(error.message);
    }
  }
}
