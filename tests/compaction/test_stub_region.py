"""The stub region's ladder (docs/compaction.md, "The degradation ladder"): a pass whose new
stubs would overflow the region's share commits fewer, coarser stubs, else rolls the oldest up,
else writes the state alone — and a pass planned deeper to reach the low watermark does not
spend the room it frees on more stubs."""

from __future__ import annotations

import itertools
import logging
import re

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsh.compaction import CompactionEngine, ExtractiveSummarizer, RecallableBackend
from dsh.compaction.base import Plan
from dsh.compaction.recallable.backend import MIN_SHARE_STUBS
from dsh.compaction.recallable.chunking import coarsen_chunks
from dsh.compaction.recallable.rollup import reroll_tokens, rollup_count, rollup_gains
from dsh.compaction.recallable.stub_region import stub_region_tokens
from dsh.events import RequestConfig, RequestHeader, RequestHeaderBody
from dsh.recall.tools import read_checkpoint
from dsh.store import MemoryStore
from dsh.surface import Session, checkpoint_kind
from tests.agent.conftest import run
from tests.compaction.test_recallable import SETTINGS, assert_layout, long_session
from tests.helpers import append_tool_turn, new_session

RETAIN = 900
TIGHT = msgspec.structs.replace(SETTINGS, stub_region_ratio=0.15, retain_tokens=RETAIN)
WINDOW = 6000
"""With a 600-token system prompt, the stubs of a 30-turn span overflow this window's share."""


def _with_system_prompt(session: Session) -> Session:
    """``session`` with a request header carrying a 600-token system prompt."""
    body = RequestHeaderBody(config=RequestConfig(provider="x", model="x"), system="s" * 2400)
    session.append(RequestHeader(header=body, reason="initial"))
    return session


def _session() -> Session:
    return _with_system_prompt(long_session(turns=30))


def _plan(backend: RecallableBackend, session: Session, *, retain: int, window: int | None) -> Plan:
    plan = backend.plan(session, retain_tokens=retain, focus=None, reason="pressure", window=window)
    assert plan is not None
    return plan


def _stubs(plan: Plan) -> list[tuple[int, ...]]:
    return [region.shadowed_seqs for region in plan.regions if region.kind == "index"]


