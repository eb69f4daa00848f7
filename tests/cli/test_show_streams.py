"""``dsh sessions show`` writes each view a bounded piece at a time as it renders it, so a
session of large tool results is never held as one rendered text (the CLI audit's 155 MB log
took 836 MB to show; ``benchmarks/large_results_cli.py``). The output is the same bytes."""

from __future__ import annotations

import json
import os
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from dsh.cli.main import cli

RESULT = 300_000  # characters of each tool result
TURNS = 8  # 2.4 M characters of results: more than two pieces
PIECE = 1 << 20  # dsh.cli.context.ECHO_CHARS


def upstream_log(path: Path) -> None:
    model = {"kind": "model", "provider": "deepseek", "model": "deepseek-chat"}
    rows: list[dict] = [{"type": "session", "version": 0, "id": "big", "createdAt": 1}]

    def event(kind: str, data: dict, **extra: object) -> None:
        rows.append({"type": kind, "seq": len(rows) - 1, "time": len(rows), "data": data, **extra})

    for turn in range(1, TURNS + 1):
        call = f"c{turn}"
        text = [{"type": "text", "text": f"part {turn}"}]
        event("turn/start", {"turn": turn})
        event("step/start", {"turn": turn, "step": 1})
        event(
            "user/message",
            {"id": f"u{turn}", "role": "user", "content": text, "source": {"kind": "user"}},
            surfaceOp="append",
        )
        block = {"type": "tool-call", "id": call, "name": "read_file", "arguments": "{}"}
        event(
            "assistant/message",
            {
                "turn": turn,
                "step": 1,
                "message": {
                    "id": f"a{turn}",
                    "role": "assistant",
                    "content": [block],
                    "source": model,
                },
            },
            surfaceOp="append",
        )
        event(
            "tool/call",
            {"turn": turn, "step": 1, "callId": call, "name": "read_file", "arguments": "{}"},
        )
        body = [{"type": "text", "text": f"{turn}é" * (RESULT // 2)}]
        result = {"type": "tool-result", "toolCallId": call, "content": body}
        event(
            "tool/result",
            {
                "turn": turn,
                "step": 1,
                "message": {
                    "id": f"r{turn}",
                    "role": "user",
                    "content": [result],
                    "source": {"kind": "tool", "callId": call},
                },
            },
            surfaceOp="append",
            sourceEventSeqs=[len(rows) - 2],
        )
        event("step/end", {"turn": turn, "step": 1})
        event("turn/end", {"turn": turn, "reason": {"kind": "completed"}})
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))


@pytest.fixture
def session(tmp_path, monkeypatch):
    for key in list(os.environ):
        if key.startswith("DSH_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("DSH_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    upstream_log(tmp_path / "big.jsonl")
    result = CliRunner().invoke(cli, ["sessions", "import", "big.jsonl", "--id", "big"])
    assert result.exit_code == 0, result.output
    return "big"


@pytest.mark.parametrize("view", ["transcript", "events", "surface"])
def test_a_view_is_written_in_bounded_pieces(session, monkeypatch, view):
    written: list[int] = []
    echo = click.echo

    def spy(message=None, *args, **kwargs):
        written.append(len(message or ""))
        return echo(message, *args, **kwargs)

    monkeypatch.setattr(click, "echo", spy)
    result = CliRunner().invoke(cli, ["sessions", "show", session, "--view", view])
    assert result.exit_code == 0, result.output
    assert f"{TURNS}é{TURNS}é" in result.output  # the last result is there
    assert sum(written) >= TURNS * RESULT  # the whole view was written...
    assert max(written) <= PIECE + 2 * RESULT  # ...a piece at a time
