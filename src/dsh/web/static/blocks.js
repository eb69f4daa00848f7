// Windowing for the conversation: rows are kept in blocks of about BLOCK_ROWS rows, in order.
// A block far from the viewport (more than PARK_MARGIN away) is parked: taken out of the page,
// its rows kept (detached) so nothing is rendered twice and a row can still change while parked
// (a tool result, a marker's summaries). Consecutive parked blocks share one empty spacer of
// their summed measured heights. Coming near the viewport again swaps a block back. The page
// then holds a few blocks and a few spacers however long the session, so typing, scrolling and
// live rows cost the same after 30 pages of history. Few spacers matter as much as few rows: the
// intersection observer measures every element it watches in every frame that lays out (each
// keystroke's frame among them), so it watches the blocks in the page and one spacer per run.
const BLOCK_ROWS = 40;
const PARK_MARGIN = '150% 0px';

export class RowBlocks {
  // `root`: the element holding the blocks; `scroller`: its scrolling ancestor (null: no parking).
  constructor(root, scroller) {
    this.root = root;
    this.list = [];                 // block elements, in order
    this.spacers = new Map();       // parked block -> the spacer standing in for its run
    this.runs = new WeakMap();      // spacer -> the consecutive parked blocks it stands in for
    this.heights = new WeakMap();   // parked block -> its height when it was parked
    this.observer = scroller && typeof IntersectionObserver === 'function'
      ? new IntersectionObserver((entries) => this.onIntersect(entries), { root: scroller, rootMargin: PARK_MARGIN })
      : null;
  }

  // Put `row` right after `prev` (null: before every row); `last`: it follows every row.
  place(row, prev, last) {
    if (prev) {
      const block = prev.parentNode;
      if (last && block === this.list[this.list.length - 1] && block.childElementCount >= BLOCK_ROWS) {
        this.add(this.list.length).append(row);
      } else {
        prev.after(row);
      }
      return;
    }
    let first = this.list[0];
    if (!first || first.childElementCount >= BLOCK_ROWS) first = this.add(0);
    first.prepend(row);
  }

  take(row) {
    const block = row.parentNode;
    row.remove();
    if (block && block.childElementCount === 0) this.drop(block);
  }

  add(index) {
    const block = document.createElement('div');
    block.className = 'block';
    const next = this.list[index];
    this.root.insertBefore(block, next ? this.startOf(next) : null);
    this.list.splice(index, 0, block);
    this.observer?.observe(block);
    return block;
  }

  drop(block) {
    this.unpark(block);
    this.observer?.unobserve(block);
    block.remove();
    this.list.splice(this.list.indexOf(block), 1);
  }

  // The element in the page where `block` begins: the block, or the spacer of the run it starts
  // (a block inside a run comes back first).
  startOf(block) {
    const spacer = this.spacers.get(block);
    if (spacer && this.runs.get(spacer)[0] === block) return spacer;
    this.unpark(block);
    return block;
  }

  isParked(block) {
    return this.spacers.has(block);
  }

  park(block) {
    if (this.isParked(block) || !block.isConnected) return;
    this.heights.set(block, block.getBoundingClientRect().height);
    const index = this.list.indexOf(block);
    const before = this.spacers.get(this.list[index - 1]);  // the runs it joins, if any
    const after = this.spacers.get(this.list[index + 1]);
    const run = [...(before ? this.runs.get(before) : []), block, ...(after ? this.runs.get(after) : [])];
    this.observer.unobserve(block);
    const spacer = this.spacerFor(run);
    block.replaceWith(spacer);
    for (const old of [before, after]) {
      if (!old) continue;
      this.observer.unobserve(old);
      this.runs.delete(old);
      old.remove();
    }
    this.observer.observe(spacer);
  }

  unpark(block) {
    const spacer = this.spacers.get(block);
    if (!spacer) return;
    const at = this.runs.get(spacer).indexOf(block);
    this.release(spacer, at, at + 1);
  }

  // Bring the blocks run[from..to) of `spacer`'s run back; the rest of the run stays parked
  // behind new spacers (watched afresh, so one still near the viewport is reported at once).
  release(spacer, from, to) {
    const run = this.runs.get(spacer);
    const parts = run.slice(from, to);
    for (const block of parts) this.spacers.delete(block);
    if (from > 0) parts.unshift(this.spacerFor(run.slice(0, from)));
    if (to < run.length) parts.push(this.spacerFor(run.slice(to)));
    this.observer.unobserve(spacer);
    this.runs.delete(spacer);
    spacer.replaceWith(...parts);
    for (const part of parts) this.observer.observe(part);
  }

  spacerFor(run) {
    const spacer = document.createElement('div');
    spacer.className = 'block-spacer';
    let height = 0;
    for (const block of run) {
      height += this.heights.get(block);
      this.spacers.set(block, spacer);
    }
    spacer.style.height = `${height}px`;
    this.runs.set(spacer, run);
    return spacer;
  }

  // A spacer came near the viewport: bring back the blocks of its run within the observer's
  // bounds (the viewport grown by the margin), or the one nearest to them.
  near(spacer, entry) {
    const run = this.runs.get(spacer);
    const bounds = entry.rootBounds;
    const middle = (bounds.top + bounds.bottom) / 2;
    let top = entry.boundingClientRect.top;
    let from = -1;
    let to = -1;
    let nearest = 0;
    let distance = Infinity;
    run.forEach((block, i) => {
      const bottom = top + this.heights.get(block);
      if (bottom >= bounds.top && top <= bounds.bottom) {
        if (from < 0) from = i;
        to = i + 1;
      }
      const off = Math.abs((top + bottom) / 2 - middle);
      if (off < distance) [nearest, distance] = [i, off];
      top = bottom;
    });
    if (from < 0) [from, to] = [nearest, nearest + 1];
    this.release(spacer, from, to);
  }

  onIntersect(entries) {
    for (const entry of entries) {
      const target = entry.target;
      if (!target.isConnected) continue;
      if (this.runs.has(target)) {
        if (entry.isIntersecting) this.near(target, entry);
      } else if (!entry.isIntersecting) {
        this.park(target);
      }
    }
  }

  parkedCount() {
    return this.spacers.size;
  }

  disconnect() {
    this.observer?.disconnect();
  }
}
