"""A command's output reaches the model as a terminal would show it (dsh.tools.terminal_text)."""

from __future__ import annotations

import asyncio
import itertools

from hypothesis import given
from hypothesis import strategies as st

from dsh.tools.base import ToolContext
from dsh.tools.shell import BashTool, CappedOutput
from dsh.tools.terminal_text import TerminalText, plain_output

# every character the rules act on, and enough plain ones to build sequences and lines
ALPHABET = st.sampled_from(list("\x1b[]\\;0123m\x07\r\b\nab K"))
TEXTS = st.text(ALPHABET, max_size=80)


def test_colours_titles_and_hyperlinks_leave_their_text() -> None:
    assert plain_output("\x1b[1;31mFAILED\x1b[0m test_x") == "FAILED test_x"
    assert plain_output("\x1b]0;my title\x07ready\n") == "ready\n"
    assert plain_output("see \x1b]8;;https://example.com\x1b\\the docs\x1b]8;;\x1b\\.") == (
        "see the docs."
    )


def test_a_progress_bar_keeps_its_last_state_and_crlf_is_a_line_break() -> None:
    assert plain_output("  0%\r 50%\r100%\ndone\n") == "100%\ndone\n"
    assert plain_output("\x1b[2K\rdownloading 1/3\x1b[2K\rdownloading 3/3\n") == (
        "downloading 3/3\n"
    )
    assert plain_output("one\r\ntwo\r\n") == "one\ntwo\n"


def test_a_carriage_return_overwrites_only_what_follows_it_covers() -> None:
    assert plain_output("abcdef\rxy") == "xycdef"
    assert plain_output("abc\rx\ry") == "ybc"


def test_backspaces_move_back_one_character() -> None:
    assert plain_output("N\bNA\bAM\bME\bE") == "NAME"  # overstrike bold, as man pages print it
    assert plain_output("\b\bok") == "ok"


def test_text_a_terminal_would_not_change_is_kept_as_it_is() -> None:
    text = "tabs\tand\x00nul and [brackets] and \\ back\x07slash\n"
    assert plain_output(text) == text


@given(TEXTS)
def test_the_result_holds_no_escape_carriage_return_or_backspace(text: str) -> None:
    shown = plain_output(text)
    assert not {"\x1b", "\r", "\b"} & set(shown)
    assert shown.count("\n") == text.count("\n")


@given(TEXTS)
def test_plain_output_is_idempotent(text: str) -> None:
    assert plain_output(plain_output(text)) == plain_output(text)


@given(TEXTS, st.lists(st.integers(0, 80), max_size=6))
def test_a_stream_cut_anywhere_reads_as_the_whole_text(text: str, cuts: list[int]) -> None:
    stream = TerminalText(max_line=None)
    bounds = [0, *sorted(min(cut, len(text)) for cut in cuts), len(text)]
    pieces = [stream.feed(text[a:b]) for a, b in itertools.pairwise(bounds)]
    assert "".join(pieces) + stream.finish() == plain_output(text)


@given(TEXTS, st.lists(st.integers(0, 80), max_size=6))
def test_capped_output_fed_in_chunks_keeps_what_the_terminal_shows(
    text: str, cuts: list[int]
) -> None:
    data = text.encode()
    out = CappedOutput(cap=1000)
    bounds = [0, *sorted(min(cut, len(data)) for cut in cuts), len(data)]
    for a, b in itertools.pairwise(bounds):
        out.feed(data[a:b])
    out.feed(b"", final=True)
    assert out.text() == plain_output(text)


def test_the_line_in_progress_shows_before_the_command_ends() -> None:
    # a cancelled or timed-out call answers with what was printed so far
    out = CappedOutput()
    out.feed(b"building\n 40%\r 75%")
    assert out.text() == "building\n 75%"


def test_an_endless_line_stays_bounded() -> None:
    stream = TerminalText(max_line=10)
    given_out = []
    for _ in range(10):
        given_out.append(stream.feed("xxxx"))
        assert len(stream.pending()) <= 10
    assert "".join(given_out) + stream.finish() == "x" * 40


def test_mcp_results_are_not_treated_as_terminal_output() -> None:
    out = CappedOutput(cap=1000, terminal=False)
    out.feed(b"a\rb\x1b[0m", final=True)
    assert out.text() == "a\rb\x1b[0m"


def test_the_bash_tool_returns_what_a_terminal_would_show(ctx: ToolContext) -> None:
    command = r"printf '\033[31mred\033[0m plain\n'; printf ' 10%%\r 50%%\r100%%\n'"
    output = asyncio.run(BashTool().run({"command": command}, ctx))
    assert output.text == "red plain\n100%\n"


def _terminal_cells(text: str) -> str:
    """An independent model of the carriage return and backspace rules: a line of cells and a
    cursor, one character at a time (for text without escape sequences)."""
    lines = []
    for line in text.split("\n"):
        cells: list[str] = []
        at = 0
        for char in line:
            if char == "\r":
                at = 0
            elif char == "\b":
                at = max(at - 1, 0)
            elif at < len(cells):
                cells[at] = char
                at += 1
            else:
                cells.append(char)
                at += 1
        lines.append("".join(cells))
    return "\n".join(lines)


@given(st.text(st.sampled_from(list("\r\b\nabc ")), max_size=120))
def test_carriage_returns_and_backspaces_match_a_cell_by_cell_terminal(text: str) -> None:
    assert plain_output(text) == _terminal_cells(text)
