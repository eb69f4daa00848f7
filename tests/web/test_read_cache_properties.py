"""The web's read cache follows a stored session as other processes write it, and every figure
it serves equals a fresh load's, whatever was written in between.

A JSONL log is written by another "process" (a writer in a scratch store of its own, which
resumes the session from the log's complete lines, so it repairs a crashed turn as a real one
would, and appends random turns, tool turns, compaction passes, pruned results, header and
route changes), its bytes landing in the watched log in random pieces: a piece may end inside
a line (a torn write, complete later or never), a batch may arrive a line at a time or many
batches at once. Between the writes the log may also be repaired in place by a writable open
(the torn tail moved aside, the open turn closed), replaced by a shorter copy (what ``dsh
sessions repair`` does: a new file renamed over it) or cut back in place (a failed write undone).
After every piece and every change, the session info, the context panel, the newest history page
and the kept session itself, read through one registry's cache, equal those of a new registry
(a fresh load), and while the log only grew the registry kept the same session object (it
folded the appended events in, never loading the log again). A SQLite session gets the same
checks under appends and in-place cut-backs."""

from __future__ import annotations

import itertools
import os
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsh.store import JsonlStore, SqliteStore
from dsh.surface import Session
from dsh.web.context import session_context
from dsh.web.errors import ApiError
from dsh.web.sessions import SessionRegistry
from tests.agent.log_ops import apply_op, log_ops
from tests.helpers import FIXED_TIME
from tests.web.builders import run_apart
from tests.web.conftest import make_env

writes = st.tuples(
    st.just("write"),
    st.lists(log_ops, min_size=1, max_size=3),
    st.lists(st.floats(0.0, 1.0), max_size=4),  # where the bytes are cut into pieces
    st.booleans(),  # the last piece is never written (the writer died, or is still writing)
)
changes = st.one_of(
    writes,
    st.tuples(st.just("finish")),  # the rest of an unfinished write lands
    st.tuples(st.just("repair")),  # a writable open: torn tail moved aside, open turn closed
    st.tuples(st.just("replace"), st.integers(0, 200)),  # a shorter copy renamed over the log
    st.tuples(st.just("cut"), st.integers(0, 200)),  # cut back in place
)


def session_figures(session: Session) -> tuple[Any, ...]:
    """Everything a read-only session answers with."""
    events = list(session.events)
    nodes = list(session.nodes)
    return (
        session.header,
        events,
        nodes,
        session.replace_generation,
        list(session.replacements),
        session.derive_messages(),
        session.measure(),
        session.request_header,
        session.lifecycle_started,
        {kind: list(session.of_type(kind)) for kind in {type(event) for event in events}},
        [(session.node_tokens(seq), session.tool_pairing_balanced_after(seq)) for seq in nodes],
    )


def kept_session(registry: SessionRegistry, session_id: str) -> Session:
    with registry.readers.held(session_id) as session:
        return session


def served(registry: SessionRegistry, session_id: str) -> tuple[Any, ...]:
    """What the web serves of the stored session (or the error it answers with)."""
    try:
        info = run_apart(registry.info(session_id))
        context = run_apart(session_context(registry, session_id))
        page, last = run_apart(registry.history(session_id, None, 25))
        events = run_apart(registry.events(session_id))
    except ApiError as exc:
        return ("error", exc.status, exc.body())
    with registry.readers.held(session_id) as session:
        kept = session_figures(session)
    return info, context, page, last, list(events), kept


