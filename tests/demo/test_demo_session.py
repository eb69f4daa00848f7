"""The keyless demo shows the headline feature: it crosses the compaction threshold of its small
window, a recallable pass lands, and the scripted model gets a compacted detail back with
history_search / history_read. Real tools, a real JSONL store, the real compaction engine."""

from __future__ import annotations

import pytest

from dsh.agent.request import rebuild_requests
from dsh.demo import DEMO_WINDOW, PROMPTS, demo_settings, prepare_workspace, run_demo
from dsh.demo.narration import Narrator
from dsh.events import (
    CompactionEndEvent,
    CompactionPlanEvent,
    ToolCallEvent,
    ToolResultEvent,
    encode_json,
)
from dsh.store import open_store
from dsh.transcript import COMPACTION_MARKER, render_human_transcript

TRACEBACK_DETAIL = "line 3, in <module>"
"""In the failing test's traceback (turn 1), but not in the index stub that replaces it."""


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory):
    home = tmp_path_factory.mktemp("home")
    lines: list[str] = []
    # Module-scoped: it runs before the per-test private home is set, so it names its own (the
    # demo's compaction keeps derived files, span and anchor index, in the home).
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DSH_HOME", str(home))
        session, results = run_demo(
            open_store(home),
            workspace=prepare_workspace(tmp_path_factory.mktemp("ws")),
            on_event=Narrator(lines.append),
        )
    return session, results, lines


def _result_text(event: ToolResultEvent) -> str:
    block = event.data.message.content[0]
    return "".join(b.text for b in block.content)


def _results_of(session, name: str) -> list[ToolResultEvent]:
    ids = {e.data.call_id for e in session.of_type(ToolCallEvent) if e.data.name == name}
    return [
        e
        for e in session.of_type(ToolResultEvent)
        if e.surface_op == "append" and e.data.message.content[0].tool_call_id in ids
    ]


def test_every_demo_turn_completes(demo_run):
    _, results, _ = demo_run
    assert [r.reason for r in results] == ["completed"] * len(PROMPTS)


def test_the_demo_window_is_small_enough_to_compact_and_valid():
    settings = demo_settings()
    assert settings.provider.context_window == DEMO_WINDOW
    assert settings.compaction.backend == "recallable"


def test_a_recallable_pass_lands_with_several_regions(demo_run):
    session, _, _ = demo_run
    plans = session.of_type(CompactionPlanEvent)
    assert len(plans) == 1 and len(plans[0].data.regions) >= 2
    ends = session.of_type(CompactionEndEvent)
    assert len(ends) == len(plans[0].data.regions)
    assert all(e.data.error is None for e in ends)


def test_the_model_recalls_a_detail_its_context_no_longer_held(demo_run):
    session, _, _ = demo_run
    searches = _results_of(session, "history_search")
    reads = _results_of(session, "history_read")
    assert len(searches) == 1 and len(reads) == 1
    for result in (*searches, *reads):
        assert not result.data.message.content[0].is_error, _result_text(result)
    assert TRACEBACK_DETAIL in _result_text(reads[0])
    # what the model was sent just before it searched: the detail was compacted away
    search_call = next(e for e in session.of_type(ToolCallEvent) if e.data.name == "history_search")
    before = [req for seq, req in rebuild_requests(session.events) if seq < search_call.seq][-1]
    assert TRACEBACK_DETAIL not in encode_json(list(before.messages)).decode()


def test_the_transcript_shows_the_marker_and_the_recalled_answer(demo_run):
    session, results, _ = demo_run
    transcript = render_human_transcript(session.events)
    assert transcript.count(COMPACTION_MARKER) == 1
    assert TRACEBACK_DETAIL in results[-1].text
    assert results[-1].text in transcript


def test_the_narration_shows_progress_marker_and_recall_in_order(demo_run):
    _, _, lines = demo_run
    text = "\n".join(lines)
    progress = [line for line in lines if "compacting · " in line]
    assert progress and progress[-1].strip().endswith("regions")
    marker = next(i for i, line in enumerate(lines) if COMPACTION_MARKER in line)
    search = next(i for i, line in enumerate(lines) if "recall: history_search" in line)
    read = next(i for i, line in enumerate(lines) if "recall: history_read" in line)
    assert lines.index(progress[0]) < marker < search < read
    assert "AssertionError: add(2, 3) returned -1" in text
