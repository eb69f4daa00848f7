// The shown session's history pages. The page opens on the newest page and loads older ones as
// you scroll up. Find's jump to a match far back (`jump`) replaces the view with a window of the
// log around it (GET …/history?around_seq=): the view then ends before the session's end
// (`state.hasLater`, the conversation marked `detached`), loads older pages at its top and newer
// ones (?after_seq=) at its bottom as you scroll, and shows "Jump to latest". While detached,
// what the live stream brings is kept, not shown (the view has a gap before it); once a newer
// page reaches the end (you scrolled back down) or "Jump to latest" is pressed, the kept events
// follow the view's last one and the view follows the session again.
import { api, sessionPath } from './api.js';
import { setStatus } from './dom.js';

export const PAGE_MESSAGES = 50;
export const LOAD_WITHIN_PX = 400;
const KEPT_EVENTS = 10000;  // live events kept while detached (older ones are read again)
const $ = (id) => document.getElementById(id);

export class Paging {
  // `state`: the page's (sessionId, view, generation, lastSeq and the fields below);
  // `hooks`: { freshView() (an empty view in place of the shown one), toast(text), toEnd() }.
  constructor(state, hooks) {
    this.state = state;
    this.hooks = hooks;
    this.kept = [];
    this.dropped = false;
    this.asks = 0;  // the jumps asked: an answer to an older one is dropped
    $('jump-latest').addEventListener('click', () => this.toLatest());
    $('conversation').addEventListener('scroll', () => this.scrolled());
    this.reset();
  }

  reset() {
    Object.assign(this.state, {
      oldestSeq: null,   // first seq of the oldest page fed
      newestSeq: -1,     // last seq the view holds
      hasMore: false,
      hasLater: false,   // the view ends before the session's end (a jump's window)
      loadingOlder: false,
      loadingNewer: false,
    });
    this.kept = [];
    this.dropped = false;
    this.paint();
  }

  paint() {
    const s = this.state;
    $('conversation').classList.toggle('detached', s.hasLater);
    $('jump-latest').hidden = !s.hasLater;
    setStatus($('history-status'), s.loadingOlder ? 'Loading earlier history…'
      : s.hasMore || s.lastSeq < 0 ? '' : 'Beginning of the session');
    setStatus($('later-status'), s.loadingNewer ? 'Loading later history…' : '');
    $('log').dataset.oldestSeq = String(s.oldestSeq);
  }

  /** A page from the server; `newest`: the session's newest page (the view's end is its end). */
  feed(page, newest) {
    const s = this.state;
    const events = page.events;
    s.view.ingest(events);
    if (newest) {
      s.newestSeq = Math.max(page.lastSeq, events.length ? events[events.length - 1].seq : -1);
      s.lastSeq = Math.max(s.lastSeq, s.newestSeq);
    }
    if (events.length) s.oldestSeq = events[0].seq;
    else if (newest) s.oldestSeq = page.lastSeq + 1;
    s.hasMore = page.hasMore;
    this.paint();
  }

  /** A live event: shown (true) when the view follows the session, else kept for later. */
  live(event) {
    const s = this.state;
    if (!s.hasLater) {
      s.view.ingest([event]);
      s.newestSeq = Math.max(s.newestSeq, event.seq);
      return true;
    }
    this.kept.push(event);
    if (this.kept.length > KEPT_EVENTS) {
      this.kept.shift();
      this.dropped = true;
    }
    return false;
  }

  async loadOlder() {
    const s = this.state;
    if (!s.hasMore || s.loadingOlder || s.oldestSeq === null) return;
    await this.load('loadingOlder', `before_seq=${s.oldestSeq}`, (page) => {
      const c = $('conversation');
      const fromBottom = c.scrollHeight - c.scrollTop;
      this.feed(page, false);
      c.scrollTop = c.scrollHeight - fromBottom;
    });
  }

