// The human projection (docs/architecture.md, "The human transcript"), ported from
// dsh.transcript.projection.TranscriptProjector.
//
// People see every append-origin surface event in log order. A tool/call is shown as a card iff
// its callId is among the calls of the nearest earlier append-origin assistant message (the
// reply that issued it); a result joins the nearest earlier card of its callId that has no
// result yet (docs/architecture.md, "Tool-call pairing"). A compaction
// checkpoint never shows its payload: a landed pass shows one marker at the log position of its
// first checkpoint, with details from the pass's compaction/summary events. Other replacements
// show nothing. Classification uses the events' own marks (surfaceOp, the checkpoint source).
//
// A reply's calls that tools.max_calls_per_reply kept from running (tool/call's overLimit) are
// one 'unrun' item where the first of them is, their cards and results nothing more
// (dsh.transcript.call_fold, whose rule foldCall and foldResult follow).
//
// Beyond the Python projector this adds what a page needs: a manual /compact pairs with its
// pass only through command/done.sourceEventSeq (= the state summary's seq); a /compact that
// landed nothing, any other command (an /undo, whose sourceEventSeq is the turn it undid), a
// turn that did not complete, and an automatic compaction pass that did not finish (a failed
// compaction/end, whose turn is set: a manual pass's is said by its /compact's answer), add a
// notice.
//
// feed(event) is the only entry point, for live events and for history pages alike; pages
// arrive newest first, so a marker can move to an earlier checkpoint of its pass and a pass's
// details can arrive after its marker. Tool cards are decided by seq, not by arrival: servers
// that number each reply's calls from call_0 repeat ids across replies, so a card is keyed by
// its call's seq, and a result that an older page gives a card is moved there ('pair').

const SURFACE = new Set(['user/message', 'assistant/message', 'tool/result']);

// An error's text as dsh.errors.error_line shows it, in every face: runs of white space (what
// Python's str.split() splits on) as one space, any other character that does not print (a
// terminal escape, a bidi override) as its Python escape, at most ERROR_LINE_CHARS characters
// (the last "…" when cut). The page's mirror of that function (it cannot call Python); a browser
// test holds the two equal (tests/web/test_browser_error_text.py).
export const ERROR_LINE_CHARS = 300;
// How long an API error's message gets (dsh.web.errors.API_MESSAGE_CHARS: an error's text and
// the API's words around it); the error toast cuts what it shows there too.
export const API_MESSAGE_CHARS = ERROR_LINE_CHARS + 100;
const PY_SPACE = /[\t\n\v\f\r\x1c-\x1f \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+/u;
const UNPRINTABLE = /^[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}]$/u; // what str.isprintable() refuses, spaces aside

function pythonEscape(ch) {
  const code = ch.codePointAt(0);
  const hex = (width) => code.toString(16).padStart(width, '0');
  if (code < 0x100) return `\\x${hex(2)}`;
  return code < 0x10000 ? `\\u${hex(4)}` : `\\U${hex(8)}`;
}

// The line under a reply whose text held tool calls that were not run (assistant/message's
// textCallsNotRun): the page's mirror of dsh.transcript.render.not_run_note, held equal by a
// browser test.
export function notRunNote(names) {
  const one = names.length === 1;
  const calls = one ? '1 tool call' : `${names.length} tool calls`;
  const shown = [...new Set(names)].join(', ');
  return `${calls} written in the reply's text ${one ? 'was' : 'were'} not run (${shown}): `
    + `the model wrote ${one ? 'it' : 'them'} as text instead of calling the tool`;
}

export function errorLine(text, limit = ERROR_LINE_CHARS) {
  const flat = String(text).split(PY_SPACE).filter((part) => part !== '').join(' ');
  const shown = Array.from(flat, (ch) => (UNPRINTABLE.test(ch) ? pythonEscape(ch) : ch)).join('');
  const chars = Array.from(shown); // characters as Python counts them (code points)
  return chars.length <= limit ? shown : `${chars.slice(0, limit - 1).join('')}…`;
}

