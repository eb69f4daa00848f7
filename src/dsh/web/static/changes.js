// `/diff` typed in the composer: the session workspace's changes since its last commit
// (GET …/diff: dsh.agent.workspace_diff, git's, as the terminal UI's /diff shows them) in a modal
// dialog over the page (modal.js). Each changed file's diff is coloured as the edit cards' are
// (diff.js), with git's lines before its first hunk that are not `---`/`+++` (a new file's mode,
// `Binary files … differ`) as notes over it; then how many lines were left out, and the
// untracked files. Its text scrolls with the keys once it opens (the focus is in it); Escape, ✕
// or a click beside it closes it, and the focus goes back where it was (the composer). Nothing
// to show (a clean tree, a workspace that is not a git work tree, no git) is the server's one
// line, said by the composer as a note: no dialog.
import { renderUnifiedDiff } from './diff.js';
import { el, focusOrigin, hidePanel } from './dom.js';
import { hideModal, showModal } from './modal.js';

const $ = (id) => document.getElementById(id);
const MIB = 1024 * 1024;
/** A file's diff lines highlighted as code at most: highlighting and sanitising each line costs
 * about a quarter of a millisecond, so a dialog of 5,000 such lines would take seconds to open. */
const HIGHLIGHT_LINES = 1000;

/** The dialog's title, as the terminal UI's screen is titled. */
export function changesTitle(answer) {
  return `/diff · ${answer.changed} changed, ${answer.untrackedTotal} untracked`;
}

/** One changed file: its diff (diff.js), git's header lines over its hunks as notes; the code of
 * a file whose diff is over HIGHLIGHT_LINES lines is not highlighted (still coloured by line). */
function fileChange(change) {
  const plain = change.lines.length > HIGHLIGHT_LINES;
  const box = renderUnifiedDiff(change.path, change.lines, { plain });
  const first = change.lines.findIndex((line) => line.startsWith('@@'));
  const head = first < 0 ? change.lines : change.lines.slice(0, first);
  const notes = head.filter((line) => !line.startsWith('--- ') && !line.startsWith('+++ '));
  box.querySelector('.diff-body').prepend(...notes.map((line) => el('div', 'diff-meta', line)));
  return box;
}

export class ChangesPanel {
  constructor() {
    this.origin = null;  // focused when the dialog opened
    $('changes-close').addEventListener('click', () => this.close());
  }

  /** Show a `…/diff` answer with changes in it. */
  show(answer) {
    const body = $('changes-body');
    const parts = answer.files.map(fileChange);
    if (answer.moreLines) {
      parts.push(el('p', 'muted', `… ${answer.moreLines} more lines (git diff in a shell shows them all)`));
    }
    if (answer.truncated) {
      parts.push(el('p', 'muted', `(the diff is longer than ${answer.maxBytes / MIB} MiB: the rest is left out)`));
    }
    if (answer.untrackedTotal) {
      const list = el('ul', 'untracked');
      list.append(...answer.untracked.map((name) => el('li', '', name)));
      const more = answer.untrackedTotal - answer.untracked.length;
      if (more > 0) list.append(el('li', 'muted', `… and ${more} more`));
      parts.push(el('h2', 'untracked-head', 'Untracked files'), list);
    }
    body.replaceChildren(...parts);
    body.scrollTop = 0;
    $('changes-title').textContent = changesTitle(answer);
    if ($('changes-panel').hidden) this.origin = focusOrigin($('prompt'));
    showModal($('changes-panel'), () => this.close());
    body.focus();
  }

  close() {
    const wasOpen = hideModal();  // first: the focus can only go back to a page not inert
    hidePanel($('changes-panel'), this.origin, $('prompt'), wasOpen);
    $('changes-body').replaceChildren();  // thousands of rows: not kept behind the page
  }
}
