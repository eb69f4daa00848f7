"""The terminal's input as events: a bracketed paste arrives as one paste with all its text,
whatever it holds and however the reads split it; the keys around it keep their order; a paste
whose end marker never comes ends after a pause; a lone ESC is still the escape key."""

from __future__ import annotations

import pytest
from textual import constants, events
from textual.message import Message

from dsh.tui.terminal_input import (
    PASTE_END,
    PASTE_IDLE,
    PASTE_PIECE,
    PASTE_START,
    Keys,
    Pasted,
    PasteSplitter,
    TerminalInput,
)

COLOURED = "line 0: h\u00e9llo \t tab \x1b[31m red\rline 1: x \x1b[31m red\rline 2: y\r"
"""Three pasted lines with a colour code each, as a terminal sends them (line breaks as CR)."""


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def merged(pieces: list[Keys | Pasted]) -> list[tuple[str, str]]:
    """The pieces as (kind, text), runs of keys joined (a read's boundary splits them)."""
    out: list[tuple[str, str]] = []
    for piece in pieces:
        kind = "keys" if isinstance(piece, Keys) else "paste"
        if out and kind == "keys" and out[-1][0] == "keys":
            out[-1] = ("keys", out[-1][1] + piece.text)
        else:
            out.append((kind, piece.text))
    return out


def splitter() -> PasteSplitter:
    return PasteSplitter(hold=constants.ESCAPE_DELAY)


def reader() -> tuple[TerminalInput, list[Message], FakeClock]:
    posted: list[Message] = []
    clock = FakeClock()
    return TerminalInput(posted.append, clock=clock), posted, clock


def described(messages: list[Message]) -> list[str]:
    out = []
    for message in messages:
        if isinstance(message, events.Paste):
            out.append(f"paste {message.text!r}")
        elif isinstance(message, events.Key):
            out.append(message.key)
        else:
            out.append(type(message).__name__)
    return out


# ---- the splitter ---------------------------------------------------------------------------


def test_a_paste_with_colour_codes_is_one_piece_with_all_its_text():
    pieces = splitter().feed(f"ab{PASTE_START}{COLOURED}{PASTE_END}cd", now=0.0)
    assert merged(pieces) == [("keys", "ab"), ("paste", COLOURED), ("keys", "cd")]


def test_a_paste_split_anywhere_between_reads_is_the_same_one_piece():
    raw = f"ab{PASTE_START}x \x1b[31m y{PASTE_END}\x1b[A"
    whole = [("keys", "ab"), ("paste", "x \x1b[31m y"), ("keys", "\x1b[A")]
    for first in range(len(raw) + 1):
        for second in range(first, len(raw) + 1):
            cut = splitter()
            pieces = [
                *cut.feed(raw[:first], now=0.0),
                *cut.feed(raw[first:second], now=0.0),
                *cut.feed(raw[second:], now=0.0),
            ]
            assert merged(pieces) == whole, (first, second)
            assert not cut.pasting and cut.deadline() is None


def test_a_huge_paste_arrives_whole_in_order_in_bounded_pieces():
    text = "".join(f"line {n}: \x1b[31mred\x1b[0m and more\r" for n in range(400_000))
    raw = PASTE_START + text + PASTE_END
    cut = splitter()
    pieces: list[Keys | Pasted] = []
    for at in range(0, len(raw), 65_536):
        pieces += cut.feed(raw[at : at + 65_536], now=0.0)
    assert all(isinstance(piece, Pasted) for piece in pieces)
    assert "".join(piece.text for piece in pieces) == text
    assert len(text) > 2 * PASTE_PIECE and len(pieces) == len(text) // PASTE_PIECE + 1
    assert all(len(piece.text) <= PASTE_PIECE for piece in pieces)


def test_a_long_paste_is_never_cut_between_the_cr_and_lf_of_one_line_break():
    cut = PasteSplitter(hold=0.1, piece=4)
    pieces = cut.feed(f"{PASTE_START}abc\r\ndefgh{PASTE_END}", now=0.0)
    assert [piece.text for piece in pieces] == ["abc", "\r\nde", "fgh"]


def test_a_nul_in_a_paste_is_dropped():
    pieces = splitter().feed(f"{PASTE_START}a\x00b{PASTE_END}", now=0.0)
    assert merged(pieces) == [("paste", "ab")]


def test_a_paste_whose_end_never_comes_ends_after_a_pause_and_keys_follow():
    cut = splitter()
    assert cut.feed(f"{PASTE_START}first part", now=0.0) == []
    assert cut.feed(" and keys typed on\r", now=2.0) == []  # input keeps it open
    assert cut.expire(now=2.0 + PASTE_IDLE - 0.01) == []
    assert merged(cut.expire(now=2.0 + PASTE_IDLE)) == [("paste", "first part and keys typed on\r")]
    assert not cut.pasting
    assert merged(cut.feed("x\r", now=20.0)) == [("keys", "x\r")]


def test_an_unfinished_end_marker_is_kept_in_the_paste_when_it_ends_after_a_pause():
    cut = splitter()
    cut.feed(f"{PASTE_START}text\x1b[20", now=0.0)
    assert merged(cut.expire(now=PASTE_IDLE)) == [("paste", "text\x1b[20")]


def test_a_read_ending_in_an_escape_is_held_until_the_escape_delay_passes():
    cut = splitter()
    assert merged(cut.feed("hi\x1b", now=0.0)) == [("keys", "hi")]
    assert cut.expire(now=constants.ESCAPE_DELAY / 2) == []
    assert cut.expire(now=constants.ESCAPE_DELAY) == [Keys("\x1b", settled=True)]
    assert cut.deadline() is None


# ---- the reader: keys through Textual's parser, pastes around it ---------------------------


def test_keys_a_paste_and_keys_arrive_as_typed():
    terminal, posted, _ = reader()
    terminal.feed(f"a b\r{PASTE_START}{COLOURED}{PASTE_END}\x1b[Az")
    assert described(posted) == ["a", "space", "b", "enter", f"paste {COLOURED!r}", "up", "z"]


def test_a_paste_fed_one_character_at_a_time_is_still_one_paste():
    terminal, posted, _ = reader()
    for character in f"{PASTE_START}{COLOURED}{PASTE_END}":
        terminal.feed(character)
    assert described(posted) == [f"paste {COLOURED!r}"]


def test_a_lone_escape_is_the_escape_key_after_the_escape_delay_and_not_before():
    terminal, posted, clock = reader()
    terminal.feed("\x1b")
    terminal.tick()
    assert posted == []
    assert terminal.timeout(1.0) == pytest.approx(constants.ESCAPE_DELAY)
    clock.now += constants.ESCAPE_DELAY
    terminal.tick()
    assert described(posted) == ["escape"]


def test_an_escape_sequence_split_between_reads_is_one_key():
    terminal, posted, _ = reader()
    terminal.feed("\x1b")
    terminal.feed("[")
    terminal.feed("A")
    assert described(posted) == ["up"]


def test_an_escape_pressed_just_before_a_paste_comes_before_it():
    terminal, posted, _ = reader()
    terminal.feed(f"\x1b{PASTE_START}pasted{PASTE_END}")
    assert described(posted) == ["escape", "paste 'pasted'"]


def test_a_paste_whose_end_never_comes_is_posted_after_the_pause():
    terminal, posted, clock = reader()
    terminal.feed(f"{PASTE_START}no end marker")
    clock.now += PASTE_IDLE
    assert terminal.timeout(10.0) == 0.0
    terminal.tick()
    terminal.feed("k")
    assert described(posted) == ["paste 'no end marker'", "k"]