export function isSurfaceEvent(e) {
  return SURFACE.has(e.type);
}
export function isAppendSurfaceEvent(e) {
  return SURFACE.has(e.type) && e.surfaceOp === 'append';
}
export function isReplacementSurfaceEvent(e) {
  return SURFACE.has(e.type) && e.surfaceOp !== null && typeof e.surfaceOp === 'object'
    && e.surfaceOp.op === 'replace';
}
export function isCompactCheckpointSource(source) {
  return !!source && source.kind === 'plugin' && source.plugin === 'compact';
}
export function isCheckpointEvent(e) {
  return e.type === 'user/message' && isReplacementSurfaceEvent(e)
    && isCompactCheckpointSource(e.data.source);
}
/** meta.diff when it is a list of lines (the unified diff of a file edit), else null. */
function loggedDiff(meta) {
  const lines = meta ? meta.diff : null;
  return Array.isArray(lines) && lines.every((l) => typeof l === 'string') ? lines : null;
}
export function surfaceMessage(e) {
  if (e.type === 'user/message') return e.data;
  if (e.type === 'assistant/message') return e.data.message.content.length ? e.data.message : null;
  if (e.type === 'tool/result') return e.data.message;
  return null;
}

/** The index of the largest value of the ascending `list` below `value` (-1: none). */
function lastBelow(list, value) {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (list[mid] < value) lo = mid + 1; else hi = mid;
  }
  return lo - 1;
}

function insertSorted(list, value) {
  list.splice(lastBelow(list, value) + 1, 0, value);
}

// Which card each tool result joins: the nearest earlier card of its callId without a result
// (a stack per callId, in seq order). Events that arrive in seq order take the fast path; one
// that arrives before later ones of its callId (an older page) matches that callId again.
export class CardPairing {
  constructor() {
    this.byId = new Map();    // callId -> {cards, results (ascending seqs), open (stack), last}
    this.cardOf = new Map();  // result seq -> card seq, or null (a card of its own)
  }

  entry(callId) {
    let entry = this.byId.get(callId);
    if (!entry) {
      entry = { cards: [], results: [], open: [], last: -1 };
      this.byId.set(callId, entry);
    }
    return entry;
  }

  // A card of `callId` at `seq`: the results that now join another card, [{resultSeq, cardSeq}].
  card(callId, seq) {
    const entry = this.entry(callId);
    if (seq > entry.last) {
      entry.cards.push(seq);
      entry.open.push(seq);
      entry.last = seq;
      return [];
    }
    insertSorted(entry.cards, seq);
    return this.rematch(entry);
  }

  // A result of `callId` at `seq`: the card it joins (null: none) and the other results moved.
  result(callId, seq) {
    const entry = this.entry(callId);
    if (seq > entry.last) {
      const cardSeq = entry.open.length ? entry.open.pop() : null;
      entry.results.push(seq);
      entry.last = seq;
      this.cardOf.set(seq, cardSeq);
      return { cardSeq, moved: [] };
    }
    insertSorted(entry.results, seq);
    this.cardOf.set(seq, null);
    const moved = this.rematch(entry);
    return { cardSeq: this.cardOf.get(seq), moved: moved.filter((m) => m.resultSeq !== seq) };
  }

  rematch(entry) {
    const moved = [];
    const stack = [];
    let c = 0;
    for (const resultSeq of entry.results) {
      while (c < entry.cards.length && entry.cards[c] < resultSeq) stack.push(entry.cards[c++]);
      const cardSeq = stack.length ? stack.pop() : null;
      if (this.cardOf.get(resultSeq) !== cardSeq) {
        this.cardOf.set(resultSeq, cardSeq);
        moved.push({ resultSeq, cardSeq });
      }
    }
    while (c < entry.cards.length) stack.push(entry.cards[c++]);
    entry.open = stack;
    return moved;
  }
}

function counts(ids) {
  const counted = new Map();
  for (const id of ids) counted.set(id, (counted.get(id) || 0) + 1);
  return counted;
}

