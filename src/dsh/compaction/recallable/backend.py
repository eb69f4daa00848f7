"""The recallable backend (spec §4.4): frozen index stubs plus one mutable state checkpoint.

After every pass the surface reads ``[system][stub…][state][tail]``. A pass compacts the span
that starts right after the last committed index stub and ends at the retain boundary: the span
is chunked; every chunk but the last becomes a frozen index stub (2–3 lines and a keyword line of
rare literals); the trailing slice is shadowed by the new state checkpoint, rewritten from the
previous state plus everything this pass made stale. Stubs are never rewritten and never fall
inside a later span, so the request prefix stays byte-stable and provider caches keep hitting.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from dsh.compaction.anchors import keyword_line, merge_keyword_lines, rarest_anchors
from dsh.compaction.base import Plan, Reason, RegionPlan, RegionText
from dsh.compaction.basic import (
    checkpoint_summary_event,
    checkpoint_summary_text,
    retain_boundary,
)
from dsh.compaction.prompts import footer, frame_stub, frame_summary
from dsh.compaction.recallable.chunking import SpanNode, chunk_span
from dsh.compaction.summarizer import Summarizer, SummaryTask
from dsh.config import CompactionSettings
from dsh.errors import ProviderError
from dsh.events import (
    Degraded,
    Message,
    UserMessageEvent,
    UserSource,
    is_append_surface_event,
    is_checkpoint_event,
    surface_message,
)
from dsh.surface import Session
from dsh.transcript import render_message

RECALL_TOOL_NAMES = frozenset({"history_read", "history_search"})
KEYWORD_LINE_CHARS = 400
MAX_STUB_LINES = 3
RECENT_STUBS = 2


def checkpoint_kind(session: Session, seq: int) -> str | None:
    """``index`` or ``state`` for a checkpoint node (legacy kind-less summaries count as state);
    None for a node that is not a checkpoint."""
    event = session.events[seq]
    if not is_checkpoint_event(event):
        return None
    summary = checkpoint_summary_event(session, seq)
    kind = summary.data.kind if summary is not None else None
    return kind or "state"


class RecallableBackend:
    name = "recallable"

    def __init__(self, summarizer: Summarizer, settings: CompactionSettings) -> None:
        self.summarizer = summarizer
        self.settings = settings
        self._corpus = _Corpus()

    # ---- planning ---------------------------------------------------------------------------

    def span_start(self, session: Session) -> int:
        """Index of the first compactable node: right after the last committed index stub."""
        start = 0
        for index, seq in enumerate(session.nodes):
            if checkpoint_kind(session, seq) == "index":
                start = index + 1
        return start

    def plan(
        self,
        session: Session,
        *,
        retain_tokens: int,
        focus: str | None,
        reason: Reason,
        window: int | None = None,
    ) -> Plan | None:
        first = self.span_start(session)
        keep = retain_boundary(session, retain_tokens)
        span = session.nodes[first:keep]
        material = sum(
            session.node_tokens(seq) for seq in span if checkpoint_kind(session, seq) is None
        )
        if material == 0:
            return None
        if reason == "pressure" and material < self.settings.chunk_tokens // 2:
            # Too little stale history to be worth a pass (each pass adds a frozen stub and
            # rewrites the state): wait for more rather than compacting on every step.
            return None
        stub_budget = None if window is None else int(window * self.settings.stub_region_ratio)
        stubs_full = stub_budget is not None and self.stub_region_tokens(session) >= stub_budget
        return self._plan(session, span, focus, state_only=stubs_full)

    def stub_region_tokens(self, session: Session) -> int:
        """Heuristic size of the committed index stubs on the surface."""
        return sum(
            session.node_tokens(seq)
            for seq in session.nodes
            if checkpoint_kind(session, seq) == "index"
        )

    def plan_span(self, session: Session, first: int, last: int) -> Plan:
        nodes = session.nodes
        span = nodes[session.surface.position(first) : session.surface.position(last) + 1]
        return self._plan(session, span, None)

    def _plan(
        self, session: Session, span: Sequence[int], focus: str | None, *, state_only: bool = False
    ) -> Plan:
        """Chunk the span into stubs and the state region. ``state_only`` (the stub region has
        reached its share of the window) makes the whole span the state's region: no new stub,
        so frozen stubs can never crowd the window; the originals stay recallable through the
        state checkpoint."""
        if state_only:
            chunks = [(0, len(span))]
        else:
            chunks = chunk_span(_span_nodes(session, span), self.settings.chunk_tokens)
        state_text = self._pass_start_state(session, span)
        committed = self._committed_stubs(session)
        keyword_lines = _recent_within(
            [
                line
                for text in committed
                for line in text.splitlines()
                if line.startswith("Keywords")
            ],
            max_chars=self.settings.chunk_tokens,
        )
        recent = tuple(committed[-RECENT_STUBS:])
        corpus = (self._corpus.text(session),)
        header = session.request_header
        regions: list[RegionPlan] = []
        for begin, end in chunks[:-1]:
            seqs = tuple(span[begin:end])
            messages = _material(session, seqs)
            task = None
            if messages and not _recall_only(messages):
                task = SummaryTask(
                    kind="stub",
                    messages=messages,
                    max_tokens=self.settings.stub_tokens,
                    background=state_text,
                    keyword_lines=keyword_lines,
                    recent_stubs=recent,
                    corpus=corpus,
                )
            regions.append(RegionPlan(kind="index", shadowed_seqs=seqs, task=task))
        begin, end = chunks[-1]
        state_task = SummaryTask(
            kind="state",
            messages=_material(session, tuple(span)),
            max_tokens=self.settings.state_max_tokens,
            system=header.system if header is not None else None,
            previous=state_text,
            focus=focus,
            corpus=corpus,
        )
        regions.append(
            RegionPlan(
                kind="state",
                shadowed_seqs=tuple(span[begin:end]),
                task=state_task,
                input_range=(span[0], span[-1]),
            )
        )
        return Plan(tuple(regions))

    def _pass_start_state(self, session: Session, span: Sequence[int]) -> str | None:
        """The current state (or an adopted legacy/basic head checkpoint) — the merge base."""
        texts = [
            text
            for seq in span
            if checkpoint_kind(session, seq) == "state"
            and (text := checkpoint_summary_text(session, seq)) is not None
        ]
        return texts[-1] if texts else None

    def _committed_stubs(self, session: Session) -> list[str]:
        return [
            text
            for seq in session.nodes
            if checkpoint_kind(session, seq) == "index"
            and (text := checkpoint_summary_text(session, seq)) is not None
        ]

    # ---- summarising ------------------------------------------------------------------------

    async def summarize(self, plan: Plan) -> list[RegionText]:
        """Every region at once (bounded by ``max_concurrency``); buffered, nothing committed."""
        gate = asyncio.Semaphore(self.settings.max_concurrency)

        async def one(region: RegionPlan) -> RegionText:
            async with gate:
                if region.kind == "state":
                    return await self._state(region)
                return await self._stub(region)

        return list(await asyncio.gather(*(one(r) for r in plan.regions)))

    async def _state(self, region: RegionPlan) -> RegionText:
        assert region.task is not None
        output = await self.summarizer.summarize(region.task)  # a failure aborts the pass
        text = output.text.strip()
        if not text:
            raise ProviderError("INVALID_RESPONSE", "the state rewrite returned no text")
        return RegionText(
            kind="state",
            shadowed_seqs=region.shadowed_seqs,
            summary=_cap(text, self.settings.state_max_tokens),
            provider=output.provider,
            model=output.model,
            input_range=region.input_range,
            usage=output.usage,
            raw_output=output.raw_output,
        )

    async def _stub(self, region: RegionPlan) -> RegionText:
        task = region.task
        if task is None:
            return self._pointer(region, "pointer", "recall activity (history_read/history_search)")
        try:
            output = await self.summarizer.summarize(task)
        except Exception:  # a failed stub degrades to a pointer; the pass goes on
            return self._pointer(region, "fallback", None)
        body = output.text.strip()
        if not body:
            return self._pointer(region, "fallback", None)
        return RegionText(
            kind="index",
            shadowed_seqs=region.shadowed_seqs,
            summary=self._with_keywords(body, task),
            provider=output.provider,
            model=output.model,
            usage=output.usage,
            raw_output=output.raw_output,
        )

    def _with_keywords(self, body: str, task: SummaryTask) -> str:
        """2–3 lines of prose, then one keyword line that always holds the slice's rarest
        literals (code-extracted anchors merged with the model's own keywords)."""
        lines = [line for line in body.splitlines() if line.strip()]
        model_line = next((line for line in lines if line.startswith("Keywords")), "")
        prose = [line for line in lines if not line.startswith("Keywords")][:MAX_STUB_LINES]
        required = rarest_anchors(_slice_text(task.messages), task.corpus)
        keywords = merge_keyword_lines(model_line, required, max_chars=KEYWORD_LINE_CHARS)
        return "\n".join([*prose, keywords] if keywords else prose)

    def _pointer(self, region: RegionPlan, degraded: Degraded, what: str | None) -> RegionText:
        seqs = region.shadowed_seqs
        description = what or f"{len(seqs)} earlier messages (no summary could be written)"
        lines = [f"Earlier conversation: {description}."]
        if region.task is not None:
            anchors = rarest_anchors(_slice_text(region.task.messages), region.task.corpus)
            line = keyword_line(anchors, max_chars=KEYWORD_LINE_CHARS)
            if line:
                lines.append(line)
        return RegionText(
            kind="index",
            shadowed_seqs=seqs,
            summary="\n".join(lines),
            provider="code",
            model="pointer",
            degraded=degraded,
        )

    # ---- text -------------------------------------------------------------------------------

    def checkpoint_text(self, region: RegionText, summary_seq: int) -> str:
        if region.kind == "index":
            span = (region.shadowed_seqs[0], region.shadowed_seqs[-1])
            return f"{frame_stub(region.summary)}\n{footer(summary_seq, span)}"
        span = region.input_range or (region.shadowed_seqs[0], region.shadowed_seqs[-1])
        return f"{frame_summary(region.summary)}\n{footer(summary_seq, span)}"


def _span_nodes(session: Session, span: Sequence[int]) -> list[SpanNode]:
    nodes = []
    for position, seq in enumerate(span):
        following = span[position + 1] if position + 1 < len(span) else None
        turn_after = following is not None and _is_prompt(session, following)
        nodes.append(
            SpanNode(
                tokens=session.node_tokens(seq),
                balanced_after=session.tool_pairing_balanced_after(seq),
                turn_after=turn_after,
            )
        )
    return nodes


def _is_prompt(session: Session, seq: int) -> bool:
    event = session.events[seq]
    return isinstance(event, UserMessageEvent) and isinstance(event.data.source, UserSource)


def _material(session: Session, seqs: Sequence[int]) -> tuple[Message, ...]:
    """The messages to summarise: checkpoints are background, never material."""
    messages = []
    for seq in seqs:
        if is_checkpoint_event(session.events[seq]):
            continue
        message = surface_message(session.events[seq])  # type: ignore[arg-type]
        if message is not None:
            messages.append(message)
    return tuple(messages)


def _recall_only(messages: Sequence[Message]) -> bool:
    """True if a slice holds nothing but recall tool calls and their results."""
    saw_call = False
    for message in messages:
        if message.role == "assistant":
            calls = message.tool_calls()
            if not calls or any(call.name not in RECALL_TOOL_NAMES for call in calls):
                return False
            saw_call = True
        elif message.role != "tool":  # results: a balanced slice also holds their calls
            return False
    return saw_call


def _slice_text(messages: Sequence[Message]) -> str:
    return "\n".join(render_message(m) for m in messages)


class _Corpus:
    """Rendered originals of the whole session, for ranking how rare a literal is; extended
    with the new events at each pass instead of re-rendered."""

    def __init__(self) -> None:
        self._reset(None)

    def _reset(self, session_id: str | None) -> None:
        self._session_id = session_id
        self._scanned = 0
        self._parts: list[str] = []
        self._joined = ""

    def text(self, session: Session) -> str:
        if session.id != self._session_id or len(session.events) < self._scanned:
            self._reset(session.id)
        for event in session.events[self._scanned :]:
            if is_append_surface_event(event):
                message = surface_message(event)
                if message is not None:
                    self._parts.append(render_message(message))
        if self._scanned != len(session.events):
            self._scanned = len(session.events)
            self._joined = "\0".join(self._parts)
        return self._joined


def _recent_within(lines: Sequence[str], *, max_chars: int) -> tuple[str, ...]:
    """The most recent lines whose total length fits ``max_chars`` (in their original order)."""
    kept: list[str] = []
    total = 0
    for line in reversed(lines):
        total += len(line) + 1
        if total > max_chars:
            break
        kept.append(line)
    return tuple(reversed(kept))


def _cap(text: str, max_tokens: int) -> str:
    limit = max_tokens * 4
    return text if len(text) <= limit else text[:limit].rstrip() + "\n[state truncated]"
