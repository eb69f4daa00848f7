// Approvals asked in the page: the tool, its arguments (as the tool cards show them; a file
// edit as the diff the server made against the file, or, when the server found the edit would
// fail, why, over the arguments) and the three answers. Each is a group
// named by its title, and a screen reader hears that one is asked (the polite status
// `#state-announcer`: "Approval needed: dsh wants to run bash"), not its whole diff. An
// approval answered from the keyboard (its button had the focus) hands the focus to the
// composer as it goes, not to the page's start: the next approval is a Shift+Tab away. A write
// to `.dsh/`, `.git/` or a git hook (`approval.protected`: why it is asked every time) offers no "always":
// the reason shows under the title instead. The cards shown are the approvals the server asks
// now: a stream's `hello` (a page that joins, or came back after dsh web restarted) brings them
// all, and a card it does not list goes (`syncApprovals`: its turn ended meanwhile, answered or
// cancelled), and so does every card once the session runs no turn (`dropApprovals`). While the
// page is disconnected (connection.js) the answers are off. While one is shown, the tab's title
// says so (`● approval waiting · dsh`): a page in a background tab is marked in the tab strip.
// With the focus in a card, its keys answer it as the terminal UI's do (`ANSWER_KEYS`).
// "Deny with reason…" (or e) opens a one-line input under the buttons: Enter denies the call
// with what was typed (`{answer: 'deny', reason}`: the model reads it in the call's result; an
// empty line is a plain deny), Esc there goes back to the buttons, denying nothing, the text
// kept. A paste into it is one line (its line breaks become spaces, not dropped) and is cut to
// `REASON_LIMIT` characters, saying so.
import { api, sessionPath } from './api.js';
import { offline } from './connection.js';
import { renderUnifiedDiff } from './diff.js';
import { el, say, shown } from './dom.js';
import { renderArguments } from './tools.js';

/** The most characters a denial's reason takes (the server refuses more). */
export const REASON_LIMIT = 2000;

const $ = (id) => document.getElementById(id);
let titles = 0;
const TITLE = document.title;
new MutationObserver(() => {
  document.title = $('approvals').querySelector('.approval') ? `● approval waiting · ${TITLE}` : TITLE;
}).observe($('approvals'), { childList: true });

export function showApproval(approval, sessionId, onError) {
  if (document.querySelector(`.approval[data-id="${CSS.escape(approval.id)}"]`)) return;
  const box = document.createElement('div');
  box.className = 'approval';
  box.dataset.id = approval.id;
  const title = document.createElement('div');
  title.textContent = shown(`dsh wants to run ${approval.tool}:`);
  title.id = `approval-title-${++titles}`;
  box.setAttribute('role', 'group');
  box.setAttribute('aria-labelledby', title.id);
  const args = renderArguments(approval.tool, approval.args);
  const argsDiff = args.querySelector('.diff');
  if (Array.isArray(approval.diff) && argsDiff) {  // against the file as it is (the server read it)
    argsDiff.replaceWith(renderUnifiedDiff(argsDiff.querySelector('.diff-path').textContent, approval.diff));
  }
  const said = [];  // a call that would fail says why, over its arguments (no diff of the file)
  if (typeof approval.fails === 'string') {
    said.push(el('div', 'approval-fails', shown(`Will fail: ${approval.fails}`)));
    said.push(el('div', 'approval-note', "The call's arguments:"));
  } else if (typeof approval.note === 'string') {
    said.push(el('div', 'approval-note', shown(approval.note)));
  }
  const buttons = document.createElement('div');
  buttons.className = 'buttons';
  const answers = [['once', 'Allow once'], ['always', approval.alwaysLabel || `Always allow ${approval.tool}`], ['deny', 'Deny']];
  const protectedWhy = typeof approval.protected === 'string' ? approval.protected : null;
  for (const [answer, label] of answers.filter(([answer]) => !(protectedWhy && answer === 'always'))) {
    const button = document.createElement('button');
    button.type = 'button';
    button.textContent = shown(label);
    button.dataset.answer = answer;
    button.disabled = offline();
    button.addEventListener('click', async () => {
      try {
        await api('POST', `${sessionPath(sessionId)}/approvals/${encodeURIComponent(approval.id)}`, { answer });
      } catch (error) {
        onError(error.message);
      }
    });
    buttons.append(button);
  }
  const reason = reasonRow(approval, sessionId, onError);
  const withReason = el('button', 'deny-reason', 'Deny with reason…');
  withReason.type = 'button';
  withReason.dataset.action = 'reason';
  withReason.disabled = offline();
  withReason.addEventListener('click', () => {
    reason.hidden = false;
    reason.querySelector('input').focus();
  });
  buttons.append(withReason);
  box.append(title);
  if (protectedWhy) {
    const why = document.createElement('div');
    why.className = 'protected';
    why.textContent = shown(`Asked every time: ${protectedWhy}.`);
    box.append(why);
  }
  box.append(...said, args, buttons, reason);
  box.addEventListener('keydown', (event) => answerByKey(event, box, sessionId, onError));
  $('approvals').append(box);
  say($('state-announcer'), `Approval needed: dsh wants to run ${approval.tool}`);
}

