"""The summary cache against the store's own rewrites: ``dsh sessions repair`` (JSONL and
SQLite), ``dsh sessions migrate`` there and back, and a JSONL line damaged in place (the file
keeps its size). After any sequence of these and appends, every listed summary equals the one a
whole load gives (``read_whole``: the unreadable title included), and so does every cache entry.

What a position cannot see is left out: a JSONL line changed in place before the cached anchor
once the file has also grown, and a SQLite row changed in place before it (its anchor is its last
row; SQLite rows carry no seal), so SQLite damage is repaired before anything lists it."""

from __future__ import annotations

import itertools
import sqlite3
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsh.errors import DshError
from dsh.events import SessionTitle
from dsh.store import JsonlStore, SqliteStore
from dsh.store.derived import summary_cache_path
from dsh.store.migrate import migrate_sessions
from dsh.store.salvage import salvage_session
from dsh.store.salvage_sqlite import salvage_sqlite_session
from dsh.surface import Session
from dsh.transcript.listing import read_whole, session_summaries
from dsh.transcript.summary_cache import load_cache
from tests.helpers import FIXED_TIME, append_chat_turn

Store = JsonlStore | SqliteStore


class Rig:
    """Two sessions of one store, written by this process, and the rewrites dsh itself does."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.clock = itertools.count(FIXED_TIME)
        self.ids: dict[int, str] = {}
        self.writers: dict[int, Session] = {}

    def writer(self, slot: int) -> Session:
        if slot not in self.writers:
            if slot in self.ids:
                try:
                    log = self.store.open(self.ids[slot], writable=True)
                except DshError:  # damaged: a person runs `dsh sessions repair` first
                    self.repair(slot)
                    log = self.store.open(self.ids[slot], writable=True)
            else:
                log = self.store.create(cwd=f"/work/{slot}")
                self.ids[slot] = log.id
            self.writers[slot] = Session(log, clock=lambda: next(self.clock))
        return self.writers[slot]

    def stop(self, slot: int) -> str | None:
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

    def damage(self, slot: int, back: int) -> None:
        """A byte of the last line changed in place (JSONL), or the body of the row ``back``
        rows from the end broken and at once repaired (SQLite). A position cannot see a change
        in place before its anchor once the file has also grown (``dsh.store.appended``), nor
        a SQLite row changed before its anchor: those are left out (see the module doc)."""
        session_id = self.stop(slot)
        if session_id is None:
            return
        if isinstance(self.store, JsonlStore):
            path = self.store.log_path(session_id)
            lines = path.read_bytes().splitlines(keepends=True)
            if len(lines) < 2:
                return
            lines[-1] = lines[-1].replace(b'"seq"', b'"sEq"', 1)
            path.write_bytes(b"".join(lines))
            return
        with sqlite3.connect(self.store.path) as db:
            (count,) = db.execute(
                "SELECT count(*) FROM events WHERE session_id = ?", (session_id,)
            ).fetchone()
            if count:
                db.execute(
                    "UPDATE events SET body = CAST('{' AS BLOB) WHERE session_id = ? AND seq = ?",
                    (session_id, max(0, count - back)),
                )
        db.close()
        self.repair(slot)

    def repair(self, slot: int) -> None:
        session_id = self.stop(slot)
        if session_id is None:
            return
        if isinstance(self.store, JsonlStore):
            salvage_session(self.store, session_id)
        else:
            salvage_sqlite_session(self.store, session_id)

    def migrate(self) -> None:
        """Every session to the other store and back (each copy checked, then the original
        removed; one that does not load stays), as ``dsh sessions migrate --to`` twice."""
        self.close()
        home = self.store.home
        other: Store = SqliteStore(home) if isinstance(self.store, JsonlStore) else JsonlStore(home)
        for source, target in ((self.store, other), (other, self.store)):
            migrate_sessions(source, target)  # a damaged session stays where it is

    def listing(self, everything: bool) -> None:
        headers = self.store.list()
        chosen = headers if everything else headers[:1]
        summaries = session_summaries(self.store, None if everything else chosen)
        assert summaries == [read_whole(self.store, header) for header in chosen]


slots = st.integers(min_value=0, max_value=1)
changes = st.one_of(
    st.tuples(st.just("turn"), slots, st.text(max_size=30)),
    st.tuples(st.just("title"), slots, st.text(max_size=30)),
    st.tuples(st.just("damage"), slots, st.integers(min_value=1, max_value=12)),
    st.tuples(st.just("repair"), slots),
    st.tuples(st.just("migrate")),
)
listings = st.sampled_from([None, "every session", "one session"])


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    backend=st.sampled_from(["jsonl", "sqlite"]),
    steps=st.lists(st.tuples(changes, listings), min_size=1, max_size=14),
)
def test_cached_summaries_equal_a_whole_load_after_repairs_migrations_and_damage(
    tmp_path_factory: pytest.TempPathFactory, backend: str, steps: list[tuple]
) -> None:
    home: Path = tmp_path_factory.mktemp("home")
    store: Store = JsonlStore(home) if backend == "jsonl" else SqliteStore(home)
    rig = Rig(store)
    try:
        for (name, *args), listing in steps:
            getattr(rig, name)(*args)
            if listing is not None:
                rig.listing(everything=listing == "every session")
        rig.close()
        headers = {h.id: h for h in store.list()}
        for summary in session_summaries(store):
            assert summary == read_whole(store, headers[summary.id])
        cache = summary_cache_path(home, backend)
        for session_id, entry in load_cache(cache).items():
            assert entry.fold.summary(headers[session_id]) == read_whole(store, headers[session_id])
    finally:
        rig.close()
