"""A span or word cache file with a torn last record is repaired by the next write (not grown
behind bytes no reader gets past), and a file being created while another process appends to
it keeps both records."""

from __future__ import annotations

from pathlib import Path

import pytest

from dsh.recall import list_checkpoints
from dsh.recall import span_file as span_file_module
from dsh.recall.span_file import MAGIC, SpanFile, append_records
from dsh.recall.word_file import MAGIC as WORD_MAGIC
from dsh.recall.word_file import WordFile
from dsh.store.frames import frame_bytes, read_frames
from tests.recall.builders import NEEDLE, two_passes
from tests.recall.test_span_file import fresh, with_file
from tests.recall.test_word_file import _session_with_words, through_files


def whole_frames_end(data: bytes, magic: bytes) -> int:
    """Where the file's run of whole records ends."""
    end = len(magic)
    for frame in read_frames(data, len(magic)):
        end = frame.stop
    return end


def test_a_torn_span_file_is_repaired_by_the_next_search_and_stops_growing(
    tmp_path: Path,
) -> None:
    passes = two_passes()
    path = tmp_path / "s.spans"
    expected = fresh(passes.session, NEEDLE)
    assert with_file(passes.session, NEEDLE, path) == expected
    good = path.read_bytes()
    path.write_bytes(good[:-10])  # the last record torn (a full disk, a crash)
    for _ in range(3):  # a search per new process
        assert with_file(passes.session, NEEDLE, path) == expected
        data = path.read_bytes()
        assert len(data) == len(good) and whole_frames_end(data, MAGIC) == len(data)
    spans = SpanFile(path)
    for checkpoint in list_checkpoints(passes.session.events):
        assert spans.get(checkpoint.summary) is not None  # every span read back: warm again


def test_a_torn_word_file_is_repaired_by_the_next_search_and_stops_growing(
    tmp_path: Path,
) -> None:
    session = _session_with_words(checkpoints=3)
    spans = tmp_path / "s.spans"
    words = spans.with_suffix(".words")
    expected = fresh(session, "nightly crash")
    assert through_files(session, "nightly crash", spans) == expected
    good = words.read_bytes()
    words.write_bytes(good[:-7])
    for _ in range(3):
        assert through_files(session, "nightly crash", spans) == expected
        data = words.read_bytes()
        assert len(data) == len(good) and whole_frames_end(data, WORD_MAGIC) == len(data)
    stored = WordFile(words)
    for checkpoint in list_checkpoints(session.events):
        assert stored.get(checkpoint.summary) is not None


@pytest.mark.parametrize("suffix", [".spans", ".words"])
def test_an_empty_cache_file_gets_its_first_line_with_the_first_records(
    tmp_path: Path, suffix: str
) -> None:
    """A file whose creation left nothing (a full disk) is written whole by the next search:
    not records without the first line, thrown away by the read after."""
    session = _session_with_words()
    spans = tmp_path / "s.spans"
    path = spans.with_suffix(suffix)
    path.write_bytes(b"")
    expected = fresh(session, "nightly crash")
    assert through_files(session, "nightly crash", spans) == expected
    data = path.read_bytes()
    magic = MAGIC if suffix == ".spans" else WORD_MAGIC
    assert data.startswith(magic) and len(list(read_frames(data, len(magic)))) == 1


def test_a_file_created_while_another_writer_appends_keeps_both_records(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The interleaving two processes can take: one finds the file missing and creates it, and
    before it writes, the other appends its record. Both records are in the file, whole."""
    path = tmp_path / "race.spans"
    mine = b"".join(frame_bytes(b"h0", b"A" * 5000))
    theirs = b"".join(frame_bytes(b"h1", b"B" * 8000))
    original = span_file_module.write_all
    interleaved: list[int] = []

    def write_all(fd: int, data: bytes | memoryview) -> None:
        if not interleaved:  # the first writer, about to write: the other appends first
            interleaved.append(fd)
            append_records(path, MAGIC, theirs)
        original(fd, data)

    monkeypatch.setattr(span_file_module, "write_all", write_all)
    append_records(path, MAGIC, mine)
    data = path.read_bytes()
    assert data.startswith(MAGIC)
    bodies = sorted(bytes(frame.body) for frame in read_frames(data, len(MAGIC)))
    assert bodies == [b"A" * 5000, b"B" * 8000]
    assert whole_frames_end(data, MAGIC) == len(data)
    assert [p.name for p in tmp_path.iterdir()] == ["race.spans"]  # nothing left aside
