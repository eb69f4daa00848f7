"""Blocks and rows: what each transcript item looks like, without a terminal."""

from __future__ import annotations

from rich.cells import cell_len

from dsh.events import Message, ModelSource, ReasoningBlock, TextBlock, ToolCallBlock, UserSource
from dsh.transcript import (
    COMPACTION_MARKER,
    MarkerItem,
    MessageItem,
    PassDetails,
    ToolCallItem,
    ToolResultItem,
)
from dsh.tui.blocks import TranscriptModel, block_rows, estimated_height, row_text
from dsh.tui.wrap import escape_controls, one_line, sanitize, wrap


def rows_text(block, width=60, *, reasoning=False, details=None) -> list[str]:
    rows = block_rows(block, width, show_reasoning=reasoning, details=details or {})
    return [row_text(row).rstrip() for row in rows]


def user(text: str) -> MessageItem:
    return MessageItem(
        0, Message(id="u", role="user", content=(TextBlock(text=text),), source=UserSource())
    )


def assistant(text: str = "", *, reasoning: str = "", calls: int = 0) -> MessageItem:
    content: list = [ReasoningBlock(text=reasoning)] if reasoning else []
    content += [TextBlock(text=text)] if text else []
    content += [ToolCallBlock(id=f"c{i}", name="bash", arguments="{}") for i in range(calls)]
    message = Message(
        id="a",
        role="assistant",
        content=tuple(content),
        source=ModelSource(provider="p", model="m"),
    )
    return MessageItem(1, message)


def test_wrap_keeps_words_cuts_long_ones_and_counts_cells():
    assert wrap("the quick brown fox jumps", 10) == ["the quick", "brown fox", "jumps"]
    assert wrap("abcdefghijklmnop", 5) == ["abcde", "fghij", "klmno", "p"]
    assert wrap("a\n\nb", 10) == ["a", "", "b"]
    wide = wrap("日本語のテキストです", 6)
    assert all(cell_len(line) <= 6 for line in wide) and "".join(wide) == "日本語のテキストです"


def test_sanitize_drops_escapes_and_control_characters():
    assert sanitize("\x1b[31mred\x1b[0m\r\n\tx\x07") == "red\n    x"


def test_sanitize_keeps_the_lines_after_an_osc_left_open():
    """A stray ``ESC ]`` (a binary file cat, a cut output) drops its own line's rest, not
    every line after it."""
    assert sanitize("before \x1b]0;title\nline two\nline three") == "before \nline two\nline three"


def test_sanitize_shows_a_bidi_control_as_its_escape():
    """An override or isolate would reorder what the terminal draws around it (a file name
    ``invoice\u202efdp.exe`` reads ``invoiceexe.pdf``): it shows, as printable_line shows it."""
    assert sanitize("invoice\u202efdp.exe") == "invoice\\u202efdp.exe"
    text = "a\u2066b\u2069c\u200fd\u061ce\n"
    assert sanitize(text) == "a\\u2066b\\u2069c\\u200fd\\u061ce\n"


def test_escape_controls_shows_what_a_terminal_would_act_on_and_keeps_lines_and_tabs():
    hostile = "\x1b]52;c;aGk=\x07 \x9b2J \x08\x7f\u202e\tx\ny\r\nz"
    assert escape_controls(hostile) == "\\x1b]52;c;aGk=\\x07 \\x9b2J \\x08\\x7f\\u202e\tx\ny\r\nz"
    assert escape_controls(escape_controls(hostile)) == escape_controls(hostile)
    assert escape_controls("日本語 café 👍") == "日本語 café 👍"


def test_one_line_cuts_with_an_ellipsis():
    assert one_line("short", 10) == "short"
    assert one_line("first line\nsecond", 20) == "first line…"
    assert one_line("a" * 30, 10) == "a" * 9 + "…"


def test_a_long_prompt_wraps_under_its_marker():
    model = TranscriptModel()
    model.add([user("word " * 30)])
    lines = rows_text(model.blocks[0], 40)
    assert lines[0].startswith("❯ word") and all(line.startswith("  word") for line in lines[1:-1])
    assert lines[-1] == "" and all(cell_len(line) <= 40 for line in lines)


def test_reasoning_shows_only_when_asked():
    model = TranscriptModel()
    model.add([assistant("the answer", reasoning="thinking hard")])
    assert rows_text(model.blocks[0]) == ["● the answer", ""]
    assert rows_text(model.blocks[0], reasoning=True) == ["  ┊ thinking hard", "● the answer", ""]


def test_an_assistant_message_with_only_tool_calls_shows_nothing_itself():
    model = TranscriptModel()
    model.add([assistant(calls=1)])
    assert rows_text(model.blocks[0]) == []


