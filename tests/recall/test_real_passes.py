"""Recall over logs written by the real engine, and recall through the real agent loop."""

from __future__ import annotations

import itertools
import re

from dsh.agent import Agent, AgentConfig, system_prompt
from dsh.agent.recall_offer import recall_offer
from dsh.bench.runner import BENCH_ENVIRONMENT
from dsh.compaction import (
    BasicBackend,
    CompactionEngine,
    ExtractiveSummarizer,
    RecallableBackend,
)
from dsh.compaction.pruner import prune_tool_results
from dsh.config import CompactionSettings, RecallSettings
from dsh.events import AssistantMessageEvent, RequestHeaderEvent, ToolResultEvent
from dsh.llm.scripted import ScriptedProvider, parse_script
from dsh.recall import (
    PRIOR_STATE_LABEL,
    RECALL_PROMPT_SECTION,
    list_checkpoints,
    read_checkpoint,
    render_span,
    resolve_checkpoint,
    search_history,
)
from dsh.recall.parts import CONTINUED, PART_CHARS
from dsh.store import MemoryStore
from dsh.surface import Session
from dsh.tools.approval import ApprovalPolicy
from dsh.tools.registry import ToolRegistry, default_tools
from tests.agent.conftest import Harness, run
from tests.compaction.test_recallable import SETTINGS as RECALLABLE
from tests.compaction.test_recallable import long_session
from tests.helpers import append_chat_turn, append_tool_turn, new_session
from tests.recall.builders import NEEDLE, two_passes

SETTINGS = CompactionSettings(backend="basic", retain_tokens=60, chunk_tokens=400, stub_tokens=50)


def engine_for(session) -> CompactionEngine:
    ids = itertools.count(1)
    backend = BasicBackend(ExtractiveSummarizer(), SETTINGS)
    return CompactionEngine(session, backend, SETTINGS, new_id=lambda: f"p{next(ids)}")


def test_text_shadowed_by_a_superseded_basic_checkpoint_is_found_under_its_own_id():
    session = new_session(MemoryStore())
    for i in range(6):
        append_tool_turn(
            session,
            f"step {i}: inspect module_{i}.py",
            calls=[("read_file", f'{{"path":"module_{i}.py"}}', f"value_{i} = {i * 1111}\n" * 20)],
            final=f"module_{i} returns {i}",
        )
    engine = engine_for(session)
    assert run(engine.compact_now(window=10_000)) is not None
    (first,) = list_checkpoints(session.events)
    for i in range(4):
        append_chat_turn(session, f"later question {i}", f"later answer {i}")
    assert run(engine.compact_now(window=10_000)) is not None
    older, newer = list_checkpoints(session.events)
    assert older.id == first.id
    assert older.node.seq in newer.shadowed_seqs  # pass 1's checkpoint is superseded
    assert older.node.seq not in session.nodes

    hits = search_history(session.events, "VALUE_0 = 0", limit=200)
    assert f"[{older.id} #msg 2]" in hits.text
    assert hits.meta is not None and hits.meta["scanned"] == 2

    newer_span = render_span(session.events, newer)
    older_text = older.node.data.text()
    assert newer_span[0] == f"{PRIOR_STATE_LABEL}\n{older_text}"
    page = read_checkpoint(session.events, older.id, 2).text
    assert page.split("\n\n")[1].startswith("Tool result: value_0 = 0")


def test_recall_through_the_agent_loop_lands_as_ordinary_tool_results(tmp_path):
    harness = Harness(tmp_path)
    passes = two_passes(harness.session)
    session = harness.session
    already = sum(isinstance(e, AssistantMessageEvent) for e in session.events)
    nodes_before = list(session.nodes)
    script = [{"text": "(earlier)"}] * already + [
        {
            "text": "Looking it up.",
            "toolCalls": [
                {"name": "history_search", "arguments": {"query": NEEDLE}},
                {
                    "name": "history_read",
                    "arguments": {"checkpoint": passes.state1.id, "offset": 2},
                },
            ],
        },
        {"text": f"The migration failed with {NEEDLE}."},
    ]
    provider = ScriptedProvider(parse_script(script), model="scripted")
    recalled, offer = recall_offer(RecallSettings())
    registry = ToolRegistry([*default_tools(), *recalled])
    agent = Agent(
        session,
        provider,
        registry,
        ApprovalPolicy("read-only"),
        config=AgentConfig(
            provider="scripted",
            model="scripted",
            system=system_prompt(harness.workspace, BENCH_ENVIRONMENT),
            recall=offer,
            context_window=128_000,
            retry_base_delay=0.0,
        ),
        workspace=harness.workspace,
    )
    result = run(agent.run_turn("why did the migration fail?"))
    assert result.reason == "completed" and NEEDLE in result.text
    search_result, read_result = [e for e in session.events if isinstance(e, ToolResultEvent)][-2:]
    assert search_result.surface_op == read_result.surface_op == "append"
    assert search_result.data.error is None and read_result.data.error is None
    assert search_result.data.message.text() == ""
    search_text = search_result.data.message.content[0].content[0].text
    read_text = read_result.data.message.content[0].content[0].text
    assert search_text == search_history(session.events, NEEDLE).text
    assert search_result.data.meta == {"scanned": 4, "matched": 1, "truncated": False}
    assert read_text == read_checkpoint(session.events, passes.state1.id, 2).text
    assert f"Tool result: migration failed: {NEEDLE}" in read_text
    # the recalled bytes are in context at the tail; the compacted prefix did not move
    assert session.nodes[: len(nodes_before)] == nodes_before
    assert read_result.seq in session.nodes and search_result.seq in session.nodes
    header = [e for e in session.events if isinstance(e, RequestHeaderEvent)][-1].data.header
    assert [t["name"] for t in header.tools or ()][-2:] == ["history_read", "history_search"]
    assert header.system is not None and header.system.count(RECALL_PROMPT_SECTION) == 1


