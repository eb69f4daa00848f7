"""The compaction engine and the basic backend (docs/compaction.md, "The events of a pass",
"Triggers" and "The basic backend")."""

from __future__ import annotations

import dataclasses
import itertools

import msgspec
import pytest

from dsh.agent.hooks import compaction_hooks
from dsh.compaction import (
    NOTHING_TO_COMPACT,
    BasicBackend,
    CompactionBusy,
    CompactionEngine,
    CompactionError,
    CompactionRefused,
    ExtractiveSummarizer,
    SummaryOutput,
    prune_tool_results,
    run_compact_command,
)
from dsh.config import CompactionSettings
from dsh.events import (
    CommandDoneEvent,
    CompactionEndEvent,
    CompactionPlanEvent,
    CompactionPruneEvent,
    CompactionStart,
    CompactionStartEvent,
    CompactionSummaryEvent,
    ReplaceOp,
    ToolResultEvent,
    UserMessageEvent,
    event_type_of,
    is_checkpoint_event,
)
from dsh.store import MemoryStore
from dsh.surface import Session, message_tokens, surface_message
from tests.agent.conftest import Harness, run
from tests.helpers import append_chat_turn, append_tool_turn, new_session

SETTINGS = CompactionSettings(backend="basic", retain_tokens=60, chunk_tokens=400, stub_tokens=50)


def engine_for(session: Session, summarizer=None, settings=SETTINGS) -> CompactionEngine:
    ids = itertools.count(1)
    backend = BasicBackend(summarizer or ExtractiveSummarizer(), settings)
    return CompactionEngine(session, backend, settings, new_id=lambda: f"p{next(ids)}")


def long_session(turns: int = 6) -> Session:
    session = new_session(MemoryStore())
    for i in range(turns):
        append_tool_turn(
            session,
            f"step {i}: inspect module_{i}.py",
            calls=[
                ("read_file", f'{{"path":"module_{i}.py"}}', f"def f{i}():\n    return {i}\n" * 20)
            ],
            final=f"module_{i} returns {i}",
        )
    return session


def types_after(session: Session, seq: int) -> list[str]:
    return [event_type_of(e) for e in session.events[seq:]]


class FailingSummarizer:
    name = model = "failing"

    async def summarize(self, task):
        raise RuntimeError("summariser exploded")


class HugeSummarizer:
    name = model = "huge"

    async def summarize(self, task):
        return SummaryOutput(text="padding " * 20_000, provider="huge", model="huge")


def test_a_pass_writes_start_plan_summary_replace_end_with_the_exact_price():
    session = long_session()
    before = len(session.events)
    result = run(engine_for(session).compact_now(window=10_000))
    assert result is not None
    assert types_after(session, before) == [
        "compaction/start",
        "compaction/plan",
        "compaction/summary",
        "user/message",
        "compaction/end",
    ]
    summary = session.events[before + 2]
    checkpoint = session.events[before + 3]
    assert isinstance(summary, CompactionSummaryEvent) and is_checkpoint_event(checkpoint)
    shadowed = summary.data.shadowed_seqs
    assert summary.data.shadowed_range == (shadowed[0], shadowed[-1])
    assert summary.data.shadowed_token_count == sum(
        message_tokens(surface_message(session.events[s])) for s in shadowed
    )
    assert checkpoint.surface_op == ReplaceOp(start=shadowed[0], end=shadowed[-1])
    assert checkpoint.source_event_seqs == (before, summary.seq, *shadowed)
    assert session.nodes[0] == checkpoint.seq
    assert "<compacted-summary>" in checkpoint.data.content[0].text


def test_the_retained_tail_is_at_least_retain_tokens_and_starts_at_a_balanced_cut():
    session = long_session()
    run(engine_for(session).compact_now(window=10_000))
    tail = session.nodes[1:]
    assert sum(session.node_tokens(s) for s in tail) >= SETTINGS.retain_tokens
    assert session.tool_pairing_balanced_before(tail[0])


def test_a_plan_whose_region_splits_a_tool_call_from_its_result_writes_nothing():
    """The engine refuses a region that would end between a call and its result (a planning
    bug) before it logs anything of the pass; the fold would refuse the checkpoint anyway, but
    only after the pass's start, plan and summary were logged."""
    session = long_session()
    engine = engine_for(session)
    plan = engine.backend.plan(session, retain_tokens=60, focus=None, reason="manual")
    assert plan is not None
    region = plan.regions[0]
    asks = next(  # the first assistant message that calls a tool, inside the region
        s
        for s in region.shadowed_seqs
        if session.node_message(s) is not None and session.node_message(s).tool_calls()
    )
    cut = region.shadowed_seqs[: region.shadowed_seqs.index(asks) + 1]
    split = dataclasses.replace(plan, regions=(msgspec.structs.replace(region, shadowed_seqs=cut),))
    events = len(session.events)
    with pytest.raises(CompactionError, match="split tool call"):
        run(engine.run_pass(split, turn=None))
    assert len(session.events) == events


