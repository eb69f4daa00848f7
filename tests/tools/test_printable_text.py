"""Text dsh prints for people, of any number of lines, holds nothing a terminal acts on
(``dsh.tools.terminal_text.printable_text``, ``PrintableStream``)."""

from __future__ import annotations

import itertools
import json
import re

from hypothesis import given
from hypothesis import strategies as st

from dsh.tools.terminal_text import PrintableStream, printable_text, terminal_json

ACTING = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
"""What a terminal acts on (or draws reordered): every C0 and C1 control but the newline and the
tab, DEL, a bidi control."""
# every character the rules act on, and enough plain ones to build sequences and lines
ALPHABET = st.sampled_from(list("\x1b[]\\;0123m\x07\x9b\x85\x7f\u202e\r\b\t\nab K😀é"))
TEXTS = st.text(ALPHABET, max_size=80)


def test_sequences_are_dropped_and_the_text_around_them_stays() -> None:
    text = "a \x1b]0;TITLE\x07b \x1b]52;c;cm0gLXJmIH4K\x1b\\c \x1b[2J\x1b[Hd \x1b[1;31mred\x1b[0m"
    assert printable_text(text) == "a b c d red"


def test_other_controls_show_as_their_escapes() -> None:
    text = "bell\x07 cr\rover nul\x00 c1\x9b2J nel\x85 del\x7f esc\x1b!"
    assert printable_text(text) == (
        "bell\\x07 cr\\rover nul\\x00 c1\\x9b2J nel\\x85 del\\x7f esc\\x1b!"
    )
    assert printable_text("evil\u202etxt.exe \U000e0041") == "evil\\u202etxt.exe \\U000e0041"


def test_ordinary_text_newlines_and_tabs_are_kept_as_they_are() -> None:
    flag = "🏴\U000e0067\U000e0062\U000e007f"  # a subdivision flag: its tags kept
    text = f"line one\n\tindented, emoji 😀 👨\u200d👩\u200d👧 {flag} é ü 中文\n"
    assert printable_text(text) == text
    assert printable_text("windows\r\nlines\r\n") == "windows\nlines\n"


@given(TEXTS)
def test_nothing_a_terminal_acts_on_is_left(text: str) -> None:
    shown = printable_text(text)
    assert ACTING.search(shown) is None
    assert shown.count("\n") == text.count("\n")  # no line lost, none added


@given(TEXTS)
def test_printable_text_is_idempotent(text: str) -> None:
    assert printable_text(printable_text(text)) == printable_text(text)


@given(TEXTS, st.lists(st.integers(0, 80), max_size=6))
def test_a_stream_cut_anywhere_reads_as_the_whole_text(text: str, cuts: list[int]) -> None:
    stream = PrintableStream()
    bounds = [0, *sorted(min(cut, len(text)) for cut in cuts), len(text)]
    pieces = [stream.feed(text[a:b]) for a, b in itertools.pairwise(bounds)]
    assert "".join(pieces) + stream.finish() == printable_text(text)


@given(st.recursive(TEXTS, lambda inner: st.dictionaries(TEXTS, inner, max_size=3), max_leaves=6))
def test_terminal_json_is_the_same_json_with_nothing_a_terminal_acts_on(value: object) -> None:
    for encoded in (json.dumps(value, ensure_ascii=False), json.dumps(value)):
        shown = terminal_json(encoded)
        assert ACTING.search(shown) is None
        assert json.loads(shown) == value
