"""``dsh sessions import`` on input that is not an importable log: a field of the wrong type, a
FIFO, a device, a binary file — one error line naming the file (and the line), nothing written,
never a traceback or a read that blocks. And a plain string ``turn/end`` reason, which a log may
well hold, imports."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dsh.events import TurnEndEvent
from dsh.store import JsonlStore
from dsh.surface import Session

DSH = str(Path(sys.executable).with_name("dsh"))
HEADER = {"type": "session", "version": 0, "id": "x1", "createdAt": 1767225600000}
TURN = {"type": "turn/start", "seq": 0, "time": 1767225600100, "data": {"turn": 1}}
STEP = {"type": "step/start", "seq": 1, "time": 1767225600200, "data": {"turn": 1, "step": 1}}


def user(seq: int, **changes: object) -> dict:
    data = {
        "id": "u1",
        "role": "user",
        "content": [{"type": "text", "text": "hi"}],
        "source": {"kind": "user"},
    }
    data.update(changes)
    return {
        "type": "user/message",
        "seq": seq,
        "time": 1767225600300,
        "data": data,
        "surfaceOp": "append",
    }


def write(path: Path, *records: dict) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def dsh(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("DSH_")}
    environ["DSH_HOME"] = str(home)
    return subprocess.run(
        [DSH, *args], env=environ, cwd=home.parent, capture_output=True, text=True, timeout=120
    )


def stored(home: Path) -> list[str]:
    return sorted(str(p.relative_to(home)) for p in home.rglob("*") if p.is_file())


@pytest.mark.parametrize(
    ("record", "expected"),
    [
        (
            user(2, source={"kind": ["user"]}),
            "line 4: seq 2 (user/message): message source kind must be text, not an array",
        ),
        (
            user(2, content=7),
            "line 4: seq 2 (user/message): message content must be an array, not a number",
        ),
        (
            {"type": "turn/end", "seq": 2, "time": 1, "data": {"turn": 1, "reason": 3}},
            "line 4: seq 2 (turn/end): turn/end reason must be an object, not a number",
        ),
        (
            {
                "type": "assistant/message",
                "seq": 2,
                "time": 1,
                "data": {
                    "turn": 1,
                    "step": 1,
                    "usage": 1.5,
                    "message": {
                        "id": "a",
                        "role": "assistant",
                        "content": [],
                        "source": {"kind": "model"},
                    },
                },
                "surfaceOp": "append",
            },
            "line 4: seq 2 (assistant/message): usage must be an object, not a number",
        ),
    ],
)
def test_a_field_of_the_wrong_type_is_one_line_and_writes_nothing(tmp_path, record, expected):
    home = tmp_path / "home"
    log = write(tmp_path / "bad.jsonl", HEADER, TURN, STEP, record)
    done = dsh(home, "sessions", "import", str(log))
    assert done.returncode == 1
    assert done.stderr == f"dsh: error: {log}: {expected}\n"
    assert stored(home) == []


def test_a_turn_end_reason_given_as_text_imports_as_its_kind(tmp_path):
    home = tmp_path / "home"
    end = {
        "type": "turn/end",
        "seq": 1,
        "time": 1767225600200,
        "data": {"turn": 1, "reason": "completed"},
    }
    done = dsh(
        home, "sessions", "import", str(write(tmp_path / "r.jsonl", HEADER, TURN, end)), "--id", "r"
    )
    assert done.returncode == 0, done.stderr
    assert "turn/end reason given as text, stored as {kind} ×1" in done.stdout
    with Session.open(JsonlStore(home), "r") as session:
        (turn_end,) = session.of_type(TurnEndEvent)
        assert turn_end.data.reason.kind == "completed"


def test_a_fifo_is_refused_without_opening_it(tmp_path):
    home = tmp_path / "home"
    fifo = tmp_path / "log.jsonl"
    os.mkfifo(fifo)  # no writer ever comes: an open for reading would block for good
    done = dsh(home, "sessions", "import", str(fifo))
    assert done.returncode == 2
    assert done.stderr == f"dsh: error: cannot import {fifo}: a FIFO, not a regular file\n"
    assert stored(home) == []


def test_a_device_is_refused(tmp_path):
    done = dsh(tmp_path / "home", "sessions", "import", "/dev/zero")
    assert (
        done.stderr
        == "dsh: error: cannot import /dev/zero: a character device, not a regular file\n"
    )


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"\x00\x01\xff\xfe", "line 1: not a text file (byte 0x00 at offset 0)"),
        (b'{"a": 1}\n\xff\xfe', "line 2: not a text file (byte 0xff at offset 9)"),
        (b"garbage without a newline", "line 1: not valid JSON"),
    ],
)
def test_a_file_that_is_not_a_log_says_what_it_is_not(tmp_path, data, expected):
    home = tmp_path / "home"
    log = tmp_path / "b.jsonl"
    log.write_bytes(data)
    done = dsh(home, "sessions", "import", str(log))
    assert done.returncode == 1
    assert done.stderr.startswith(f"dsh: error: {log}: {expected}")
    assert done.stderr.count("\n") == 1 and "empty file" not in done.stderr
    assert stored(home) == []