def test_a_second_pass_merges_the_previous_checkpoint_instead_of_nesting_it():
    session = long_session()
    engine = engine_for(session)
    run(engine.compact_now(window=10_000))
    for i in range(4):
        append_chat_turn(session, f"later question {i}", f"later answer {i}")
    run(engine.compact_now(window=10_000))
    checkpoint = session.events[session.nodes[0]]
    text = checkpoint.data.content[0].text
    assert text.count("<compacted-summary>") == 1
    assert "module_0" in text and "later question 0" in text


def test_a_failed_summary_ends_the_bracket_with_an_error_and_leaves_the_surface_alone():
    session = long_session()
    nodes = list(session.nodes)
    with pytest.raises(CompactionError, match="exploded"):
        run(engine_for(session, FailingSummarizer()).compact_now(window=10_000))
    end = session.events[-1]
    assert isinstance(end, CompactionEndEvent) and "exploded" in end.data.error
    assert session.nodes == nodes


def test_the_inflation_guard_commits_nothing_when_the_summary_would_grow_the_context():
    session = long_session()
    nodes = list(session.nodes)
    with pytest.raises(CompactionRefused, match="inflation guard"):
        run(engine_for(session, HugeSummarizer()).compact_now(window=10_000))
    assert session.nodes == nodes
    assert not any(isinstance(e, CompactionPlanEvent) for e in session.events)


def test_a_live_unmatched_start_makes_compaction_busy():
    session = long_session()
    session.append(CompactionStart(compaction_id="stuck", pass_id="stuck", turn=None))
    with pytest.raises(CompactionBusy, match="stuck"):
        run(engine_for(session).compact_now(window=10_000))


def test_a_dead_start_from_a_crashed_lifecycle_blocks_nothing(tmp_path):
    from dsh.store import JsonlStore

    store = JsonlStore(tmp_path)
    session = Session(store.create(cwd="/w"))
    for i in range(6):
        append_tool_turn(session, f"p{i}", calls=[("read_file", "{}", "x" * 400)])
    session.append(CompactionStart(compaction_id="dead", pass_id="dead", turn=None))
    session.close()
    reopened = Session.open(store, session.id, writable=True)
    engine = engine_for(reopened)
    assert engine.live_orphan() is None  # end-seed pending: the start is of a dead lifecycle
    ok, text = run(run_compact_command(engine, window=10_000))
    assert ok and text.startswith("Compacted ")
    assert engine.live_orphan() is None


def test_manual_compaction_is_refused_while_a_turn_is_open():
    session = long_session()
    from dsh.events import TurnStart

    session.append(TurnStart(turn=99))
    with pytest.raises(CompactionBusy, match="turn is running"):
        run(engine_for(session).compact_now(window=10_000))


def test_compact_command_logs_run_and_done_citing_the_summary_seq():
    session = long_session()
    ok, text = run(run_compact_command(engine_for(session), window=10_000, focus="module_3"))
    assert ok
    done = next(e for e in session.events if isinstance(e, CommandDoneEvent))
    summary = next(e for e in session.events if isinstance(e, CompactionSummaryEvent))
    assert done.data.source_event_seq == summary.seq
    items = len(summary.data.shadowed_seqs)
    assert text == f"Compacted {items} history items (~{summary.data.shadowed_token_count} tokens)"
    assert done.data.text == text
    run_event = next(e for e in session.events if event_type_of(e) == "command/run")
    assert run_event.data.args == "module_3"
    assert "module_3" in summary.data.summary


def test_compact_command_on_a_fresh_session_says_why_nothing_is_compactable():
    """ "No compactable history yet." said nothing of why: the one turn is in the recent tail
    every pass keeps verbatim (the answer gives its size, the tail's and the window's)."""
    session = new_session(MemoryStore())
    append_chat_turn(session, "hi", "hello")
    ok, text = run(run_compact_command(engine_for(session), window=10_000))
    assert ok and text == (
        "Nothing to compact yet: all 19 tokens of uncompacted history are in the recent tail "
        "a pass keeps verbatim (at least 60 tokens); the next request is under 1% of the "
        "10,000-token window, and compaction runs by itself at 80%."
    )
    done = next(e for e in session.events if isinstance(e, CommandDoneEvent))
    assert done.data.source_event_seq is None and done.data.text == text


def test_compact_command_on_a_session_without_history_says_there_is_none():
    session = new_session(MemoryStore())
    ok, text = run(run_compact_command(engine_for(session), window=10_000))
    assert ok and text == NOTHING_TO_COMPACT == "No compactable history yet."


def test_the_pruner_replaces_one_oversized_result_with_head_marker_and_tail():
    session = new_session(MemoryStore())
    big = "HEAD" + "x" * 20_000 + "TAIL"
    turn = append_tool_turn(session, calls=[("bash", "{}", big)])
    settings = msgspec.structs.replace(
        SETTINGS, prune_threshold_chars=1000, prune_head_chars=100, prune_tail_chars=50
    )
    assert prune_tool_results(session, settings) == 1
    prune, replacement = session.events[-2], session.events[-1]
    original = turn.results[0]
    assert isinstance(prune, CompactionPruneEvent) and prune.data.shadowed_seqs == (original,)
    assert prune.data.shadowed_token_count == message_tokens(
        surface_message(session.events[original])
    )
    assert isinstance(replacement, ToolResultEvent)
    assert replacement.surface_op == ReplaceOp(start=original, end=original)
    text = replacement.data.message.content[0].content[0].text
    assert text.startswith("HEAD") and text.endswith("TAIL") and "pruned" in text
    assert len(text) < 300
    assert replacement.seq in session.nodes and original not in session.nodes


