"""A frozen stub never keeps presenting a replaced value as current (issue 22).

A stub frozen in one pass may name a setting (``port = 8080``) whose value a later turn
changes. The stub cannot be rewritten, so the pass that compacts the new value off the surface
rolls that stub up by code, and the rollup marks the old literal as replaced (the bench's
superseded-leak rule: a stub naming an old value is acceptable only when it marks it). While the
new value is still verbatim in the retained tail nothing is rolled up: the model reads it there.
"""

from __future__ import annotations

import dataclasses

from dsh.bench.scorers import marks_replaced
from dsh.compaction import ExtractiveSummarizer
from dsh.compaction.recallable.rollup import rollup_body, superseded_in_stubs
from dsh.compaction.summarizer import SummaryOutput
from dsh.surface import Session, checkpoint_kind
from tests.agent.conftest import run
from tests.compaction.test_recallable import assert_layout, engine_for, long_session
from tests.helpers import append_tool_turn, user_message

OLD, NEW = "port = 8080", "port = 9090"


def _stubs_naming(session: Session, literal: str) -> list[str]:
    texts = []
    for seq in session.nodes:
        if checkpoint_kind(session, seq) == "index":
            text = session.node_message(seq).text()
            if literal in text:
                texts.append(text)
    return texts


def _filler(session: Session, start: int, turns: int) -> None:
    for i in range(start, start + turns):
        append_tool_turn(session, f"filler {i}", calls=[("read_file", "{}", f"filler {i}\n" * 60)])


def _session_with_a_frozen_old_value() -> tuple[Session, object]:
    session = long_session(turns=2)
    append_tool_turn(
        session, "read the config", calls=[("read_file", "{}", f"{OLD}\nretries = 3\n" * 2)]
    )
    _filler(session, 0, 10)
    engine = engine_for(session)
    run(engine.compact_now(window=100_000))
    assert _stubs_naming(session, OLD), "the first pass froze a stub naming the old value"
    assert not all(marks_replaced(text, OLD) for text in _stubs_naming(session, OLD))
    return session, engine


def test_the_pass_that_compacts_the_new_value_rolls_up_and_marks_the_stub_naming_the_old():
    session, engine = _session_with_a_frozen_old_value()
    append_tool_turn(session, "change the port", calls=[("edit_file", "{}", f"now {NEW}")])
    _filler(session, 10, 12)  # the change leaves the retained tail in the next pass
    run(engine.compact_now(window=100_000))
    assert_layout(session)
    naming = _stubs_naming(session, OLD)
    assert naming and all(marks_replaced(text, OLD) for text in naming)
    assert any("<compacted-rollup>" in text for text in naming)


def test_while_the_new_value_is_still_in_the_tail_the_stub_stays_frozen():
    session, engine = _session_with_a_frozen_old_value()
    before = _stubs_naming(session, OLD)
    _filler(session, 10, 12)
    append_tool_turn(session, "change the port", calls=[("edit_file", "{}", f"now {NEW}")])
    run(engine.compact_now(window=100_000))  # the change is in the retained tail
    assert _stubs_naming(session, OLD) == before


def test_stubs_to_roll_up_reach_the_newest_one_naming_a_replaced_value():
    stubs = [
        "Did a.\nKeywords — config: port = 8080, retries = 3\n[checkpoint c1: …]",
        "Did b.\nKeywords — id: ZEBRA-1\n[checkpoint c2: …]",
        "Did c.\nKeywords — config: retries = 3\n[checkpoint c3: …]",
        "Did d.\nKeywords — config: port = 8080\n[checkpoint c4: …]",
    ]
    span = (user_message(f"set {NEW}"), user_message("retries = 3 still"))
    assert superseded_in_stubs(stubs, span, ()) == (4, {OLD: NEW})
    assert superseded_in_stubs(stubs, span, (user_message(f"{NEW} is live"),)) == (0, {})
    assert superseded_in_stubs(stubs, (user_message("retries = 3"),), ()) == (0, {})


