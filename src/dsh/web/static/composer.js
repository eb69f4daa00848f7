// The composer: Enter sends the draft as a prompt (Shift+Enter: a new line); `/compact [focus]`
// compacts; `/undo [--dry-run]` takes back the file edits of the last turn (or says what it
// would); any other `/word` is a prompt command (`$DSH_HOME/commands/word.md`, the workspace's
// `.dsh/commands/word.md`), whose text the server sends, or it is refused with the commands
// there are (`//…` sends `/…`). Stop
// cancels what runs. A session not open here is resumed before anything is sent. Tab completes a
// `/command` or an `@path` of the session's workspace (completion.js); Esc clears its hint.
import { api, ApiError, sessionPath } from './api.js';
import { Completion, promptCommands } from './completion.js';

const $ = (id) => document.getElementById(id);
const BUILT_IN = '/compact [focus], /undo [--dry-run]';  // completion.js's PAGE_COMMANDS

/** What a draft sends as a prompt: leading blank lines and trailing whitespace dropped, the first
 * line's indentation kept (a pasted code block stays as it was); `//…` sends `/…`. */
export function promptText(draft) {
  const text = draft.replace(/\s+$/, '').replace(/^(?:[ \t]*\r?\n)+/, '');
  return text.trimStart().startsWith('//') ? text.replace('//', '/') : text;
}

export class Composer {
  // `page`: { sessionId(), info(), resumed(session), toast(message, options), sent() } from the
  // page controller (`resumed`: the session info a resume answered; `sent`: the draft went).
  constructor(page) {
    this.page = page;
    this.completion = new Completion($('prompt'), $('composer-hint'), $('composer-status'), () => page.sessionId());
    $('composer').addEventListener('submit', (event) => { event.preventDefault(); this.submit(); });
    $('prompt').addEventListener('keydown', (event) => {
      if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
        event.preventDefault();
        this.submit();
      } else {
        this.completion.onKey(event);
      }
    });
    $('cancel').addEventListener('click', () => this.cancel());
  }

  async ensureOpen() {
    const info = this.page.info();
    if (info && info.open) return;
    const data = await api('POST', `${sessionPath(this.page.sessionId())}/resume`);
    this.page.resumed(data.session);
  }

  async submit() {
    const box = $('prompt');
    const text = box.value.trim();
    if (!text || !this.page.sessionId()) return;
    const command = /^\/[^\s/]*(?=\s|$)/.exec(text);  // not `//…`, nor a path like /usr/lib/x
    // The last error goes before sending, not after: the error of a turn that fails at once
    // may come over the live stream before the answer to the send does.
    this.page.toast('');
    try {
      await this.ensureOpen();
      if (text === '/compact' || text.startsWith('/compact ')) {
        const focus = text.slice('/compact'.length).trim();
        await api('POST', `${sessionPath(this.page.sessionId())}/compact`, focus ? { focus } : {});
      } else if (command && command[0] === '/undo') {
        const option = text.slice('/undo'.length).trim();
        if (option !== '' && option !== '--dry-run') {
          this.page.toast(`Usage: /undo [--dry-run] (not ${option})`);
          return;
        }
        await this.undo(option === '--dry-run');
      } else if (command) {  // a prompt command's text is sent by the server
        const path = sessionPath(this.page.sessionId());
        const commands = await promptCommands(this.page.sessionId());
        if (!commands.some((c) => `/${c.name}` === command[0].toLowerCase())) {
          const yours = commands.map((c) => `, /${c.name}`).join('');
          this.page.toast(`Unknown command ${command[0]} (commands: ${BUILT_IN}${yours}; // sends /)`);
          return;
        }
        await api('POST', `${path}/prompt`, { text: promptText(box.value), command: true });
      } else {
        await api('POST', `${sessionPath(this.page.sessionId())}/prompt`, { text: promptText(box.value) });
      }
      box.value = '';
      this.completion.clear();
      this.page.sent();
    } catch (error) {
      this.page.toast(error instanceof ApiError ? error.message : String(error));
    }
  }

  /** `/undo`: what it logged (its note, the note to the model) comes over the live stream; a dry
   * run, "nothing to undo" or a refusal before the log was read logs nothing, so its lines show
   * here, in the toast (a note unless it refused). */
  async undo(dryRun) {
    const answer = await api('POST', `${sessionPath(this.page.sessionId())}/undo`, dryRun ? { dryRun } : {});
    if (!answer.logged) this.page.toast(answer.lines.join('\n'), { note: answer.ok });
  }

  /** Another session is shown: what the hint named was the last one's. */
  reset() {
    this.completion.clear();
  }

  async cancel() {
    try {
      await api('POST', `${sessionPath(this.page.sessionId())}/cancel`);
    } catch (error) {
      this.page.toast(error.message);
    }
  }
}
