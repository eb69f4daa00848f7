// dsh web: the page controller. One session is shown at a time (#s=<id> in the URL). Its
// newest history page is loaded first; older pages load as you scroll up; the live stream
// (opened after the first page, catching up from its last seq) feeds new events through the
// same projector and view, so live and reloaded views are the same DOM.
import { api, sessionPath, tokenSettled } from './api.js';
import { API_MESSAGE_CHARS, errorLine, Projector } from './projection.js';
import { TranscriptView } from './view.js';
import { dropApproval, dropApprovals, showApproval, syncApprovals } from './approvals.js';
import { SessionStream, whenChanged } from './connection.js';
import { plain, say, shown } from './dom.js';
import { keepDraft } from './unsent.js';
import { applyTheme, filterSessions, nextTheme, setSidebar, storedTheme } from './chrome.js';
import { Composer } from './composer.js';
import { ContextInfo } from './context.js';
import { FindInSession } from './find.js';
import { renderApproval, renderProgress, renderRunState, renderStats, renderTitle } from './header.js';
import { loadSessionList as listSessions, sessionStateChanged, showSessionState } from './sidebar.js';
import { PageWarnings } from './warnings.js';
import { PAGE_MESSAGES, Paging } from './paging.js';
import { PlanPanel } from './plan.js';
import { WaitingPrompt } from './waiting.js';
import { repaintRouteWait, routeWaitFrame, showRouteWaits } from './route_wait.js';

const $ = (id) => document.getElementById(id);
const NARROW = window.matchMedia('(max-width: 768px)');
const ANNOUNCE_CHARS = 300;

const state = {
  sessionId: null,
  info: null,
  view: null,
  lastSeq: -1,      // newest event known (the view's, or past it: paging.js)
  generation: 0,    // bumps on every session switch; stale async work checks it
  stream: { text: '', reasoning: '', tool: '' },
  toastMs: 8000,    // how long an error toast stays (null: until the next one; tests)
};
window.dsh = state; // for tests and the benchmark
const stream = new SessionStream(onLive, (message) => toast(message, { sticky: true }));
Object.defineProperty(state, 'socket', { get: () => stream.socket });  // the shown session's

// ---- small UI helpers ------------------------------------------------------------------------

// The server's error messages come as one bounded line (dsh.web.errors.ApiError); what the
// page says of its own failures (an unreachable server, a browser's exception) is made so here.
// A `note` (what a command answered and did not log: `/undo --dry-run`) is not an error: its
// lines stay lines, each bounded, with its indentation. An error is an alert, read out as the
// box shows. A note is said through the page's polite status, `#state-announcer`, which is in
// the page before it: a region that appears with its text already in it is not read out (only
// an alert is); the box is then no live region, so the note is not read twice.
function toast(message, { sticky = false, note = false } = {}) {
  const box = $('toast');
  const lines = (text) => text.split('\n').map((line) => /^[ \t]*/.exec(line)[0] + errorLine(line));
  box.textContent = !message ? '' : note ? lines(message).join('\n') : errorLine(message, API_MESSAGE_CHARS);
  box.classList.toggle('note', !!message && note);
  if (message && note) {
    box.removeAttribute('role');
    say($('state-announcer'), box.textContent);
  } else {
    box.setAttribute('role', 'alert');
  }
  box.hidden = !message;
  clearTimeout(toast.timer);
  if (message && !sticky && state.toastMs !== null) {
    toast.timer = setTimeout(() => { box.hidden = true; }, state.toastMs);
  }
}

// What a command answered and did not log (`/cost`, `/model`, `/title`, `/approval`, a dry
// `/undo`): a note in the conversation, after its newest row, as the terminal UI shows it (not a
// toast that goes), each line bounded; said through the polite status.
async function note(text) {
  if (state.hasLater) await state.paging.toLatest();  // a note follows the newest row
  const lines = text.split('\n').map((line) => /^[ \t]*/.exec(line)[0] + errorLine(line));
  state.view?.note(lines.join('\n'));
  say($('state-announcer'), text);
  scrollToBottom();
}

