"""The recallable backend: frozen index stubs plus one mutable state checkpoint.

After every pass the surface reads ``[system][stub…][state][tail]`` (docs/compaction.md,
"Layout"). A pass compacts the span that starts right after the last committed index stub and
ends at the retain boundary: the span is chunked; every chunk but the last becomes a frozen
index stub (2–3 lines and a keyword line of rare literals); the trailing slice is shadowed by
the new state checkpoint, rewritten from the previous state plus everything this pass made
stale. Stubs are never rewritten and never fall inside a later span, so the request prefix stays
byte-stable and provider caches keep hitting.

When new stubs would overflow the stub region's share of the window, the pass commits fewer,
coarser stubs; when not one fits, the oldest stubs are rolled up by code (``rollup``) in the
same pass; only when no rollup makes room for a new stub does a pass fall back to one summary
after the frozen boundary (no new stubs), and it logs why (``stub_region``) — rolling every
stub up all the same when that lets the next pass index again. A frozen stub naming a value
since replaced is rolled up too (issue 22), whatever the ladder chose. The prompt a running
turn answers is never in a region (``dsh.compaction.open_prompt``): the history before it
becomes stubs, the turn's exchanges after it the state.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from pathlib import Path

from dsh.compaction.base import (
    Plan,
    Reason,
    RegionPlan,
    RegionText,
    StandingAfterPass,
    heuristic_total,
    nothing_to_come,
)
from dsh.compaction.open_prompt import split_at_prompt
from dsh.compaction.prompts import footer, frame_stub, frame_summary
from dsh.compaction.recallable.chunking import after_held, plan_chunks
from dsh.compaction.recallable.material import (
    recall_only,
    recent_within,
    slice_material,
    span_nodes,
)
from dsh.compaction.recallable.one_call import answer_pass
from dsh.compaction.recallable.ranking import Ranking, start_ranking
from dsh.compaction.recallable.riding import riding_input
from dsh.compaction.recallable.rollup import (
    message_tokens_of,
    node_text,
    rollup_keyword_chars,
    rollup_region,
    rollup_text,
    superseded_in_stubs,
)
from dsh.compaction.recallable.spans import ConversationSpans, SessionAnchors
from dsh.compaction.recallable.state_input import fold_state
from dsh.compaction.recallable.stub_call import model_stub
from dsh.compaction.recallable.stub_region import fit_stub_region
from dsh.compaction.recallable.texts import pointer
from dsh.compaction.summarizer import (
    Layout,
    Summarizer,
    SummaryTask,
    call_window,
    reads_rarity,
    within_bound,
)
from dsh.config import CompactionSettings
from dsh.events import (
    Message,
)
from dsh.surface import Session, checkpoint_kind, checkpoint_summary_text, retain_boundary

log = logging.getLogger("dsh.compaction")

RECENT_STUBS = 2
ROLLUP_MODEL = "rollup"
MIN_SHARE_STUBS = 4
"""The stub share holds at least this many stubs: a rollup (about two stubs' worth) and room
for new ones beside it — up to ``MAX_FLOOR_RATIO`` of the window (a ``stub_tokens`` that large
against the window is a configuration that validation let through for the share alone)."""
MAX_FLOOR_RATIO = 0.15
_BIG = 10**9  # a seq larger than any real one, to price a footer before its seq exists


class RecallableBackend:
    name = "recallable"

    def __init__(
        self,
        summarizer: Summarizer,
        settings: CompactionSettings,
        *,
        standing_after_pass: StandingAfterPass | None = None,
        anchor_file: Callable[[str], Path] | None = None,
    ) -> None:
        """``anchor_file``: where a session's anchor index is kept between processes
        (``dsh.store.anchor_cache_path``; None: in memory only)."""
        self.summarizer = summarizer
        self.settings = settings
        self._standing_after_pass = standing_after_pass or nothing_to_come
        self._anchors = SessionAnchors(anchor_file)
        self._spans = ConversationSpans()
        self._window: int | None = None
        self._calls_fit: int | None = None
        """The window one summariser call must fit (``call_window``)."""
        framing = frame_stub("") + "\n" + footer(_BIG, (_BIG, _BIG))
        self._stub_min = message_tokens_of(framing) + 12
        self._stub_tokens = within_bound(settings.stub, summarizer)
        self._state_tokens = within_bound(settings.state_max, summarizer)
        """The budgets a call is asked for: the settings', within the summariser's bound."""
        self._stub_estimate = self._stub_min + self._stub_tokens
        self._state_min = message_tokens_of(frame_summary("") + "\n" + footer(_BIG, (_BIG, _BIG)))
        self._state_estimate = self._state_min + self._state_tokens

    # ---- planning ---------------------------------------------------------------------------

    def span_start(self, session: Session) -> int:
        """Index of the first compactable node: right after the last committed index stub."""
        start = 0
        for index, seq in enumerate(session.nodes):
            if checkpoint_kind(session, seq) == "index":
                start = index + 1
        return start

    def min_stale_tokens(self, window: int | None) -> int:
        """Least stale material a pressure pass waits for; scales with the window, so a small
        window still compacts (``chunk_tokens // 2`` alone would block a 4k window)."""
        floor = self.settings.chunk // 2
        if window is None:
            return floor
        return max(1, min(floor, int(window * self.settings.min_stale_ratio)))

    def stale_tokens(self, session: Session, retain_tokens: int) -> int:
        """Heuristic size of the history a pass would make stale (checkpoints excluded)."""
        first = self.span_start(session)
        keep = retain_boundary(session, retain_tokens)
        return sum(
            session.node_tokens(seq)
            for seq in session.nodes[first:keep]
            if checkpoint_kind(session, seq) is None
        )

    def plan(
        self,
        session: Session,
        *,
        retain_tokens: int,
        focus: str | None,
        reason: Reason,
        window: int | None = None,
    ) -> Plan | None:
        self._window = window
        first = self.span_start(session)
        keep = retain_boundary(session, retain_tokens)
        split = split_at_prompt(session, first, keep)
        if split.held and not split.after:
            keep -= len(split.held)  # the prompt (and attachments) close the run: it ends before
            split = split_at_prompt(session, first, keep)
        # The open turn's prompt stays (``open_prompt``): the history before it can become
        # stubs, the turn's own exchanges after it the state; nothing spans it.
        span = [*split.before, *split.after]
        material = sum(
            session.node_tokens(seq) for seq in span if checkpoint_kind(session, seq) is None
        )
        if material == 0:
            return None
        if reason == "pressure" and material < self.min_stale_tokens(window):
            return None  # too little stale history to be worth a pass: wait for more
        held = len(split.before) if split.held else None
        chunks = self._chunks(session, span, held=held)
        leading = self._leading_stubs(session)
        rollup: Sequence[int] = ()
        budget = None if window is None else self.stub_budget(session, window, retain_tokens)
        if budget is not None:
            chunks, rollup = fit_stub_region(
                session,
                span,
                chunks,
                leading,
                budget=budget,
                stub_estimate=self._stub_estimate,
            )
            chunks = after_held(chunks, held)
        stale, replaced = superseded_in_stubs(
            [node_text(session, seq) for seq in leading],
            slice_material(session, span),
            slice_material(session, session.nodes[keep:]),
        )
        if stale > len(rollup):
            log.info("%d frozen stub(s) name a value since replaced: rolled up and marked", stale)
            rollup = leading[:stale]
        return self._plan(
            session,
            span,
            chunks,
            focus,
            rollup=rollup,
            replaced=replaced,
            keyword_chars=rollup_keyword_chars(budget),  # as ``fit_stub_region`` priced it
            as_sent=reason != "overflow",  # a refused request is not cached, nor did it fit
            read=session.nodes[first:keep] if held is not None else None,
        )

    def stub_budget(self, session: Session, window: int, retain_tokens: int) -> int:
        """The stub region's share: ``window × stub_region_ratio``, lowered (at most to half
        of it) so the layout after a pass (system and tools, stubs, the state at its cap, the
        retained tail) can reach the low watermark (else the next crossing comes at once), and
        never below room for ``MIN_SHARE_STUBS`` stubs (up to 15% of the window): with less, a
        rollup and a new stub no longer fit together. The tail counts at least at its
        configured size: a pass planned deeper (a smaller ``retain_tokens``) frees room to
        reach the watermark, not room for more stubs (which would squeeze the tail)."""
        share = int(window * self.settings.stub_region_ratio)
        header = session.request_header
        fixed = (
            0
            if header is None
            else heuristic_total(session)
            - sum(session.node_tokens(seq) for seq in session.nodes)
            + self._standing_after_pass(session)
        )
        tail = max(retain_tokens, self.settings.retain_for(window))
        room = int(window * self.settings.low_watermark_ratio) - fixed - self._state_estimate
        floor = min(MIN_SHARE_STUBS * self._stub_estimate, int(window * MAX_FLOOR_RATIO))
        return max(floor, share // 2, min(share, room - tail))

    def _chunks(
        self, session: Session, span: Sequence[int], *, held: int | None = None
    ) -> list[tuple[int, int]]:
        """The span's chunks (``plan_chunks``): a chunk of checkpoints alone, or one too small
        for its stub to shrink it, folds into the next one; ``held``: where the open turn's
        prompt was taken out of the span."""
        flags = [checkpoint_kind(session, seq) is not None for seq in span]
        nodes = span_nodes(session, span)
        return plan_chunks(nodes, self.settings.chunk, flags, self._stub_estimate, held=held)

    def _leading_stubs(self, session: Session) -> list[int]:
        """The run of index checkpoints at the surface head (the oldest frozen entries)."""
        leading = []
        for seq in session.nodes:
            if checkpoint_kind(session, seq) != "index":
                break
            leading.append(seq)
        return leading

    def _plan(
        self,
        session: Session,
        span: Sequence[int],
        chunks: list[tuple[int, int]],
        focus: str | None,
        *,
        rollup: Sequence[int] = (),
        replaced: dict[str, str] | None = None,
        keyword_chars: int = rollup_keyword_chars(None),
        as_sent: bool = True,
        read: Sequence[int] | None = None,
    ) -> Plan:
        """The regions of ``chunks`` over ``span``. ``read``: what the state reads when it is
        not ``span`` — the run with the open turn's prompt in it, which it does not shadow."""
        header = session.request_header
        positions: dict[int, int] = {}
        conversation: tuple[Message, ...] = ()
        stub_layout: Layout = "compact"
        state_layout: Layout = "compact"
        stub_room: int | None = None
        state_room: int | None = None
        if self._rides(session):
            stubs = len(chunks) - 1  # every chunk but the last is a stub
            wanted = stubs * self._stub_tokens + self._state_tokens
            ride = riding_input(session, span, window=self._window, wanted=wanted, as_sent=as_sent)
            conversation, positions = ride.conversation, ride.positions
            stub_layout, stub_room = _layout(ride.room, self._stub_tokens)
            state_layout, state_room = _layout(ride.room, self._state_tokens)
        common = {
            "system": header.system if header is not None else None,
            "tools": tuple(header.tools or ()) if header is not None else (),
            "rarity": self._rarity,
        }

        def riding(layout: Layout, room: int | None) -> dict[str, object]:
            if layout == "compact":
                return {"layout": layout}
            return {"layout": layout, "conversation": conversation, "output_limit": room}

        state_text = self._pass_start_state(session, span)
        committed = self._committed_stubs(session)
        keyword_lines = recent_within(
            [
                line
                for text in committed
                for line in text.splitlines()
                if line.startswith("Keywords")
            ],
            max_chars=self.settings.chunk,
        )
        regions: list[RegionPlan] = []
        if rollup:
            texts = [node_text(session, seq) for seq in rollup]
            regions.append(rollup_region(rollup, texts, replaced or {}, keyword_chars))
        slices: dict[int, tuple[Message, ...]] = {}
        for begin, end in chunks[:-1]:
            seqs = tuple(span[begin:end])
            messages = slice_material(session, seqs)
            slices[len(regions)] = messages
            task = None
            if messages and not recall_only(messages):
                task = SummaryTask(
                    kind="stub",
                    messages=messages,
                    max_tokens=self._stub_tokens,
                    background=state_text,
                    keyword_lines=keyword_lines,
                    recent_stubs=tuple(committed[-RECENT_STUBS:]),
                    slice_range=_range(
                        positions, [s for s in seqs if checkpoint_kind(session, s) is None]
                    ),
                    **common,  # type: ignore[arg-type]
                    **riding(stub_layout, stub_room),  # type: ignore[arg-type]
                )
            regions.append(
                RegionPlan(
                    kind="index",
                    shadowed_seqs=seqs,
                    task=task,
                    estimate_tokens=self._stub_estimate,
                    min_tokens=self._stub_min,
                )
            )
        begin, _ = chunks[-1]
        previous_at = next(
            (positions.get(s) for s in reversed(span) if checkpoint_kind(session, s) == "state"),
            None,
        )
        span_messages = slice_material(session, tuple(read or span))
        state_task = SummaryTask(
            kind="state",
            messages=span_messages,
            max_tokens=self._state_tokens,
            previous=state_text,
            focus=focus,
            slice_range=_range(positions, read or span),
            previous_at=previous_at,
            **common,  # type: ignore[arg-type]
            **riding(state_layout, state_room),  # type: ignore[arg-type]
        )
        regions.append(
            RegionPlan(
                kind="state",
                shadowed_seqs=tuple(span[begin:]),
                task=state_task,
                input_range=self._spans.of(session, span),
                estimate_tokens=self._state_estimate,
                min_tokens=self._state_min,
            )
        )
        return Plan(
            tuple(regions),
            Ranking(session, self._anchors, len(session.events), slices, span_messages, state_text),
        )

    def _rarity(self, text: str) -> int:
        """How many of the session's texts name ``text`` (read once the ranking is done)."""
        return self._anchors.index.count(text)

    def _rides(self, session: Session) -> bool:
        """Whether stub and state calls can ride the conversation's cache: the summariser is
        the conversation's own route (or writes with code)."""
        route = getattr(self.summarizer, "route", None)
        header = session.request_header
        return route is None or (
            header is not None and (header.config.provider, header.config.model) == tuple(route)
        )

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
        """Every region at once: one call for the whole pass when it can (``one_call``), else
        one call per region (bounded by ``max_concurrency``); buffered, nothing committed."""
        gate = asyncio.Semaphore(self.settings.max_concurrency)
        self._calls_fit = call_window(self.summarizer, self._window)

        ranking = plan.pending if isinstance(plan.pending, Ranking) else None
        completed, settle = start_ranking(plan.regions, ranking)

        async def state(region: RegionPlan) -> RegionText:
            # the planned region (a call of its own): its text goes into the ranked one; the
            # one-call fallback hands over a region already ranked
            index = next((i for i, r in enumerate(plan.regions) if r is region), None)

            async def ranked() -> RegionPlan:
                return region if index is None else (await completed())[index]

            return await fold_state(
                self.summarizer, region, self._state_tokens, self._calls_fit, ranked
            )

        async def one(index: int, region: RegionPlan) -> RegionText:
            if index in answered:
                return answered[index]
            if region.code_text is not None:
                return RegionText(
                    kind="index",
                    shadowed_seqs=region.shadowed_seqs,
                    summary=region.code_text,
                    provider="code",
                    model=ROLLUP_MODEL,
                )
            if region.task is None:
                # Only a recall-only slice has no task: a chunk of checkpoints alone folds into
                # the next chunk (``fold_checkpoint_chunks``), so every index slice has material.
                what = "recall activity (history_read/history_search)"
                return pointer((await completed())[index], "pointer", what)
            async with gate:
                if region.kind == "state":
                    return await state(region)
                return await model_stub(
                    self.summarizer, region, completed, index, self._stub_tokens
                )

        try:
            if reads_rarity(self.summarizer):
                await completed()  # its text reads the counts: ranked (in the worker) first
            answered = await answer_pass(
                self.summarizer,
                plan.regions,
                stub_tokens=self._stub_tokens,
                state_tokens=self._state_tokens,
                window=self._calls_fit,
                state=state,
                completed=completed,
            )
            texts = list(await asyncio.gather(*(one(i, r) for i, r in enumerate(plan.regions))))
        except asyncio.CancelledError:
            raise  # at once: the worker ends on its own, the next pass waits for it (its lock)
        except BaseException:
            await settle()
            raise
        await settle()
        return texts

    # ---- text -------------------------------------------------------------------------------

    def checkpoint_text(self, session: Session, region: RegionText, summary_seq: int) -> str:
        """The framed text and footer; the footer reads forwards (smallest and largest
        conversation seq the checkpoint stands for)."""
        if region.kind == "index":
            span = self._spans.of(session, region.shadowed_seqs)
            if region.model == ROLLUP_MODEL and region.provider == "code":
                return rollup_text(region.summary, summary_seq, span)
            return f"{frame_stub(region.summary)}\n{footer(summary_seq, span)}"
        span = region.input_range or self._spans.of(session, region.shadowed_seqs)
        return f"{frame_summary(region.summary)}\n{footer(summary_seq, span)}"


def _layout(room: int | None, output_tokens: int) -> tuple[Layout, int | None]:
    """``riding`` when the riding call leaves ``output_tokens`` of room in the window (or no
    window is known), with that room; else ``compact``."""
    if room is None or room >= output_tokens:
        return "riding", room
    return "compact", None


def _range(positions: dict[int, int], seqs: Sequence[int]) -> tuple[int, int] | None:
    """1-based first/last message positions of ``seqs`` in the conversation (riding only)."""
    found = [positions[s] for s in seqs if s in positions]
    return (found[0], found[-1]) if found else None