def test_a_rollup_marks_replaced_literals_and_keeps_earlier_marks():
    stubs = [
        "Did a.\nKeywords — config: port = 8080, retries = 3\n"
        "[checkpoint c1: shadows conversation span #1–#2; originals retrievable via history_read]",
        "Did b.\nKeywords — config: mode = fast\n"
        "[checkpoint c2: shadows conversation span #3–#4; originals retrievable via history_read]",
    ]
    body = rollup_body(stubs, {OLD: NEW})
    assert marks_replaced(body, OLD) and not marks_replaced(body, "retries = 3")
    again = rollup_body([body, stubs[1]], {"mode = fast": "mode = slow"})
    assert marks_replaced(again, OLD) and marks_replaced(again, "mode = fast")
    assert superseded_in_stubs([again], (user_message(NEW),), ()) == (0, {})  # already marked


class CopiesThePreviousState(ExtractiveSummarizer):
    """A lazy model on another route: its state is the previous state, word for word (it
    fails the one-call pass, so the state gets a call of its own)."""

    route = ("other", "lazy")
    reads_rarity = False

    async def summarize(self, task):
        if task.kind == "pass":
            raise RuntimeError("answers call by call")
        if task.kind == "state" and task.previous:
            return SummaryOutput(text=task.previous, provider="other", model="lazy")
        return await super().summarize(dataclasses.replace(task, rarity=None))


def test_a_state_carrying_an_old_value_from_the_previous_state_marks_it_replaced():
    session, _ = _session_with_a_frozen_old_value()
    state = next(
        session.node_message(seq).text()
        for seq in session.nodes
        if checkpoint_kind(session, seq) == "state"
    )
    assert OLD in state  # the pass-start state names the old value
    append_tool_turn(session, "change the port", calls=[("edit_file", "{}", f"now {NEW}")])
    _filler(session, 10, 12)
    run(engine_for(session, CopiesThePreviousState()).compact_now(window=100_000))
    state = next(
        session.node_message(seq).text()
        for seq in session.nodes
        if checkpoint_kind(session, seq) == "state"
    )
    lines = [line for line in state.splitlines() if OLD in line]
    assert lines and all(f"({OLD} → {NEW})" in line for line in lines)


def test_a_value_set_back_is_not_marked_replaced_by_the_rollup_that_compacts_the_revert():
    """8080 → 9090 → 8080 (audit finding 3): the rollup made when the revert leaves the surface
    drops the carried mark on 8080 and marks 9090 only."""
    head = rollup_body(
        [
            "Did a.\nKeywords — config: port = 8080\n"
            "[checkpoint c1: shadows conversation span #1–#2; "
            "originals retrievable via history_read]"
        ],
        {OLD: NEW},
    )
    assert marks_replaced(head, OLD)
    stub = (
        "Did b.\nKeywords — config: port = 9090\n"
        "[checkpoint c2: shadows conversation span #3–#4; originals retrievable via history_read]"
    )
    revert = (user_message(f"revert: set {OLD}"),)
    count, replaced = superseded_in_stubs([head, stub], revert, ())
    assert (count, replaced) == (2, {OLD: OLD, NEW: OLD})
    again = rollup_body([head, stub], replaced)
    assert marks_replaced(again, NEW) and not marks_replaced(again, OLD)
    assert f"config: {OLD}" in again  # cued as a current value again
    # while the revert is still verbatim in the tail, nothing is rolled up for it
    assert superseded_in_stubs([head], (), revert) == (0, {})
    # a value still replaced keeps its mark
    assert superseded_in_stubs([head], (user_message(f"still {NEW}"),), ()) == (0, {})


def test_a_session_setting_a_value_back_never_gets_a_rollup_marking_the_current_value():
    session, engine = _session_with_a_frozen_old_value()
    append_tool_turn(session, "change the port", calls=[("edit_file", "{}", f"now {NEW}")])
    _filler(session, 10, 12)
    run(engine.compact_now(window=100_000))
    assert any(marks_replaced(text, OLD) for text in _stubs_naming(session, OLD))
    append_tool_turn(session, "set it back", calls=[("edit_file", "{}", f"revert: {OLD}")])
    _filler(session, 22, 12)
    run(engine.compact_now(window=100_000))
    assert_layout(session)
    rollups = [t for t in _stubs_naming(session, OLD) if "<compacted-rollup>" in t]
    assert rollups and not any(marks_replaced(text, OLD) for text in _stubs_naming(session, OLD))
