// The model's view of the open session (GET …/context: dsh.agent.context_report, the data of the
// TUI's /context): the header's model (its spend is header.js's), and the context panel listing
// the next request part by part (system, tools, stubs, state, tail) with their tokens, opened by
// **Context** or by `/context` in the composer (with its figures fetched afresh). The panel
// is a modal dialog over the page (modal.js): the focus moves into it, Tab stays in it, Escape
// or a click beside it closes it, and the focus goes back where it was.
import { api, sessionPath } from './api.js';
import { fmtTokens } from './chrome.js';
import { el, focusOrigin, hidePanel, shown } from './dom.js';
import { hideModal, showModal } from './modal.js';

const $ = (id) => document.getElementById(id);
const REFRESH_MS = 400;
const PART_NAMES = {
  system: 'System prompt', tools: 'Tool schemas', stubs: 'Index stubs', state: 'State checkpoint', tail: 'Tail (verbatim)',
};

export function fmtCost(usd) {
  if (usd === null || usd === undefined) return 'n/a';
  if (usd === 0) return '$0.00';
  return usd < 0.01 ? `$${usd.toFixed(4)}` : `$${usd.toFixed(2)}`;
}

// How the figure was calibrated (dsh.surface.calibration): nothing when no provider count scaled it.
function calibrated(data) {
  const ratio = data.calibration;
  return ratio === null || ratio === undefined || ratio === 1 ? '' : `, estimates ×${ratio.toFixed(2)}`;
}

export class ContextInfo {
  constructor() {
    this.sessionId = null;
    this.data = null;
    this.generation = 0;
    this.timer = null;
    this.origin = null;  // focused when the panel opened
    $('context-toggle').addEventListener('click', () => this.toggle());
    $('context-close').addEventListener('click', () => this.toggle(false));
  }

  // A new session is shown: forget the old figures, fetch this one's.
  open(sessionId) {
    this.sessionId = sessionId;
    this.data = null;
    this.generation += 1;
    clearTimeout(this.timer);
    this.paint();
    $('context-toggle').disabled = !sessionId;
    if (sessionId) this.refresh();
    else this.toggle(false);
  }

  // Something changed the context (a reply, a compaction): fetch again, at most so often.
  changed() {
    if (!this.sessionId) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.refresh(), REFRESH_MS);
  }

  async refresh() {
    const generation = this.generation;
    try {
      const data = await api('GET', `${sessionPath(this.sessionId)}/context`);
      if (generation !== this.generation) return;
      this.data = data;
    } catch {
      if (generation !== this.generation) return;
      this.data = null;
    }
    this.paint();
  }

  // `/context`: the panel, with what the model sees next as it is now.
  show() {
    if (!this.sessionId) return;
    clearTimeout(this.timer);
    this.toggle(true);
    this.refresh();
  }

  // Esc closes the panel; the focus goes back where it was when it opened.
  toggle(show = $('context-panel').hidden) {
    $('context-toggle').setAttribute('aria-expanded', String(show));
    if (!show) {
      const wasOpen = hideModal();  // first: the focus can only go back to a page not inert
      hidePanel($('context-panel'), this.origin, $('context-toggle'), wasOpen);
      return;
    }
    if ($('context-panel').hidden) this.origin = focusOrigin($('context-toggle'));
    showModal($('context-panel'), () => this.toggle(false));
    this.paint();
    $('context-close').focus();
  }

  paint() {
    const data = this.data;
    const notice = data && data.routeNotice ? data.routeNotice : '';
    const model = data && data.model ? `${data.provider} · ${data.model}` : '';
    $('model').textContent = shown(notice && model ? `${model} ⚠` : model);
    $('model').title = shown(notice);
    if (!$('context-panel').hidden) this.paintPanel(data);
  }

  paintPanel(data) {
    const body = $('context-body');
    body.replaceChildren();
    if (!data) {
      body.append(el('p', 'muted', this.sessionId ? 'Loading…' : 'No session selected.'));
      return;
    }
    const pct = data.usedRatio === null ? '–' : `${Math.round(data.usedRatio * 100)}%`;
    const head = el('p', 'context-total',
      `${fmtTokens(data.usedTokens)} of ${fmtTokens(data.window)} tokens (${pct})${data.anchored ? ', provider-counted' : ', estimated'}${calibrated(data)}`);
    const hit = data.cacheHitRatio === null ? '–' : `${Math.round(data.cacheHitRatio * 100)}%`;
    const money = el('p', 'context-cost', `Cache hit ${hit} · estimated cost ${fmtCost(data.cost.usd)} (${data.cost.basis})`);
    body.append(head, money, this.partsTable(data), this.itemList(data));
  }

  // Each part's row is headed by its name; the columns by what their figures count.
  partsTable(data) {
    const table = el('table', 'context-parts');
    const heads = el('tr');
    for (const [text, className] of [['Part', ''], ['Items', 'num'], ['Tokens', 'num'], ['Share', 'bar']]) {
      const th = el('th', className, text);
      th.scope = 'col';
      heads.append(th);
    }
    const head = el('thead');
    const rows = el('tbody');
    head.append(heads);
    table.append(head, rows);
    const total = Math.max(1, data.heuristicTokens);
    for (const part of data.parts) {
      const row = el('tr');
      row.dataset.part = part.part;
      const bar = el('td', 'bar');
      const fill = el('span', 'fill');
      fill.style.width = `${(100 * part.tokens) / total}%`;
      bar.append(fill);
      const name = el('th', '', PART_NAMES[part.part] || part.part);
      name.scope = 'row';
      row.append(name, el('td', 'num', String(part.items)), el('td', 'num tokens', fmtTokens(part.tokens)), bar);
      rows.append(row);
    }
    return table;
  }

  itemList(data) {
    const wrap = el('div', 'context-items');
    if (data.tools.length) {
      const tools = el('details');
      tools.append(el('summary', '', `Tools (${data.tools.length})`));
      const list = el('ul');
      for (const tool of data.tools) list.append(el('li', '', `${tool.name} · ${fmtTokens(tool.tokens)}`));
      tools.append(list);
      wrap.append(tools);
    }
    const items = el('ol', 'context-nodes');
    for (const item of data.items) {
      const li = el('li', `node ${item.part}`);
      li.dataset.seq = String(item.seq);
      li.append(
        el('span', 'node-kind', item.part === 'tail' ? item.role : item.part === 'stubs' ? 'stub' : 'state'),
        el('span', 'node-tokens', fmtTokens(item.tokens)),
        el('span', 'node-preview', item.preview),
      );
      items.append(li);
    }
    wrap.append(items);
    return wrap;
  }
}