  /** The page after the view's end; the end reached, the view follows the session again. */
  async loadNewer() {
    const s = this.state;
    if (!s.hasLater || s.loadingNewer) return;
    await this.load('loadingNewer', `after_seq=${s.newestSeq}`, (page) => {
      const events = page.events;
      s.view.ingest(events);
      if (events.length) s.newestSeq = events[events.length - 1].seq;
      s.lastSeq = Math.max(s.lastSeq, page.lastSeq);
      if (!page.hasLater) this.attach();
    });
  }

  async load(flag, query, fed) {
    const s = this.state;
    const generation = s.generation;
    s[flag] = true;
    this.paint();
    try {
      const page = await api('GET', `${sessionPath(s.sessionId)}/history?${query}&max_messages=${PAGE_MESSAGES}`);
      if (generation === s.generation) fed(page);
    } catch (error) {
      if (generation === s.generation) this.hooks.toast(error.message);
    } finally {
      if (generation === s.generation) {
        s[flag] = false;
        this.paint();
      }
    }
  }

  // The view reached the session's end: the live events kept meanwhile follow it.
  attach() {
    const s = this.state;
    const kept = this.kept.filter((event) => event.seq > s.newestSeq);
    if (this.dropped && kept.length && kept[0].seq > s.newestSeq + 1) return;  // a gap: page on
    this.state.hasLater = false;
    this.kept = [];
    this.dropped = false;
    for (const event of kept) this.live(event);
    this.paint();
  }

  /** Make event `seq` part of the view: already there, or a window around it in its place. */
  async loadUntil(seq) {
    const s = this.state;
    if (s.oldestSeq !== null && seq >= s.oldestSeq && (!s.hasLater || seq <= s.newestSeq)) return;
    await this.jump(seq);
  }

  /** The view replaced by a window of the log around event `seq`. */
  async jump(seq) {
    await this.replace(`around_seq=${seq}`, (page) => {
      this.feed(page, false);
      const events = page.events;
      this.state.newestSeq = events.length ? events[events.length - 1].seq : seq;
      this.state.hasLater = page.hasLater;
      this.state.lastSeq = Math.max(this.state.lastSeq, page.lastSeq);
      if (!page.hasLater) this.attach();
    });
  }

  /** Back to the session's end: its newest page in place of the window, followed again. */
  async toLatest() {
    if (!this.state.hasLater) {
      this.hooks.toEnd();
      return;
    }
    await this.replace('', (page) => {
      this.feed(page, true);
      this.attach();
      this.hooks.toEnd();
    });
  }

  // The view replaced by the page `query` asks for. Live events are kept from the ask on (the
  // page may hold them or not); a failed ask puts them back in the view it leaves in place.
  async replace(query, fed) {
    const s = this.state;
    const generation = s.generation;
    const asked = ++this.asks;
    const detached = s.hasLater;
    s.hasLater = true;
    let page;
    try {
      page = await api('GET', `${sessionPath(s.sessionId)}/history?${query}&max_messages=${PAGE_MESSAGES}`);
    } catch (error) {
      if (generation !== s.generation || asked !== this.asks) return;
      this.hooks.toast(error.message);
      if (!detached) this.attach();
      return;
    }
    if (generation !== s.generation || asked !== this.asks) return;
    const { kept, dropped } = this;
    this.hooks.freshView();
    this.reset();
    Object.assign(this, { kept, dropped });
    s.hasLater = true;  // until the page fed says it reaches the end
    fed(page);
    this.paint();
    await this.fill(generation);
  }

  /** Pages loaded until the view fills the conversation's height (older, then newer). */
  async fill(generation) {
    const s = this.state;
    const c = $('conversation');
    const short = () => generation === s.generation && c.scrollHeight <= c.clientHeight + LOAD_WITHIN_PX;
    for (const [more, load, at] of [['hasMore', () => this.loadOlder(), 'oldestSeq'], ['hasLater', () => this.loadNewer(), 'newestSeq']]) {
      while (short() && s[more]) {
        const before = s[at];
        await load();
        if (s[at] === before) break;
      }
    }
  }

  scrolled() {
    const c = $('conversation');
    if (c.scrollTop < LOAD_WITHIN_PX) this.loadOlder();
    if (c.scrollHeight - c.scrollTop - c.clientHeight < LOAD_WITHIN_PX) this.loadNewer();
  }
}
