// Line diffs for edit cards: a longest-common-subsequence diff of two texts as unified hunks,
// or the unified diff a result logged (meta.diff: the file's real lines and numbers), each line
// highlighted on its own by highlight.js (from the path's extension) and sanitised.
import hljs from './vendor/highlight/highlight.min.js';
import DOMPurify from './vendor/dompurify/purify.es.mjs';
import { blankMarker, foldRuns, gapsShown, hasWideGap } from './blank_runs.js';
import { el, shown } from './dom.js';

const CONTEXT = 3;
const MAX_CELLS = 4_000_000; // beyond this the texts are shown as all removed + all added

/** The edit script of two line arrays: [{op: ' '|'-'|'+', text, a, b, ai, bj}] (a/b: 1-based
 * numbers, null on the side a line is not on; ai/bj: lines of each side before it). */
export function diffLines(before, after) {
  const n = before.length;
  const m = after.length;
  const out = [];
  if (n * m > MAX_CELLS) {
    before.forEach((text, i) => out.push({ op: '-', text, a: i + 1, b: null, ai: i, bj: 0 }));
    after.forEach((text, j) => out.push({ op: '+', text, a: null, b: j + 1, ai: n, bj: j }));
    return out;
  }
  const width = m + 1;
  const lcs = new Uint32Array((n + 1) * width);
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      lcs[i * width + j] = before[i] === after[j]
        ? lcs[(i + 1) * width + j + 1] + 1
        : Math.max(lcs[(i + 1) * width + j], lcs[i * width + j + 1]);
    }
  }
  let i = 0;
  let j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && before[i] === after[j]) {
      out.push({ op: ' ', text: before[i], a: i + 1, b: j + 1, ai: i, bj: j });
      i++; j++;
    } else if (i < n && (j >= m || lcs[(i + 1) * width + j] >= lcs[i * width + j + 1])) {
      out.push({ op: '-', text: before[i], a: i + 1, b: null, ai: i, bj: j });  // removals first
      i++;
    } else {
      out.push({ op: '+', text: after[j], a: null, b: j + 1, ai: i, bj: j });
      j++;
    }
  }
  return out;
}

/** A hunk's ranges as a unified diff numbers them (difflib's: a one-line range is its line, an
 * empty range starts at the line before it). */
function ranged(lines) {
  const aLen = lines.filter((l) => l.a !== null).length;
  const bLen = lines.filter((l) => l.b !== null).length;
  const first = lines[0];
  return { aStart: aLen ? first.ai + 1 : first.ai, aLen, bStart: bLen ? first.bj + 1 : first.bj, bLen, lines };
}

/** Unified hunks: runs of changes with up to CONTEXT unchanged lines around them,
 * as [{aStart, aLen, bStart, bLen, lines}]. */
export function hunks(script) {
  const keep = new Array(script.length).fill(false);
  script.forEach((line, k) => {
    if (line.op === ' ') return;
    for (let d = Math.max(0, k - CONTEXT); d <= Math.min(script.length - 1, k + CONTEXT); d++) keep[d] = true;
  });
  const result = [];
  let current = null;
  script.forEach((line, k) => {
    if (!keep[k]) { current = null; return; }
    if (!current) { current = []; result.push(current); }
    current.push(line);
  });
  return result.map(ranged);
}

const HUNK_HEAD = /^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@/;

/** The hunks of a unified diff's lines (`--- a/…`, `+++ b/…`, `@@ … @@`, then ' '/'-'/'+'
 * lines), numbered from their headers. */
