"""The prompt history on file: up / down walk the prompts of earlier runs (one ``DSH_HOME``),
the file stays private and bounded, and a damaged line is skipped, never fatal."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dsh.config import dsh_home
from dsh.config.prompt_history import (
    FILE_NAME,
    MAX_ENTRIES,
    PromptHistory,
    entry_line,
    parse,
)
from tests.tui.conftest import Rig, run_prompt
from tests.tui.test_pilot import run


def history_file() -> Path:
    return dsh_home() / FILE_NAME


def test_up_walks_the_prompts_of_an_earlier_run(rig: Rig):
    first = rig.app([{"text": "one"}, {"text": "two"}])

    async def send_two(pilot: Any) -> None:
        await run_prompt(pilot, "fix the flaky test")
        await run_prompt(pilot, "now run it again")

    run(first, send_two)
    assert stat.S_IMODE(os.stat(history_file()).st_mode) == 0o600
    second = rig.app([])  # a new run, a new session, the same DSH_HOME

    async def walk(pilot: Any) -> None:
        box = second.prompt_box
        box.value = "my draft"
        await pilot.press("up")
        assert box.value == "now run it again"
        await pilot.press("up")
        assert box.value == "fix the flaky test"
        await pilot.press("down", "down")
        assert box.value == "my draft"

    run(second, walk)


def test_a_resumed_sessions_own_prompts_come_first_then_the_rest(rig: Rig):
    first = rig.app([{"text": "one"}])
    run(first, lambda pilot: run_prompt(pilot, "in the session"))
    session = first.last_session_id
    assert session is not None
    PromptHistory(dsh_home()).append("typed elsewhere, later")
    second = rig.app([], resume=session)

    async def walk(pilot: Any) -> None:
        box = second.prompt_box
        await pilot.press("up")
        assert box.value == "in the session"
        await pilot.press("up")
        assert box.value == "typed elsewhere, later"

    run(second, walk)


def test_a_damaged_file_is_read_past_and_mended(rig: Rig):
    path = history_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(
        entry_line("good one", 1.0)
        + b"\xff\xfe not json\n"
        + b'{"text": 5}\n'
        + b"[1, 2]\n"
        + entry_line("good two", 2.0)
        + b'{"text": "torn in mid-wri'
    )
    app = rig.app([])

    async def walk(pilot: Any) -> None:
        assert app.prompt_box.prompts == ["good one", "good two"]

    run(app, walk)
    assert path.read_bytes() == entry_line("good one", 1.0) + entry_line("good two", 2.0)


def test_the_file_is_trimmed_to_the_newest_entries_on_load(tmp_path: Path):
    path = tmp_path / FILE_NAME
    path.write_bytes(b"".join(entry_line(f"p{i}", i) for i in range(MAX_ENTRIES + 50)))
    history = PromptHistory(tmp_path)
    loaded = history.load()
    assert loaded == [f"p{i}" for i in range(50, MAX_ENTRIES + 50)]
    assert len(path.read_bytes().splitlines()) == MAX_ENTRIES
    assert history.load() == loaded  # written again: the same


def test_an_unwritable_home_keeps_the_history_for_the_run(tmp_path: Path, caplog: Any):
    blocker = tmp_path / "file"
    blocker.write_text("")
    history = PromptHistory(blocker)  # its "home" is a file: nothing can be made in it
    history.append("one")
    history.append("two")
    assert history.load() == []
    said = [r.getMessage() for r in caplog.records if "prompt history" in r.getMessage()]
    assert len(said) == 1 and "kept for this run only" in said[0]


WRITER = """
import sys
from pathlib import Path
from dsh.config.prompt_history import PromptHistory
history = PromptHistory(Path(sys.argv[1]))
for i in range(300):
    history.append(sys.argv[2] + str(i) + "x" * 20_000)
