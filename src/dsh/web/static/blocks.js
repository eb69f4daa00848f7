// Windowing for the conversation: rows are kept in blocks of about BLOCK_ROWS rows, in order.
// A block far from the viewport (more than PARK_MARGIN away) is parked: swapped out of the page
// for an empty spacer of its measured height, its rows kept (detached) so nothing is rendered
// twice and a row can still change while parked (a tool result, a marker's summaries). Coming
// near the viewport again swaps it back. The page then holds a few blocks' worth of rows however
// long the session, so typing, scrolling and live rows cost the same after 30 pages of history.
const BLOCK_ROWS = 40;
const PARK_MARGIN = '150% 0px';

export class RowBlocks {
  // `root`: the element holding the blocks; `scroller`: its scrolling ancestor (null: no parking).
  constructor(root, scroller) {
    this.root = root;
    this.list = [];                 // block elements, in order
    this.spacers = new Map();       // parked block -> the spacer standing in for it
    this.parkedBy = new WeakMap();  // spacer -> the block it stands in for
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
    this.root.insertBefore(block, next ? this.standIn(next) : null);
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

  standIn(block) {
    return this.spacers.get(block) || block;
  }

  isParked(block) {
    return this.spacers.has(block);
  }

  park(block) {
    if (this.isParked(block) || !block.isConnected) return;
    const height = block.getBoundingClientRect().height;
    const spacer = document.createElement('div');
    spacer.className = 'block-spacer';
    spacer.style.height = `${height}px`;
    this.observer.unobserve(block);
    block.replaceWith(spacer);
    this.spacers.set(block, spacer);
    this.parkedBy.set(spacer, block);
    this.observer.observe(spacer);
  }

  unpark(block) {
    const spacer = this.spacers.get(block);
    if (!spacer) return;
    this.observer.unobserve(spacer);
    spacer.replaceWith(block);
    this.spacers.delete(block);
    this.parkedBy.delete(spacer);
    this.observer.observe(block);
  }

  onIntersect(entries) {
    for (const entry of entries) {
      const target = entry.target;
      if (!target.isConnected) continue;
      const parked = this.parkedBy.get(target);
      if (parked && entry.isIntersecting) this.unpark(parked);
      else if (!parked && !entry.isIntersecting) this.park(target);
    }
  }

  parkedCount() {
    return this.spacers.size;
  }

  disconnect() {
    this.observer?.disconnect();
  }
}