export function parseUnified(lines) {
  const result = [];
  let current = null;
  let a = 0;
  let b = 0;
  for (const line of lines) {
    const head = HUNK_HEAD.exec(line);
    if (head) {
      const [aStart, bStart] = [Number(head[1]), Number(head[3])];
      const aLen = head[2] === undefined ? 1 : Number(head[2]);
      const bLen = head[4] === undefined ? 1 : Number(head[4]);
      current = { aStart, aLen, bStart, bLen, lines: [] };
      result.push(current);
      a = aLen ? aStart : aStart + 1;
      b = bLen ? bStart : bStart + 1;
    } else if (current && line.startsWith('\\')) {  // "\ No newline at end of file": no line of its own
      current.lines.push({ op: '\\', text: line.slice(1).trim(), a: null, b: null });
    } else if (current && line && ' -+'.includes(line[0])) {
      const op = line[0];
      const text = line.slice(1);
      current.lines.push({ op, text, a: op === '+' ? null : a++, b: op === '-' ? null : b++ });
    }
  }
  return result;
}

function splitLines(text) {
  if (!text) return [];
  const lines = text.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  return lines;
}

function languageOf(path) {
  const match = /\.([A-Za-z0-9_+-]+)$/.exec(path || '');
  const ext = match ? match[1].toLowerCase() : '';
  return ext && hljs.getLanguage(ext) ? ext : null;
}

function codeCell(text, language) {
  const cell = el('code', 'diff-code');
  if (hasWideGap(text)) {
    cell.append(...gapsShown(text));
  } else if (language) {
    const html = hljs.highlight(shown(text), { language, ignoreIllegals: true }).value;
    cell.innerHTML = DOMPurify.sanitize(html, { ALLOWED_TAGS: ['span'], ALLOWED_ATTR: ['class'] });
  } else {
    cell.textContent = shown(text);
  }
  return cell;
}

function range(start, length) {
  return length === 1 ? String(start) : `${start},${length}`;
}

/** A unified diff of `before` -> `after` for the file at `path`, as a DOM node. */
export function renderDiff(path, before, after) {
  return renderHunks(path, hunks(diffLines(splitLines(before), splitLines(after))));
}

/** The unified diff a tool result logged (its lines), as a DOM node; with `plain`, its code is
 * not highlighted (a long diff: highlighting and sanitising each line is most of its cost). */
export function renderUnifiedDiff(path, lines, { plain = false } = {}) {
  return renderHunks(path, parseUnified(lines), plain);
}

function renderHunks(path, parts, plain = false) {
  const language = plain ? null : languageOf(path);
  const all = parts.flatMap((hunk) => hunk.lines);
  const added = all.filter((l) => l.op === '+').length;
  const removed = all.filter((l) => l.op === '-').length;
  const box = el('div', 'diff');
  const head = el('div', 'diff-head');
  head.append(el('span', 'diff-path', path || '(no path)'), el('span', 'diff-added', `+${added}`),
    el('span', 'diff-removed', `−${removed}`));
  box.append(head);
  const table = el('div', 'diff-body');
  for (const hunk of parts) {
    table.append(el('div', 'diff-hunk', `@@ −${range(hunk.aStart, hunk.aLen)} +${range(hunk.bStart, hunk.bLen)} @@`));
    for (const line of foldRuns(hunk.lines, (l) => (l.op === '\\' ? 'x' : l.text), (l) => l.op)) {
      if (line.folded) {  // padding that would push what follows out of sight
        const kind = line.first.op === '+' ? 'add' : line.first.op === '-' ? 'del' : 'ctx';
        const row = el('div', `diff-line ${kind} folded`);
        row.append(el('span', 'diff-num', ''), el('span', 'diff-num', ''),
          el('span', 'diff-sign', line.first.op), el('code', 'diff-code blank-run', blankMarker(line.folded)));
        table.append(row);
        continue;
      }
      if (line.op === '\\') {
        table.append(el('div', 'diff-note', line.text));
        continue;
      }
      const kind = line.op === '+' ? 'add' : line.op === '-' ? 'del' : 'ctx';
      const row = el('div', `diff-line ${kind}`);
      row.append(el('span', 'diff-num', line.a === null ? '' : String(line.a)),
        el('span', 'diff-num', line.b === null ? '' : String(line.b)),
        el('span', 'diff-sign', line.op), codeCell(line.text, language));
      table.append(row);
    }
  }
  box.append(table);
  return box;
}