"""


def test_instances_appending_at_once_never_interleave_lines(tmp_path: Path):
    writers = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path), name])
        for name in ("a", "b", "c")
    ]
    assert [w.wait() for w in writers] == [0, 0, 0]
    lines = (tmp_path / FILE_NAME).read_bytes().split(b"\n")
    assert lines[-1] == b""
    texts = [json.loads(line)["text"] for line in lines[:-1]]
    assert sorted(texts) == sorted(f"{n}{i}" + "x" * 20_000 for n in "abc" for i in range(300))


def test_each_entry_is_one_write_to_a_file_opened_for_appending(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    opened: dict[int, int] = {}
    writes: list[tuple[int, bytes]] = []
    real_open, real_write = os.open, os.write

    def record_open(path: Any, flags: int, *args: Any) -> int:
        fd = real_open(path, flags, *args)
        opened[fd] = flags
        return fd

    def record_write(fd: int, data: bytes) -> int:
        writes.append((opened[fd], data))
        return real_write(fd, data)

    monkeypatch.setattr(os, "open", record_open)
    monkeypatch.setattr(os, "write", record_write)
    PromptHistory(tmp_path).append("a long prompt " * 5000)
    [(flags, data)] = writes
    assert flags & os.O_APPEND and json.loads(data)["text"] == "a long prompt " * 5000
    assert data.endswith(b"\n") and data.count(b"\n") == 1


line_kinds = st.one_of(
    st.text(min_size=1, max_size=20).map(lambda t: ("good", t)),
    st.binary(max_size=20).filter(lambda b: b"\n" not in b).map(lambda b: ("junk", b)),
)


@given(st.lists(line_kinds, max_size=40), st.binary(max_size=10))
def test_parse_keeps_every_good_entry_in_order_and_skips_the_rest(
    lines: list[tuple[str, Any]], torn: bytes
):
    data = b"".join(
        entry_line(value, 1.0) if kind == "good" else value + b"\n" for kind, value in lines
    )
    torn = torn.replace(b"\n", b"")
    entries, rewrite = parse(data + torn)
    good = [value for kind, value in lines if kind == "good"]
    junk_kept = [t for kind, v in lines if kind == "junk" and (t := _text(v)) is not None]
    assert [text for text, _ in entries] == _merged(lines)
    assert len(entries) == len(good) + len(junk_kept)
    mended, again = parse(b"".join(line for _, line in entries))
    assert mended == entries and not again  # what a rewrite writes reads back whole
    if torn:
        assert rewrite


def _text(raw: bytes) -> str | None:
    """What a junk line may hold after all (hypothesis can write a valid entry)."""
    from dsh.config.prompt_history import entry_text

    return entry_text(raw)


def _merged(lines: list[tuple[str, Any]]) -> list[str]:
    out = []
    for kind, value in lines:
        text = value if kind == "good" else _text(value)
        if text is not None:
            out.append(text)
    return out


@given(st.integers(min_value=0, max_value=3 * MAX_ENTRIES))
def test_parse_keeps_the_newest_entries_up_to_the_bound(count: int):
    data = b"".join(entry_line(f"p{i}", i) for i in range(count))
    entries, rewrite = parse(data)
    assert [t for t, _ in entries] == [f"p{i}" for i in range(max(0, count - MAX_ENTRIES), count)]
    assert rewrite == (count > MAX_ENTRIES)


def test_prompts_another_dsh_sends_meanwhile_show_on_up_and_in_ctrl_r(rig: Rig):
    # The file was read once, at start: a prompt sent from `dsh web` never showed on up.
    app = rig.app([{"text": "one"}])

    async def body(pilot: Any) -> None:
        await run_prompt(pilot, "sent here")
        PromptHistory(dsh_home()).append("sent from the web 🌐")  # another dsh, another time
        box = app.prompt_box
        await pilot.press("up")
        assert box.value == "sent here"  # the session's own prompts come first
        await pilot.press("up")
        assert box.value == "sent from the web 🌐"
        await pilot.press("down", "down")
        assert box.value == ""
        PromptHistory(dsh_home()).append("and another")
        await pilot.press("ctrl+r", *"another")
        assert box.text == "and another"

    run(app, body)


def test_changed_tells_another_writer_from_this_ones_own(tmp_path: Path):
    mine, theirs = PromptHistory(tmp_path), PromptHistory(tmp_path)
    assert mine.load() == [] and not mine.changed()
    theirs.append("theirs")
    assert mine.changed()
    assert mine.load() == ["theirs"] and not mine.changed()
    mine.append("mine")  # its own line: nothing to read again
    assert not mine.changed()
    theirs.append("theirs again")
    mine.append("mine again")
    assert mine.changed()
    assert mine.load() == ["theirs", "mine", "theirs again", "mine again"]
