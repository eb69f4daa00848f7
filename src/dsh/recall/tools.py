"""``history_read`` and ``history_search``: the model's way back into compacted history.

Described in docs/compaction.md, "The two recall tools". Both are pure functions of the
session log (no model or embedding call; what they keep, rendered spans and their word
indexes, is derived from it) and answer with an ordinary tool result.
``read_checkpoint`` and ``search_history`` do the work and raise ``RecallError``; the tools add
the agent-caller check and turn every error into an error ``ToolOutput`` with its code;
``dsh recall`` on the CLI prints the very same text. The tools do the work in a worker thread
(a session's first search builds every span's word index: a second and more on a long log), so
the TUI, or ``dsh web`` with every session and page it serves, keeps running meanwhile; the two
share a span cache, which one of them at a time holds (``SpanCache.lock``).

The schemas, descriptions and ``RECALL_PROMPT_SECTION`` are constants (``dsh.recall.tool_specs``):
byte-identical in every request that carries them, whatever the configuration or passes.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dsh.config import RecallSettings
from dsh.events import Event, EventsByType, RequestContextEvent
from dsh.recall.checkpoints import (
    CHECKPOINT_NOT_FOUND,
    INVALID_ARGUMENT,
    INVALID_OFFSET,
    NO_COMPACTED_HISTORY,
    NON_AGENT_CALLER,
    Checkpoint,
    RecallError,
    checkpoints_after,
    conversation_span,
    lies_within,
    list_checkpoints,
    resolve_checkpoint,
)
from dsh.recall.hits import Found, hits_text, scan, word_hits
from dsh.recall.render import SpanCache
from dsh.recall.snippets import ANSWER_FRAME_CHARS, Bound
from dsh.recall.tool_specs import (
    HISTORY_READ,
    HISTORY_READ_DESCRIPTION,
    HISTORY_READ_PARAMETERS,
    HISTORY_SEARCH,
    HISTORY_SEARCH_DESCRIPTION,
    HISTORY_SEARCH_PARAMETERS,
    MAX_QUERY_CHARS,
    MAX_SEARCH_LIMIT,
    MIN_SEARCH_LIMIT,
)
from dsh.recall.word_search import query_terms, search_words
from dsh.tools.base import Tool, ToolContext, ToolKind, ToolOutput

# ---- the work (shared with the CLI) ---------------------------------------------------------


def read_checkpoint(
    events: Sequence[Event],
    checkpoint: object,
    offset: object = 0,
    *,
    budget_chars: int = 8000,
    cache: SpanCache | None = None,
    index: EventsByType | None = None,
) -> ToolOutput:
    """One page of a checkpoint's shadowed span, starting at message ``offset``.

    Messages are added while the page's accumulated size (each message + 2) stays within
    ``budget_chars``, always at least one. ``index``: the log's per-type index, if it has one
    (``dsh.recall.checkpoints``). Raises ``RecallError``.
    """
    target = resolve_checkpoint(events, checkpoint, index)
    if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
        raise RecallError(
            INVALID_OFFSET,
            f"offset must be a non-negative integer (a message index), got {offset!r}",
        )
    messages = _span(events, target, cache)
    total = len(messages)
    if offset > 0 and offset >= total:
        raise RecallError(
            INVALID_OFFSET,
            f"offset {offset} is past the end of checkpoint {target.id}, which has "
            + (
                f"{total} message(s) (offsets 0–{total - 1})" if total else "no messages (offset 0)"
            ),
        )
    page: list[str] = []
    used = 0
    for message in messages[offset:]:
        cost = len(message) + 2
        if page and used + cost > budget_chars:
            break
        page.append(message)
        used += cost
    following = offset + len(page)
    spans_of = cache.conversation.of if cache is not None else conversation_span
    start, end = spans_of(events, target.shadowed_seqs)
    shown = f"showing #msg {offset}–{following - 1}" if page else "nothing to show"
    header = (
        f"Checkpoint {target.id} ({target.kind}) shadows conversation span #{start}–#{end}: "
        f"{total} message(s); {shown}."
    ) + _folded_elsewhere(events, target, start, index)
    if following < total:
        trailer = (
            f"[Continuation cursor: offset={following} — call history_read with this offset "
            "for more]"
        )
    else:
        trailer = "(end of checkpoint span)"
    text = "\n\n".join([header, *page, trailer])
    meta = {"checkpoint": target.id, "offset": offset, "next": following, "total": total}
    return ToolOutput(text, meta=meta)


def _folded_elsewhere(
    events: Sequence[Event], target: Checkpoint, start: int, index: EventsByType | None
) -> str:
    """For a state whose footer names a wider range than its own span (it folds the whole
    pass; its span begins at ``start``): where the rest of that range is, so a reader is not
    left thinking it saw it all."""
    wider = target.summary.data.input_range
    if target.kind != "state" or wider is None or wider[0] >= start:
        return ""
    # a checkpoint's span lies before its summary, so only those summarised after the range
    # begins can lie within it, and a walk of one leaves at the first node outside the range:
    # a rollup heading the chain of every older stub answers at its first, not after the whole
    # chain (walking every chain made a state read in a 20,000-event session about 7 ms, and
    # listing every checkpoint 3.3 s in a 100k-event one before that)
    behind = [
        other.id
        for other in checkpoints_after(events, wider[0], index)
        if other.id != target.id and lies_within(events, other.shadowed_seqs, wider[0], start)
    ]
    where = f" behind {', '.join(behind)}" if behind else " in earlier checkpoints"
    return (
        f" This state folds #{wider[0]}–#{wider[1]}; the messages before #{start} are{where} "
        "(history_search without a checkpoint scans them all)."
    )


def search_history(
    events: Sequence[Event],
    query: object,
    *,
    checkpoint: object = None,
    limit: object = 25,
    cache: SpanCache | None = None,
    index: EventsByType | None = None,
    budget_chars: int | None = None,
) -> ToolOutput:
    """What ``history_search`` answers (``search_answer``, its output)."""
    return search_answer(
        events,
        query,
        checkpoint=checkpoint,
        limit=limit,
        cache=cache,
        index=index,
        budget_chars=budget_chars,
    ).output


@dataclass(frozen=True, slots=True)
class SearchAnswer:
    """A search's answer and how many of the hits it counts it does not show (``limit`` or
    the size bound left them out): what ``dsh recall search`` tells a person how to see."""

    output: ToolOutput
    unshown: int = 0


def search_answer(
    events: Sequence[Event],
    query: object,
    *,
    checkpoint: object = None,
    limit: object = 25,
    cache: SpanCache | None = None,
    index: EventsByType | None = None,
    budget_chars: int | None = None,
    every: bool = False,
) -> SearchAnswer:
    """Case-insensitive literal scan of every completed checkpoint's span (or one checkpoint's).
    With ``every`` (``dsh recall search --limit 0``), every hit, whatever ``limit`` and
    ``budget_chars`` say.

    One snippet per matching message, at most ``limit`` and as many as fit in ``budget_chars``
    (None: no size bound): the original messages' in log order, then those of checkpoint texts
    (``dsh.recall.hits.scan``); ``meta`` holds the coverage
    ``{scanned, matched, truncated}`` (and ``inCheckpointTexts``, how many of ``matched`` — or
    of ``byWords`` — are in checkpoint texts, when any are); a cut answer names the checkpoints
    holding the
    hits not shown. A well-formed ``checkpoint`` with no checkpoint
    at its seq is still ``CHECKPOINT_NOT_FOUND``, whose message holds the search of every
    checkpoint. When nothing matches anywhere, the messages
    holding the query's words (``dsh.recall.word_search``), originals first, then best first,
    with ``meta.byWords``.
    ``index``: the log's per-type index, if it has one (``dsh.recall.checkpoints``). Raises
    ``RecallError``.
    """
    if not isinstance(query, str) or not query.strip():
        raise RecallError(
            INVALID_ARGUMENT, f"query must be a non-empty string to look for, got {query!r}"
        )
    if len(query) > MAX_QUERY_CHARS:
        raise RecallError(
            INVALID_ARGUMENT,
            f"query is {len(query)} characters; look for a fragment of at most "
            f"{MAX_QUERY_CHARS} (a name, a number, a phrase)",
        )
    if every:
        limit, budget_chars = sys.maxsize, None
    elif (
        not isinstance(limit, int)
        or isinstance(limit, bool)
        or not MIN_SEARCH_LIMIT <= limit <= MAX_SEARCH_LIMIT
    ):
        raise RecallError(
            INVALID_ARGUMENT,
            f"limit must be an integer from {MIN_SEARCH_LIMIT} to {MAX_SEARCH_LIMIT}, "
            f"got {limit!r}",
        )
    if checkpoint == "":  # a model's way of leaving the optional argument out
        checkpoint = None
    if checkpoint is None:
        targets = list_checkpoints(events, index)
        if not targets:
            meta = {"scanned": 0, "matched": 0, "truncated": False}
            text = f"{NO_COMPACTED_HISTORY} There is nothing to search."
            return SearchAnswer(ToolOutput(text, meta=meta))
    else:
        try:
            targets = [resolve_checkpoint(events, checkpoint, index)]
        except RecallError as unknown:
            # a small model guessed an id, got only the error and gave up; the id only narrows
            # a search, so the error carries the search of every checkpoint
            if unknown.code != CHECKPOINT_NOT_FOUND or not list_checkpoints(events, index):
                raise
            found = search_answer(
                events,
                query,
                limit=limit,
                cache=cache,
                index=index,
                budget_chars=budget_chars,
                every=every,
            )
            raise SearchedEverywhere(unknown.message.split(". ")[0], found) from None
    spans = cache if cache is not None else SpanCache(max_spans=1)
    room = None if budget_chars is None else budget_chars - ANSWER_FRAME_CHARS - len(query)
    try:
        return _search(events, targets, query, checkpoint, Bound(limit, room), spans, index)
    finally:
        spans.flush()  # the spans lower-cased by this search, stored in one write


def _search(
    events: Sequence[Event],
    targets: list[Checkpoint],
    query: str,
    checkpoint: object,
    bound: Bound,
    spans: SpanCache,
    index: EventsByType | None,
) -> SearchAnswer:
    found = scan(events, targets, query, bound, spans)
    widened: Found | None = None
    others: list[Checkpoint] = []
    if checkpoint is not None and not found.matched:
        # a checkpoint's footer may name a wider range than its own span (a state folds the
        # whole pass): rather than send the model away empty-handed, search everything
        others = [c for c in list_checkpoints(events, index) if c.id != targets[0].id]
        widened = scan(events, others, query, bound, spans)
    header = (
        f"Found {found.counted} across {found.checkpoints} checkpoint(s) "
        f"(scanned {len(targets)}) for {query!r}."
    )
    if widened is not None and widened.matched:
        meta = {
            "scanned": len(targets) + len(others),
            "matched": widened.matched,
            "truncated": widened.truncated,
        } | _copies(widened)
        header += (
            f" Every other checkpoint: {widened.counted} across "
            f"{widened.checkpoints} checkpoint(s) (scanned {len(others)})."
        )
        unshown = widened.matched - len(widened.hits)
        return SearchAnswer(ToolOutput(hits_text(header, widened), meta=meta), unshown)
    meta = {
        "scanned": len(targets),
        "matched": found.matched,
        "truncated": found.truncated,
    } | _copies(found)
    if not found.matched:
        words = search_words(events, [*targets, *others], query_terms(query), spans)
        if words.count:
            meta["byWords"] = words.count
            if words.copies:
                meta["inCheckpointTexts"] = words.copies
            terms = query_terms(query)
            text, shown = word_hits(events, header, terms, words, bound, spans)
            return SearchAnswer(ToolOutput(text, meta=meta), words.count - shown)
        plausible = targets[-1].id
        which = "the checkpoint searched" if checkpoint is not None else "the most recent one"
        text = (
            f"{header}\nThe scan is literal (exact substring, case-insensitive): try a shorter "
            "fragment or another spelling, or read a plausible checkpoint directly, e.g. "
            f'history_read with checkpoint "{plausible}" ({which}).'
        )
        return SearchAnswer(ToolOutput(text, meta=meta))
    return SearchAnswer(ToolOutput(hits_text(header, found), meta=meta), found.unshown_count)


def _copies(found: Found) -> dict[str, int]:
    """``inCheckpointTexts``: how many of ``matched`` are in checkpoint texts, when any are."""
    return {"inCheckpointTexts": found.copies} if found.copies else {}


def _span(events: Sequence[Event], target: Checkpoint, cache: SpanCache | None) -> tuple[str, ...]:
    return (cache if cache is not None else SpanCache(max_spans=1)).span(events, target)


# ---- the tools ------------------------------------------------------------------------------


class HistoryReadTool:
    """``history_read{checkpoint, offset?}``: one budgeted page of a checkpoint's originals."""

    name: str = HISTORY_READ
    kind: ToolKind = "read"
    description: str = HISTORY_READ_DESCRIPTION
    parameters: dict[str, Any] = HISTORY_READ_PARAMETERS
    codes_in_text: bool = True
    """Every refusal reads ``CODE: …``, a bad argument the registry's schema check finds too."""

    def __init__(self, read_budget_chars: int = 8000, *, cache: SpanCache | None = None) -> None:
        if read_budget_chars < 1:
            raise ValueError(f"read_budget_chars must be positive, got {read_budget_chars}")
        self.read_budget_chars = read_budget_chars
        self.cache = cache if cache is not None else SpanCache()

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        return await asyncio.to_thread(self.read, args, ctx)

    def read(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        """What ``run`` answers, worked out in the calling thread."""
        with self.cache.lock:
            try:
                _require_agent(self.name, ctx)
                return read_checkpoint(
                    ctx.history,
                    args.get("checkpoint"),
                    _or_default(args.get("offset"), 0),
                    budget_chars=self.read_budget_chars,
                    cache=self.cache,
                    index=ctx.history_index,
                )
            except RecallError as exc:
                return error_output(exc)


class HistorySearchTool:
    """``history_search{query, checkpoint?, limit?}``: literal scan with coverage metadata, by
    words when nothing matches literally."""

    name: str = HISTORY_SEARCH
    kind: ToolKind = "read"
    description: str = HISTORY_SEARCH_DESCRIPTION
    parameters: dict[str, Any] = HISTORY_SEARCH_PARAMETERS
    codes_in_text: bool = True
    """Every refusal reads ``CODE: …``, a bad argument the registry's schema check finds too."""

    def __init__(
        self,
        search_limit: int = 25,
        *,
        cache: SpanCache | None = None,
        span_dir: Path | None = None,
        answer_chars: int = 8000,
    ) -> None:
        if not MIN_SEARCH_LIMIT <= search_limit <= MAX_SEARCH_LIMIT:
            raise ValueError(
                f"search_limit must be in [{MIN_SEARCH_LIMIT}, {MAX_SEARCH_LIMIT}], "
                f"got {search_limit}"
            )
        self.search_limit = search_limit
        self.cache = cache if cache is not None else SpanCache()
        self.span_dir = span_dir
        """Where the sessions' span files are (``<home>/cache/recall``); None: memory only."""
        self.answer_chars = answer_chars
        """An answer's size bound: ``read_budget_chars``, a ``history_read`` page."""

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        return await asyncio.to_thread(self.search, args, ctx)

    def search(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        """What ``run`` answers, worked out in the calling thread."""
        with self.cache.lock:
            try:
                _require_agent(self.name, ctx)
                if self.span_dir is not None:
                    self.cache.use_file(self.span_dir / f"{ctx.session_id}.spans")
                return search_history(
                    ctx.history,
                    args.get("query"),
                    checkpoint=args.get("checkpoint"),
                    limit=_or_default(args.get("limit"), self.search_limit),
                    cache=self.cache,
                    index=ctx.history_index,
                    budget_chars=self.bound_chars(ctx),
                )
            except RecallError as exc:
                return error_output(exc)

    def bound_chars(self, ctx: ToolContext) -> int:
        """The answer's size bound: ``answer_chars``, and no more characters than the session's
        window has tokens (about a quarter of it), so one answer is never pruned or compacted
        before the model reads it."""
        window = None
        if ctx.history_index is not None:
            routes = ctx.history_index.of_type(RequestContextEvent)
            window = routes[-1].data.context_window if routes else None
        return self.answer_chars if window is None else min(self.answer_chars, window)


def recall_tools(settings: RecallSettings, *, span_dir: Path | None = None) -> list[Tool]:
    """The two recall tools, sharing one span cache, configured from ``[recall]``; with
    ``span_dir`` (``dsh.store.span_cache_dir(home)``) searches keep their lower-cased spans in
    the session's span file."""
    cache = SpanCache()
    return [
        HistoryReadTool(settings.read_budget_chars, cache=cache),
        HistorySearchTool(
            settings.search_limit,
            cache=cache,
            span_dir=span_dir,
            answer_chars=settings.read_budget_chars,
        ),
    ]


class SearchedEverywhere(RecallError):
    """``CHECKPOINT_NOT_FOUND`` from a search that ran over every checkpoint instead: ``why``
    (the id names none) and ``found`` (that search), which its message joins for the model;
    ``dsh recall search`` prints ``found`` and warns of ``why``."""

    def __init__(self, why: str, answer: SearchAnswer) -> None:
        found = answer.output
        super().__init__(CHECKPOINT_NOT_FOUND, f"{why}; {SEARCHED_INSTEAD}\n{found.text}")
        self.why, self.found, self.answer = why, found, answer


SEARCHED_INSTEAD = "every checkpoint was searched instead."


def error_output(exc: RecallError) -> ToolOutput:
    """The error tool result for a ``RecallError``: its message, ``is_error`` and its code."""
    return ToolOutput(f"{exc.code}: {exc.message}", is_error=True, code=exc.code)


def _or_default(value: object, default: int) -> object:
    return default if value is None else value


def _require_agent(tool: str, ctx: ToolContext) -> None:
    if ctx.caller != "agent":
        raise RecallError(
            NON_AGENT_CALLER,
            f"{tool} serves the agent only (caller: {ctx.caller}); use `dsh recall` instead",
        )
