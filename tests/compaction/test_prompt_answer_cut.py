"""No retain cut parts a prompt from the assistant message answering it (``dsh.surface.cuts``;
docs/compaction.md, "Layout").

The audit (finding 4): the first pass's state shadowed only the prompt "Step 22: note that set
timeout_ms = 2500 …", its answer opened the verbatim tail, and the state ended
``## Next steps - Step 22: …`` — an answered request listed as a next step, which a small model
once answered again. The property test generates sessions (prompts with attachment notes, tool
exchanges, real passes, an open turn) and checks the retain boundary against an oracle written
here; the end-to-end test runs a pass whose walk back ends on such an answer.
"""

from __future__ import annotations

import contextlib

from hypothesis import given, settings
from hypothesis import strategies as st

from dsh.compaction import (
    CompactionEngine,
    CompactionRefused,
    ExtractiveSummarizer,
    RecallableBackend,
)
from dsh.config import CompactionSettings
from dsh.events import is_checkpoint_event
from dsh.store import MemoryStore
from dsh.surface import retain_boundary
from tests.agent.conftest import run
from tests.compaction.test_prompt_attachment_cuts import (
    BUDGETS,
    TURNS,
    _bad_cuts,
    _parting_cuts,
    _turn,
)
from tests.helpers import append_chat_turn, heuristic_price, new_session


@settings(max_examples=50, deadline=None)
@given(
    turns=TURNS,
    open_turn=st.booleans(),
    retain=st.integers(0, 1500),
    window=st.integers(4096, 20_000),
)
def test_the_retain_cut_never_parts_a_prompt_from_its_answer(turns, open_turn, retain, window):
    session = new_session(MemoryStore())
    config = CompactionSettings(backend="recallable", retain_tokens=300, **BUDGETS)
    passes = CompactionEngine(session, RecallableBackend(ExtractiveSummarizer(), config), config)
    for number, (prompt, notes, exchanges, reply, compact_after) in enumerate(turns):
        _turn(session, f"task {number}: {prompt}", notes, exchanges, reply)
        if compact_after:
            answers = {session.nodes[p] for p in _parting_cuts(session)}
            with contextlib.suppress(CompactionRefused):
                run(passes.compact_now(window=window))
            tail = [s for s in session.nodes if not is_checkpoint_event(session.events[s])]
            # the tail never opens on an answer whose prompt the pass compacted
            assert not tail or tail[0] not in answers
    if open_turn:
        _turn(session, "now: fix it", ["[attached] a.py"], [["ok"]], "", close=False)
    keep = retain_boundary(session, retain)
    assert keep not in _parting_cuts(session) | _bad_cuts(session)
    nodes = session.nodes
    if heuristic_price(session, nodes[keep:]) < min(retain, heuristic_price(session, nodes)):
        # the tail is short of its size only when a prompt group larger than it went whole,
        # its answer with it (the cut lies past that answer)
        answers = [p for p in _parting_cuts(session) if p < keep]
        assert answers, (keep, retain)


def test_a_pass_ending_on_an_answer_keeps_its_prompt_and_lists_no_answered_request():
    session = new_session(MemoryStore())
    for i in range(8):
        append_chat_turn(session, f"Step {i}: note that marker M{i:03d} is set.", "Noted " * 30)
    last = session.nodes[-1]
    answer_tokens = session.node_tokens(last)
    config = CompactionSettings(backend="recallable", retain_tokens=answer_tokens, **BUDGETS)
    engine = CompactionEngine(session, RecallableBackend(ExtractiveSummarizer(), config), config)
    run(engine.compact_now(window=100_000))
    tail = [s for s in session.nodes if not is_checkpoint_event(session.events[s])]
    assert session.node_message(tail[0]).text() == "Step 7: note that marker M007 is set."
    state = next(
        session.node_message(s).text()
        for s in session.nodes
        if is_checkpoint_event(session.events[s]) and "Next step" in session.node_message(s).text()
    )
    assert "M007" not in state and "M006" not in state.split("Next step")[1]
