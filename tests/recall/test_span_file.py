"""The span file: lower-cased spans kept on disk, so a search in a new process starts warm, and
whatever it holds a search answers exactly as a fresh computation does."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsh.events import CompactionSummary, CompactionSummaryEvent
from dsh.recall import HistorySearchTool, SpanCache, list_checkpoints, search_history
from dsh.recall import span_file as span_file_module
from dsh.recall.span_file import MAGIC, SpanFile
from dsh.surface import Session
from tests.helpers import append_chat_turn, append_tool_turn, new_session
from tests.recall.builders import NEEDLE, bracket, run_tool, two_passes

TEXTS = ["Alpha BETA", "İstanbul straße", "ERR_7731 at /src/Main.py", "ΣΊΣΥΦΟΣ ﬁle"]


def fresh(session: Session, query: str) -> tuple[str, object]:
    output = search_history(session.events, query)
    return output.text, output.meta


def with_file(session: Session, query: str, path: Path, cache: SpanCache | None = None):
    cache = cache if cache is not None else SpanCache()
    cache.use_file(path)
    output = search_history(session.events, query, cache=cache)
    return output.text, output.meta


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_searches_through_span_files_equal_a_fresh_computation_under_appends_and_replaces(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    path = tmp_path_factory.mktemp("spans") / "s.spans"
    session = new_session(_memory())
    memory, kept = SpanCache(), SpanCache()
    kept.use_file(path)  # one process's cache, living across the appends
    turns: list[list[int]] = []
    for step in range(data.draw(st.integers(2, 8), label="steps")):
        text = data.draw(st.sampled_from(TEXTS), label="text") * data.draw(st.integers(1, 3))
        if data.draw(st.booleans(), label="tool"):
            turns.append(append_tool_turn(session, text, calls=[("read_file", "{}", text)]).surface)
        else:
            turns.append(append_chat_turn(session, text, text.upper()).surface)
        on_surface = [t for t in turns if all(seq in session.nodes for seq in t)]
        current = sorted(on_surface, key=lambda t: session.surface.position(t[0]))
        if len(current) >= 2 and data.draw(st.booleans(), label="compact"):
            first = data.draw(st.integers(0, len(current) - 2), label="first")
            span = [seq for turn in current[first : first + 2] for seq in turn]
            kind = data.draw(st.sampled_from(["index", "state"]), label="kind")
            made = bracket(session, span, f"summary {step}", kind=kind, compaction_id=f"k{step}")
            assert made.node is not None
            turns.append([made.node])
        query = data.draw(
            st.sampled_from(
                [
                    "alpha",
                    "İ",
                    "i̇stanbul",
                    "STRASSE",
                    "straße",
                    "7731 at",
                    "σίσυφος",
                    "summary",
                    "zzz",
                    "beta alpha",
                ]
            ),
            label="query",
        )
        expected = fresh(session, query)
        assert search_history(session.events, query, cache=memory).text == expected[0]
        assert with_file(session, query, path, kept) == expected
        assert with_file(session, query, path) == expected  # a new process, reading the file


def _memory():
    from dsh.store import MemoryStore

    return MemoryStore()


def test_a_new_process_reads_the_spans_instead_of_rendering_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    passes = two_passes()
    path = tmp_path / "s.spans"
    first = with_file(passes.session, NEEDLE, path)
    assert path.read_bytes().startswith(MAGIC)
    rendered: list[int] = []
    original = span_file_module.SpanFile.put
    monkeypatch.setattr(
        span_file_module.SpanFile, "put", lambda self, *a: rendered.append(1) or original(self, *a)
    )
    from dsh.recall import render

    monkeypatch.setattr(render, "_render_span", _must_not_render)
    assert with_file(passes.session, NEEDLE, path) == first
    assert rendered == []


def _must_not_render(*args: object) -> object:
    raise AssertionError("a span in the span file was rendered again")


def test_a_damaged_torn_or_foreign_file_is_never_believed(tmp_path: Path) -> None:
    passes = two_passes()
    path = tmp_path / "s.spans"
    expected = fresh(passes.session, NEEDLE)
    assert with_file(passes.session, NEEDLE, path) == expected
    good = path.read_bytes()
    at = good.index(NEEDLE.lower().encode())
    path.write_bytes(good[:at] + b"X" + good[at + 1 :])  # a flipped byte in the stored text
    assert with_file(passes.session, NEEDLE, path) == expected
    path.write_bytes(good[: len(good) - 3])  # a torn last record
    assert with_file(passes.session, NEEDLE, path) == expected
    path.write_bytes(b"dsh-spans 0 00000000\n" + good[len(MAGIC) :])  # another renderer
    assert with_file(passes.session, NEEDLE, path) == expected
    assert path.read_bytes().startswith(MAGIC)  # started again
    path.write_bytes(b"")
    assert with_file(passes.session, NEEDLE, path) == expected


def test_a_span_file_that_cannot_be_written_only_costs_the_rendering(tmp_path: Path) -> None:
    passes = two_passes()
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    path = blocker / "s.spans"
    assert with_file(passes.session, NEEDLE, path) == fresh(passes.session, NEEDLE)
    assert not path.exists()


def test_a_summary_that_changed_under_the_same_seq_is_rendered_again(tmp_path: Path) -> None:
    one, two = two_passes(), two_passes()
    path = tmp_path / "s.spans"
    with_file(one.session, NEEDLE, path)
    other = new_session(_memory())
    append_chat_turn(other, "nothing", "to see")
    append_chat_turn(other, "still", "nothing")
    bracket(other, other.nodes[:2], "other summary", compaction_id="o")
    assert with_file(other, "nothing", path) == fresh(other, "nothing")
    assert with_file(two.session, NEEDLE, path) == fresh(two.session, NEEDLE)


def test_the_search_tool_keeps_one_span_file_per_session(tmp_path: Path) -> None:
    passes = two_passes()
    tool = HistorySearchTool(span_dir=tmp_path)
    output = run_tool(tool, {"query": NEEDLE}, passes.session)
    assert NEEDLE in output.text
    assert os.listdir(tmp_path) == [f"{passes.session.id}.spans"]
    again = run_tool(HistorySearchTool(span_dir=tmp_path), {"query": NEEDLE}, passes.session)
    assert again.text == output.text


def test_lowered_and_message_agree_with_the_rendered_span_when_read_from_the_file(
    tmp_path: Path,
) -> None:
    passes = two_passes()
    events = passes.session.events
    path = tmp_path / "s.spans"
    with_file(passes.session, NEEDLE, path)
    for checkpoint in list_checkpoints(events):
        reader = SpanCache()
        reader.use_file(path)
        rendered = SpanCache().span(events, checkpoint)
        assert reader.lowered(events, checkpoint) == tuple(m.lower() for m in rendered)
        second = SpanCache()
        second.use_file(path)
        second.matches(events, checkpoint, "a")
        assert [second.message(events, checkpoint, i) for i in range(len(rendered))] == list(
            rendered
        )
    reader.use_file(None)
    assert reader._file is None


def test_span_file_reads_once(tmp_path: Path) -> None:
    passes = two_passes()
    path = tmp_path / "s.spans"
    with_file(passes.session, NEEDLE, path)
    spans = SpanFile(path)
    summary = list_checkpoints(passes.session.events)[0].summary
    assert spans.get(summary) is not None
    path.unlink()
    assert spans.get(summary) is not None  # already read: the mapping stays valid


def _summary(seq: int) -> CompactionSummaryEvent:
    data = CompactionSummary(
        compaction_id=f"k{seq}",
        summary="s",
        shadowed_range=(0, 0),
        shadowed_seqs=(0,),
        shadowed_token_count=1,
        provider="p",
        model="m",
    )
    return CompactionSummaryEvent(seq=seq, time=0, data=data)


def test_queued_spans_beyond_the_flush_size_are_written_before_the_search_ends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(span_file_module, "FLUSH_BYTES", 1)
    path = tmp_path / "s.spans"
    writer = SpanFile(path)
    writer.put(_summary(3), (1,), ("one",))
    assert SpanFile(path).get(_summary(3)) is not None  # written without a flush
    writer.flush()  # nothing queued: nothing written
    assert path.read_bytes().count(b"one") == 1


def test_a_search_writes_the_spans_it_lowered_in_one_write(tmp_path: Path, monkeypatch) -> None:
    passes = two_passes()
    writes: list[int] = []
    original = SpanFile._append
    monkeypatch.setattr(SpanFile, "_append", lambda self, b: writes.append(1) or original(self, b))
    with_file(passes.session, NEEDLE, tmp_path / "s.spans")
    assert len(list_checkpoints(passes.session.events)) > 1 and writes == [1]


def test_a_hit_in_a_long_message_read_from_the_file_is_the_part_that_holds_it(tmp_path: Path):
    """A message split into parts is stored part by part; a search answered from the file in
    a new process shows the very part a fresh computation shows."""
    session = new_session(_memory())
    long_result = "".join(f"row {n:05d}\n" for n in range(2000)) + "ERR_7731 at the end\n"
    turn = append_tool_turn(session, "dump", calls=[("read_file", "{}", long_result)])
    bracket(session, turn.surface, "summary", kind="index", compaction_id="k1")
    path = tmp_path / "s.spans"
    assert with_file(session, "row 00001", path)[0] == fresh(session, "row 00001")[0]
    answer = with_file(session, "err_7731", path)  # a new cache: read from the file
    assert answer == fresh(session, "err_7731")
    assert "#msg 5]" in answer[0] and "ERR_7731 at the end" in answer[0]
