"""A turn's note shows its logged error as ``dsh.errors.error_line`` makes it — one line,
characters that do not print as their escapes, at most ``ERROR_LINE_CHARS`` — in the projector's
items (the terminal UI's transcript) and the plain text (``dsh sessions show``) alike; the log
keeps the whole text."""

from __future__ import annotations

import pytest

from dsh.errors import ERROR_LINE_CHARS, error_line
from dsh.events import TurnEnd, TurnEndEvent, TurnEndReason
from dsh.events.types import TurnEndKind
from dsh.transcript import NoteItem, TranscriptProjector, transcript_blocks

HOSTILE = "BAD_REQUEST: the \x1b]0;owned\x07 server\nsaid \u202eno\u202c" + " and on" * 300


def ended(kind: TurnEndKind, error: str | None) -> TurnEndEvent:
    return TurnEndEvent(seq=3, time=0, data=TurnEnd(turn=1, reason=TurnEndReason(kind, error)))


def test_error_line_of_a_text_is_that_text_on_one_line_escaped_and_cut() -> None:
    assert error_line("plain") == "plain"
    assert error_line(" a\tb\r\n c\x1b[31m\u202e ") == "a b c\\x1b[31m\\u202e"
    long = error_line("é" * 5000)
    assert len(long) == ERROR_LINE_CHARS and long == "é" * 299 + "…"
    assert error_line(RuntimeError("a\nb")) == "RuntimeError: a b"  # an exception: its type too


@pytest.mark.parametrize(
    ("kind", "prefix"), [("error", "Turn failed: "), ("aborted", "Turn stopped: ")]
)
def test_a_turns_logged_error_is_noted_on_one_bounded_line(kind: TurnEndKind, prefix: str) -> None:
    event = ended(kind, HOSTILE)
    (item,) = TranscriptProjector().feed(event)
    assert isinstance(item, NoteItem)
    assert item.text == prefix + error_line(HOSTILE)
    assert item.text.startswith(
        prefix + "BAD_REQUEST: the \\x1b]0;owned\\x07 server said \\u202eno"
    )
    assert len(item.text) == len(prefix) + ERROR_LINE_CHARS and item.text.endswith("…")
    assert "\n" not in item.text and "\x1b" not in item.text and "\u202e" not in item.text
    assert transcript_blocks([event]) == [f"({item.text})"]
    assert event.data.reason.error == HOSTILE  # the event (what the log holds) keeps it whole


def test_a_short_reason_is_noted_as_it_was_logged() -> None:
    (item,) = TranscriptProjector().feed(ended("aborted", "stopped after 3 steps (max_steps)"))
    assert isinstance(item, NoteItem)
    assert item.text == "Turn stopped: stopped after 3 steps (max_steps)"


@pytest.mark.parametrize(
    ("kind", "error", "note"),
    [
        ("max-steps", "stopped after 3 steps (max_steps)", "stopped after 3 steps (max_steps)"),
        ("max-steps", None, "it took every step it is allowed (max_steps)"),
        ("repeated-calls", None, "the same tool call repeated too often"),
    ],
)
def test_a_turn_a_limit_stopped_is_noted_as_stopped(
    kind: TurnEndKind, error: str | None, note: str
) -> None:
    """The two limits have kinds of their own (not ``aborted``, a cancel's): each face notes
    them as stopped, never as a turn that completed."""
    (item,) = TranscriptProjector().feed(ended(kind, error))
    assert isinstance(item, NoteItem)
    assert item.text.startswith(f"Turn stopped: {note}")


@pytest.mark.parametrize(
    ("kind", "how"),
    [("max-steps", "stopped at its step limit"), ("repeated-calls", "stopped repeating")],
)
def test_retry_says_how_a_turn_a_limit_stopped_ended(kind: TurnEndKind, how: str) -> None:
    from dsh.agent.retry_command import last_turn_retry
    from dsh.events import Message, TextBlock, TurnStart, UserSource
    from dsh.store import MemoryStore
    from dsh.surface import Session

    session = Session.create(MemoryStore(), cwd="/w")
    session.append(TurnStart(turn=1))
    session.append(
        Message(id="u", role="user", content=(TextBlock(text="go"),), source=UserSource())
    )
    session.append(TurnEnd(turn=1, reason=TurnEndReason(kind, "why")))
    retry = last_turn_retry(session)
    assert retry.prompt == "go" and f"(that turn {how}" in retry.note
