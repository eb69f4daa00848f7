"""A stored session that fails to open with an error quoting hostile text, for the tests that
each face shows an error as ``dsh.errors.error_line`` makes it (one line, a terminal escape as
its escape, at most ``ERROR_LINE_CHARS`` characters).

A hand edit or a foreign harness can leave an event with a field this version does not know;
the load refuses it with a ``LogCorruptError`` that names the field as it is written, so a
field's name of 2,000 characters with a newline and terminal escapes reaches the error's text
whole."""

from __future__ import annotations

import json
from pathlib import Path

from dsh.errors import ERROR_LINE_CHARS, LogCorruptError, error_line
from dsh.store import JsonlStore
from dsh.surface import Session

HOSTILE = "\x1b[31mowned\x1b[0m\x1b]0;title\x07\nsecond line " + "x" * 2000


def unopenable_session(store: JsonlStore, cwd: Path) -> tuple[str, str]:
    """A stored session whose one event has a data field named ``HOSTILE``: its id and the
    text of the error opening it raises (which quotes the name)."""
    with Session.create(store, cwd=cwd) as session:
        session_id = session.id
    path = store.log_path(session_id)
    header = path.read_text().splitlines()[0]
    event = {"type": "user/message", "seq": 0, "time": 1, "data": {HOSTILE: 1}}
    path.write_text(f"{header}\n{json.dumps(event)}\n")
    try:
        Session.open(store, session_id).close()
    except LogCorruptError as exc:
        text = str(exc)
    else:  # pragma: no cover - the fixture itself is wrong
        raise AssertionError("the hostile session opened")
    assert len(text) > 2000 and "\n" in text and "\x1b[31m" in text
    return session_id, text


def assert_shown_as_error_line(shown: str, text: str, prefix: str = "") -> None:
    """``shown`` is ``prefix`` and then ``text`` (an error's) as ``error_line`` shows it: one
    line, no raw escape, cut (so ending in "…") at ``ERROR_LINE_CHARS`` characters."""
    assert shown == prefix + error_line(text), shown[:400]
    said = shown.removeprefix(prefix)
    assert "\n" not in said and "\x1b" not in said and "\x07" not in said
    assert len(said) == ERROR_LINE_CHARS and said.endswith("…")
