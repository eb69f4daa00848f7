"""The summary cache behind every session list: never stale (each cached summary equals a fresh
``summarize`` of the whole log, whatever was appended, cut, replaced or deleted in between), a
repeat listing reads only what was appended, and a bad or unwritable cache is no error."""

from __future__ import annotations

import itertools
import os
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsh.events import SessionTitle, encode_event
from dsh.store import JsonlStore, MemoryStore, SessionHeader, SqliteStore
from dsh.store import appended as appended_module
from dsh.store.base import encode_header
from dsh.store.derived import summary_cache_path
from dsh.store.integrity import sealed_lines
from dsh.surface import Session
from dsh.transcript.listing import session_summaries
from dsh.transcript.summary_cache import load_cache
from dsh.transcript.titles import TITLE_CHARS, WIDEST_TITLE_CHARS, SessionSummary, summarize
from tests.helpers import FIXED_TIME, append_chat_turn

Store = JsonlStore | SqliteStore


def fresh(store: Store, header: SessionHeader, title_chars: int = TITLE_CHARS) -> SessionSummary:
    log = store.open(header.id)
    try:
        return summarize(header, log.events, title_chars=title_chars)
    finally:
        log.close()


def cache_path(store: Store) -> Path:
    return summary_cache_path(store.home, "jsonl" if isinstance(store, JsonlStore) else "sqlite")


def assert_never_stale(store: Store) -> None:
    """Every session's listed summary, and every cache entry of a stored session, equal a fresh
    summary of its whole log."""
    headers = {h.id: h for h in store.list()}
    for summary in session_summaries(store):
        assert summary == fresh(store, headers[summary.id])
    for session_id, entry in load_cache(cache_path(store)).items():
        for width in WIDTHS:  # the terminal's titles and the web's wider ones
            expected = fresh(store, headers[session_id], width)
            assert entry.fold.summary(headers[session_id], width) == expected


class Rig:
    """Up to three sessions written by this process, with a clock that moves on as a real one
    does (each event a millisecond later), and the ways a log can change under a listing."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.clock = itertools.count(FIXED_TIME)
        self.ids: dict[int, str] = {}
        self.writers: dict[int, Session] = {}

    def now(self) -> int:
        return next(self.clock)

    def writer(self, slot: int) -> Session:
        if slot in self.writers:
            return self.writers[slot]
        if slot in self.ids:
            log = self.store.open(self.ids[slot], writable=True)
        else:
            log = self.store.create(cwd=f"/work/{slot}")
            self.ids[slot] = log.id
        self.writers[slot] = Session(log, clock=self.now)
        return self.writers[slot]

    def stop(self, slot: int) -> str | None:
        """Close the slot's writer; its session id (None: no session yet)."""
        if slot in self.writers:
            self.writers.pop(slot).close()
        return self.ids.get(slot)

    def close(self) -> None:
        for slot in list(self.writers):
            self.stop(slot)

    def turn(self, slot: int, prompt: str) -> None:
        append_chat_turn(self.writer(slot), prompt, "ok")

    def title(self, slot: int, text: str) -> None:
        self.writer(slot).append(SessionTitle(title=text))

    def replace(self, slot: int, keep: int) -> None:
        """The log rewritten with its first ``keep`` events: JSONL as repair and import do (a
        new file renamed over the old), SQLite as migrate does (rows deleted, added again)."""
        session_id = self.stop(slot)
        if session_id is None:
            return
        log = self.store.open(session_id)
        header, events = log.header, list(log.events)[:keep]
        log.close()
        if isinstance(self.store, JsonlStore):
            path = self.store.log_path(session_id)
            staged = path.with_name("staged")
            staged.write_bytes(sealed_lines([encode_header(header), *map(encode_event, events)]))
            os.replace(staged, path)
        else:
            self.store.remove_session(session_id)
            self.store.create(
                cwd=header.cwd, session_id=session_id, created_at=header.created_at, seed=events
            ).close()

    def cut(self, slot: int, events: int) -> None:
        """Drop the last events where they are stored (a failed write undone, SQLite repair)."""
        session_id = self.stop(slot)
        if session_id is None:
            return
        if isinstance(self.store, JsonlStore):
            path = self.store.log_path(session_id)
            lines = path.read_bytes().splitlines(keepends=True)
            kept = lines[: max(1, len(lines) - events)]
            with path.open("r+b") as handle:
                handle.truncate(sum(map(len, kept)))
        else:
            with sqlite3.connect(self.store.path) as db:
                (count,) = db.execute(
                    "SELECT count(*) FROM events WHERE session_id = ?", (session_id,)
                ).fetchone()
                db.execute(
                    "DELETE FROM events WHERE session_id = ? AND seq >= ?",
                    (session_id, max(0, count - events)),
                )

    def torn(self, slot: int) -> None:
        """A crash mid-write leaves half a line (JSONL); the next writer moves it aside."""
        session_id = self.stop(slot)
        if session_id is not None and isinstance(self.store, JsonlStore):
            with self.store.log_path(session_id).open("ab") as handle:
                handle.write(b'{"type":"turn/start","seq":')

    def delete(self, slot: int) -> None:
        session_id = self.stop(slot)
        if session_id is None:
            return
        del self.ids[slot]
        if isinstance(self.store, JsonlStore):
            shutil.rmtree(self.store.session_dir(session_id))
        else:
            self.store.remove_session(session_id)

    def listing(self, everything: bool, width: int) -> None:
        headers = self.store.list()
        chosen = headers if everything else headers[:1]
        summaries = session_summaries(self.store, None if everything else chosen, title_chars=width)
        assert [s.id for s in summaries] == [h.id for h in chosen]
        for summary, header in zip(summaries, chosen, strict=True):
            assert summary == fresh(self.store, header, width)


