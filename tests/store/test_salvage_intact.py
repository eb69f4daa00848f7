"""``dsh sessions repair`` keeps the prefix before the first bad line (row) and drops the rest,
intact lines included (a log keeps no gap: later events name earlier ones by seq). The report
used to say only ``dropped lines 9-16``, hiding that lines 10-16 were intact; it now says how
many of the dropped lines are intact, where in the kept copy they are, and a command that
prints them — and that command prints exactly them."""

from __future__ import annotations

import re
import shlex
import sqlite3
import subprocess
from pathlib import Path

import pytest

from dsh.store import JsonlStore, SqliteStore
from dsh.store.integrity import seal, unseal
from dsh.store.salvage import salvage_session, spans
from dsh.store.salvage_sqlite import salvage_sqlite_session
from dsh.surface import Session
from dsh.surface.projection import first_refused
from tests.helpers import append_chat_turn, append_tool_turn, new_session
from tests.store.test_salvage_sqlite import checkpointed, closed_session


def _flip(line: bytes) -> bytes:
    """One byte of the event's JSON changed: the line still parses, its seal does not match."""
    at = line.index(b'"type"') + 2
    return line[:at] + bytes([line[at] ^ 0x01]) + line[at + 1 :]


@pytest.mark.parametrize("bad", [3, 9, 14])
def test_the_jsonl_report_counts_the_intact_dropped_lines_and_prints_them_from_the_copy(
    tmp_path: Path, bad: int
) -> None:
    store = JsonlStore(tmp_path)
    with new_session(store) as session:
        append_chat_turn(session)
        append_tool_turn(session)
        append_chat_turn(session)
    path = store.log_path(session.id)
    lines = path.read_bytes().split(b"\n")[:-1]
    total = len(lines)
    assert total > bad + 1
    lines[bad - 1] = _flip(lines[bad - 1])
    path.write_bytes(b"".join(line + b"\n" for line in lines))

    report = salvage_session(store, session.id, validate=first_refused)
    text = report.lines()
    dropped = total - bad + 1
    assert f"dropped lines {bad}-{total} ({dropped} lines, " in "\n".join(text)
    said = next(line for line in text if "dropped lines are intact" in line)
    assert said.startswith(
        f"{dropped - 1} of the {dropped} dropped lines are intact (each passes its CRC seal "
        "and decodes) but went from the first bad one on, as a log keeps no gap"
    )
    assert f"they are lines {bad + 1}-{total} of the copy {report.copy}" in said
    command = re.search(r"`(sed [^`]*)` prints them", said)
    assert command is not None
    printed = subprocess.run(shlex.split(command.group(1)), capture_output=True, check=True)
    assert printed.stdout == b"".join(line + b"\n" for line in lines[bad:])
    with Session.open(store, session.id) as kept:
        assert len(kept.events) == bad - 2  # the prefix: a log keeps no gap


def test_no_intact_dropped_line_is_said_so(tmp_path: Path) -> None:
    store = JsonlStore(tmp_path)
    with new_session(store) as session:
        append_chat_turn(session)
    path = store.log_path(session.id)
    lines = path.read_bytes().split(b"\n")[:-1]
    lines[-1] = _flip(lines[-1])
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    report = salvage_session(store, session.id, validate=first_refused)
    assert "none of the 1 dropped lines passes its CRC seal and decodes" in report.lines()


def test_spans_are_ranges() -> None:
    assert spans([10, 11, 12]) == "10-12"
    assert spans([9, 11, 12, 14]) == "9, 11-12, 14"
    assert spans([]) == ""


def test_the_sqlite_report_counts_the_intact_dropped_events_and_queries_them_in_the_copy(
    tmp_path: Path,
) -> None:
    store = SqliteStore(tmp_path)
    sid = closed_session(store)
    with sqlite3.connect(store.path) as db:
        rows = db.execute(
            "SELECT seq, body FROM events WHERE session_id = ? ORDER BY seq", (sid,)
        ).fetchall()
        canonical, _ = unseal(bytes(rows[9][1]))
        damaged = seal(canonical)[:-3] + b"000"  # the seal no longer matches the body
        db.execute("UPDATE events SET body = ? WHERE session_id = ? AND seq = 9", (damaged, sid))
    checkpointed(store)
    report = salvage_sqlite_session(store, sid, validate=first_refused)
    last = len(rows) - 1
    dropped = len(rows) - 9
    said = next(line for line in report.lines() if "dropped events are intact" in line)
    assert said.startswith(f"{dropped - 1} of the {dropped} dropped events are intact")
    assert f"they are seq 10-{last} of this session in the copy {report.copy}" in said
    command = re.search(r"`sqlite3 (\S+) \"([^\"]*)\"` prints the dropped rows", said)
    assert command is not None and command.group(1) == str(report.copy)
    with sqlite3.connect(report.copy) as copy:
        found = copy.execute(command.group(2)).fetchall()
    assert [(seq, bytes(body)) for seq, body in found] == [
        (seq, damaged if seq == 9 else bytes(body)) for seq, body in rows[9:]
    ]
