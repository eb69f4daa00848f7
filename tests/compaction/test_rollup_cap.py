"""A rollup's keyword cap scales with the stub region's share (docs/compaction.md, "The
degradation ladder"): in a small window a fixed 600-character line made every rollup too big for
a new stub to fit beside it for long, so nearly every pass rolled up again. The rollup is priced
with the cap it is then made with, and it never drops a footer."""

from __future__ import annotations

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from dsh.compaction import CompactionEngine, ExtractiveSummarizer, RecallableBackend
from dsh.compaction.anchors import KINDS, Anchor, keyword_line
from dsh.compaction.prompts import footer, frame_stub
from dsh.compaction.recallable.rollup import (
    FOOTER_LINE,
    MIN_ROLLUP_KEYWORD_CHARS,
    ROLLUP_KEYWORD_CHARS,
    rollup_body,
    rollup_gains,
    rollup_keyword_chars,
    rollup_region,
    rollup_tokens,
)
from dsh.events import CompactionSummaryEvent
from dsh.recall.tools import read_checkpoint
from dsh.surface import Session
from tests.agent.conftest import run
from tests.compaction.test_recallable import SETTINGS, assert_layout, long_session
from tests.helpers import append_tool_turn

SMALL = msgspec.structs.replace(SETTINGS, stub_region_ratio=0.1, stub_tokens=40)
"""Stubs of ~100 tokens and a 10% share: a 4,096-token window's region is ~400 tokens."""


def _stubs_then_more(turns: int = 14, more: int = 12) -> tuple[Session, RecallableBackend]:
    session = long_session(turns=turns)
    backend = RecallableBackend(ExtractiveSummarizer(), SMALL)
    run(CompactionEngine(session, backend, SMALL).compact_now(window=100_000))
    for i in range(100, 100 + more):
        append_tool_turn(session, f"more {i}", calls=[("read_file", "{}", f"more {i}\n" * 60)])
    return session, RecallableBackend(ExtractiveSummarizer(), SMALL)


def _keywords(text: str) -> str:
    return next((line for line in text.splitlines() if line.startswith("Keywords")), "")


def test_the_cap_is_the_share_in_characters_between_a_floor_and_600():
    assert rollup_keyword_chars(None) == ROLLUP_KEYWORD_CHARS == 600  # no window known
    assert rollup_keyword_chars(10_000) == 600
    assert rollup_keyword_chars(404) == 404
    assert rollup_keyword_chars(10) == MIN_ROLLUP_KEYWORD_CHARS


def test_a_small_window_rollup_is_capped_at_its_share_priced_as_made_and_keeps_every_id():
    session, backend = _stubs_then_more()
    window = 4096
    budget = backend.stub_budget(session, window, SMALL.retain_tokens or 0)
    cap = rollup_keyword_chars(budget)
    assert cap == budget < ROLLUP_KEYWORD_CHARS
    leading = backend._leading_stubs(session)
    plan = backend.plan(
        session,
        retain_tokens=SMALL.retain_tokens or 0,
        focus=None,
        reason="pressure",
        window=window,
    )
    assert plan is not None
    region = plan.regions[0]
    assert region.code_text is not None  # a rollup
    count = len(region.shadowed_seqs)
    texts = [session.node_message(seq).text() for seq in region.shadowed_seqs]  # type: ignore[union-attr]
    # the cap bit: the 600-character line would have been longer
    assert len(_keywords(region.code_text)) <= cap < len(_keywords(rollup_body(texts)))
    # priced as the ladder decided it: the gain it counted is what the region costs
    removed = sum(session.node_tokens(seq) for seq in region.shadowed_seqs)
    gains = rollup_gains(session, leading, max_chars=cap)
    assert region.estimate_tokens == removed - gains[count - 1] == rollup_tokens(region.code_text)
    # committed: the rollup is the planned text, and every rolled-up id still opens its stub
    engine = CompactionEngine(session, backend, SMALL)
    result = run(engine.compact_now(window=window))
    assert result is not None
    rollup = session.events[result.checkpoints[0].summary_seq]
    assert isinstance(rollup, CompactionSummaryEvent) and rollup.data.model == "rollup"
    assert rollup.data.summary == region.code_text
    for text in texts:
        (own,) = FOOTER_LINE.findall(text)[-1:]
        assert own in rollup.data.summary
        checkpoint = own.split(":")[0].removeprefix("[checkpoint ")
        assert not read_checkpoint(session.events, checkpoint).is_error
    assert_layout(session)


_ANCHOR = st.builds(
    Anchor,
    st.sampled_from([k for k in KINDS if k != "error"]),
    st.from_regex(r"[a-z][a-z0-9_./]{2,30}", fullmatch=True),
)


@st.composite
def _stub_texts(draw: st.DrawFn) -> list[str]:
    texts = []
    for n in range(draw(st.integers(1, 6))):
        anchors = draw(st.lists(_ANCHOR, max_size=25))
        body = keyword_line(anchors)
        seq = draw(st.integers(1, 10**6))
        texts.append(f"{frame_stub(body)}\n{footer(seq + n, (n + 1, seq + n))}")
    return texts


@settings(max_examples=60, deadline=None)
@given(_stub_texts(), st.integers(0, 3000))
def test_any_rollup_is_priced_as_made_keeps_every_footer_and_never_grows_past_600(texts, budget):
    cap = rollup_keyword_chars(budget)
    body = rollup_body(texts, max_chars=cap)
    region = rollup_region(tuple(range(len(texts))), texts, {}, cap)
    assert region.code_text == body
    assert region.estimate_tokens == region.min_tokens == rollup_tokens(body)
    assert len(_keywords(body)) <= cap <= max(MIN_ROLLUP_KEYWORD_CHARS, budget)
    assert [line for line in body.splitlines() if FOOTER_LINE.match(line)] == [
        FOOTER_LINE.findall(text)[-1] for text in texts
    ]
    assert rollup_tokens(body) <= rollup_tokens(rollup_body(texts))  # the 600 cap's
