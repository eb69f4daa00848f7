"""The word file: each span's word index kept on disk, so a word search in a new process reads
it instead of reading every word again, and whatever the file holds (nothing, another format,
a torn or damaged tail) a search answers exactly as a fresh computation does."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsh.recall import SpanCache, list_checkpoints, search_history
from dsh.recall import word_file as word_file_module
from dsh.recall import word_index as word_index_module
from dsh.recall.span_file import summary_key
from dsh.recall.word_file import MAGIC, WordFile
from dsh.recall.word_index import WordIndex
from dsh.store import MemoryStore
from dsh.store.frames import frame_bytes
from dsh.surface import Session
from tests.helpers import append_chat_turn, new_session
from tests.recall.builders import bracket
from tests.recall.test_word_index import query, random_session


def fresh(session: Session, words: str) -> tuple[str, object]:
    output = search_history(session.events, words)
    return output.text, output.meta


def through_files(session: Session, words: str, spans: Path) -> tuple[str, object]:
    """The search as a new process runs it: a new cache on the session's span and word files."""
    cache = SpanCache()
    cache.use_file(spans)
    output = search_history(session.events, words, cache=cache)
    return output.text, output.meta


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_word_searches_through_the_files_equal_a_fresh_computation_whatever_the_file_holds(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    spans = tmp_path_factory.mktemp("recall") / "s.spans"
    words_path = spans.with_suffix(".words")
    session = random_session(data)
    for _ in range(data.draw(st.integers(1, 3), label="searches")):
        asked = data.draw(query, label="query") + " zzqx"  # no literal match: words are looked for
        assert through_files(session, asked, spans) == fresh(session, asked)
        if words_path.exists() and data.draw(st.booleans(), label="damage"):
            stored = bytearray(words_path.read_bytes())
            how = data.draw(st.sampled_from(["cut", "flip", "magic"]), label="how")
            at = data.draw(st.integers(0, len(stored) - 1), label="at")
            if how == "cut":
                del stored[at:]
            elif how == "flip":
                stored[at] ^= 0x41
            else:
                stored[: len(MAGIC)] = b"dsh-words 0 00000000 little4\n"[: len(MAGIC)]
            words_path.write_bytes(bytes(stored))


def test_a_new_process_reads_the_word_indexes_the_first_search_stored_and_builds_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = _session_with_words()
    spans = tmp_path / "s.spans"
    queries = ["crashes of nightly imports", "imports crashing"]
    expected = [fresh(session, words) for words in queries]
    assert through_files(session, queries[0], spans) == expected[0]
    assert spans.with_suffix(".words").read_bytes().startswith(MAGIC)

    def no_build(lowered: object) -> WordIndex:
        raise AssertionError("built an index the word file holds")

    monkeypatch.setattr(word_index_module.WordIndex, "build", no_build)
    assert [through_files(session, words, spans) for words in queries] == expected


def test_a_word_file_of_another_format_is_replaced(tmp_path: Path) -> None:
    session = _session_with_words()
    spans = tmp_path / "s.spans"
    spans.with_suffix(".words").write_bytes(b"dsh-words 0 older format\nrubbish")
    assert through_files(session, "nightly crash", spans) == fresh(session, "nightly crash")
    assert spans.with_suffix(".words").read_bytes().startswith(MAGIC)
    (checkpoint,) = list_checkpoints(session.events)
    assert WordFile(spans.with_suffix(".words")).get(checkpoint.summary) is not None


def test_a_word_search_writes_the_indexes_it_built_in_one_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = _session_with_words(checkpoints=3)
    writes: list[int] = []
    original = word_file_module.append_records
    monkeypatch.setattr(
        word_file_module,
        "append_records",
        lambda *args: writes.append(1) or original(*args),
    )
    through_files(session, "nightly crash", tmp_path / "s.spans")
    assert len(list_checkpoints(session.events)) == 3 and writes == [1]


def test_an_unwritable_word_file_only_means_the_indexes_are_built_again(tmp_path: Path) -> None:
    session = _session_with_words()
    blocked = tmp_path / "not-a-directory"
    blocked.write_text("a file where the cache directory would be")
    spans = blocked / "s.spans"
    assert through_files(session, "nightly crash", spans) == fresh(session, "nightly crash")


def _session_with_words(checkpoints: int = 1) -> Session:
    session = new_session(MemoryStore())
    replies = ["the nightly import crashed again", "nightly imports are slow", "deploy ok"]
    for number in range(checkpoints):
        turns = [append_chat_turn(session, f"q{i}", reply) for i, reply in enumerate(replies)]
        shadowed = [seq for turn in turns for seq in turn.surface]
        bracket(session, shadowed, "## Goal\nx", compaction_id=f"k{number}")
    append_chat_turn(session, "and now?", "next")
    return session


@pytest.mark.parametrize("record", ["header", "sizes"])
def test_a_record_whose_frame_checks_out_but_whose_content_does_not_ends_the_reading(
    tmp_path: Path, record: str
) -> None:
    """A frame's CRC vouches for its bytes, not for what they claim: a header that is not a
    word header, or sizes that do not add up (another layout), stop the reading there and the
    indexes are built again, the search answering as a fresh one."""
    session = _session_with_words()
    spans = tmp_path / "s.spans"
    words_path = spans.with_suffix(".words")
    (checkpoint,) = list_checkpoints(session.events)
    summary = checkpoint.summary
    if record == "header":
        header, body = b"\xa5hello", b""  # msgpack for a string, not a header
    else:
        header = msgspec.msgpack.encode([summary.seq, summary_key(summary), 3, 5, [1]])
        body = b"abc"  # five words claimed, one given; no starts or postings at all
    words_path.write_bytes(MAGIC + b"".join(frame_bytes(header, body)))
    assert WordFile(words_path).get(summary) is None
    assert through_files(session, "nightly crash", spans) == fresh(session, "nightly crash")
