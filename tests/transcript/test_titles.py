"""Session titles: the latest ``/title``, else the first prompt, one line, cut with an ellipsis."""

from __future__ import annotations

import sqlite3

from hypothesis import given
from hypothesis import strategies as st

from dsh.errors import printable_line
from dsh.events import SessionTitle
from dsh.store import JsonlStore, MemoryStore, SqliteStore
from dsh.transcript.listing import session_summaries
from dsh.transcript.titles import TITLE_CHARS, UNTITLED, session_title, trim_title
from tests.helpers import append_chat_turn, new_session


@given(st.text())
def test_a_trimmed_title_is_one_printable_line_within_the_limit_and_keeps_short_text(text):
    title = trim_title(text)
    assert title.isprintable() and len(title) <= TITLE_CHARS  # no newline, no escape
    assert trim_title(title) == title  # trimming again is trimming once
    flat = printable_line(text)
    if len(flat) <= TITLE_CHARS:
        assert title == flat
    else:
        assert title.endswith("…") and flat.startswith(title[:-1])


def test_the_first_prompt_is_the_title_until_one_is_set():
    session = new_session(MemoryStore())
    assert session_title(session.events) is None
    append_chat_turn(session, "Fix the failing\ntest in calc.py", "done")
    append_chat_turn(session, "and the docs", "done")
    assert session_title(session.events) == "Fix the failing test in calc.py"
    session.append(SessionTitle(title="calc fixes"))
    session.append(SessionTitle(title="calc and docs"))
    assert session_title(session.events) == "calc and docs"


def test_an_unreadable_sqlite_session_is_titled_by_what_is_wrong_not_by_the_database_path(
    tmp_path,
):
    """The reason SQLite gives begins with the database's path (and the session's id, which the
    row shows already): cut to 40 characters, the row said ``(unreadable: /home/…/dsh.sqlit…)``
    and never what was wrong, where a JSONL row says ``line 5: checksum mismatch``."""
    store = SqliteStore(tmp_path)
    with new_session(store) as session:
        append_chat_turn(session, "first", "ok")
    with sqlite3.connect(store.path) as db:
        db.execute(
            "UPDATE events SET body = CAST('{\"type\": garbage' AS BLOB) "
            "WHERE session_id = ? AND seq = 2",
            (session.id,),
        )
    db.close()
    (broken,) = session_summaries(store)
    assert broken.title.startswith("(unreadable: seq 2: ") and broken.turns == 0
    assert str(store.path) not in broken.title and session.id not in broken.title


def test_summaries_read_each_session_and_name_an_unreadable_one(tmp_path):
    store = JsonlStore(tmp_path)
    with new_session(store) as session:
        append_chat_turn(session, "first", "ok")
        append_chat_turn(session, "second", "ok")
    with new_session(store) as damaged:
        append_chat_turn(damaged, "first", "ok")
    empty = store.create(cwd="/elsewhere")
    empty.close()
    path = tmp_path / "sessions" / damaged.id / "session.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    lines[3] = lines[3].replace(b"first", b"fir5t")  # its CRC no longer matches
    path.write_bytes(b"".join(lines))
    for _ in range(2):  # the second listing reads the summary cache the first one wrote
        summaries = {s.id: s for s in session_summaries(store)}
        assert summaries[session.id].title == "first" and summaries[session.id].turns == 2
        assert summaries[session.id].updated_at >= summaries[session.id].created_at
        assert summaries[empty.id].title == UNTITLED and summaries[empty.id].events == 0
        broken = summaries[damaged.id]
        assert broken.title.startswith("(unreadable: ") and broken.turns == 0