def test_a_result_joins_its_card_and_the_card_expands():
    model = TranscriptModel()
    changed = model.add([ToolCallItem(2, "c1", "bash", '{"command":"ls -la"}')])
    assert changed == set()
    card = model.blocks[0]
    assert rows_text(card) == ["  ▸ bash  ls -la", "    └ running…", ""]
    changed = model.add([ToolResultItem(3, "c1", "a\nb\nc", False, card_seq=2)])
    assert changed == {0} and len(model.blocks) == 1
    assert rows_text(card) == ["  ▸ bash  ls -la", "    └ a (+2 lines)", ""]
    card.expanded = True
    assert rows_text(card) == [
        "  ▾ bash",
        "    arguments",
        "      {",
        '        "command": "ls -la"',
        "      }",
        "    result",
        "      a",
        "      b",
        "      c",
        "",
    ]


def test_a_result_without_a_shown_call_stands_alone():
    model = TranscriptModel()
    model.add([ToolResultItem(3, "orphan", "boom", True)])
    assert rows_text(model.blocks[0]) == ["  ▸ tool result", "    └ boom", ""]


def test_a_marker_is_one_dim_line_and_expands_to_its_pass_details():
    model = TranscriptModel()
    model.add([MarkerItem(9, "p1")])
    marker = model.blocks[0]
    details = {
        "p1": PassDetails(summaries=[("state", "We fixed the parser.")], items=4, tokens=812)
    }
    assert rows_text(marker, details=details) == [f"  {COMPACTION_MARKER}", ""]
    marker.expanded = True
    assert rows_text(marker, details=details) == [
        f"  {COMPACTION_MARKER}",
        "    Compacted 4 history items (~812 tokens)",
        "    state summary",
        "      We fixed the parser.",
        "",
    ]


def test_collapsed_cards_and_markers_are_measured_exactly_without_rendering():
    model = TranscriptModel()
    model.add(
        [
            ToolCallItem(2, "c1", "bash", "{}"),
            ToolResultItem(3, "x", "y", False),
            MarkerItem(4, "p"),
        ]
    )
    for block in model.blocks:
        assert estimated_height(block, 60, show_reasoning=False) == len(rows_text(block))


def test_a_tool_name_with_escape_sequences_cannot_reach_the_terminal():
    # A model may name a tool anything; "\x1b[2J" in the name cleared the whole screen.
    from dsh.tui.blocks import live_rows

    name = "evil\x1b[2J\x1b[31mname\ttab"
    model = TranscriptModel()
    model.add([ToolCallItem(2, "c1", name, '{"command": "ls"}')])
    model.blocks[0].expanded = True
    for block_row in [
        *block_rows(model.blocks[0], 60, show_reasoning=False, details={}),
        *live_rows("", "", [name], 60, show_reasoning=False),
    ]:
        text = row_text(block_row)
        assert "\x1b" not in text and "\t" not in text, text
    assert rows_text(model.blocks[0])[0].startswith("  ▾ evilname    tab")


def test_a_hidden_tag_character_instruction_shows_as_escapes_and_flags_stay():
    """Tag characters draw nothing, yet a model reads each as the ASCII letter it shadows (a
    web page or a file can hide "ignore previous instructions" in them): the person sees them.
    A subdivision flag (🏴 + tags + CANCEL TAG) is a picture, kept."""
    hidden = "".join(chr(0xE0000 + ord(c)) for c in "rm -rf")
    assert (
        sanitize(f"ok{hidden}!")
        == "ok\\U000e0072\\U000e006d\\U000e0020\\U000e002d\\U000e0072\\U000e0066!"
    )
    assert escape_controls(f"a{hidden[:1]}") == "a\\U000e0072"
    scotland = "\U0001f3f4\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f"
    assert sanitize(f"flag {scotland}\x07") == f"flag {scotland}"
    assert escape_controls(scotland) == scotland


def test_a_failed_edit_card_shows_no_change_counts():
    """It changed nothing: its card names the file, not the ``+2 -1`` of its arguments."""
    model = TranscriptModel()
    arguments = '{"path": "hello.py", "old": "print(1)", "new": "print(2)\\nprint(3)"}'
    model.add([ToolCallItem(2, "c1", "edit_file", arguments)])
    card = model.blocks[0]
    assert rows_text(card)[0] == "  ▸ edit_file  hello.py +2 -1"  # before its result: planned
    model.add([ToolResultItem(3, "c1", "old text not found in hello.py", True, card_seq=2)])
    assert rows_text(card)[:2] == [
        "  ▸ edit_file  hello.py",
        "    └ old text not found in hello.py",
    ]
    card.expanded = True
    shown = rows_text(card)
    assert "    diff" not in shown and "    arguments" in shown and "    result (error)" in shown
