// Find in session: the server searches the whole transcript (GET …/find: every original, the
// history compaction shadowed included, tool cards and compaction summaries); the bar steps
// through the matches, the view replaced by a window of the log around a match it does not hold
// (paging.js: a jump, not every page between), bringing its block back if parked, opening the
// card or disclosure it sits in, and highlighting the text.
import { api, sessionPath } from './api.js';
import { focusOrigin, hidePanel } from './dom.js';
import { modalOpen } from './modal.js';

const $ = (id) => document.getElementById(id);

export class FindInSession {
  // `page`: { sessionId(), view(), loadUntil(seq) } from the page controller (paging.js).
  constructor(page) {
    this.page = page;
    this.hits = [];
    this.index = -1;
    this.query = '';
    this.current = null;
    this.generation = 0;
    this.origin = null;  // focused when the bar opened: the focus goes back there when it closes
    $('find-toggle').addEventListener('click', () => this.toggle());
    $('find-close').addEventListener('click', () => this.toggle(false));
    $('find-prev').addEventListener('click', () => this.step(-1));
    $('find-next').addEventListener('click', () => this.step(1));
    $('find-bar').addEventListener('submit', (event) => event.preventDefault());
    $('find-input').addEventListener('keydown', (event) => {
      if (event.key === 'Enter') {
        event.preventDefault();
        this.search(event.shiftKey ? 1 : -1);
      } else if (event.key === 'Escape') {
        this.toggle(false);
      }
    });
    document.addEventListener('keydown', (event) => {
      if ((event.ctrlKey || event.metaKey) && event.key === 'f' && this.page.sessionId() && !modalOpen()) {
        event.preventDefault();  // the browser's find cannot see rows parked out of the page
        this.toggle(true);
      }
    });
  }

  reset() {
    this.generation += 1;
    this.hits = [];
    this.index = -1;
    this.query = '';
    this.clearMark();
    $('find-status').textContent = '';
    $('find-toggle').disabled = !this.page.sessionId();
    if (!this.page.sessionId()) this.toggle(false);
  }

  toggle(show = $('find-bar').hidden) {
    $('find-toggle').setAttribute('aria-expanded', String(show));
    if (show) {
      if ($('find-bar').hidden) this.origin = focusOrigin($('find-toggle'));
      $('find-bar').hidden = false;
      $('find-input').focus();
      $('find-input').select();
    } else {
      hidePanel($('find-bar'), this.origin, $('find-toggle'));
      this.clearMark();
    }
  }

  // Enter: search (a new query) or step to the next match; the first match shown is the newest.
  async search(direction) {
    const query = $('find-input').value.trim();
    if (!query) return;
    if (query === this.query && this.hits.length) {
      await this.step(direction);
      return;
    }
    const generation = ++this.generation;
    $('find-status').textContent = 'Searching…';
    let data;
    try {
      data = await api('GET', `${sessionPath(this.page.sessionId())}/find?q=${encodeURIComponent(query)}`);
    } catch (error) {
      if (generation === this.generation) $('find-status').textContent = error.message;
      return;
    }
    if (generation !== this.generation) return;
    this.query = query;
    this.hits = data.hits;
    this.truncated = data.truncated;
    this.index = this.hits.length;  // one past the newest: the first step lands on it
    if (!this.hits.length) {
      $('find-status').textContent = 'No match';
      this.clearMark();
      return;
    }
    await this.step(-1);
  }

  async step(direction) {
    if (!this.hits.length) return;
    this.index = (this.index + direction + this.hits.length) % this.hits.length;
    const generation = this.generation;
    const hit = this.hits[this.index];
    const total = `${this.hits.length}${this.truncated ? '+' : ''}`;
    $('find-status').textContent = `${this.index + 1} of ${total}`;
    await this.page.loadUntil(Math.min(hit.seq, hit.cardSeq ?? hit.seq));  // its card's row
    if (generation !== this.generation) return;
    this.show(hit);
  }

  rowOf(hit) {
    const view = this.page.view();
    // a tool hit shows in its call's card (ids repeat across replies, seqs do not)
    return view.rows.get(hit.cardSeq ?? hit.seq) || null;
  }

  show(hit) {
    const row = this.rowOf(hit);
    this.clearMark();
    if (!row) {
      $('find-status').textContent += ' (not shown)';
      return;
    }
    const needle = this.query.toLowerCase();
    for (const details of row.querySelectorAll('details')) {
      if (details.textContent.toLowerCase().includes(needle)) details.open = true;
    }
    row.classList.add('find-current');
    row.dataset.findHit = hit.kind;
    this.current = row;
    this.page.view().reveal(row);
    this.highlight(row, needle);
  }

  highlight(row, needle) {
    if (typeof Highlight !== 'function' || !CSS.highlights) return;
    const ranges = [];
    // Matched in the text as it is (a case-insensitive pattern), not in a lowercased copy:
    // lowercasing can lengthen text ("İ" becomes two characters) and shift every offset after it.
    const pattern = new RegExp(needle.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'), 'gi');
    const walker = document.createTreeWalker(row, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      for (const match of node.nodeValue.matchAll(pattern)) {
        if (!match[0]) break;
        const range = new Range();
        range.setStart(node, match.index);
        range.setEnd(node, match.index + match[0].length);
        ranges.push(range);
      }
    }
    CSS.highlights.set('find', new Highlight(...ranges));
  }

  clearMark() {
    if (this.current) {
      this.current.classList.remove('find-current');
      delete this.current.dataset.findHit;
      this.current = null;
    }
    if (typeof CSS !== 'undefined' && CSS.highlights) CSS.highlights.delete('find');
  }
}