# ---- through the loop -----------------------------------------------------------------------


def loop_with_compaction(harness: Harness, script, *, window: int, settings=SETTINGS):
    # Entry n answers the n-th model call counted in the log: pad for calls already logged.
    logged = sum(
        event_type_of(e) in ("assistant/message", "request/error") for e in harness.session.events
    )
    agent = harness.agent([{"text": "(earlier)"}] * logged + list(script), context_window=window)
    engine = engine_for(harness.session, settings=settings)
    pre_step, overflow = compaction_hooks(engine)
    agent.pre_step_hooks.append(pre_step)
    agent.overflow_handler = overflow
    return agent, engine


def test_pressure_compaction_runs_at_pre_step_before_the_step_input(harness: Harness):
    filler = "lorem ipsum " * 60
    script = [{"text": f"answer {i} {filler}"} for i in range(8)]
    agent, _ = loop_with_compaction(harness, script, window=3000)
    for i in range(8):
        run(agent.run_turn(f"question {i} {filler}"))
    events = harness.session.events
    starts = [e for e in events if isinstance(e, CompactionStartEvent)]
    assert starts, "the window is small enough that pressure must compact"
    for start in starts:
        before = event_type_of(events[start.seq - 1])
        assert before == "turn/start"
        assert start.data.turn is not None
        after_end = next(e for e in events[start.seq :] if isinstance(e, CompactionEndEvent)).seq
        assert event_type_of(events[after_end + 1]) == "step/start"
    assert all(e.data.turn is not None for e in starts)


def test_overflow_compacts_inside_the_open_step_and_the_retry_answers(harness: Harness):
    for i in range(5):
        append_tool_turn(harness.session, f"p{i}", calls=[("read_file", "{}", "y" * 600)])
    script = [
        {"error": {"code": "CONTEXT_WINDOW_EXCEEDED", "message": "prompt is too long"}},
        {"text": "COMPACTION RECOVERED"},
    ]
    agent, _ = loop_with_compaction(harness, script, window=1_000_000)
    result = run(agent.run_turn("go on"))
    assert result.reason == "completed" and result.text == "COMPACTION RECOVERED"
    types = [event_type_of(e) for e in harness.session.events]
    tail = types[types.index("request/error") :]
    assert tail[:2] == ["request/error", "compaction/start"]
    assert "step/start" not in tail[: tail.index("assistant/message")]
    assert tail[-2:] == ["step/end", "turn/end"]


def test_overflow_retries_are_capped_per_turn(harness: Harness):
    for i in range(5):
        append_tool_turn(harness.session, f"p{i}", calls=[("read_file", "{}", "y" * 600)])
    overflow = {"error": {"code": "CONTEXT_WINDOW_EXCEEDED", "message": "prompt is too long"}}
    agent, _ = loop_with_compaction(harness, [overflow] * 4, window=1_000_000)
    result = run(agent.run_turn("go on"))
    assert result.reason == "error"
    errors = [e for e in harness.session.events if event_type_of(e) == "request/error"]
    assert len(errors) == 2  # the first try and one retry (max_overflow_retries = 1)


def test_guard_refusals_back_off_and_stop_after_three_in_one_crossing(harness: Harness):
    filler = "lorem ipsum " * 60
    agent = harness.agent([{"text": f"a{i}"} for i in range(12)], context_window=1500)
    engine = engine_for(harness.session, HugeSummarizer())
    agent.pre_step_hooks.append(compaction_hooks(engine)[0])
    results = [run(agent.run_turn(f"q{i} {filler}")) for i in range(12)]
    assert all(r.reason == "completed" for r in results)
    ends = [e for e in harness.session.events if isinstance(e, CompactionEndEvent)]
    assert ends and all("inflation guard" in (e.data.error or "") for e in ends)
    # 12 steps over the threshold, but a refused pass waits for a chunk of new stale history
    # (it never re-summarises on every step) and the third refusal ends the attempts
    assert len(ends) == 3
    assert len(engine.warnings) == 1 and "refused 3 times" in engine.warnings[0]


def test_checkpoints_are_never_counted_as_user_prompts_by_the_transcript():
    from dsh.transcript import MarkerItem, transcript_items

    session = long_session()
    run(engine_for(session).compact_now(window=10_000))
    items = list(transcript_items(session.events))
    assert sum(isinstance(i, MarkerItem) for i in items) == 1
    assert all(
        not isinstance(session.events[i.seq], UserMessageEvent)
        or not is_checkpoint_event(session.events[i.seq])
        for i in items
        if not isinstance(i, MarkerItem)
    )