// ---- copy buttons ------------------------------------------------------------------------

async function copyFrom(button) {
  const row = button.closest('.row');
  const text = button.classList.contains('copy-code')
    ? button.closest('pre').querySelector('code').textContent
    : state.view && row ? state.view.sourceOf(row) : null;
  if (text === null || text === undefined) return;
  try {
    await navigator.clipboard.writeText(text);
    button.textContent = 'Copied';
    say($('state-announcer'), 'Copied');  // the button's name stays what it copies
    setTimeout(() => { button.textContent = 'Copy'; }, 1500);
  } catch (error) {
    toast(`cannot copy: ${error.message}`);
  }
}

// Screen readers hear new messages only: the conversation itself is not a live region (older
// pages loaded on scroll would be read out), this one-line region gets each new message.
function announce(event) {
  if (event.surfaceOp !== 'append') return;
  const who = event.type === 'user/message' ? 'You' : event.type === 'assistant/message' ? 'Assistant' : null;
  if (!who || (who === 'You' && event.data.source && event.data.source.kind !== 'user')) return;
  const message = who === 'You' ? event.data : event.data.message;
  const text = message.content.filter((b) => b.type === 'text').map((b) => b.text).join('').trim();
  if (text) $('announcer').textContent = `${who}: ${text.slice(0, ANNOUNCE_CHARS)}`;
}

function nearBottom() {  // a window that ends before the session's (paging.js) follows nothing
  const c = $('conversation');
  return !state.hasLater && c.scrollHeight - c.scrollTop - c.clientHeight < 80;
}

function scrollToBottom() {
  if (state.hasLater) return void state.paging.toLatest();  // calls back once at the end
  state.view?.revealEnd();
  const c = $('conversation');
  c.scrollTop = c.scrollHeight;
  state.atEnd = true;
}

// A page that shows the end keeps showing it when the conversation's box shrinks (an approval
// card, the plan panel, a taller draft under it) or the window changes: whether it was at the end
// is the last scroll's (a shrink scrolls nothing), judged by the box's height before the resize
// (a scroll event can come after the box shrank and before the observer heard of it), re-pinned
// after each resize.
function followResizes() {
  const c = $('conversation');
  let height = c.clientHeight;
  c.addEventListener('scroll', () => {
    state.atEnd = !state.hasLater && c.scrollHeight - c.scrollTop - height < 80;
  }, { passive: true });
  new ResizeObserver(() => {
    height = c.clientHeight;
    if (state.atEnd && !state.hasLater) scrollToBottom();
  }).observe(c);
}

// ---- header (header.js) and streaming tail --------------------------------------------------------

// The header's run state and the shown session's item in the list: one state, both places.
// A tool card without its result counts its time while a turn runs, here or elsewhere.
function renderStatus() {
  if (!renderRunState(state.info, state.sessionId === null)) clearStream();  // a turn's stream ends with it
  showSessionState(state.info);
  const elsewhere = !!state.info?.heldBy && state.info.running !== 'turn';
  state.view?.running.running(!!state.info && (state.info.running === 'turn' || elsewhere), elsewhere);
}

// The header's compaction progress, and the mark of a prompt waiting for that pass.
function showProgress(progress) {
  renderProgress(progress);
  state.waiting.progress(progress);
}

function clearStream() {
  state.stream = { text: '', reasoning: '', tool: '' };
  paintStream();
}

function paintStream() {
  const tail = $('live-tail');
  const s = state.stream;
  tail.querySelector('.stream-text').textContent = shown(plain(s.text));  // drawn as logged text is
  tail.querySelector('.stream-reasoning').textContent = shown(plain(s.reasoning));
  tail.querySelector('.stream-tool').textContent = s.tool ? shown(`calling ${s.tool}…`) : '';
  tail.hidden = !(s.text || s.reasoning || s.tool);
}

