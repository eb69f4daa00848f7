"""A recorded session whose summariser calls failed replays to the same log: the replay
provider fails a compaction call where the recorded one failed (a whole pass, one batch of a
pass answered in one call, one stub's own call) and serves every answer to the call that got
it (``dsh.llm.replay_passes``)."""

from __future__ import annotations

from pathlib import Path

from dsh.compaction.prompts import join_pass_answer
from dsh.events import CompactionEndEvent, CompactionSummaryEvent, encode_event
from dsh.llm.replay import ReplayProvider
from dsh.llm.scripted import ScriptedProvider
from tests.compaction import test_one_call, test_resume_and_replay

FAILED = {"error": {"code": "INVALID_RESPONSE", "message": "the model talked about the weather"}}
STATE = "## Goal\n- keep going\n## Current state\n- module read, port noted"


def _same(recorded, replayed) -> None:
    assert [encode_event(e) for e in replayed.events] == [encode_event(e) for e in recorded.events]


def test_a_basic_pass_whose_summary_call_failed_fails_again_in_the_replay(tmp_path: Path):
    entries = [{"text": f"answer {i} " + "words " * 100} for i in range(5)]
    summaries = [FAILED, *[{"text": test_resume_and_replay.SUMMARY_TEXT}] * 5]
    recorded = test_resume_and_replay._drive(
        test_resume_and_replay.MemoryStore(),
        ScriptedProvider(entries, summaries=summaries),
        tmp_path,
    )
    ends = [e.data.error for e in recorded.events if isinstance(e, CompactionEndEvent)]
    assert ends[0] == "summary failed: INVALID_RESPONSE: the model talked about the weather"
    assert any(error is None for error in ends[1:])  # a later pass landed
    replay = ReplayProvider(list(recorded.events), name="scripted", model="m")
    _same(
        recorded,
        test_resume_and_replay._drive(test_resume_and_replay.MemoryStore(), replay, tmp_path),
    )


def test_a_one_call_pass_that_failed_and_a_stub_call_that_failed_replay_the_same(tmp_path: Path):
    turns = test_one_call.TURNS
    entries = [{"text": f"answer {i} " + "words " * 100} for i in range(turns)]
    # the first pass's one call fails, then its first stub's own call: a pointer stub
    summaries = [FAILED, FAILED, *[{"text": STATE}] * 3 * turns]
    recorded = test_one_call._drive(ScriptedProvider(entries, summaries=summaries), tmp_path)
    logged = [e.data for e in recorded.events if isinstance(e, CompactionSummaryEvent)]
    assert any(s.degraded == "fallback" for s in logged)  # the failed stub call
    first = [s for s in logged if s.pass_id == logged[0].pass_id]
    assert sum(s.llm_stream_call for s in first) >= 2  # asked one by one after the one call
    assert any(s.raw_output and "=== state ===" not in s.raw_output for s in logged)
    replay = ReplayProvider(list(recorded.events), name="scripted", model="m")
    _same(recorded, test_one_call._drive(replay, tmp_path))


def test_a_pass_split_into_calls_whose_last_call_answers_one_part_replays_the_same(
    tmp_path: Path,
):
    """The summariser's output bound splits the first pass into a call for its stubs and one
    for its state alone; that call fails and the state is asked again. A call for one part is
    the part's own call, so the replay serves each answer to the call that got it."""
    bound = test_one_call.REPLAY.stub_tokens * 4 + test_one_call.REPLAY.state_max_tokens
    stubs = [(f"stub {i}", f"Read the module part {i} and noted its port.") for i in range(1, 9)]
    answer = join_pass_answer([*stubs, ("state", STATE)])
    entries = [{"text": f"answer {i} " + "words " * 100} for i in range(test_one_call.TURNS)]
    for summaries in ([{"text": answer}, FAILED], [FAILED, FAILED]):
        scripted = ScriptedProvider(entries, summaries=[*summaries, *[{"text": answer}] * 99])
        recorded = test_one_call._drive(scripted, tmp_path, max_output_tokens=bound - 1)
        replay = ReplayProvider(list(recorded.events), name="scripted", model="m")
        _same(recorded, test_one_call._drive(replay, tmp_path, max_output_tokens=bound - 1))
