// Padding folded, as the terminal UI's approval prompt folds it (dsh.tui.approval_preview): a
// run of BLANK_RUN or more blank lines shows as one marker line (`⋯ 78 blank lines ⋯`) and a run
// of WIDE_GAP or more blank characters within a line as `⋯ 5000 spaces ⋯`, so a command or a
// file change cannot push what follows out of sight of the person approving it. Text goes in
// through `el` (textContent) only.
import { el } from './dom.js';

export const BLANK_RUN = 3;
export const WIDE_GAP = 64;
// White space, invisible format and control characters, and the fillers a browser draws as
// nothing though they count as printable (Hangul fillers, the braille blank).
const BLANK = '[\\s\\p{C}\\u115f\\u1160\\u2800\\u3164\\uffa0]';
const BLANK_LINE = new RegExp(`^${BLANK}*$`, 'u');
const GAP = new RegExp(`${BLANK}{${WIDE_GAP},}`, 'gu');

export const looksBlank = (line) => BLANK_LINE.test(line);
export const blankMarker = (count) => `⋯ ${count} blank lines ⋯`;
export const hasWideGap = (line) => line.length >= WIDE_GAP && new RegExp(GAP).test(line);

/** `line` as nodes: each wide gap a dim marker span. */
export function gapsShown(line) {
  const nodes = [];
  let at = 0;
  for (const gap of line.matchAll(GAP)) {
    nodes.push(el('span', '', line.slice(at, gap.index)),
      el('span', 'blank-run', ` ⋯ ${[...gap[0]].length} spaces ⋯ `));
    at = gap.index + gap[0].length;
  }
  nodes.push(el('span', '', line.slice(at)));
  return nodes;
}

/** Runs of `items` whose text looks blank, of BLANK_RUN or more and of one kind (`kindOf`: a
 * diff line's side), each replaced by one `{ folded: count, first }` entry; other items as they
 * are. */
export function foldRuns(items, textOf, kindOf = () => '') {
  const out = [];
  let run = [];
  const flush = () => {
    if (run.length >= BLANK_RUN) out.push({ folded: run.length, first: run[0] });
    else out.push(...run);
    run = [];
  };
  for (const item of items) {
    if (looksBlank(textOf(item))) {
      if (run.length && kindOf(run[0]) !== kindOf(item)) flush();
      run.push(item);
    } else {
      flush();
      out.push(item);
    }
  }
  flush();
  return out;
}

/** `text` as a fragment with its blank runs and wide gaps folded. */
export function foldedText(text) {
  const box = document.createDocumentFragment();
  const lines = String(text).split('\n');
  foldRuns(lines, (line) => line).forEach((item, index) => {
    if (index > 0) box.append('\n');
    if (typeof item === 'object') box.append(el('span', 'blank-run', blankMarker(item.folded)));
    else box.append(...gapsShown(item));
  });
  return box;
}
