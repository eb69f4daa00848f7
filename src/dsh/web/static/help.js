// `/help` typed in the composer: the page's own commands (commands.js), then the session's
// prompt commands (`GET …/commands`: yours and its workspace's, with their descriptions), then
// the composer's keys, in a modal dialog over the page (modal.js), as the terminal UI's `/help`
// lists its commands and yours. Escape, ✕ or a click beside it closes it, and the focus goes
// back where it was (the composer).
import { COMPOSER_KEYS, PAGE_COMMANDS, SLASH_ESCAPE } from './commands.js';
import { el, focusOrigin, hidePanel } from './dom.js';
import { hideModal, showModal } from './modal.js';

const $ = (id) => document.getElementById(id);

/** A table of `[head, text]` rows (each head a row header), its columns headed `columns`. */
function table(className, columns, rows) {
  const box = el('table', `help-table ${className}`);
  const heads = el('tr');
  for (const text of columns) {
    const th = el('th', '', text);
    th.scope = 'col';
    heads.append(th);
  }
  const head = el('thead');
  head.append(heads);
  const body = el('tbody');
  for (const [name, text, extra] of rows) {
    const row = el('tr');
    const th = el('th', 'help-name', name);
    th.scope = 'row';
    row.append(th, el('td', '', text));
    if (extra !== undefined) row.append(el('td', 'muted', extra));
    body.append(row);
  }
  box.append(head, body);
  return box;
}

export class HelpPanel {
  constructor() {
    this.origin = null;  // focused when the dialog opened
    $('help-close').addEventListener('click', () => this.close());
  }

  /** Show the help, `commands` the session's prompt commands (`[{name, description, scope}]`). */
  show(commands) {
    const rows = PAGE_COMMANDS.map((command) => [command.usage, command.does]);
    rows.push(SLASH_ESCAPE);
    const parts = [el('h2', 'help-head', 'Commands'), table('help-commands', ['Command', 'Does'], rows)];
    parts.push(el('h2', 'help-head', 'Your commands ($DSH_HOME/commands, ./.dsh/commands)'));
    if (commands.length) {
      const yours = commands.map((c) => [`/${c.name}`, c.description, c.scope]);
      parts.push(table('help-yours', ['Command', 'Sends', 'From'], yours));
    } else {
      parts.push(el('p', 'muted help-none', 'None yet: a Markdown file NAME.md in $DSH_HOME/commands/ or '
        + './.dsh/commands/ is a command /NAME that sends its text as the prompt.'));
    }
    parts.push(el('h2', 'help-head', 'Keys'), table('help-keys', ['Key', 'Does'], COMPOSER_KEYS));
    const body = $('help-body');
    body.replaceChildren(...parts);
    body.scrollTop = 0;
    if ($('help-panel').hidden) this.origin = focusOrigin($('prompt'));
    showModal($('help-panel'), () => this.close());
    body.focus();
  }

  close() {
    const wasOpen = hideModal();  // first: the focus can only go back to a page not inert
    hidePanel($('help-panel'), this.origin, $('prompt'), wasOpen);
  }
}