/** Take one `id` from the `counted` ids: whether there was one. */
function take(counted, id) {
  const count = counted.get(id) || 0;
  if (count > 0) counted.set(id, count - 1);
  return count > 0;
}

/** Whether a result of `callId` answers a call of `fold` (the calls that ran with the same id
 * are answered first: their results are logged before the unrun ones'). */
function foldResult(fold, callId) {
  if (take(fold.ran, callId)) return false;
  return take(fold.unanswered, callId);
}

const TURN_END_TEXT = {
  aborted: 'stopped',
  error: 'failed',
  'max-tokens': 'stopped at the model\'s output limit',
  interrupted: 'was interrupted (the process ended mid-turn)',
  'max-steps': 'stopped',
  'repeated-calls': 'stopped',
};
/** A limit's stop without its error in the log: the terminal UI's words
 * (dsh.transcript.projection.LIMIT_REACHED). */
const LIMIT_REACHED = {
  'max-steps': 'it took every step it is allowed (max_steps)',
  'repeated-calls': 'the same tool call repeated too often (tools.max_repeated_calls)',
};

export class Projector {
  constructor() {
    this.passOf = new Map();        // compactionId -> passId
    this.replies = [];              // seqs of append-origin assistant messages, ascending
    this.replyCalls = new Map();    // reply seq -> the callIds it issued
    this.replyBlocks = new Map();   // reply seq -> its tool-call blocks, in order
    this.folds = new Map();         // reply seq -> its calls past the limit (foldCall)
    this.pairing = new CardPairing();
    this.details = new Map();       // passId -> {summaries: [{seq, kind, text}], items, tokens}
    this.markerSeq = new Map();     // passId -> seq of the marker (its first checkpoint)
    this.summaryPass = new Map();   // summary seq -> passId
    this.commands = new Map();      // commandId -> {name, args}
    this.manual = new Map();        // passId -> {args, text}
    this.pendingManual = new Map(); // summary seq -> {args, text} (summary not seen yet)
    this.undecided = new Map();     // commandId -> a command/done citing a seq, its run not fed yet
    this.provisional = new Set();   // markers keyed by a compactionId whose pass was unknown
    this.unfinished = new Set();    // passIds whose failed end has its notice
  }

  // The pass of a compaction became known (its compaction/start, or a summary naming it). A
  // marker made before that (an older page arriving after a newer one) was keyed by the
  // compactionId: give it its pass, or drop it if the pass already has an earlier marker.
  learnPass(compactionId, passId) {
    if (this.passOf.get(compactionId) === passId) return [];
    this.passOf.set(compactionId, passId);
    if (compactionId === passId || !this.provisional.has(compactionId)) return [];
    this.provisional.delete(compactionId);
    const seq = this.markerSeq.get(compactionId);
    this.markerSeq.delete(compactionId);
    const existing = this.markerSeq.get(passId);
    if (existing === undefined) {
      this.markerSeq.set(passId, seq);
      return [{ op: 'rekey-marker', from: compactionId, to: passId }];
    }
    if (seq < existing) {
      this.markerSeq.set(passId, seq);
      return [{ op: 'drop-marker', passId: compactionId }, { op: 'move-marker', passId, seq }];
    }
    return [{ op: 'drop-marker', passId: compactionId }];
  }

  passId(compactionId, fallback) {
    return this.passOf.get(compactionId) ?? fallback ?? compactionId;
  }

