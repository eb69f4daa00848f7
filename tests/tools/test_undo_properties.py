"""The logged diff taken back gives the old text exactly (``dsh.tools.undo_record``), and an
edit or overwrite made through the real loop and tools, then undone, gives back the original bytes
exactly, for random contents and random edits (line endings, missing final newlines, unicode)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import example, given, settings
from hypothesis import strategies as st

from dsh.agent.undo import undo_last_turn
from dsh.tools.diffs import unified_diff
from dsh.tools.undo_record import reverse_patch
from tests.agent.conftest import Harness, run

PROPERTY = settings(max_examples=200, deadline=None)
LOOP_PROPERTY = settings(max_examples=40, deadline=None)

LINE = st.text(alphabet="ab \t\r\u00e9\u2603\\+-@", max_size=6)
"""Pieces that look like diff syntax (``+``, ``-``, ``@``, ``\\``) and carriage returns."""
TEXT = st.lists(LINE, max_size=30).map("\n".join) | st.lists(LINE, max_size=30).map(
    lambda lines: "".join(line + "\n" for line in lines)
)


@PROPERTY
@given(before=TEXT, after=TEXT, context=st.integers(0, 4))
@example(before="a\nb", after="a\nb\n", context=3)
@example(before="", after="x", context=3)
@example(before="x\r\n", after="", context=3)
def test_a_logged_diff_taken_back_is_the_old_text(before: str, after: str, context: int):
    diff = unified_diff("f.txt", before, after, context=context)
    assert diff is not None
    assert reverse_patch(diff, after) == before


EDIT_TEXT = st.text(alphabet="ab\n\r\u00e9\u2603 ", max_size=60)


@LOOP_PROPERTY
@given(original=EDIT_TEXT, start=st.integers(0, 60), length=st.integers(1, 8), new=EDIT_TEXT)
def test_edit_then_undo_gives_back_the_original_bytes(
    original: str, start: int, length: int, new: str
):
    old = original[start : start + length]
    if not old or original.count(old) != 1 or old == new:
        return  # edit_file would refuse it; nothing to undo
    data = original.encode("utf-8")
    with tempfile.TemporaryDirectory() as tmp:
        harness = Harness(Path(tmp))
        target = harness.workspace / "f.txt"
        target.write_bytes(data)
        call = {"name": "edit_file", "arguments": {"path": "f.txt", "old": old, "new": new}}
        run(harness.agent([{"toolCalls": [call]}, {"text": "ok"}]).run_turn("edit"))
        assert target.read_bytes() != data
        result = undo_last_turn(harness.session)
        harness.session.close()
        assert result.ok, result.lines
        assert target.read_bytes() == data


@LOOP_PROPERTY
@given(original=EDIT_TEXT, content=EDIT_TEXT)
def test_overwrite_then_undo_gives_back_the_original_bytes(original: str, content: str):
    data = original.encode("utf-8")
    with tempfile.TemporaryDirectory() as tmp:
        harness = Harness(Path(tmp))
        target = harness.workspace / "f.txt"
        target.write_bytes(data)
        call = {"name": "write_file", "arguments": {"path": "f.txt", "content": content}}
        run(harness.agent([{"toolCalls": [call]}, {"text": "ok"}]).run_turn("write"))
        assert target.read_bytes() == content.encode("utf-8")
        result = undo_last_turn(harness.session)
        harness.session.close()
        assert result.ok, result.lines
        assert target.read_bytes() == data