class Log:
    """The watched JSONL log, and the writer in another store whose bytes land in it."""

    def __init__(self, root: Path) -> None:
        self.store = JsonlStore(root / "home")
        self.scratch = root / "scratch"
        self.clock = itertools.count(FIXED_TIME)  # later lines never repeat earlier ones
        writer = Session(self.store.create(cwd="/work/project"), clock=lambda: next(self.clock))
        self.id = writer.id
        writer.close()
        self.path = self.store.log_path(self.id)
        self.unwritten = b""
        """The rest of a write whose first pieces landed."""
        self.steps = 0

    def complete_lines(self) -> bytes:
        data = self.path.read_bytes()
        return data[: data.rfind(b"\n") + 1]

    def written_elsewhere(self, ops: list[tuple[Any, ...]]) -> bytes:
        """The bytes a writer appends to the log's complete lines: it resumes the session
        (repairing a crashed turn) and applies ``ops``."""
        shutil.rmtree(self.scratch, ignore_errors=True)
        store = JsonlStore(self.scratch)
        before = self.complete_lines()
        (self.scratch / "sessions" / self.id).mkdir(parents=True)
        store.log_path(self.id).write_bytes(before)
        writer = Session(store.open(self.id, writable=True), clock=lambda: next(self.clock))
        for op in ops:
            if op[0] != "reopen":
                apply_op(writer, op, self.steps)
            self.steps += 1
        writer.close()
        after = store.log_path(self.id).read_bytes()
        assert after.startswith(before)
        return after[len(before) :]

    def land(self, data: bytes) -> None:
        with self.path.open("ab") as handle:
            handle.write(data)

    def change(self, change: tuple[Any, ...]) -> Iterator[bool]:
        """Apply ``change``, yielding after every piece that lands: True when the log only grew
        since the last yield."""
        kind = change[0]
        if kind == "write":
            if self.unwritten:  # a writer opening the log first repairs a torn tail
                self.store.open(self.id, writable=True).close()
                self.unwritten = b""
                yield False
            data = self.written_elsewhere(change[1])
            cuts = sorted({int(f * len(data)) for f in change[2]} | {0, len(data)})
            pieces = [data[a:b] for a, b in itertools.pairwise(cuts)]
            if change[3] and pieces:
                self.unwritten = pieces.pop()
            for piece in pieces:
                self.land(piece)
                yield True
        elif kind == "finish":
            self.land(self.unwritten)
            self.unwritten = b""
            yield True
        elif kind == "repair":
            self.store.open(self.id, writable=True).close()
            self.unwritten = b""
            yield False
        else:
            lines = self.complete_lines().split(b"\n")[:-1]
            kept = b"".join(line + b"\n" for line in lines[: 1 + change[1] % len(lines)])
            if kind == "replace":
                copy = self.path.with_name("session.jsonl.new")
                copy.write_bytes(kept)
                os.replace(copy, self.path)
            else:
                os.truncate(self.path, len(kept))
            self.unwritten = b""
            yield False


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.lists(changes, min_size=1, max_size=8))
def test_the_kept_jsonl_session_equals_a_fresh_load_after_every_write(steps):
    with tempfile.TemporaryDirectory() as tmp:
        env = make_env(Path(tmp))
        log = Log(Path(tmp))
        env.store = log.store
        kept = env.registry()
        assert served(kept, log.id) == served(env.registry(), log.id)
        before = kept_session(kept, log.id)
        for change in steps:
            for grown in log.change(change):
                assert served(kept, log.id) == served(env.registry(), log.id)
                now = kept_session(kept, log.id)
                assert now is before or not grown  # grown: folded in, not loaded again
                before = now


sqlite_changes = st.one_of(
    st.tuples(st.just("write"), st.lists(log_ops, min_size=1, max_size=3)),
    st.tuples(st.just("cut"), st.integers(0, 200)),  # rows deleted in place (repair cuts so)
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(sqlite_changes, min_size=1, max_size=8))
def test_the_kept_sqlite_session_equals_a_fresh_load_after_every_write(steps):
    with tempfile.TemporaryDirectory() as tmp:
        env = make_env(Path(tmp))
        store = env.store = SqliteStore(Path(tmp) / "home")  # type: ignore[assignment]
        clock = itertools.count(FIXED_TIME)
        writer = Session(store.create(cwd="/work/project"), clock=lambda: next(clock))
        session_id = writer.id
        writer.close()
        kept = env.registry()
        for number, change in enumerate(steps):
            if change[0] == "write":
                writer = Session(store.open(session_id, writable=True), clock=lambda: next(clock))
                for op in change[1]:
                    before = kept_session(kept, session_id)
                    if op[0] != "reopen":
                        apply_op(writer, op, number)
                    assert served(kept, session_id) == served(env.registry(), session_id)
                    assert kept_session(kept, session_id) is before  # folded in
                writer.close()
            else:
                db = sqlite3.connect(store.path)
                count = db.execute("SELECT count(*) FROM events").fetchone()[0]
                db.execute("DELETE FROM events WHERE seq >= ?", (change[1] % (count + 1),))
                db.commit()
                db.close()
            assert served(kept, session_id) == served(env.registry(), session_id)