  feed(event) {
    const t = event.type;
    if (t === 'compaction/start') {
      const d = event.data;
      return this.learnPass(d.compactionId, d.passId || d.compactionId);
    }
    if (t === 'compaction/summary') return this.summary(event);
    if (t === 'compaction/end') return this.passEnd(event);
    if (isCheckpointEvent(event)) return this.checkpoint(event);
    if (t === 'tool/call') {
      const d = event.data;
      const reply = lastBelow(this.replies, event.seq);
      if (reply < 0 || !this.replyCalls.get(this.replies[reply]).has(d.callId)) return [];
      const folded = d.overLimit ? this.foldCall(this.replies[reply], event.seq, d) : null;
      if (folded !== null) return folded;
      const moved = this.pairing.card(d.callId, event.seq);
      return [
        { op: 'add', item: { kind: 'tool-call', seq: event.seq, callId: d.callId, name: d.name, arguments: d.arguments } },
        ...moved.map((m) => ({ op: 'pair', ...m })),
      ];
    }
    if (isAppendSurfaceEvent(event)) return this.surface(event);
    if (t === 'command/run') return this.commandRun(event);
    if (t === 'command/done') return this.commandDone(event);
    if (t === 'turn/end') {
      const reason = event.data.reason;
      if (reason.kind === 'completed') return [];
      const what = TURN_END_TEXT[reason.kind] || reason.kind;
      const why = reason.error ? errorLine(reason.error) : LIMIT_REACHED[reason.kind];
      const text = `Turn ${event.data.turn} ${what}${why ? `: ${why}` : ''}`;
      return [{ op: 'add', item: { kind: 'notice', seq: event.seq, text, tone: reason.kind === 'error' ? 'error' : '' } }];
    }
    return [];
  }

  // A tool/call the reply at `replySeq` marked past the limit: [] when it folds (with the 'unrun'
  // item when it is the first), null when the reply does not bear the mark out (a card then).
  foldCall(replySeq, seq, d) {
    const known = this.folds.get(replySeq);
    if (known) return take(known.unlogged, d.callId) ? [] : null;
    const calls = this.replyBlocks.get(replySeq);
    const limit = d.overLimit;
    if (!(limit > 0 && limit < calls.length)) return null;
    const over = calls.slice(limit);
    if (!over.some((call) => call.id === d.callId)) return null;
    const overIds = new Set(over.map((call) => call.id));
    const fold = {
      unlogged: counts(over.map((call) => call.id)),
      unanswered: counts(over.map((call) => call.id)),
      ran: counts(calls.slice(0, limit).map((call) => call.id).filter((id) => overIds.has(id))),
    };
    take(fold.unlogged, d.callId);
    this.folds.set(replySeq, fold);
    const unrun = over.map((call) => ({ callId: call.id, name: call.name, arguments: call.arguments }));
    return [{ op: 'add', item: { kind: 'unrun', seq, asked: calls.length, limit, calls: unrun } }];
  }

  // dsh.transcript.projection.PassMarks.failed: one notice per automatic pass that did not
  // finish, with its error as errorLine shows it (the text of dsh.events.unfinished_pass_note).
  passEnd(event) {
    const d = event.data;
    if (d.error === null || d.error === undefined || d.turn === null || d.turn === undefined) return [];
    const passId = d.passId || this.passOf.get(d.compactionId) || d.compactionId;
    if (this.unfinished.has(passId)) return [];
    this.unfinished.add(passId);
    const text = `Compaction pass did not finish: ${errorLine(d.error) || 'no reason was logged'}`;
    return [{ op: 'add', item: { kind: 'notice', seq: event.seq, text, tone: '' } }];
  }

  summary(event) {
    const d = event.data;
    const changes = !this.passOf.has(d.compactionId) && d.passId
      ? this.learnPass(d.compactionId, d.passId) : [];
    const passId = this.passId(d.compactionId, d.passId || d.compactionId);
    let details = this.details.get(passId);
    if (!details) {
      details = { summaries: [], items: 0, tokens: 0 };
      this.details.set(passId, details);
    }
    details.summaries.push({ seq: event.seq, kind: d.kind || 'state', text: d.summary });
    details.summaries.sort((a, b) => a.seq - b.seq);
    details.items += d.shadowedSeqs.length;
    details.tokens += d.shadowedTokenCount;
    this.summaryPass.set(event.seq, passId);
    const pending = this.pendingManual.get(event.seq);
    if (pending) {
      this.pendingManual.delete(event.seq);
      this.manual.set(passId, pending);
    }
    if (this.markerSeq.has(passId)) changes.push({ op: 'marker', passId });
    return changes;
  }