slots = st.integers(min_value=0, max_value=1)
texts = st.text(st.characters(codec="utf-8"), max_size=70) | st.text(
    st.characters(categories=["L", "Nd", "Zs"]), min_size=61, max_size=120
)
"""Short texts of any character, and long ones that the terminal's and the web's cuts tell apart."""
changes = st.one_of(
    st.tuples(st.just("turn"), slots, texts),
    st.tuples(st.just("title"), slots, texts),
    st.tuples(st.just("replace"), slots, st.integers(min_value=0, max_value=20)),
    st.tuples(st.just("cut"), slots, st.integers(min_value=1, max_value=8)),
    st.tuples(st.just("torn"), slots),
    st.tuples(st.just("delete"), slots),
)
WIDTHS = (TITLE_CHARS, WIDEST_TITLE_CHARS)
listings = st.tuples(
    st.sampled_from([None, "every session", "one session"]), st.sampled_from(WIDTHS)
)
"""After a change: no listing, a listing of every session, or of the first one only; with the
terminal's titles or the web's wider ones."""


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    backend=st.sampled_from(["jsonl", "sqlite"]),
    steps=st.lists(st.tuples(changes, listings), min_size=1, max_size=20),
)
def test_cached_summaries_always_equal_a_fresh_summary_of_the_whole_log(
    tmp_path_factory: pytest.TempPathFactory, backend: str, steps: list[tuple]
) -> None:
    home = tmp_path_factory.mktemp("home")
    store: Store = JsonlStore(home) if backend == "jsonl" else SqliteStore(home)
    rig = Rig(store)
    try:
        for (name, *args), (listing, width) in steps:
            getattr(rig, name)(*args)
            if listing is not None:
                rig.listing(everything=listing == "every session", width=width)
        rig.close()  # a writer reopened after a torn line or a cut appends its repairs first
        assert_never_stale(store)
        assert set(load_cache(cache_path(store))) == {h.id for h in store.list()}
    finally:
        rig.close()


