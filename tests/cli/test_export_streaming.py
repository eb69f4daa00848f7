"""``dsh sessions export`` writes as it renders: each format's bytes equal the whole export built
at once (property, over sessions whose texts hold escape sequences, carriage returns, flags
and tag characters, written in blocks cut anywhere), output reaches stdout before the last
event is rendered, and a file export that fails part way leaves the file as it was."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsh.cli import export_output
from dsh.cli.main import cli
from dsh.events import (
    AssistantChunk,
    AssistantMessage,
    Message,
    ModelSource,
    StepEnd,
    StepStart,
    StreamChunk,
    TextBlock,
    ToolCall,
    ToolCallBlock,
    ToolResult,
    ToolResultBlock,
    ToolSource,
    TurnEnd,
    TurnEndReason,
    TurnStart,
    UserSource,
    encode_event,
)
from dsh.interop import export_upstream
from dsh.store import JsonlStore
from dsh.store.base import encode_header
from dsh.surface import Session
from dsh.tools.terminal_text import printable_text
from dsh.transcript import render_markdown

FORMATS = ("md", "jsonl", "upstream")
PIECES = (
    "a", "b ", "\n", "\n\n", "\r", "\r\n", "\t", "\x1b", "\x1b[31m", "\x1b[", "\x1b]0;title",
    "\x1b]8;;http://x\x07", "\x1b\\", "\x07", "\x9b", "\x7f", "\u202e", "é", "`", "```",
    "\U0001f3f4\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f", "\U000e0041",
)  # fmt: skip
texts = st.lists(st.sampled_from(PIECES), max_size=12).map("".join)
turns = st.lists(st.tuples(texts, texts, st.none() | texts), min_size=1, max_size=4)


def build(home: Path, conversation: list[tuple[str, str, str | None]]) -> str:
    """A stored session: per turn a prompt, a reply streamed in chunks and, maybe, a
    ``read_file`` call with its result."""
    session = Session.create(JsonlStore(home), cwd="/work/\x1b]0;x\x07ws")
    for turn, (prompt, reply, result) in enumerate(conversation, start=1):
        session.append(TurnStart(turn=turn))
        session.append(StepStart(turn=turn, step=1))
        user = Message(
            id=f"u{turn}", role="user", content=(TextBlock(text=prompt),), source=UserSource()
        )
        session.append(user)
        for delta in [reply[i : i + 3] for i in range(0, len(reply), 3)]:
            chunk = StreamChunk(type="text", delta=delta)
            session.append(AssistantChunk(turn=turn, step=1, chunk=chunk))
        call = ToolCallBlock(id=f"c{turn}", name="read_file", arguments=json.dumps({"path": reply}))
        calls = (call,) if result is not None else ()
        message = Message(
            id=f"a{turn}",
            role="assistant",
            content=(TextBlock(text=reply), *calls),
            source=ModelSource(provider="scripted", model="scripted"),
        )
        session.append(AssistantMessage(turn=turn, step=1, message=message))
        if result is not None:
            seq = session.append(
                ToolCall(
                    turn=turn, step=1, call_id=call.id, name=call.name, arguments=call.arguments
                )
            ).seq
            block = ToolResultBlock(tool_call_id=call.id, content=(TextBlock(text=result),))
            body = Message(
                id=f"r{turn}", role="tool", content=(block,), source=ToolSource(call_id=call.id)
            )
            session.append(ToolResult(turn=turn, step=1, message=body), source_event_seqs=[seq])
        session.append(StepEnd(turn=turn, step=1))
        session.append(TurnEnd(turn=turn, reason=TurnEndReason(kind="completed")))
    session.close()
    return session.id


def whole(home: Path, session_id: str, fmt: str) -> bytes:
    """The export as it was built before: the whole output at once."""
    with Session.open(JsonlStore(home), session_id) as session:
        header, events = session.header, session.events
        if fmt == "upstream":
            return export_upstream(header, events)[0]
        if fmt == "jsonl":
            return b"\n".join([encode_header(header)] + [encode_event(e) for e in events]) + b"\n"
        return printable_text(render_markdown(header, events)).encode()


def export(session_id: str, fmt: str, *args: str) -> bytes:
    result = CliRunner().invoke(cli, ["sessions", "export", session_id, "--format", fmt, *args])
    assert result.exit_code == 0, result.output
    return result.stdout_bytes


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conversation=turns, block=st.integers(1, 300))
def test_each_format_streamed_equals_the_whole_export(
    conversation: list[tuple[str, str, str | None]], block: int
) -> None:
    with tempfile.TemporaryDirectory() as tmp, pytest.MonkeyPatch.context() as patch:
        home = Path(tmp) / "home"
        patch.setenv("DSH_HOME", str(home))
        patch.setattr(export_output, "WRITE_BYTES", block)  # blocks cut anywhere
        session_id = build(home, conversation)
        for fmt in FORMATS:
            expected = whole(home, session_id, fmt)
            assert export(session_id, fmt) == expected
            target = Path(tmp) / f"out.{fmt}"
            assert export(session_id, fmt, "-o", str(target)) == b""
            assert target.read_bytes() == expected


@pytest.fixture
def stored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, str]:
    home = tmp_path / "home"
    monkeypatch.setenv("DSH_HOME", str(home))
    conversation = [
        (f"prompt {n} " * 40, f"reply {n} " * 40, f"line {n}\n" * 400) for n in range(30)
    ]
    return home, build(home, conversation)


def written_at_last_call(
    monkeypatch: pytest.MonkeyPatch, module: Any, name: str, argv: list[str]
) -> tuple[int, bytes]:
    """Run ``argv`` twice with ``module.name`` (called once per rendered item) wrapped: first
    to count its calls, then to note how many bytes stdout held at the last of them. Returns
    that count and the whole output."""
    original = getattr(module, name)
    calls, last, seen = [0], [-1], [-1]

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        if calls[0] == last[0]:
            seen[0] = len(sys.stdout.buffer.getvalue())  # type: ignore[attr-defined]
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, wrapped)
    runner = CliRunner()
    assert runner.invoke(cli, argv).exit_code == 0
    last[0], calls[0] = calls[0], 0
    result = runner.invoke(cli, argv)
    assert result.exit_code == 0, result.output
    return seen[0], result.stdout_bytes


@pytest.mark.parametrize("fmt", FORMATS)
def test_stdout_receives_the_export_before_the_last_item_is_rendered(
    stored: tuple[Path, str], fmt: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dsh.cli import sessions as sessions_cli
    from dsh.interop import upstream_write
    from dsh.transcript import markdown

    home, session_id = stored
    monkeypatch.setattr(export_output, "WRITE_BYTES", 4096)
    module, name = {
        "md": (markdown, "message_markdown"),  # each message's section
        "jsonl": (sessions_cli, "encode_event"),  # each event's line
        "upstream": (upstream_write, "_event"),  # each event's row
    }[fmt]
    argv = ["sessions", "export", session_id, "--format", fmt]
    seen, output = written_at_last_call(monkeypatch, module, name, argv)
    assert output == whole(home, session_id, fmt)
    assert seen > len(output) // 2  # most of it was out before the last item was rendered


def _limited(limit: int) -> Callable[[], None]:
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_file_export_that_fails_part_way_leaves_the_file_as_it_was(
    stored: tuple[Path, str], fmt: str, tmp_path: Path
) -> None:
    home, session_id = stored
    out = tmp_path / "out" / "export.txt"
    out.parent.mkdir()
    out.write_bytes(b"the previous export\n")
    dsh = [sys.executable, "-c", "from dsh.cli.main import main; main()"]
    argv = [*dsh, "sessions", "export", session_id, "--format", fmt, "-o", str(out)]
    env = {**os.environ, "DSH_HOME": str(home)}
    # a file size limit under the export's size: the write fails part way (EFBIG)
    done = subprocess.run(
        argv, env=env, capture_output=True, text=True, preexec_fn=_limited(64 * 1024)
    )
    assert done.returncode == 1 and "export.txt" in done.stderr, done.stderr
    assert out.read_bytes() == b"the previous export\n"
    assert os.listdir(out.parent) == ["export.txt"]  # no temporary file left
    fresh = out.parent / "new.txt"
    argv[-1] = str(fresh)
    done = subprocess.run(
        argv, env=env, capture_output=True, text=True, preexec_fn=_limited(64 * 1024)
    )
    assert done.returncode == 1 and not fresh.exists()
    assert os.listdir(out.parent) == ["export.txt"]


def test_a_file_export_keeps_the_files_permission_bits_and_a_symlink(
    stored: tuple[Path, str], tmp_path: Path
) -> None:
    _, session_id = stored
    target = tmp_path / "real.md"
    target.write_bytes(b"old")
    target.chmod(0o640)
    link = tmp_path / "link.md"
    link.symlink_to(target)
    export(session_id, "md", "-o", str(link))
    assert link.is_symlink() and (target.stat().st_mode & 0o777) == 0o640
    assert target.read_bytes().startswith(b"# ")