  checkpoint(event) {
    const source = event.data.source;
    const compactionId = source.compactionId || `#${event.seq}`;
    const passId = this.passId(compactionId);
    const at = this.markerSeq.get(passId);
    if (at === undefined) {
      this.markerSeq.set(passId, event.seq);
      if (!this.passOf.has(compactionId)) this.provisional.add(compactionId);
      return [{ op: 'add', item: { kind: 'marker', seq: event.seq, passId } }];
    }
    if (event.seq < at) {
      this.markerSeq.set(passId, event.seq);
      return [{ op: 'move-marker', passId, seq: event.seq }];
    }
    return [];
  }

  surface(event) {
    if (event.type === 'tool/result') {
      const block = event.data.message.content[0];
      const fold = this.folds.get(this.replies[lastBelow(this.replies, event.seq)]);
      if (fold && foldResult(fold, block.toolCallId)) return [];  // its call's fold says it
      const text = block.content.map((part) => part.text).join('');
      const name = event.data.error ? event.data.error.name : null;
      const diff = loggedDiff(event.data.meta);
      const { cardSeq, moved } = this.pairing.result(block.toolCallId, event.seq);
      return [  // a card another result leaves is free before this one joins it
        ...moved.map((m) => ({ op: 'pair', ...m })),
        { op: 'add', item: { kind: 'tool-result', seq: event.seq, callId: block.toolCallId, cardSeq, text, isError: !!block.isError, name, diff } },
      ];
    }
    if (event.type === 'assistant/message') {
      const calls = event.data.message.content.filter((b) => b.type === 'tool-call');
      insertSorted(this.replies, event.seq);
      this.replyCalls.set(event.seq, new Set(calls.map((b) => b.id)));
      this.replyBlocks.set(event.seq, calls);
    }
    const message = surfaceMessage(event);
    if (message === null) return [];
    const reply = event.type === 'assistant/message';
    const interrupted = reply && !!event.data.interrupted;
    const notRun = reply && event.data.textCallsNotRun ? notRunNote(event.data.textCallsNotRun) : null;
    return [{ op: 'add', item: { kind: 'message', seq: event.seq, message, interrupted, notRun } }];
  }

  // A command/done citing a seq whose command/run is on an older page not fed yet is taken for a
  // /compact's, waiting for its summary, until its run says what it was: another command's
  // (an /undo's) is a notice then.
  commandRun(event) {
    const d = event.data;
    this.commands.set(d.commandId, { name: d.name, args: d.args || '' });
    const done = this.undecided.get(d.commandId);
    if (done === undefined) return [];
    this.undecided.delete(d.commandId);
    if (d.name === 'compact') return [];
    this.pendingManual.delete(done.data.sourceEventSeq);
    return this.commandDone(done);
  }

  commandDone(event) {
    const d = event.data;
    const known = this.commands.get(d.commandId);
    const command = known || { name: 'command', args: '' };
    const info = { name: command.name, args: command.args, text: d.text, ok: d.ok };
    const cites = d.sourceEventSeq !== undefined && d.sourceEventSeq !== null;
    if (cites && (known === undefined || known.name === 'compact')) {
      const passId = this.summaryPass.get(d.sourceEventSeq);
      if (passId === undefined) {
        if (known === undefined) this.undecided.set(d.commandId, event);
        this.pendingManual.set(d.sourceEventSeq, info);
        return [];
      }
      this.manual.set(passId, info);
      return this.markerSeq.has(passId) ? [{ op: 'marker', passId }] : [];
    }
    const typed = `/${command.name}${command.args ? ` ${command.args}` : ''}`;
    return [{ op: 'add', item: { kind: 'notice', seq: event.seq, text: `${typed} — ${d.text}`, tone: d.ok ? '' : 'error' } }];
  }
}