def _pruned_then_compacted(middle: str) -> tuple[Session, str]:
    """A session whose first tool result (19,600 characters, ``middle`` in its middle) was
    pruned under pressure, then compacted behind a checkpoint; returns the session and the id."""
    session = new_session(MemoryStore())
    log_text = "".join(f"line {n:05d} ok\n" for n in range(700))
    long_result = log_text + middle + "\n" + log_text
    append_tool_turn(
        session,
        "read the service log",
        calls=[("read_file", '{"path":"logs/service.log"}', long_result)],
        final="the log has one error",
    )
    for i in range(4):
        append_chat_turn(session, f"later question {i}", f"later answer {i}")
    assert SETTINGS.prune_threshold_chars < len(long_result)
    assert prune_tool_results(session, SETTINGS) == 1
    assert middle not in "".join(
        str(session.node_message(seq).text()) for seq in session.nodes
    )  # pruned off the surface
    assert run(engine_for(session).compact_now(window=10_000)) is not None
    (checkpoint,) = list_checkpoints(session.events)
    return session, checkpoint.id


def test_recall_gives_back_what_pruning_cut_from_a_tool_result():
    """Pruning keeps a long tool result's head and tail on the surface; once compacted, the
    checkpoint shadows that pruned copy. history_search and history_read see the original."""
    middle = "MemoryError: arena 7 exhausted while compacting segment 0x19ff"
    session, checkpoint = _pruned_then_compacted(middle)
    hits = search_history(session.events, "arena 7")
    assert hits.meta is not None and hits.meta["matched"] == 1
    assert middle in hits.text
    page = read_checkpoint(session.events, checkpoint, budget_chars=100_000).text
    assert middle in page and "pruned from this tool result" not in page


def test_a_long_original_is_read_in_parts_and_a_search_hit_names_the_part_that_holds_it():
    middle = "MemoryError: arena 7 exhausted while compacting segment 0x19ff"
    session, checkpoint = _pruned_then_compacted(middle)
    messages = render_span(session.events, resolve_checkpoint(session.events, checkpoint))
    parts = [m for m in messages if m.endswith(CONTINUED) or m.startswith("[part ")]
    assert len(parts) == 4
    assert all(len(m) <= PART_CHARS + len("[part 4 of 4]\n" + CONTINUED) for m in messages)
    hits = search_history(session.events, "arena 7")
    (offset,) = re.findall(r"#msg (\d+)\]", hits.text)
    page = read_checkpoint(session.events, checkpoint, offset=int(offset), budget_chars=8000)
    assert middle in page.text


def test_reading_a_state_says_where_the_rest_of_its_folded_range_is():
    """A state's footer names the whole pass's range, its own span is the pass's last chunk: a
    read of it says so and names the index checkpoints that hold the rest (a real 1.5B model
    read the state, saw only the last chunk and guessed)."""
    session = long_session()
    engine = CompactionEngine(
        session, RecallableBackend(ExtractiveSummarizer(), RECALLABLE), RECALLABLE
    )
    result = run(engine.compact_now(window=100_000))
    assert result is not None
    checkpoints = list_checkpoints(session.events)
    state = next(c for c in checkpoints if c.kind == "state")
    stubs = [c.id for c in checkpoints if c.kind == "index"]
    wider = state.summary.data.input_range
    assert wider is not None and wider[0] < state.shadowed_range[0] and stubs
    header = read_checkpoint(session.events, state.id).text.split("\n\n")[0]
    assert f"This state folds #{wider[0]}–#{wider[1]}" in header
    assert f"the messages before #{state.shadowed_range[0]} are behind {', '.join(stubs)}" in header
    stub_header = read_checkpoint(session.events, stubs[0]).text.split("\n\n")[0]
    assert "folds" not in stub_header


def test_a_read_names_the_span_forwards_as_the_footer_does_when_a_superseded_state_leads_it():
    """A second pass's first stub shadows the superseded state (a later seq) and the older tail
    after it: its shadowedRange is surface order (#103–#74 reads backwards). The read's header
    names the span as the footer does, smallest to largest conversation seq (docs/compaction.md,
    "The footer")."""
    session = long_session()
    engine = CompactionEngine(
        session, RecallableBackend(ExtractiveSummarizer(), RECALLABLE), RECALLABLE
    )
    run(engine.compact_now(window=100_000))
    for i in range(8, 12):
        append_tool_turn(session, f"more {i}", calls=[("read_file", "{}", f"more {i}\n" * 60)])
    second = run(engine.compact_now(window=100_000))
    assert second is not None
    first = next(
        c for c in list_checkpoints(session.events) if c.seq == second.checkpoints[0].summary_seq
    )
    start, end = first.shadowed_range
    assert start > end  # the superseded state leads the span: surface order reads backwards
    footer = re.search(r"span #(\d+)–#(\d+);", first.node.data.text())
    assert footer is not None
    header = read_checkpoint(session.events, first.id).text.split("\n\n")[0]
    assert f"shadows conversation span #{footer[1]}–#{footer[2]}:" in header
    assert int(footer[1]) <= int(footer[2])