/** A key inside an approval card (the terminal UI's): o or y allows once, a always, d or n
 * denies; Esc stops the turn, the call not run (a cancel alone: a deny sent first could let the
 * turn go on before the cancel arrives). The card has the focus only when it was moved there
 * (Shift+Tab from the composer, a click), so nothing typed in the composer answers it. */
export const ANSWER_KEYS = { o: 'once', y: 'once', a: 'always', d: 'deny', n: 'deny' };

function answerByKey(event, box, sessionId, onError) {
  if (event.altKey || event.ctrlKey || event.metaKey || event.isComposing) return;
  if (event.target.closest && event.target.closest('.deny-reason-row')) return;  // typing a reason
  if (event.key === 'Escape') {
    event.preventDefault();
    event.stopPropagation();
    if (!offline()) api('POST', `${sessionPath(sessionId)}/cancel`).catch((error) => onError(error.message));
    return;
  }
  const key = event.key.length === 1 ? event.key.toLowerCase() : '';
  const answer = ANSWER_KEYS[key];
  const button = key === 'e'
    ? box.querySelector('button[data-action="reason"]')
    : answer && box.querySelector(`button[data-answer="${answer}"]`);
  if (!button || button.disabled) return;
  event.preventDefault();
  event.stopPropagation();
  button.click();
}

/** The card's reason row, hidden until "Deny with reason…": its input, and a line under it. */
function reasonRow(approval, sessionId, onError) {
  const row = el('div', 'deny-reason-row');
  row.hidden = true;
  const input = document.createElement('input');
  input.type = 'text';
  input.maxLength = REASON_LIMIT;
  input.placeholder = 'Deny, and tell the model what to do instead';
  input.setAttribute('aria-label', `Reason for denying ${approval.tool}: what the model should do instead`);
  const note = el('div', 'deny-reason-note', 'Enter: deny, the model reads this · Esc: back to the choice');
  row.append(input, note);
  input.addEventListener('paste', (event) => {
    const text = event.clipboardData ? event.clipboardData.getData('text') : '';
    event.preventDefault();
    const line = text.split(/\s+/).filter(Boolean).join(' ');
    const start = input.selectionStart ?? input.value.length;
    const end = input.selectionEnd ?? start;
    const room = REASON_LIMIT - (input.value.length - (end - start));
    input.setRangeText(line.slice(0, Math.max(0, room)), start, end, 'end');
    if (line.length > room) {
      note.textContent = `The reason holds at most ${REASON_LIMIT.toLocaleString('en')} characters: the paste was cut.`;
    }
  });
  input.addEventListener('keydown', async (event) => {
    if (event.isComposing) return;
    if (event.key === 'Escape') {
      event.preventDefault();
      event.stopPropagation();
      row.hidden = true;
      row.closest('.approval').querySelector('button[data-action="reason"]').focus();
    } else if (event.key === 'Enter') {
      event.preventDefault();
      event.stopPropagation();
      if (offline()) return;
      try {
        const path = `${sessionPath(sessionId)}/approvals/${encodeURIComponent(approval.id)}`;
        await api('POST', path, { answer: 'deny', reason: input.value });
      } catch (error) {
        onError(error.message);
      }
    }
  });
  return row;
}

export function dropApproval(id) {
  const box = document.querySelector(`.approval[data-id="${CSS.escape(id)}"]`);
  if (!box) return;
  const focused = box.contains(document.activeElement);
  box.remove();
  if (focused && !$('prompt').disabled) $('prompt').focus();
}

/** The approvals the server asks now, all of them (a `hello`'s): their cards, and no other. */
export function syncApprovals(approvals, sessionId, onError) {
  const asked = new Set(approvals.map((approval) => approval.id));
  for (const box of [...document.querySelectorAll('#approvals .approval')]) {
    if (!asked.has(box.dataset.id)) dropApproval(box.dataset.id);
  }
  for (const approval of approvals) showApproval(approval, sessionId, onError);
}

/** No turn runs: no approval is asked. */
export function dropApprovals() {
  syncApprovals([], null, null);
}