def test_a_plan_made_deeper_for_the_watermark_does_not_spend_the_freed_room_on_stubs():
    """The engine shrinks the retained tail to reach the low watermark; the stub share still
    counts the tail at its configured size, so the room freed brings the context down instead
    of filling up with more stubs (which squeezed the tail and landed no lower)."""
    session = _session()
    backend = RecallableBackend(ExtractiveSummarizer(), TIGHT)
    window = 7500  # the share sits between the four-stub floor and 15% of the window
    budget = backend.stub_budget(session, window, RETAIN)
    deeper = _plan(backend, session, retain=RETAIN // 4, window=window)
    planned = [r.estimate_tokens for r in deeper.regions if r.kind == "index"]
    assert planned and sum(planned) <= budget
    assert backend.stub_budget(session, window, RETAIN // 4) == budget
    assert backend.stub_budget(session, window, RETAIN * 2) < budget  # a longer tail still counts


def test_stubs_that_overflow_the_share_with_nothing_to_roll_up_land_fewer_and_coarser():
    session = _session()
    backend = RecallableBackend(ExtractiveSummarizer(), TIGHT)
    unbounded = _stubs(_plan(backend, session, retain=RETAIN, window=None))
    coarse = _stubs(_plan(backend, session, retain=RETAIN, window=WINDOW))
    assert 1 <= len(coarse) < len(unbounded)
    # the same nodes, cut only where the fine chunks were cut
    assert [s for stub in coarse for s in stub] == [s for stub in unbounded for s in stub]
    edges = {stub[0] for stub in unbounded}
    assert all(stub[0] in edges for stub in coarse)
    result = run(CompactionEngine(session, backend, TIGHT).compact_now(window=WINDOW))
    assert result is not None
    assert [c.kind for c in result.checkpoints] == ["index"] * len(coarse) + ["state"]
    assert_layout(session)
    for stub in result.checkpoints[:-1]:  # each coarse stub opens its whole slice
        page = read_checkpoint(session.events, f"c{stub.summary_seq}", budget_chars=10**6).text
        assert page.count("User:") >= 2


def test_a_share_too_small_for_a_few_stubs_is_raised_so_a_small_window_still_indexes():
    """1% of a 6,000-token window is 60 tokens, not room for one stub: the share is raised to
    ``MIN_SHARE_STUBS`` stubs and the pass commits stubs beside the state."""
    session = _session()
    settings = msgspec.structs.replace(TIGHT, stub_region_ratio=0.01)
    backend = RecallableBackend(ExtractiveSummarizer(), settings)
    budget = backend.stub_budget(session, WINDOW, RETAIN)
    assert budget >= MIN_SHARE_STUBS * backend._stub_estimate
    plan = _plan(backend, session, retain=RETAIN, window=WINDOW)
    assert len(_stubs(plan)) >= 1 and plan.regions[-1].kind == "state"
    assert sum(region.estimate_tokens for region in plan.regions[:-1]) <= budget


@st.composite
def _chunked(draw: st.DrawFn) -> tuple[list[tuple[int, int]], list[int]]:
    widths = draw(st.lists(st.integers(1, 4), min_size=1, max_size=25))
    chunks, start = [], 0
    for width in widths:
        chunks.append((start, start + width))
        start += width
    return chunks, draw(st.lists(st.integers(1, 900), min_size=len(chunks), max_size=len(chunks)))


@given(_chunked(), st.integers(0, 30))
def test_coarsening_merges_index_chunks_at_their_edges_into_even_runs(chunked, stubs):
    chunks, tokens = chunked
    runs = coarsen_chunks(chunks, tokens, stubs)
    index = len(chunks) - 1
    assert runs[0][0] == chunks[0][0] and runs[-1][1] == chunks[-1][1]
    assert all(a[1] == b[0] for a, b in itertools.pairwise(runs))
    if stubs == 0:
        assert runs == [(chunks[0][0], chunks[-1][1])]
        return
    if index == 0:
        assert runs == chunks
        return
    assert runs[-1] == chunks[-1]  # the state slice is kept
    assert len(runs) - 1 == min(stubs, index)
    assert {end for _, end in runs} <= {end for _, end in chunks}
    price = {chunk: t for chunk, t in zip(chunks, tokens, strict=True)}
    total, largest = sum(tokens[:index]), max(tokens[:index])
    for begin, end in runs[:-1]:
        size = sum(t for (b, e), t in price.items() if begin <= b and e <= end)
        assert size * min(stubs, index) <= total + largest * min(stubs, index)


@pytest.mark.parametrize("stubs", [0, 1, 3])
def test_coarsening_a_span_with_no_index_chunk_keeps_it_one_slice(stubs):
    assert coarsen_chunks([(0, 5)], [40], stubs) == [(0, 5)]


def _stubs_then_more_turns(*, turns: int, more: range) -> tuple[Session, RecallableBackend, int]:
    """The stubs of a ``turns``-turn session compacted in a roomy window, then the ``more``
    turns; the stub share is 15% of the window (``long_session``'s settings otherwise). Returns
    the session, a fresh backend with those settings and the configured retained tail."""
    settings = msgspec.structs.replace(SETTINGS, stub_region_ratio=0.15)
    session = long_session(turns=turns)
    run(
        CompactionEngine(
            session, RecallableBackend(ExtractiveSummarizer(), settings), settings
        ).compact_now(window=100_000)
    )
    for i in more:
        append_tool_turn(session, f"more {i}", calls=[("read_file", "{}", f"more {i}\n" * 60)])
    return session, RecallableBackend(ExtractiveSummarizer(), settings), settings.retain_tokens or 0


def test_a_rollup_comes_only_when_not_one_new_stub_fits_and_it_makes_room_for_more_passes():
    """Rung 3: when not one new stub fits beside the frozen ones, the oldest are rolled up —
    the fewest that bring the region with the new stubs down to half the share, or all of them
    with one new stub."""
    session, backend, retain = _stubs_then_more_turns(turns=14, more=range(8, 20))
    committed = stub_region_tokens(session)
    window = 5000
    budget = backend.stub_budget(session, window, retain)
    assert committed + backend._stub_estimate > budget  # not one new stub fits
    plan = _plan(backend, session, retain=retain, window=window)
    rollups = [r for r in plan.regions if r.code_text is not None]
    new = [r for r in plan.regions if r.kind == "index" and r.code_text is None]
    assert len(rollups) == 1 and len(new) >= 1
    rolled = sum(session.node_tokens(seq) for seq in rollups[0].shadowed_seqs)
    after = committed - rolled + rollups[0].estimate_tokens + sum(r.estimate_tokens for r in new)
    leading = backend._leading_stubs(session)
    everything = list(rollups[0].shadowed_seqs) == leading and len(new) == 1
    assert after <= budget // 2 or (everything and after <= budget)
    result = run(CompactionEngine(session, backend, backend.settings).compact_now(window=window))
    assert result is not None
    assert [c.kind for c in result.checkpoints] == ["index"] * (1 + len(new)) + ["state"]
    assert session.events[result.checkpoints[0].summary_seq].data.model == "rollup"
    assert_layout(session)


def _many_stubs_then_more_turns() -> tuple[Session, RecallableBackend, int]:
    """29 frozen stubs (3,582 tokens) from a pass in a roomy window, then twelve more turns;
    the stub share is 15% of the window (``long_session``'s settings otherwise)."""
    return _stubs_then_more_turns(turns=60, more=range(100, 112))


def test_fewer_coarser_stubs_come_before_a_rollup_that_would_fit_them_all():
    """Rung 2 before rung 3: a rollup rewrites the head of every later request, so while some
    new stubs fit beside the frozen ones the pass commits those — even where rolling up the
    oldest would make room for all of them."""
    session, backend, retain = _many_stubs_then_more_turns()
    most = len(_stubs(_plan(backend, session, retain=retain, window=None)))
    window = 27_000
    budget = backend.stub_budget(session, window, retain)
    leading = backend._leading_stubs(session)
    region = stub_region_tokens(session) + most * backend._stub_estimate
    assert rollup_count(region, rollup_gains(session, leading), target=budget // 2) > 0
    plan = _plan(backend, session, retain=retain, window=window)
    assert not [r for r in plan.regions if r.code_text is not None]
    assert 1 <= len(_stubs(plan)) < most


def test_a_rollup_pass_commits_the_most_new_stubs_that_reach_half_the_share():
    session, backend, retain = _many_stubs_then_more_turns()
    most = len(_stubs(_plan(backend, session, retain=retain, window=None)))
    window = 21_000
    budget = backend.stub_budget(session, window, retain)
    leading = backend._leading_stubs(session)
    gains = rollup_gains(session, leading)
    committed, estimate = stub_region_tokens(session), backend._stub_estimate
    assert committed + estimate > budget  # not one new stub fits beside the frozen ones
    plan = _plan(backend, session, retain=retain, window=window)
    new = [r for r in plan.regions if r.kind == "index" and r.code_text is None]
    assert [r.code_text is not None for r in plan.regions].count(True) == 1
    assert 1 < len(new) < most
    assert rollup_count(committed + len(new) * estimate, gains, target=budget // 2) > 0
    assert rollup_count(committed + (len(new) + 1) * estimate, gains, target=budget // 2) == 0


@pytest.mark.parametrize("window", [7000, 5500, 4000])
def test_a_session_whose_window_shrank_under_many_stubs_rolls_them_up_and_indexes_again(
    caplog, window
):
    """When even a rollup of every stub leaves no room for a new one (the window shrank, say,
    after a switch to a smaller model), the pass rolls them all up and writes the state alone;
    the rollup lists one footer per stub, and the next pass rolls it up again to one footer and
    commits a new stub beside it."""
    session, backend, _ = _many_stubs_then_more_turns()
    engine = CompactionEngine(session, backend, backend.settings)
    with caplog.at_level(logging.INFO, logger="dsh.compaction"):
        first = run(engine.compact_now(window=window))
    assert first is not None
    assert "this pass rolls every stub up and writes no new one" in caplog.text
    models = [session.events[c.summary_seq].data.model for c in first.checkpoints]
    assert models[0] == "rollup" and [c.kind for c in first.checkpoints] == ["index", "state"]
    rolled_all = stub_region_tokens(session)
    assert rolled_all < 3582 // 3  # one footer per stub, the keywords trimmed
    for i in range(200, 206):
        append_tool_turn(session, f"later {i}", calls=[("read_file", "{}", f"later {i}\n" * 60)])
    second = run(engine.compact_now(window=window))
    assert second is not None
    kinds = [(c.kind, session.events[c.summary_seq].data.model) for c in second.checkpoints]
    assert kinds[0] == ("index", "rollup") and ("index", "extractive") in kinds
    assert stub_region_tokens(session) <= backend.stub_budget(session, window, 300)
    assert_layout(session)
    if window < 7000:  # the rollup of all 29 did not fit the share: it was made all the same
        assert rolled_all > backend.stub_budget(session, window, 300)


def test_no_rollup_when_even_a_second_one_would_leave_no_room_for_a_stub(caplog):
    """A rollup of every stub with no new one is a head rewrite for nothing unless rolling
    that rollup up again later makes room for a stub: here it would not, so the pass writes
    the state alone, leaves the frozen stubs as they are and says why."""
    session, backend, _ = _stubs_then_more_turns(turns=8, more=range(100, 106))
    window = 2000
    budget = backend.stub_budget(session, window, 300)
    leading = backend._leading_stubs(session)
    rolled = stub_region_tokens(session) - rollup_gains(session, leading)[-1]
    assert rolled <= budget < rolled + backend._stub_estimate  # a rollup alone would fit
    assert reroll_tokens(session, leading) + backend._stub_estimate > budget
    with caplog.at_level(logging.INFO, logger="dsh.compaction"):
        plan = _plan(backend, session, retain=300, window=window)
    assert [region.kind for region in plan.regions] == ["state"]
    assert "neither a rollup of the oldest stubs nor fewer new stubs make room" in caplog.text


@settings(max_examples=40, deadline=None)
@given(
    lines=st.lists(st.integers(5, 300), min_size=8, max_size=30),
    window=st.integers(2500, 9000),
    ratio=st.sampled_from([0.05, 0.1, 0.15, 0.3]),
)
def test_pressure_passes_keep_the_layout_frozen_stubs_and_the_share(lines, window, ratio):
    """Over a session that keeps growing, every landed pass leaves ``[stubs][state][tail]``;
    a stub stays byte for byte until a rollup takes it (and the rollup keeps its footer); a
    pass that commits new stubs leaves the region within the share planned with the tail at
    its configured size (a system prompt makes passes plan deeper for the watermark)."""
    budgets = msgspec.structs.replace(SETTINGS, stub_region_ratio=ratio)
    session = _with_system_prompt(new_session(MemoryStore()))
    backend = RecallableBackend(ExtractiveSummarizer(), budgets)
    engine = CompactionEngine(session, backend, budgets)
    frozen: dict[int, str] = {}
    for i, count in enumerate(lines):
        append_tool_turn(
            session,
            f"step {i}: check ZEBRA-{7700 + i}",
            calls=[("read_file", f'{{"path":"src/m{i}.py"}}', f"line {i} of m{i}\n" * count)],
            final=f"m{i} listens on port {8000 + i}",
        )
        budget = backend.stub_budget(session, window, budgets.retain_tokens or 0)
        result = run(engine.compact_if_needed("pressure", turn=None, window=window))
        if result is None:
            continue
        assert_layout(session)
        stubs = [s for s in session.nodes if checkpoint_kind(session, s) == "index"]
        texts = {seq: session.events[seq].data.text() for seq in stubs}
        for seq, text in frozen.items():
            if seq in texts:
                assert texts[seq] == text  # frozen
            else:  # rolled up: its footer lives on in the rollup that took it
                assert any(text.splitlines()[-1] in t for t in texts.values())
        new = [c for c in result.checkpoints if c.kind == "index"]
        rolled = [c for c in new if session.events[c.summary_seq].data.model == "rollup"]
        if len(new) > len(rolled):
            assert stub_region_tokens(session) <= budget
        frozen = texts


_FOOTER_ID = re.compile(r"\[checkpoint (c\d+): shadows conversation span")


def _reachable_ids(session: Session) -> set[str]:
    """Checkpoint ids a model can reach from what its context shows: the footers on the
    surface, then the footers shown by reading each of those (a rollup lists its entries)."""
    todo = [
        found
        for seq in session.nodes
        if checkpoint_kind(session, seq) is not None
        for found in _FOOTER_ID.findall(session.events[seq].data.text())
    ]
    seen: set[str] = set()
    while todo:
        checkpoint = todo.pop()
        if checkpoint in seen:
            continue
        seen.add(checkpoint)
        page = read_checkpoint(session.events, checkpoint, budget_chars=10**7).text
        todo.extend(_FOOTER_ID.findall(page))
    return seen


@pytest.mark.parametrize("ratio", [0.15, 0.03])
def test_a_long_session_keeps_indexing_and_every_stub_stays_reachable_through_footers(ratio):
    """Rollups keep the footer of each entry they take, not the footers listed inside a rolled-
    up rollup, so the head rollup does not grow by a footer per stub for the whole session:
    every pass of a long session in a small window still commits a new index stub (a rollup
    that carried every footer on filled the share after some twenty passes, and every later
    pass wrote the state alone), and every stub ever committed stays reachable from the
    surface by reading the checkpoints its footers name. At a 3% share the four-stub floor
    holds after the share is lowered for the watermark (halved below it, a rollup and a new
    stub no longer fitted and passes wrote the state alone)."""
    settings = msgspec.structs.replace(SETTINGS, stub_region_ratio=ratio)
    session = _with_system_prompt(new_session(MemoryStore()))
    engine = CompactionEngine(
        session, RecallableBackend(ExtractiveSummarizer(), settings), settings
    )
    committed: set[str] = set()
    passes = rollups = 0
    for i in range(240):
        append_tool_turn(
            session,
            f"step {i}: check ZEBRA-{7700 + i}",
            calls=[("read_file", f'{{"path":"src/m{i}.py"}}', f"line {i} of m{i}\n" * 60)],
            final=f"m{i} listens on port {8000 + i}",
        )
        result = run(engine.compact_if_needed("pressure", turn=None, window=WINDOW))
        if result is None:
            continue
        passes += 1
        assert_layout(session)
        index = [
            (c.summary_seq, session.events[c.summary_seq].data.model)
            for c in result.checkpoints
            if c.kind == "index"
        ]
        rollups += any(model == "rollup" for _, model in index)
        assert any(model != "rollup" for _, model in index), f"pass {passes} wrote no stub"
        committed.update(f"c{seq}" for seq, _ in index)
    assert passes >= 20 and rollups >= 3
    assert committed <= _reachable_ids(session)


def test_the_four_stub_floor_never_takes_more_than_fifteen_percent_of_the_window():
    """A ``stub_tokens`` large against the window (12,000-token window, 3,000-token stubs,
    which validation accepts) must not make the share larger than the old default share: four
    stubs would be the whole window and no pass could get under the threshold."""
    settings = msgspec.structs.replace(
        SETTINGS, chunk_tokens=12_000, stub_tokens=3000, stub_region_ratio=0.03
    )
    backend = RecallableBackend(ExtractiveSummarizer(), settings)
    assert backend.stub_budget(_session(), 12_000, RETAIN) <= 12_000 * 15 // 100