function onDelta(message) {
  const stick = nearBottom();
  if (message.kind === 'tail') state.view.running.tail(message.seq, message.lines);  // its output
  else if (message.channel === 'text') state.stream.text += message.text;
  else if (message.channel === 'reasoning') state.stream.reasoning += message.text;
  else if (message.channel === 'tool') state.stream.tool = message.text;
  else if (message.channel === 'was-reasoning') {  // a lone </think>: the text so far was reasoning
    state.stream.reasoning += state.stream.text.trimStart();
    state.stream.text = '';
  }
  paintStream();
  if (stick) scrollToBottom();
}

// ---- sessions ----------------------------------------------------------------------------------------

function loadSessionList() {
  return listSessions(state.sessionId, toast, () => (state.info?.id === state.sessionId ? state.info : null));
}

// The server's stream brings the other sessions' states as they change (sidebar.js); each time it
// (re)connects, the list is read again, so no change falls between a read and the stream.
// A session the list does not show yet (created since it was read: in another tab, by the
// terminal UI's /new) is listed once a frame names it.
function serverFrame(data) {
  routeWaitFrame(data);  // a route's server loading its model
  if (data.kind === 'hello') loadSessionList();
  else if (data.kind === 'session-state' && !sessionStateChanged(data.session, state.sessionId)) loadSessionList();
}

// A new session is written to the store by its first prompt (dsh.web.drafts); while the one
// shown is such a session and nothing happened in it yet, "New session" (and `/new`, `/clear`
// in the composer) keeps it. True when a new session was started (the page goes to it), false
// when the one shown was kept.
async function startSession() {
  const info = state.info;
  if (info && info.draft && info.open && state.lastSeq < 0 && info.id === state.sessionId) return false;
  const data = await api('POST', '/api/sessions', {});
  if (state.sessionId === null) {  // what was typed with no session shown goes with it
    keepDraft(data.session.id, $('prompt').value);
    keepDraft(null, '');
  }
  location.hash = `#s=${encodeURIComponent(data.session.id)}`;
  return true;
}

// A page with no session shown: Enter starts one as "New session" does (in the server's default
// workspace; stored by its first prompt) and shows it, `draft` in its composer (composer.js then
// sends it there). True once it is shown; an error when the server refused (nothing shown).
async function startWith(draft) {
  const data = await api('POST', '/api/sessions', {});
  const id = data.session.id;
  keepDraft(id, draft);  // what opening it puts in the box
  state.hashOpened = id;  // shown below, not again by the hash's change
  location.hash = `#s=${encodeURIComponent(id)}`;
  await openSession(id);
  return state.sessionId === id && state.info?.id === id;
}

/** The "New session" button. */
async function newSession() {
  try {
    if (!(await startSession()) && !$('prompt').disabled) $('prompt').focus();
  } catch (error) {
    toast(error.message);
  }
}