@pytest.fixture(params=["jsonl", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    return JsonlStore(tmp_path) if request.param == "jsonl" else SqliteStore(tmp_path)


def filled(store: Store, sessions: int = 3) -> list[Session]:
    made = []
    for n in range(sessions):
        session = Session(store.create(cwd="/work/project"))
        append_chat_turn(session, f"question {n}", "ok")
        session.sync()
        made.append(session)
    return made


@pytest.fixture
def decoded(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Seqs of the events the listings decode; a whole-log load fails the test."""
    seqs: list[int] = []
    real_lines, real_events = appended_module.decode_event_lines, appended_module.decode_events

    def lines(*args, **kwargs):  # type: ignore[no-untyped-def]
        events = real_lines(*args, **kwargs)
        seqs.extend(e.seq for e in events)
        return events

    def events(*args, **kwargs):  # type: ignore[no-untyped-def]
        events = real_events(*args, **kwargs)
        seqs.extend(e.seq for e in events)
        return events

    def no_whole_load(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise AssertionError("a listing loaded a whole log")

    monkeypatch.setattr(appended_module, "decode_event_lines", lines)
    monkeypatch.setattr(appended_module, "decode_events", events)
    monkeypatch.setattr(JsonlStore, "open", no_whole_load)
    monkeypatch.setattr(SqliteStore, "open", no_whole_load)
    yield seqs


def test_a_repeat_listing_decodes_only_what_was_appended(store: Store, decoded: list[int]) -> None:
    sessions = filled(store)
    first = session_summaries(store)
    assert len(decoded) == sum(s.events for s in first) == 18
    decoded.clear()
    assert session_summaries(store) == first and decoded == []
    append_chat_turn(sessions[1], "more", "ok")
    sessions[1].append(SessionTitle(title="renamed"))
    sessions[1].sync()
    listed = session_summaries(store)
    assert decoded == list(range(6, 13))  # the new turn and the title, nothing before
    assert listed[1].title == "renamed" and listed[1].turns == 2 and listed[1].events == 13
    assert listed[0] == first[0] and listed[2] == first[2]
    for session in sessions:
        session.close()


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"\x00\xff not json",
        b'{"format": "dsh-session-summaries", "version": 1, "sessions": {"x": ',
        b'{"format": "dsh-session-summaries", "version": 999, "sessions": {}}',
        b'{"format": "someone-elses", "version": 1, "sessions": {}}',
        b'{"format": "dsh-session-summaries", "version": 1, "sessions": {}, "more": 1}',
        b"[1, 2, 3]",
    ],
)
def test_a_corrupt_or_foreign_cache_file_is_ignored_and_rebuilt(
    store: Store, content: bytes
) -> None:
    sessions = filled(store, 2)
    expected = session_summaries(store)
    path = cache_path(store)
    path.write_bytes(content)
    assert session_summaries(store) == expected
    assert set(load_cache(path)) == {s.id for s in sessions}
    for session in sessions:
        session.close()


def test_a_cache_entry_that_does_not_fit_its_log_is_read_again(store: Store) -> None:
    """A cache from somewhere else (another home's, an old copy): every position is checked
    against its log, so a wrong one costs a read, never a wrong summary."""
    sessions = filled(store, 2)
    session_summaries(store)
    path = cache_path(store)
    good = path.read_bytes()
    append_chat_turn(sessions[0], "later", "ok")
    sessions[0].append(SessionTitle(title="later title"))
    sessions[0].sync()
    session_summaries(store)
    path.write_bytes(good.replace(b'"seq":5', b'"seq":3'))  # positions that lie
    assert_never_stale(store)
    for session in sessions:
        session.close()


def test_an_unwritable_cache_lists_without_caching(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = JsonlStore(tmp_path)
    for session in filled(store, 2):
        session.close()
    expected = [fresh(store, h) for h in store.list()]
    shutil.rmtree(tmp_path / "cache", ignore_errors=True)  # the sessions' settings records
    (tmp_path / "cache").write_bytes(b"a file where the cache directory would be")
    assert session_summaries(store) == expected
    (tmp_path / "cache").unlink()

    def refused(*args: object) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(os, "replace", refused)  # a home that cannot take a new file
    assert session_summaries(store) == expected
    assert not cache_path(store).exists()
    assert [p.name for p in (tmp_path / "cache").iterdir()] == []  # no temporary left behind


def test_a_listing_of_every_session_forgets_the_deleted_ones(store: Store) -> None:
    sessions = filled(store, 3)
    for session in sessions:
        session.close()
    session_summaries(store)
    gone = sessions[0].id
    if isinstance(store, JsonlStore):
        shutil.rmtree(store.session_dir(gone))
    else:
        store.remove_session(gone)
    only = [h for h in store.list() if h.id == sessions[1].id]
    session_summaries(store, only)  # a partial listing keeps what it did not look at
    assert gone in load_cache(cache_path(store))
    session_summaries(store)
    assert set(load_cache(cache_path(store))) == {sessions[1].id, sessions[2].id}


def test_a_session_that_stops_loading_is_listed_as_unreadable_and_not_cached(
    tmp_path: Path,
) -> None:
    store = JsonlStore(tmp_path)
    (session,) = filled(store, 1)
    session.close()
    session_summaries(store)
    with store.log_path(session.id).open("ab") as handle:
        handle.write(b'{"type": garbage\n')
    for _ in range(2):
        (summary,) = session_summaries(store)
        assert summary.title.startswith("(unreadable: ") and summary.events == 0
        assert load_cache(cache_path(store)) == {}


def test_a_store_without_positions_is_summarised_whole() -> None:
    store = MemoryStore()
    with Session(store.create(cwd="/work/project")) as session:
        append_chat_turn(session, "in memory", "ok")
    (summary,) = session_summaries(store)
    assert summary.title == "in memory" and summary.turns == 1


def test_a_session_edited_in_place_after_it_was_cached_is_listed_as_unreadable(
    tmp_path: Path,
) -> None:
    """The audit's case: a byte of an early line changed in place (same size) after a listing
    cached the session; the next listing must not show it as healthy."""
    store = JsonlStore(tmp_path)
    (session,) = filled(store, 1)
    session.close()
    session_summaries(store)
    path = store.log_path(session.id)
    data = bytearray(path.read_bytes())
    second = data.index(b"\n") + 1  # the first event line, well before the last one
    data[second + 40] ^= 0x01
    stat = path.stat()
    path.write_bytes(bytes(data))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    (summary,) = session_summaries(store)
    assert summary.title.startswith("(unreadable: ") and "checksum" in summary.title