// The session `#s=` names; a malformed escape (`#s=%E0`, a link in a reply) stays as written,
// and the server answers that no such session exists.
function selectedFromHash() {
  const match = /(?:^#|&)s=([^&]+)/.exec(location.hash);
  if (!match) return null;
  try {
    return decodeURIComponent(match[1]);
  } catch {
    return match[1];
  }
}

async function openSession(id) {
  const generation = ++state.generation;
  stream.close();
  state.sessionId = id;
  repaintRouteWait();
  state.info = null;
  state.lastSeq = -1;
  $('approvals').replaceChildren();
  freshView();
  state.paging.reset();
  clearStream();
  state.waiting.reset();
  state.context.open(id);
  state.find.reset();
  state.composer.reset();
  document.querySelectorAll('.session-item').forEach((a) => a.classList.toggle('selected', a.dataset.id === id));
  $('empty').hidden = !!id;
  $('empty').textContent = 'Type a prompt to start a new session, or pick one.';
  $('announcer').textContent = '';
  renderTitle(state.info);   // nothing of the previous session stays on screen while this one loads
  renderApproval(null);
  renderStats(null);
  state.plan.show(null);
  showProgress(null);
  renderStatus();
  if (!id) {  // type straight away: Enter starts a session (composer.js)
    if (!NARROW.matches) $('prompt').focus();
    return;
  }
  // The conversation first (its newest page is read from the log's end); the header follows
  // with the info, which sums the whole log.
  const asked = api('GET', sessionPath(id));
  asked.catch(() => {});  // awaited below
  let info;
  try {
    const page = await api('GET', `${sessionPath(id)}/history?max_messages=${PAGE_MESSAGES}`);
    if (generation !== state.generation) return;
    state.paging.feed(page, true);
    scrollToBottom();
    requestAnimationFrame(() => performance.mark('dsh:first-page-painted'));
    info = await asked;
  } catch (error) {
    if (generation !== state.generation) return;
    freshView();
    $('empty').hidden = false;
    $('empty').textContent = error.message;
    $('session-title').textContent = error.status === 404 ? 'Unknown session' : 'Session unavailable';
    return;
  }
  if (generation !== state.generation) return;
  state.info = info;
  renderTitle(state.info);
  renderApproval(info.approval);
  renderStats(info.stats);
  state.plan.show(info.plan);
  showProgress(info.progress);
  renderStatus();
  for (const approval of info.approvals) showApproval(approval, state.sessionId, toast);
  state.view.running.pending(info.approvals);
  if (!$('prompt').disabled) $('prompt').focus();
  if (NARROW.matches) setSidebar(false);
  performance.mark('dsh:first-page');
  stream.open(id, () => state.lastSeq);
  await state.paging.fill(generation);
  if (generation === state.generation && state.pendingNote) note(state.pendingNote);
  state.pendingNote = null;
}

/** An empty view in place of the shown one; its cards' run state and approvals carried over. */
function freshView() {
  const old = state.view;
  $('log').replaceChildren();
  old?.disconnect();
  state.view = new TranscriptView($('log'), new Projector(), $('conversation'));
  if (old) state.view.running.asked = old.running.asked;
  renderStatus();
}

// ---- live stream ---------------------------------------------------------------------------------------

function onLive(message) {
  switch (message.kind) {
    case 'event': {
      const event = message.event;
      if (event.seq <= state.lastSeq) return;
      const stick = nearBottom();
      state.lastSeq = event.seq;
      if (state.info) state.info.draft = false;  // a session with an event is in the store
      if (event.type === 'assistant/message' || event.type === 'turn/end') clearStream();
      if (state.info && !state.info.title && event.type === 'user/message'
          && event.surfaceOp === 'append' && event.data.source.kind === 'user') {
        const text = event.data.content.filter((b) => b.type === 'text').map((b) => b.text).join('')
          .replace(/\s+/g, ' ').trim();
        state.info.title = text.length <= 80 ? text : `${text.slice(0, 79)}…`;
        renderTitle(state.info);
      }
      if (event.type === 'session/title' && state.info) {  // `/title TEXT`, from any page or process
        state.info.title = event.data.title;  // logged as one line, cut as every title is
        renderTitle(state.info);
        loadSessionList();
      }
      if (event.type === 'todo/write') state.plan.show(event.data.todos);
      const followed = state.paging.live(event);
      state.waiting.event(event);
      state.composer.workEvent(event);
      announce(event);
      if (event.type === 'assistant/message' || event.type === 'compaction/end') state.context.changed();
      if (stick && followed) scrollToBottom();
      return;
    }
    case 'hello':  // what the running call streamed so far comes after it, whole: start over
      clearStream();
      state.info = message.session;
      renderTitle(state.info);
      renderApproval(message.session.approval);
      renderStats(message.session.stats);
      state.plan.show(message.session.plan);
      showProgress(message.session.progress);
      renderStatus();
      syncApprovals(message.session.approvals, state.sessionId, toast);  // none its turn left
      state.view.running.pending(message.session.approvals);
      state.composer.workStatus(message.session.running, true);  // ended while the page was away
      state.composer.recall.refresh();  // what either face sent meanwhile
      state.context.refresh();  // the model a restarted server runs the next turn on
      state.warnings.kept(message.warnings);
      return;
    case 'warning':
      state.warnings.arrived(message.warning);
      return;
    case 'delta': case 'tail':
      onDelta(message);
      return;
    case 'status':
      if (state.info) {
        state.info.running = message.running;
        state.info.open = message.open;
      }
      state.composer.putBack(state.waiting.status(message.running));  // a prompt never logged
      state.composer.workStatus(message.running);  // a queued draft sent, or back in the box
      if (message.running !== 'turn') {  // no turn: no approval is asked
        dropApprovals();
        state.view.running.pending([]);
      }
      renderStatus();
      loadSessionList();
      return;
    case 'holder':
      if (state.info) state.info.heldBy = message.pid;
      renderStatus();
      return;
    case 'progress':
      showProgress(message.progress);
      return;
    case 'stats':
      renderStats(message.stats);
      state.context.changed();
      return;
    case 'approval':
      showApproval(message.approval, state.sessionId, toast);
      state.view.running.asking(message.approval);
      return;
    case 'approval-resolved':
      dropApproval(message.id);
      state.view.running.answered(message.id);
      return;
    case 'approval-mode':
      approvalMode(message.approval);
      return;
    case 'error':
      state.composer.workFailed();
      toast(message.error.message);
      return;
    default:
  }
}

/** The session's approval mode changed (its `/approval MODE`, here or in another page). */
function approvalMode(approval) {
  if (state.info) state.info.approval = approval;
  renderApproval(approval);
}

// ---- wiring -----------------------------------------------------------------------------------------------

function init() {
  whenChanged(renderStatus);  // offline or back: the composer's buttons
  state.context = new ContextInfo();
  showRouteWaits(() => state.sessionId);
  state.warnings = new PageWarnings();
  tokenSettled.then((notice) => {  // a link's token refused, the kept one used: said once
    if (notice) toast(notice, { note: true });
    state.warnings.listen(serverFrame);
  });
  state.find = new FindInSession({
    sessionId: () => state.sessionId,
    view: () => state.view,
    loadUntil: (seq) => state.paging.loadUntil(seq),
  });
  state.waiting = new WaitingPrompt($('waiting-prompt'));
  state.composer = new Composer({
    sessionId: () => state.sessionId,
    info: () => state.info,
    resumed: (session) => { state.info = { ...state.info, ...session }; },
    approvalMode,
    toast,
    note,
    newSession: startSession,
    startWith,
    opened: (id, said) => {  // a fork (/rewind, /fork): shown, then `said` under it
      state.pendingNote = said;
      location.hash = `#s=${encodeURIComponent(id)}`;
      loadSessionList();
    },
    showContext: () => state.context.show(),
    waiting: () => state.waiting,
    sent: () => {  // what you sent, and its answer, are at the end
      scrollToBottom();
      state.composer.putBack(state.waiting.sent());
    },
  });
  $('new-session').addEventListener('click', newSession);
  setSidebar(!NARROW.matches);
  applyTheme(storedTheme());
  $('session-search').addEventListener('input', filterSessions);
  $('theme-toggle').addEventListener('click', () => applyTheme(nextTheme()));
  $('log').addEventListener('click', (event) => {
    const button = event.target.closest('button.copy');
    if (button) copyFrom(button);
  });
  $('sidebar-toggle').addEventListener('click', () => setSidebar(document.body.dataset.sidebar !== 'open'));
  $('session-list').addEventListener('click', (event) => {
    if (NARROW.matches && event.target.closest('.session-item')) setSidebar(false);
  });
  state.paging = new Paging(state, { freshView, toast, toEnd: scrollToBottom });
  state.plan = new PlanPanel($('plan'));
  followResizes();
  window.addEventListener('hashchange', () => {
    const id = selectedFromHash();
    if (id !== null && id === state.hashOpened) state.hashOpened = null;  // startWith shows it
    else openSession(id);
  });
  loadSessionList();
  openSession(selectedFromHash());
}

init();
